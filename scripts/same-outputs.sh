#!/usr/bin/env bash
# Shows that two racksweep binaries write the same files: runs every example sweep and every
# benchmark sweep with both, compares every output file byte for byte (manifests and part records
# with their timing keys removed, the only fields that differ between two runs of one binary),
# then compares `check` on every sweep and `validate` (table, Markdown, JSON and its Parquet) on
# $MEASUREMENTS (default reference/measurements-calibration.csv).
# Used for refactors that must not change behaviour.
# Usage: scripts/same-outputs.sh OLD_BINARY NEW_BINARY [SWEEP...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [SWEEP...]" >&2; exit 2; }
old=$(realpath "$1")
new=$(realpath "$2")
shift 2
if [ $# -gt 0 ]; then sweeps=("$@"); else sweeps=(sweeps/*.toml scripts/bench/*.toml); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Manifests and part records without wall-clock fields (durations, rates and timestamps).
untimed() {
  python3 - "$1" <<'PY'
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("wall_time_s", "configs_per_s", "started_at", "finished_at")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))
PY
}

status=0
for sweep in "${sweeps[@]}"; do
  for side in old new; do
    bin=${!side}
    rm -rf "$work/$side"
    "$bin" run "$sweep" --quiet --force --out "$work/$side" >/dev/null
    "$bin" check "$sweep" >"$work/$side.check" 2>&1 || true
  done
  files=$( (cd "$work/old" && find . -type f ! -name '.*'; cd "$work/new" && find . -type f ! -name '.*') | sort -u)
  differing=0
  for f in $files; do
    a="$work/old/$f" b="$work/new/$f"
    if [ ! -f "$a" ] || [ ! -f "$b" ]; then
      echo "  only one side has $f"; differing=1; continue
    fi
    case "$f" in
      *.json) cmp -s <(untimed "$a") <(untimed "$b") || { echo "  differs: $f"; differing=1; } ;;
      *) cmp -s "$a" "$b" || { echo "  differs: $f"; differing=1; } ;;
    esac
  done
  cmp -s "$work/old.check" "$work/new.check" || { echo "  differs: check output"; differing=1; }
  if [ $differing = 0 ]; then echo "same  $sweep ($(echo "$files" | wc -w) files)"; else echo "DIFF  $sweep"; status=1; fi
  rm -rf "$work/old" "$work/new"
done

measurements=${MEASUREMENTS:-reference/measurements-calibration.csv}
for args in "" "--markdown" "--json"; do
  "$old" validate "$measurements" $args --out "$work/old.parquet" >"$work/old.validate" 2>&1 || true
  "$new" validate "$measurements" $args --out "$work/new.parquet" >"$work/new.validate" 2>&1 || true
  if cmp -s "$work/old.validate" "$work/new.validate" && cmp -s "$work/old.parquet" "$work/new.parquet"
  then echo "same  validate $args"
  else echo "DIFF  validate $args"; status=1; fi
done
exit $status
