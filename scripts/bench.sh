#!/usr/bin/env bash
# Whole-process benchmark of `racksweep run`: configs/s (from the run's manifest) and peak RSS
# (from GNU time). By default: the ~10 million point sweep with every row written and with
# --feasible-only, then the ~8 million point sweep where 80 % of points cannot run, with
# --feasible-only, then the 2.2 million layout training sweep with every row written, then the
# ratios below. Given a sweep, runs it both ways. `--ratios` prints the ratios alone.
#
# Ratios (issue 24; same run, same machine, so they compare across machines where rates do not):
# - every-row rate of bench-10m over pyarrow's one-thread rewrite of its first 2 M rows with the
#   same compression (scripts/bench/pyarrow_rewrite.py; pyarrow from the analysis venv);
# - sized over fixed-racks rate of the same grid: bench-sized and sized-405b as written
#   (`racks = "auto"`), then at the median rack count of their feasible rows.
# Usage: scripts/bench.sh [SWEEP | --ratios] [run flags, e.g. --threads 1]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "bench.sh needs GNU time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Runs sweep $1 with flags $2.. into $out/run; the run's directory is then $dir.
run() {
  local sweep=$1
  shift
  rm -rf "$out/run"
  /usr/bin/time -f '%M' -o "$out/rss" "$bin" run "$sweep" --quiet --force --out "$out/run" "$@"
  dir=$(find "$out/run" -mindepth 1 -maxdepth 1 -type d | head -1)
}

# configs/s of the run in $dir.
rate() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["configs_per_s"])' "$dir/manifest.json"
}

# One line of the ratio table: rate A, rate B, label.
ratio_row() {
  python3 -c 'import sys; a, b = map(float, sys.argv[1:3]); print(f"{sys.argv[3]:<58} {a:>14,.0f} {b:>14,.0f} {a / b:>7.2f}")' "$@"
}

ratios() {
  local venv=${RACKSWEEP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/racksweep-venv}
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c 'import pyarrow' 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pyarrow
  local py="$venv/bin/python" ours theirs sized fixed racks
  echo
  printf '%-58s %14s %14s %7s\n' ratio "rate A/s" "rate B/s" "A/B"
  run scripts/bench/bench-10m.toml "$@"
  ours=$(rate)
  theirs=$("$py" scripts/bench/pyarrow_rewrite.py "$dir" "$out/rewrite.parquet" 2000000 | cut -d' ' -f3)
  rm -f "$out/rewrite.parquet"
  ratio_row "$ours" "$theirs" "bench-10m every row / pyarrow one-thread rewrite"
  for sweep in scripts/bench/bench-sized.toml scripts/bench/sized-405b.toml; do
    run "$sweep" "$@"
    sized=$(rate)
    racks=$("$py" - "$dir" <<'PY'
import glob, os, sys
import pyarrow.compute as pc, pyarrow.dataset as ds
t = ds.dataset(glob.glob(os.path.join(sys.argv[1], "configs", "*.parquet"))).to_table(columns=["racks", "feasible"])
r = pc.filter(t["racks"], pc.fill_null(t["feasible"], False)).drop_null()
print(int(pc.approximate_median(pc.cast(r, "float64")).as_py()))
PY
)
    sed "s/^racks = \"auto\"/racks = [$racks]/" "$sweep" >"$out/fixed.toml"
    run "$out/fixed.toml" "$@"
    fixed=$(rate)
    ratio_row "$sized" "$fixed" "$(basename "$sweep" .toml) sized / racks = [$racks]"
  done
}

if [ "${1:-}" = --ratios ]; then
  shift
  echo "$(nproc) cores"
  ratios "$@"
  exit 0
fi
if [ $# -gt 0 ]; then
  cases=("$1 all-rows" "$1 feasible-only")
  shift
else
  cases=("scripts/bench/bench-10m.toml all-rows" "scripts/bench/bench-10m.toml feasible-only"
         "scripts/bench/bench-sparse.toml feasible-only"
         "scripts/bench/bench-training.toml all-rows")
  with_ratios=1
fi
echo "$(nproc) cores"
printf '%-32s %-14s %12s %8s %14s %12s %11s\n' sweep mode configs feasible configs_per_s peak_rss_mb parquet_mb
for case in "${cases[@]}"; do
  read -r sweep mode <<<"$case"
  flags=("$@")
  [ "$mode" = feasible-only ] && flags+=(--feasible-only)
  run "$sweep" "${flags[@]}"
  python3 - "$dir" "$out/rss" "$sweep" "$mode" <<'PY'
import json, os, sys, glob
d, rss, sweep, mode = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
rss_mb = int(open(rss).read().split()[-1]) / 1024
size_mb = sum(os.path.getsize(p) for p in glob.glob(os.path.join(d, "configs", "*.parquet"))) / 1e6
feasible = m["feasible"] / m["configurations"]
print(f"{os.path.basename(sweep):<32} {mode:<14} {m['configurations']:>12,} {feasible:>8.0%} {m['configs_per_s']:>14,.0f} {rss_mb:>12.0f} {size_mb:>11.1f}")
PY
done
[ -n "${with_ratios:-}" ] && ratios "$@"
exit 0
