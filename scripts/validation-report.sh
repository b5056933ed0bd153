#!/usr/bin/env bash
# Regenerates the generated tables of docs/validation.md.
#   scripts/validation-report.sh                     the in-sample tables (between the
#       generated markers): `racksweep validate reference/measurements-calibration.csv --markdown`
#   scripts/validation-report.sh --leave-one-out [--quick]
#       the out-of-sample tables (between the loo markers): `... --leave-one-out --markdown`,
#       stamped with the commit, the date and the run time (full grid: about an hour on 2 busy
#       cores; --quick, the reduced grid, for a smoke run)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=in-sample
extra=()
for arg in "$@"; do
  case "$arg" in
    --leave-one-out) mode=loo ;;
    --quick) extra+=(--quick) ;;
    *) echo "usage: $0 [--leave-one-out [--quick]]" >&2; exit 2 ;;
  esac
done
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
if [ "$mode" = loo ]; then
  start=$(date +%s)
  "$bin" validate reference/measurements-calibration.csv --leave-one-out "${extra[@]}" --markdown > "$tables.body"
  minutes=$(( ($(date +%s) - start + 30) / 60 ))
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- src || commit="$commit with uncommitted changes to src/"
  {
    echo "Measured at commit \`$commit\` on $(date -u '+%Y-%m-%d %H:%M') UTC with"
    echo "\`racksweep validate reference/measurements-calibration.csv --leave-one-out${extra[*]:+ ${extra[*]}}\`,"
    echo "$minutes min on this machine ($(nproc) cores)."
    echo
    cat "$tables.body"
  } > "$tables"
  rm -f "$tables.body"
  start_marker="<!-- loo:start -->" end_marker="<!-- loo:end -->"
else
  "$bin" validate reference/measurements-calibration.csv --markdown > "$tables"
  start_marker="<!-- generated:start -->" end_marker="<!-- generated:end -->"
fi
python3 - docs/validation.md "$tables" "$start_marker" "$end_marker" <<'PY'
import sys
doc, tables, start, end = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
text = open(doc).read()
head, rest = text.split(start, 1)
_, tail = rest.split(end, 1)
open(doc, "w").write(f"{head}{start}\n{tables}{end}{tail}")
PY
echo "docs/validation.md updated ($mode)"
