#!/usr/bin/env bash
# Regenerates the tables of docs/validation.md (between the generated markers) from
# `racksweep validate reference/measurements-calibration.csv --markdown`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
"$bin" validate reference/measurements-calibration.csv --markdown > "$tables"
python3 - docs/validation.md "$tables" <<'PY'
import sys
doc, tables = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
start, end = "<!-- generated:start -->", "<!-- generated:end -->"
head, rest = text.split(start, 1)
_, tail = rest.split(end, 1)
open(doc, "w").write(f"{head}{start}\n{tables}{end}{tail}")
PY
echo "docs/validation.md updated"
