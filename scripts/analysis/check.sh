#!/usr/bin/env bash
# Reads racksweep's outputs with the tools analysts use: installs pyarrow, DuckDB, polars and
# pandas from PyPI into a virtual environment (cached at ~/.cache/racksweep-venv), runs a sweep
# (whole, sharded and merged, and --feasible-only) and a training sweep, checks every run with
# check_outputs.py, runs every example sweep in several parts and checks their column types with
# check_dtypes.py, and runs the serving examples on the first and the training example on the
# training run. Run by .ci/run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
venv=${RACKSWEEP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/racksweep-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import pyarrow, duckdb, polars, pandas' 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pyarrow duckdb polars pandas
py="$venv/bin/python"

cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

sweep=sweeps/qwen3-235b-50k-users.toml # sized, with cost: every kind of column is filled
"$bin" run "$sweep" --quiet --out "$out/whole" --part-rows 500
name=$(basename "$(find "$out/whole" -mindepth 1 -maxdepth 1 -type d)")
for k in 0 1 2; do "$bin" run "$sweep" --quiet --out "$out/sharded" --shard "$k/3"; done
"$bin" merge "$out/sharded/$name" --quiet
"$bin" run sweeps/quickstart.toml --quiet --out "$out/feasible" --feasible-only
training=sweeps/llama-70b-gb200-vs-b200.toml # a training run: the other schema
"$bin" run "$training" --quiet --out "$out/training" --part-rows 3000
"$py" "$here/check_outputs.py" "$out/whole/$name" "$out/sharded/$name" "$out/feasible/quickstart" \
    "$out/training/$(basename "$training" .toml)"

# Every example sweep in about four parts: one type per column in every file, mode and sizing.
for example_sweep in sweeps/*.toml; do
    example_name=$(basename "$example_sweep" .toml)
    "$bin" run "$example_sweep" --quiet --out "$out/probe"
    rows=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["configurations"])' \
        "$out/probe/$example_name/manifest.json")
    "$bin" run "$example_sweep" --quiet --out "$out/examples" --part-rows $(((rows + 3) / 4))
done
"$py" "$here/check_dtypes.py" "$out"/examples/*/

for example in duckdb_example polars_example pandas_example; do
    "$py" "$here/$example.py" "$out/whole/$name" >"$out/$example.txt" ||
        { echo "check.sh: error: $example.py failed" >&2; exit 1; }
done
"$py" "$here/training_example.py" "$out/training/$(basename "$training" .toml)" >"$out/training_example.txt" ||
    { echo "check.sh: error: training_example.py failed" >&2; exit 1; }
echo "ok: the analysis examples run ($(cat "$out"/*.txt | wc -l) lines of output)"
