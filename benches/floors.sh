#!/usr/bin/env bash
# ablate's sweep and report against the in-process floors of Polars and DuckDB (issue 48), on the
# 10M-row benchmark (20,000 cases × 100 arms × 5 repeats) unless CASES says otherwise:
#
#   bash benches/floors.sh                 # medians of 5
#   REPEATS=9 CASES=2000 bash benches/floors.sh
#   ABLATE=target/release/ablate bash benches/floors.sh   # a binary already built
#
# Builds the release binary, and installs polars, duckdb and pyarrow into benches/.venv from
# PyPI when missing (the same environment as benches/compare.sh). Run it on a quiet machine: the
# table ends with the load average.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cases="${CASES:-20000}"
dir="${ABLATE_BENCH_DIR:-/tmp/ablate-bench-$cases}"
cell_repeats=5
# shellcheck source=benches/setup.sh
source "$here/setup.sh"
"$py" "$here/floors.py" "$dir" "$ablate" "${REPEATS:-5}"
