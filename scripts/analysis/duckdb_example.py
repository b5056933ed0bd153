"""DuckDB over a racksweep run: the best configuration per hardware under the sweep's
constraints, the frontier, and why configurations could not run.

    python scripts/analysis/duckdb_example.py results/quickstart

Needs `pip install duckdb`. The same SQL works in the duckdb CLI with the path written in.
"""

import sys

import duckdb

run = sys.argv[1] if len(sys.argv) > 1 else "results/quickstart"
con = duckdb.connect()
con.execute(f"create view configs as select * from read_parquet('{run}/configs/*.parquet')")
con.execute(f"create view pareto as select * from read_parquet('{run}/pareto.parquet')")

print("best tokens/s/GPU per hardware, among configurations that run and meet the SLOs and demand:")
print(
    con.sql(
        """
        select hardware, tp, pp, ep, batch, weight_dtype,
               round(tokens_per_s_per_gpu, 1) as tokens_per_s_per_gpu,
               round(tokens_per_s_per_user, 1) as tokens_per_s_per_user,
               round(ttft_ms) as ttft_ms
        from configs
        where feasible and coalesce(meets_slo, true) and coalesce(demand_met, true)
        qualify row_number() over (partition by hardware order by tokens_per_s_per_gpu desc) = 1
        order by tokens_per_s_per_gpu desc
        """
    )
)

print("the frontier:")
print(
    con.sql(
        """
        select hardware, racks, tp, pp, ep, batch, weight_dtype, kv_dtype,
               round(tokens_per_s_per_gpu, 1) as per_gpu, round(tokens_per_s_per_user, 1) as per_user
        from pareto
        """
    )
)

print("configurations per infeasible reason:")
print(
    con.sql(
        """
        select coalesce(infeasible_reason, '(feasible)') as reason, count(*) as configurations
        from configs group by all order by configurations desc
        """
    )
)

print("units of the frontier's cost columns (the files' racksweep.columns metadata):")
print(
    con.sql(
        f"""
        select c.name, json_extract_string(decode(value), '$.' || c.name || '.unit') as unit
        from parquet_kv_metadata('{run}/pareto.parquet'),
             (values ('usd_per_month'), ('usd_per_mtok')) as c(name)
        where key = 'racksweep.columns'
        """
    )
)
