"""Checks that a column reads with one type everywhere: in every part file and frontier of every
given run, in both modes (inference and training, for the columns they share) and whether or not
the sweep sizes its racks, with pandas, polars and DuckDB; that pandas gives the dtypes of
docs/schema.md's `pandas` column; that every field carries docs/schema.md's unit and meaning; that
every label column has one dictionary, in one order, in every row group of every file of a run, so
that pandas concatenates the parts as categoricals; and that DuckDB selects `bound_by` by name.

    python scripts/analysis/check_dtypes.py RUN_DIR [RUN_DIR ...]

Give it runs of both modes, sized and not, written with several parts each (check.sh runs every
example sweep with a small --part-rows). Exits 1 with the reason on the first check that fails.
"""

import glob
import json
import os
import re
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(message):
    print(f"check_dtypes: error: {message}", file=sys.stderr)
    sys.exit(1)


def documented(mode):
    """Column -> (pandas dtype, unit, meaning) of docs/schema.md's generated table for `mode`."""
    marker = {"inference": "generated", "training": "generated:training"}[mode]
    text = open(os.path.join(ROOT, "docs", "schema.md")).read()
    table = text.split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]
    rows = re.findall(
        r"^\| \d+ \| `([a-z0-9_]+)` \| [^|]+ \| ([^|]+) \| [^|]+ \| ([^|]+) \| (.+) \|$", table, re.M
    )
    if not rows:
        fail("docs/schema.md has no column table with a pandas column")
    return {
        name: (dtype.strip(), "" if unit.strip() == "-" else unit.strip(), doc)
        for name, dtype, unit, doc in rows
    }


def tie_group_documented():
    """(pandas dtype, unit, meaning) of `tie_group`, the never-null uint32 column pareto.parquet
    adds (docs/schema.md, "Ties on the frontier")."""
    text = open(os.path.join(ROOT, "docs", "schema.md")).read()
    found = re.search(r"^\| `tie_group` \| (uint32) \| never \| ([^|]+) \| (.+) \|$", text, re.M)
    if not found:
        fail("docs/schema.md does not describe tie_group as a never-null uint32")
    unit = found.group(2).strip()
    return ("uint32", "" if unit == "-" else unit, found.group(3))


def same_everywhere(kind, seen):
    """`seen` maps a column to {type: [files]}: each column must have one type."""
    for column, types in sorted(seen.items()):
        if len(types) > 1:
            detail = "; ".join(f"{t} in {files[0]} ({len(files)} files)" for t, files in types.items())
            fail(f"{kind} reads column {column} with {len(types)} types: {detail}")


def same_dictionaries(run, paths):
    """Every label column's dictionary is the same list, in the same order, in every row group of
    every file of the run; pandas then keeps the parts' concatenation categorical."""
    seen = {}
    for path in paths:
        pf = pq.ParquetFile(path)
        labels = [f.name for f in pf.schema_arrow if str(f.type).startswith("dictionary")]
        for g in range(pf.num_row_groups):
            group = pf.read_row_group(g, columns=labels)
            for column in labels:
                chunks = group.column(column).chunks
                values = chunks[0].dictionary.to_pylist() if chunks else []
                first = seen.setdefault(column, (values, path, g))
                # A column of nulls has an empty dictionary in some readers' hands.
                if values and first[0] and values != first[0]:
                    fail(f"{path} row group {g}: {column}'s dictionary is {values}, "
                         f"{first[1]} row group {first[2]} has {first[0]}")
    parts = [p for p in paths if os.path.basename(p) != "pareto.parquet"]
    frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    for column in seen:
        if str(frame[column].dtype) != "category":
            fail(f"{run}: the parts' {column} concatenate as {frame[column].dtype}, not category")
    return len(seen)


def main(runs):
    pandas_types, polars_types, duckdb_types = {}, {}, {}
    modes, sized = set(), set()
    files = 0
    for run in runs:
        manifest = json.load(open(os.path.join(run, "manifest.json")))
        mode = manifest["mode"]
        modes.add(mode)
        sweep = open(os.path.join(run, "sweep.toml")).read()
        sized.add(bool(re.search(r'^\s*racks\s*=\s*"auto"', sweep, re.M)))
        plain = documented(mode)
        with_ties = dict(plain, tie_group=tie_group_documented())
        parts = sorted(glob.glob(os.path.join(run, "configs", "*.parquet")))
        if len(parts) < 2:
            fail(f"{run}: {len(parts)} part; run it with a smaller --part-rows")
        pareto = os.path.join(run, "pareto.parquet")
        for path in parts + [pareto, os.path.join(run, "configs")]:
            docs = with_ties if path == pareto else plain
            files += 1
            frame = pd.read_parquet(path)
            for column in frame.columns:
                dtype = str(frame[column].dtype)
                pandas_types.setdefault(column, {}).setdefault(dtype, []).append(path)
                if dtype != docs[column][0]:
                    fail(f"{path}: pandas reads {column} as {dtype}, docs/schema.md says {docs[column][0]}")
            if os.path.isdir(path):
                continue
            for column, dtype in pl.read_parquet_schema(path).items():
                polars_types.setdefault(column, {}).setdefault(str(dtype), []).append(path)
            schema = pq.read_schema(path)
            columns = json.loads(pq.read_metadata(path).metadata[b"racksweep.columns"])
            for field in schema:
                unit, doc = docs[field.name][1:]
                meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
                if meta != {"unit": unit, "description": doc}:
                    fail(f"{path}: field {field.name} carries {meta}, docs/schema.md says unit {unit!r}, {doc!r}")
                if columns[field.name] != meta:
                    fail(f"{path}: racksweep.columns says {columns[field.name]} of {field.name}, its field {meta}")
        same_dictionaries(run, parts + [pareto])
        glob_path = os.path.join(run, "configs", "*.parquet")
        for column, dtype, *_ in duckdb.execute(f"describe select * from '{glob_path}'").fetchall():
            duckdb_types.setdefault(column, {}).setdefault(dtype, []).append(glob_path)
        if mode == "inference":
            # `bound_by` is no SQL keyword: it selects by name, unquoted.
            rows = duckdb.execute(f"select count(bound_by), count(*) from '{glob_path}'").fetchone()
            if rows[1] != manifest["rows_written"]:
                fail(f"{run}: select bound_by read {rows[1]} rows of {manifest['rows_written']}")
    if modes != {"inference", "training"} or sized != {True, False}:
        fail(f"give runs of both modes, sized and not (got modes {sorted(modes)}, sized {sorted(sized)})")
    same_everywhere("pandas", pandas_types)
    same_everywhere("polars", polars_types)
    same_everywhere("duckdb", duckdb_types)
    print(
        f"ok: {len(runs)} runs, {files} files: pandas, polars and DuckDB read each of "
        f"{len(pandas_types)} columns with one type; units and meanings are docs/schema.md's; "
        f"each run's label dictionaries are the same in every row group of every file"
    )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        fail("usage: check_dtypes.py RUN_DIR [RUN_DIR ...]")
    main(sys.argv[1:])
