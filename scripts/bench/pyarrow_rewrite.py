"""The writer's yardstick (issue 24): pyarrow re-writes the first ROWS rows of a run's configs on
one thread, with racksweep's compression (zstd level 1), dictionaries for the label columns only
and chunk statistics, and prints its rate in rows/s. Reading is not timed: the table is in memory
before the clock starts.

Usage: pyarrow_rewrite.py RUN_DIR OUT_FILE [ROWS]
"""

import glob
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    run_dir, out = sys.argv[1], sys.argv[2]
    want = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    batches, rows = [], 0
    for part in sorted(glob.glob(os.path.join(run_dir, "configs", "*.parquet"))):
        for batch in pq.ParquetFile(part).iter_batches(batch_size=131_072):
            batches.append(batch)
            rows += batch.num_rows
            if rows >= want:
                break
        if rows >= want:
            break
    table = pa.Table.from_batches(batches).slice(0, want)
    labels = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
    start = time.perf_counter()
    pq.write_table(
        table,
        out,
        compression="zstd",
        compression_level=1,
        use_dictionary=labels,
        row_group_size=131_072,
        write_statistics=True,
    )
    seconds = time.perf_counter() - start
    print(f"{table.num_rows} {seconds:.6f} {table.num_rows / seconds:.0f}")


if __name__ == "__main__":
    main()
