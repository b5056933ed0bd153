#!/usr/bin/env bash
# Scaling curve of `racksweep run` (every row written): configs/s and peak RSS against grid size
# (scripts/bench/bench-10m.toml with its rack axis cut or extended to about 10^6, 10^7 and 10^8
# points) and against worker threads (1 and 2, on the 10^7 sweep).
# Usage: scripts/bench-scaling.sh [--skip-1e8]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "bench-scaling.sh needs GNU time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# racks 1..7 x the other axes = 946,176 points; 1..74 = 10,002,432; 1..740 = 100,024,320.
sizes=(7 74 740)
[ "${1:-}" = --skip-1e8 ] && sizes=(7 74)
printf '%12s %8s %10s %14s %12s %11s\n' configs threads wall_s configs_per_s peak_rss_mb parquet_mb
measure() { # racks threads
  sed "s/^racks = .*/racks = { from = 1, to = $1, step = 1 }/" scripts/bench/bench-10m.toml >"$out/sweep.toml"
  /usr/bin/time -f '%M' -o "$out/rss" "$bin" run "$out/sweep.toml" --quiet --force --out "$out/run" --threads "$2"
  python3 - "$out/run/bench-10m" "$out/rss" "$2" <<'PY'
import json, os, sys, glob
d, rss, threads = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
rss_mb = int(open(rss).read().split()[-1]) / 1024
size_mb = sum(os.path.getsize(p) for p in glob.glob(os.path.join(d, "configs", "*.parquet"))) / 1e6
print(f"{m['configurations']:>12,} {threads:>8} {m['wall_time_s']:>10.2f} {m['configs_per_s']:>14,.0f} {rss_mb:>12.0f} {size_mb:>11.1f}")
PY
  rm -rf "$out/run"
}
for racks in "${sizes[@]}"; do measure "$racks" "$(nproc)"; done
measure 74 1
