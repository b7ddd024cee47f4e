#!/usr/bin/env bash
# ablate against Python Polars and pandas + numpy on the same 10M-row results (issue 12's
# targets): whole processes, run alternately, median of REPEATS, peak RSS from GNU time.
#
#   bash benches/compare.sh                 # 20,000 cases × 100 arms × 5 repeats = 10M rows
#   CASES=200000 REPEATS=1 bash benches/compare.sh   # 100M rows
#
# Installs polars, pandas, numpy and pyarrow into benches/.venv from PyPI when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cases="${CASES:-20000}"
repeats="${REPEATS:-3}"
dir="${ABLATE_BENCH_DIR:-/tmp/ablate-bench-$cases}"
cd "$root"
cargo build --release --quiet
ablate="$root/target/release/ablate"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet polars pandas numpy pyarrow
fi
py="$here/.venv/bin/python"
if [ ! -f "$dir/results.parquet" ]; then
  "$ablate" simulate --quiet --out "$dir" --cases "$cases" --stress-cases 0 --arms 100 \
    --repeats 5 --shadow-requests 10 --context-requests 5 > /dev/null
fi
polars_script="import polars as pl, sys; pl.scan_parquet(sys.argv[1] + '/results.parquet').group_by(['case_id', 'arm']).agg(pl.col('score').mean()).collect()"

# name → command
declare -A cmd=(
  [ablate]="$ablate sweep $dir --quiet --json --bootstrap 1000"
  [polars]="$py -c \"$polars_script\" $dir"
  [pandas]="$py $here/pandas_sweep.py $dir 1000"
)
declare -A times mems
for r in $(seq "$repeats"); do
  for name in ablate polars pandas; do
    out=$( { /usr/bin/time -f "%e %M" bash -c "${cmd[$name]} > /dev/null"; } 2>&1 | tail -1)
    times[$name]+="${out%% *} "
    mems[$name]+="${out##* } "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-8s %9s %12s\n' tool seconds "peak RSS MB"
declare -A med medm
for name in ablate polars pandas; do
  med[$name]=$(echo "${times[$name]}" | median)
  medm[$name]=$(echo "${mems[$name]}" | median)
  printf '%-8s %9s %12.0f\n' "$name" "${med[$name]}" "$(echo "${medm[$name]} / 1024" | bc -l)"
done
echo "ablate / polars time: $(echo "${med[ablate]} / ${med[polars]}" | bc -l | cut -c1-5) (target ≤ 1.2)"
echo "pandas / ablate time: $(echo "${med[pandas]} / ${med[ablate]}" | bc -l | cut -c1-5) (target ≥ 10)"
echo "ablate / polars peak RSS: $(echo "${medm[ablate]} / ${medm[polars]}" | bc -l | cut -c1-5) (target ≤ 1.5)"
