"""pandas over a racksweep run: the frontier as a table for a planning review, and a summary of
the whole grid.

    python scripts/analysis/pandas_example.py results/quickstart

Needs `pip install pandas pyarrow`. pandas reads the whole table into memory: for grids of
hundreds of millions of rows, filter with DuckDB or polars first.
"""

import sys

import pandas as pd
import pyarrow.parquet as pq

run = sys.argv[1] if len(sys.argv) > 1 else "results/quickstart"
pareto = pd.read_parquet(f"{run}/pareto.parquet")
columns = ["hardware", "racks", "tp", "pp", "ep", "batch", "weight_dtype",
           "tokens_per_s_per_gpu", "tokens_per_s_per_user", "ttft_ms", "usd_per_mtok"]
print(pareto[columns].to_string(index=False))

# Every column carries its unit and meaning as Parquet field metadata: headers for a chart.
schema = pq.read_schema(f"{run}/pareto.parquet")
for name in ["tokens_per_s_per_user", "usd_per_mtok"]:
    meta = schema.field(name).metadata
    print(f"{name} [{meta[b'unit'].decode()}]: {meta[b'description'].decode()}")

configs = pd.read_parquet(f"{run}/configs", columns=["hardware", "feasible", "tokens_per_s_per_gpu"])
print(configs.groupby("hardware", observed=True).agg(
    configurations=("feasible", "size"),
    feasible=("feasible", "sum"),
    best_tokens_per_s_per_gpu=("tokens_per_s_per_gpu", "max"),
))
