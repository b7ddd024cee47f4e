#!/usr/bin/env bash
# ablate's sweep and report against the in-process floors of Polars and DuckDB (issue 48), on the
# 10M-row benchmark (20,000 cases × 100 arms × 5 repeats) unless CASES says otherwise:
#
#   bash benches/floors.sh                 # medians of 5
#   REPEATS=9 CASES=2000 bash benches/floors.sh
#
# Builds the release binary, and installs polars, duckdb and pyarrow into benches/.venv from
# PyPI when missing (the same environment as benches/compare.sh). Run it on a quiet machine: the
# table ends with the load average.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cases="${CASES:-20000}"
dir="${ABLATE_BENCH_DIR:-/tmp/ablate-bench-$cases}"
cd "$root"
cargo build --release --quiet
ablate="$root/target/release/ablate"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet polars duckdb pandas numpy pyarrow
fi
if [ ! -f "$dir/results.parquet" ]; then
  "$ablate" simulate --quiet --out "$dir" --cases "$cases" --stress-cases 0 --arms 100 \
    --repeats 5 --shadow-requests 10 --context-requests 5 > /dev/null
fi
"$here/.venv/bin/python" "$here/floors.py" "$dir" "$ablate" "${REPEATS:-5}"
