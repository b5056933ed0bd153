#!/usr/bin/env python3
"""Check that two racksweep run directories hold the same results.

    compare-runs.py RUN_A RUN_B        (RUN = OUT_DIR/<sweep name>)

Typically a sharded run (Slurm array + merge) against a single-process run of the same sweep:
  - both manifest.json say "complete": true and agree on the sweep and its counts;
  - each run's configs/part-K-of-N.parquet cover K = 0..N-1 of one N, and config_id is unique;
  - the concatenated configs, sorted by config_id, are equal: same columns, same types, same
    values (floats bit for bit; NaN equals NaN);
  - pareto.parquet, sorted by config_id, is equal;
  - every Parquet file carries the same racksweep.sweep_sha256.
Differences in pareto.md are reported but do not fail the check.

Needs pyarrow. Exit status 0 when equal, 1 with the first differences otherwise.
"""

import difflib
import json
import math
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Manifest keys that describe the sweep and its results (not how or when it ran).
MANIFEST_KEYS = [
    "sweep_name",
    "sweep_sha256",
    "configurations",
    "rows_written",
    "feasible",
    "infeasible",
    "frontier_size",
    "objectives",
    "constraints",
    "axes",
    "feasible_only",
    "complete",
]
PART = re.compile(r"^part-(\d+)-of-(\d+)\.parquet$")

problems = []


def fail(msg):
    problems.append(msg)
    print(f"DIFFERENT: {msg}")


def config_files(run):
    parts = sorted((run / "configs").glob("*.parquet"))
    if not parts:
        fail(f"{run}: no configs/*.parquet")
        return []
    seen = {}
    for p in parts:
        m = PART.match(p.name)
        if not m:
            fail(f"{p}: not named part-K-of-N.parquet")
            continue
        seen.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    if len(seen) > 1:
        fail(f"{run}: parts of different shard counts {sorted(seen)}")
    for n, ks in seen.items():
        if ks != set(range(n)):
            fail(f"{run}: parts of {n} present: {sorted(ks)}, missing: {sorted(set(range(n)) - ks)}")
    return parts


def sweep_hash(path):
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as e:
        fail(f"{path}: cannot read Parquet: {e}")
        return None
    value = meta.get(b"racksweep.sweep_sha256")
    return value.decode() if value is not None else None


def read_sorted(paths):
    try:
        tables = [pq.read_table(p) for p in paths]
    except (OSError, pa.ArrowException) as e:
        fail(f"cannot read Parquet: {e}")
        return None
    if not tables:
        return None
    # Per-file metadata (part numbers, row counts) may differ; the data must not.
    tables = [t.replace_schema_metadata(None) for t in tables]
    table = pa.concat_tables(tables)
    return table.sort_by("config_id")


def same_value(a, b):
    if a == b:
        return True
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def compare_tables(what, a, b):
    if a is None or b is None:
        fail(f"{what}: missing in one run")
        return
    if a.num_rows != b.num_rows:
        fail(f"{what}: {a.num_rows} rows vs {b.num_rows}")
    for name, t in (("first", a), ("second", b)):
        ids = t.column("config_id")
        if pc.count_distinct(ids).as_py() != t.num_rows:
            fail(f"{what}: duplicate config_id in the {name} run")
    schema_a = [(f.name, str(f.type)) for f in a.schema]
    schema_b = [(f.name, str(f.type)) for f in b.schema]
    if schema_a != schema_b:
        fail(f"{what}: columns differ:\n  {schema_a}\n  {schema_b}")
        return
    if a.num_rows != b.num_rows:
        return
    differing = 0
    for name in a.column_names:
        col_a, col_b = a.column(name), b.column(name)
        if col_a.equals(col_b):
            continue
        # Slow path, for this column only: find the rows that differ (NaN == NaN here).
        ids = a.column("config_id").to_pylist()
        rows = [
            (ids[i], x, y)
            for i, (x, y) in enumerate(zip(col_a.to_pylist(), col_b.to_pylist()))
            if not same_value(x, y)
        ]
        if rows:
            differing += 1
            shown = ", ".join(f"config_id {i}: {x!r} vs {y!r}" for i, x, y in rows[:3])
            fail(f"{what}: column {name} differs in {len(rows)} row(s), e.g. {shown}")
    if differing == 0:
        print(f"same: {what}: {a.num_rows} rows x {a.num_columns} columns")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs = [Path(p) for p in sys.argv[1:]]
    manifests = []
    for run in runs:
        path = run / "manifest.json"
        try:
            manifests.append(json.loads(path.read_text()))
        except (OSError, ValueError) as e:
            fail(f"{path}: {e}")
            manifests.append({})
    for run, m in zip(runs, manifests):
        if m and m.get("complete") is not True:
            fail(f"{run}/manifest.json: not complete")
    if all(manifests):
        for key in MANIFEST_KEYS:
            if key in manifests[0] and key in manifests[1] and manifests[0][key] != manifests[1][key]:
                fail(f"manifest {key}: {manifests[0][key]!r} vs {manifests[1][key]!r}")

    parts = [config_files(run) for run in runs]
    hashes = {sweep_hash(p) for ps in parts for p in ps}
    hashes |= {sweep_hash(run / "pareto.parquet") for run in runs if (run / "pareto.parquet").exists()}
    if len(hashes) > 1:
        fail(f"racksweep.sweep_sha256 differs between files: {sorted(map(str, hashes))}")
    print(f"parts: {len(parts[0])} vs {len(parts[1])} file(s)")

    compare_tables("configs", read_sorted(parts[0]), read_sorted(parts[1]))
    pareto = [run / "pareto.parquet" for run in runs]
    compare_tables(
        "pareto",
        read_sorted([pareto[0]]) if pareto[0].exists() else None,
        read_sorted([pareto[1]]) if pareto[1].exists() else None,
    )

    md = [run / "pareto.md" for run in runs]
    if all(p.exists() for p in md):
        a, b = (p.read_text().splitlines() for p in md)
        if a != b:
            print("note: pareto.md differs (not a failure):")
            for line in list(difflib.unified_diff(a, b, str(md[0]), str(md[1]), lineterm=""))[:40]:
                print("  " + line)
        else:
            print("same: pareto.md")
    else:
        fail("pareto.md missing in one run")

    if problems:
        print(f"{len(problems)} difference(s)")
        sys.exit(1)
    print("runs are equal")


if __name__ == "__main__":
    main()
