"""polars over a racksweep run, lazily: only the columns and rows a query needs are read.

    python scripts/analysis/polars_example.py results/quickstart

Needs `pip install polars`.
"""

import sys

import polars as pl

run = sys.argv[1] if len(sys.argv) > 1 else "results/quickstart"
configs = pl.scan_parquet(f"{run}/configs/*.parquet")

# How the best tokens/s/GPU moves with batch, per weight format (feasible rows only).
by_batch = (
    configs.filter(pl.col("feasible"))
    .group_by("weight_dtype", "batch")
    .agg(pl.col("tokens_per_s_per_gpu").max().alias("best_tokens_per_s_per_gpu"))
    .sort("weight_dtype", "batch")
    .collect()
)
print(by_batch)

# The ten cheapest feasible configurations per million output tokens, where cost is known.
cheapest = (
    configs.filter(pl.col("feasible") & pl.col("usd_per_mtok").is_not_null())
    .sort("usd_per_mtok")
    .select("hardware", "racks", "tp", "pp", "ep", "batch", "usd_per_mtok", "tokens_per_s_per_user")
    .head(10)
    .collect()
)
print(cheapest)
