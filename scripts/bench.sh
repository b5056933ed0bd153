#!/usr/bin/env bash
# Whole-process benchmark of `racksweep run`: configs/s (from the run's manifest) and peak RSS
# (from GNU time). By default: the ~10 million point sweep with every row written and with
# --feasible-only, then the ~8 million point sweep where 80 % of points cannot run, with
# --feasible-only, then the 2.2 million layout training sweep with every row written. Given a
# sweep, runs it both ways.
# Usage: scripts/bench.sh [SWEEP] [run flags, e.g. --threads 1]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "bench.sh needs GNU time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [ $# -gt 0 ]; then
  cases=("$1 all-rows" "$1 feasible-only")
  shift
else
  cases=("scripts/bench/bench-10m.toml all-rows" "scripts/bench/bench-10m.toml feasible-only"
         "scripts/bench/bench-sparse.toml feasible-only"
         "scripts/bench/bench-training.toml all-rows")
fi
echo "$(nproc) cores"
printf '%-32s %-14s %12s %8s %14s %12s %11s\n' sweep mode configs feasible configs_per_s peak_rss_mb parquet_mb
for case in "${cases[@]}"; do
  read -r sweep mode <<<"$case"
  flags=(--quiet --force --out "$out" "$@")
  [ "$mode" = feasible-only ] && flags+=(--feasible-only)
  /usr/bin/time -f '%M' -o "$out/rss" "$bin" run "$sweep" "${flags[@]}"
  dir=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
  python3 - "$dir" "$out/rss" "$sweep" "$mode" <<'PY'
import json, os, sys, glob
d, rss, sweep, mode = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
rss_mb = int(open(rss).read().split()[-1]) / 1024
size_mb = sum(os.path.getsize(p) for p in glob.glob(os.path.join(d, "configs", "*.parquet"))) / 1e6
feasible = m["feasible"] / m["configurations"]
print(f"{os.path.basename(sweep):<32} {mode:<14} {m['configurations']:>12,} {feasible:>8.0%} {m['configs_per_s']:>14,.0f} {rss_mb:>12.0f} {size_mb:>11.1f}")
PY
  rm -rf "$dir"
done
