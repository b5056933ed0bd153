"""DuckDB over a training run: the fastest layout per cluster size, what recomputation costs,
and why layouts were turned away.

    python scripts/analysis/training_example.py results/llama3-405b-16k-h100

Needs `pip install duckdb`.
"""

import sys

import duckdb

run = sys.argv[1] if len(sys.argv) > 1 else "results/llama3-405b-16k-h100"
rows = f"read_parquet('{run}/configs/*.parquet')"

# The fastest layout at each cluster size and precision, with its MFU and run cost.
print(duckdb.sql(f"""
    select hardware, gpus, precision,
           arg_min(format('tp {{}} pp {{}} cp {{}} dp {{}} mb {{}} v {{}} zero {{}} {{}}',
                          tp, pp, cp, dp, microbatch, virtual_stages, zero_stage, recompute),
                   effective_time_to_train_days) as layout,
           round(min(effective_time_to_train_days), 1) as days,
           round(arg_min(mfu_pct, effective_time_to_train_days), 1) as mfu_pct,
           round(arg_min(usd_per_run, effective_time_to_train_days) / 1e6, 2) as musd
    from {rows}
    where feasible
    group by all
    order by hardware, gpus, precision
"""))

# What each recomputation mode costs: the best step time with it, per cluster size.
print(duckdb.sql(f"""
    select gpus, recompute, round(min(step_time_s), 2) as best_step_s,
           round(min(hbm_used_gb_per_gpu), 1) as least_hbm_gb
    from {rows}
    where feasible
    group by all
    order by gpus, best_step_s
"""))

# Why layouts cannot train.
print(duckdb.sql(f"""
    select infeasible_reason, count(*) as layouts
    from {rows}
    where not feasible
    group by all
    order by layouts desc
"""))
