"""Reads racksweep run directories the way an analyst would, with pyarrow, DuckDB and polars,
and checks that they agree with each other, with the run's manifest and with docs/schema.md.

    python scripts/analysis/check_outputs.py RUN_DIR [RUN_DIR ...]

Exits 1 with the reason on the first check that fails.
"""

import glob
import json
import os
import re
import sys

import duckdb
import polars as pl
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(message):
    print(f"check_outputs: error: {message}", file=sys.stderr)
    sys.exit(1)


def documented_columns(mode):
    """Column names and types of docs/schema.md's generated table for `mode` (inference or
    training), in order."""
    marker = {"inference": "generated", "training": "generated:training"}[mode]
    text = open(os.path.join(ROOT, "docs", "schema.md")).read()
    table = text.split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]
    rows = re.findall(r"^\| \d+ \| `([a-z0-9_]+)` \| ([^|]+) \|", table, re.M)
    if not rows:
        fail("docs/schema.md has no column table")
    return [(name, kind.strip()) for name, kind in rows]


def tie_group_documented():
    """The type of `tie_group`, the column pareto.parquet adds (docs/schema.md, "Ties on the
    frontier")."""
    text = open(os.path.join(ROOT, "docs", "schema.md")).read()
    found = re.search(r"^\| `tie_group` \| ([^|]+) \|", text, re.M)
    if not found:
        fail("docs/schema.md does not describe tie_group")
    return ("tie_group", found.group(1).strip())


ARROW_TYPE = {
    "uint64": "uint64",
    "uint32": "uint32",
    "float64": "double",
    "bool": "bool",
    "string (dictionary)": "dictionary<values=string, indices=uint16, ordered=0>",
}


def check(run):
    manifest = json.load(open(os.path.join(run, "manifest.json")))
    if manifest["complete"] is not True:
        fail(f"{run}: manifest says the run is incomplete")
    n = manifest["parts"]
    parts = sorted(glob.glob(os.path.join(run, "configs", "*.parquet")))
    expected = [os.path.join(run, "configs", f"part-{k}-of-{n}.parquet") for k in range(n)]
    if sorted(expected) != parts:
        fail(f"{run}: configs/ holds {parts}, the manifest says {n} parts")

    # The schema: every part file and the frontier have the documented columns and types of
    # the run's mode.
    mode = manifest["mode"]
    documented = documented_columns(mode)
    pareto = os.path.join(run, "pareto.parquet")
    for path in parts + [pareto]:
        schema = pq.read_schema(path)
        found = [(f.name, str(f.type)) for f in schema]
        columns = documented + [tie_group_documented()] if path == pareto else documented
        want = [(name, ARROW_TYPE[kind]) for name, kind in columns]
        if found != want:
            fail(f"{path}: schema differs from docs/schema.md: {found} vs {want}")
        meta = pq.ParquetFile(path).metadata.metadata
        if meta[b"racksweep.sweep_sha256"].decode() != manifest["sweep_sha256"]:
            fail(f"{path}: sweep hash differs from the manifest's")
        if meta[b"racksweep.mode"].decode() != mode:
            fail(f"{path}: mode {meta[b'racksweep.mode']} differs from the manifest's {mode}")

    # Row counts, three readers.
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
    glob_path = os.path.join(run, "configs", "*.parquet")
    duck = duckdb.execute(
        f"select count(*), count(distinct config_id), sum(feasible::int) from read_parquet('{glob_path}')"
    ).fetchone()
    polars = (
        pl.scan_parquet(glob_path)
        .select(pl.len(), pl.col("config_id").n_unique(), pl.col("feasible").sum())
        .collect()
        .row(0)
    )
    if not (rows == duck[0] == polars[0] == manifest["rows_written"]):
        fail(f"{run}: rows: pyarrow {rows}, duckdb {duck[0]}, polars {polars[0]}, manifest {manifest['rows_written']}")
    if duck[1] != rows or polars[1] != rows:
        fail(f"{run}: config_id is not unique")
    if duck[2] != manifest["feasible"] or polars[2] != manifest["feasible"]:
        fail(f"{run}: feasible rows {duck[2]} (duckdb), {polars[2]} (polars), manifest {manifest['feasible']}")
    if not manifest["feasible_only"]:
        if rows != manifest["configurations"]:
            fail(f"{run}: {rows} rows for {manifest['configurations']} configurations")
        bounds = duckdb.execute(f"select min(config_id), max(config_id) from read_parquet('{glob_path}')").fetchone()
        if bounds != (0, manifest["configurations"] - 1):
            fail(f"{run}: config_id spans {bounds}")

    # The frontier: its size, and every row of it is a row of the configs, value for value.
    pareto = os.path.join(run, "pareto.parquet")
    size = pq.ParquetFile(pareto).metadata.num_rows
    if size != manifest["frontier_size"]:
        fail(f"{run}: pareto.parquet has {size} rows, the manifest says {manifest['frontier_size']}")
    missing = duckdb.execute(
        f"select count(*) from (select * exclude (tie_group) from read_parquet('{pareto}') except "
        f"select * from read_parquet('{glob_path}'))"
    ).fetchone()[0]
    if missing:
        fail(f"{run}: {missing} frontier rows are not rows of configs/")
    print(f"ok: {run} ({mode}): {n} part(s), {rows:,} rows, {size} on the frontier; pyarrow, duckdb and polars agree")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        fail("usage: check_outputs.py RUN_DIR [RUN_DIR ...]")
    for run in sys.argv[1:]:
        check(run)
