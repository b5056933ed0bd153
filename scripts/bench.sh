#!/usr/bin/env bash
# Whole-process benchmark of `racksweep run` on a ~10 million point sweep: configs/s (from the
# run's manifest) and peak RSS (from GNU time), with every row written and with --feasible-only.
# Usage: scripts/bench.sh [SWEEP] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."
sweep=${1:-scripts/bench/bench-10m.toml}
shift || true
command -v /usr/bin/time >/dev/null || { echo "bench.sh needs GNU time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "sweep: $sweep ($("$bin" check "$sweep" | sed -n 's/^configurations: //p') configurations), $(nproc) cores"
printf '%-16s %10s %14s %12s %14s\n' mode wall_s configs_per_s peak_rss_mb parquet_mb
for mode in all-rows feasible-only; do
  flags=(--quiet --force --out "$out" "$@")
  [ "$mode" = feasible-only ] && flags+=(--feasible-only)
  /usr/bin/time -f '%M' -o "$out/rss" "$bin" run "$sweep" "${flags[@]}"
  dir=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
  python3 - "$dir/manifest.json" "$out/rss" "$dir/configs.parquet" "$mode" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))
rss_mb = int(open(sys.argv[2]).read().split()[-1]) / 1024
size_mb = os.path.getsize(sys.argv[3]) / 1e6
print(f"{sys.argv[4]:<16} {m['wall_time_s']:>10.2f} {m['configs_per_s']:>14,.0f} {rss_mb:>12.0f} {size_mb:>14.1f}")
PY
done
