#!/usr/bin/env bash
# ablate against Python Polars, DuckDB and pandas + numpy on the same results file (issues 12
# and 28): whole processes, run alternately, median of REPEATS, peak RSS from GNU time.
#
#   bash benches/compare.sh                            # 20,000 cases × 100 arms × 5 repeats = 10M rows
#   CASES=2000 bash benches/compare.sh                 # 1M rows
#   CASES=200000 TOOLS="ablate polars" bash benches/compare.sh   # 100M rows
#   REPORT=1 bash benches/compare.sh                   # also `ablate report` on the same folder
#   CELL_REPEATS=50 TOOLS="ablate polars" bash benches/compare.sh   # 100M rows, the same matrix
#
# CELL_REPEATS (default 5) sets the repeats per cell, so the row count can grow with the case ×
# arm matrix fixed: the cost per row, apart from the matrix's size.
#
# `pandas` is benches/pandas_sweep.py with its 1000 bootstrap resamples (what the issue measured);
# `pandas-nb` the same without them, since ablate draws none below 100,000 units (its intervals
# there are small-sample ones).
#
# Installs polars, duckdb, pandas, numpy and pyarrow into benches/.venv from PyPI when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cases="${CASES:-20000}"
cell_repeats="${CELL_REPEATS:-5}"
repeats="${REPEATS:-3}"
tools="${TOOLS:-ablate polars duckdb pandas pandas-nb}"
suffix=""
if [ "$cell_repeats" != 5 ]; then suffix="-r$cell_repeats"; fi
dir="${ABLATE_BENCH_DIR:-/tmp/ablate-bench-$cases$suffix}"
# shellcheck source=benches/setup.sh
source "$here/setup.sh"

# name → command
declare -A cmd=(
  [ablate]="$ablate sweep $dir --quiet --json --bootstrap 1000"
  [report]="$ablate report $dir --quiet --bootstrap 1000 --out /tmp/ablate-bench-report-$cases"
  [polars]="$py $here/group_by.py polars $dir"
  [duckdb]="$py $here/group_by.py duckdb $dir"
  [pandas]="$py $here/pandas_sweep.py $dir 1000"
  [pandas-nb]="$py $here/pandas_sweep.py $dir 0"
)
if [ -n "${REPORT:-}" ]; then tools="$tools report"; fi
declare -A times mems
for r in $(seq "$repeats"); do
  for name in $tools; do
    out=$( { /usr/bin/time -f "%e %M" bash -c "${cmd[$name]} > /dev/null"; } 2>&1 | tail -1)
    times[$name]+="${out%% *} "
    mems[$name]+="${out##* } "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rows=$("$py" -c "import pyarrow.parquet as pq, sys; print(pq.ParquetFile(sys.argv[1]).metadata.num_rows)" "$dir/results.parquet")
bytes=$(stat -c %s "$dir/results.parquet")
printf '%s rows, %.1f MB of Parquet\n' "$rows" "$(echo "$bytes / 1000000" | bc -l)"
printf '%-8s %9s %12s\n' tool seconds "peak RSS MB"
declare -A med medm
for name in $tools; do
  med[$name]=$(echo "${times[$name]}" | median)
  medm[$name]=$(echo "${mems[$name]}" | median)
  printf '%-8s %9s %12.0f\n' "$name" "${med[$name]}" "$(echo "${medm[$name]} / 1024" | bc -l)"
done
ratio() { echo "$1 / $2" | bc -l | cut -c1-5; }
if [[ " $tools " == *" polars "* ]]; then
  echo "ablate / polars time: $(ratio "${med[ablate]}" "${med[polars]}") (target ≤ 1.0)"
  echo "ablate / polars peak RSS: $(ratio "${medm[ablate]}" "${medm[polars]}") (target ≤ 1.0)"
fi
if [[ " $tools " == *" duckdb "* ]]; then
  echo "ablate / duckdb time: $(ratio "${med[ablate]}" "${med[duckdb]}") (moonshot < 1)"
fi
if [[ " $tools " == *" pandas "* ]]; then
  echo "pandas / ablate time: $(ratio "${med[pandas]}" "${med[ablate]}") (target ≥ 10)"
fi
if [[ " $tools " == *" pandas-nb "* ]]; then
  # Below 100,000 units ablate's intervals use no resamples, so it draws none: pandas without
  # its bootstrap loop is the like-for-like part.
  echo "pandas without its bootstrap / ablate time: $(ratio "${med[pandas-nb]}" "${med[ablate]}")"
fi
if [[ " $tools " == *" report "* ]]; then
  echo "report / sweep time: $(ratio "${med[report]}" "${med[ablate]}") (target ≤ 2)"
fi
printf 'ablate sweep throughput: %.1f M rows/s, %.1f MB/s of Parquet\n' \
  "$(echo "$rows / ${med[ablate]} / 1000000" | bc -l)" \
  "$(echo "$bytes / ${med[ablate]} / 1000000" | bc -l)"
