"""The bare group-by ablate's results path is compared with (benches/compare.sh): mean score per
(case_id, arm) of DIR/results.parquet, by Python Polars or DuckDB, materialised as a table.

Usage: python3 benches/group_by.py polars|duckdb DIR
"""

import sys

engine, directory = sys.argv[1], sys.argv[2]
path = f"{directory}/results.parquet"
if engine == "polars":
    import polars as pl

    pl.scan_parquet(path).group_by(["case_id", "arm"]).agg(pl.col("score").mean()).collect()
elif engine == "duckdb":
    import duckdb

    query = f"SELECT case_id, arm, avg(score) FROM read_parquet('{path}') GROUP BY ALL"
    duckdb.sql(query).to_arrow_table()
else:
    sys.exit(f"unknown engine {engine}: polars or duckdb")
