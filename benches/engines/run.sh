#!/usr/bin/env bash
# The warehouse path on real engines: the queries `ablate sql` prints, run unchanged by DuckDB and
# by Spark (local mode), then `ablate VERB --from-aggregates` compared with the direct run:
#   - sweep   over a generated 10M-row results table (20,000 cases × 100 arms × 5 repeats);
#   - shadow  over a generated 10M-row shadow log (3.3M requests, --by turns), and once more with
#             --cluster-by slice (the Poisson-bootstrap replicates; the se is then compared
#             within Monte Carlo error, 15%, since each engine draws its own weights);
#   - context over a generated 10M-row context log (385,000 agent requests).
# Prints: engine, verb, rows, seconds, whether the results match.
#
#   bash benches/engines/run.sh                               # 10M rows each
#   CASES=2000 SHADOW=100000 CONTEXT=5000 bash benches/engines/run.sh   # a quick look
#
# Installs DuckDB and PySpark into benches/engines/.venv from PyPI; Spark needs Java
# (Debian: apt-get install default-jre-headless). Not run by CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${ABLATE_ENGINES_DIR:-/tmp/ablate-engines}"
cases="${CASES:-20000}"
shadow_requests="${SHADOW:-3333334}"
context_requests="${CONTEXT:-385000}"
mkdir -p "$work"
cd "$root"
cargo build --release --quiet
ablate="$root/target/release/ablate"

if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet duckdb pyspark
fi
py="$here/.venv/bin/python"

exp="$work/exp-$cases"
if [ ! -f "$exp/results.parquet" ]; then
  "$ablate" simulate --quiet --out "$exp" --cases "$cases" --stress-cases 0 --arms 100 --repeats 5 \
    --shadow-requests 10 --context-requests 5 > /dev/null
fi
logs="$work/logs-$shadow_requests-$context_requests"
if [ ! -f "$logs/shadow.parquet" ]; then
  "$ablate" simulate --quiet --out "$logs" --cases 10 --shadow-requests "$shadow_requests" \
    --context-requests "$context_requests" > /dev/null
fi
count() {
  "$py" -c "import duckdb; print(duckdb.sql(\"select count(*) from read_parquet('$1')\").fetchall()[0][0])"
}

# run_query ENGINE SQL OUT: runs the query file on the engine, writes one Parquet file.
run_query() {
  if [ "$1" = duckdb ]; then
    "$py" - "$2" "$3" <<'PY'
import sys, duckdb
duckdb.sql(open(sys.argv[1]).read()).write_parquet(sys.argv[2])
PY
  else
    # Spark's own logging goes to a file beside the output, not into the table.
    "$py" - "$2" "$3" 2> "$3.spark.log" <<'PY'
import sys, os, glob, shutil
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").appName("ablate")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
         .config("spark.driver.memory", "4g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
q = open(sys.argv[1]).read()
tmp = sys.argv[2] + ".dir"
shutil.rmtree(tmp, ignore_errors=True)
spark.sql(q).coalesce(1).write.parquet(tmp)
part = glob.glob(os.path.join(tmp, "part-*.parquet"))[0]
shutil.move(part, sys.argv[2]); shutil.rmtree(tmp)
PY
  fi
}

# compare DIRECT FROM: counts and sums exactly, estimates to 1e-10, percentiles within the stated
# bound, clustered se within 15%.
compare() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bound = b.get("percentile_error") or (b.get("tokens") or {}).get("percentile_error") or 0
clustered = "Poisson" in str(b.get("se_method", ""))
def same(a, b, key=""):
    if key in ("histogram", "warnings", "percentile_error"):
        return True
    if key in ("p50", "p95", "p99", "max") and bound:
        return abs(a - b) <= bound * abs(a) + 1e-9
    if clustered and key in ("se", "ci_low", "ci_high", "p_holm"):
        return a is None and b is None or abs(a - b) <= 0.15 * max(abs(a), abs(b), 1e-12) + 1e-4
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-10 * max(abs(a), abs(b), 1.0)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, key) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], k) for k in a)
    return a == b
print("yes" if same(a, b) else "NO")
PY
}

printf '%-8s %-22s %12s %9s  %s\n' engine verb rows seconds "matches the direct run"
"$ablate" sweep "$exp" --quiet --json --bootstrap 1000 > "$work/direct-sweep.json"
"$ablate" shadow "$logs" --by turns --quiet --json > "$work/direct-shadow.json"
"$ablate" shadow "$logs" --by turns --cluster-by slice --quiet --json > "$work/direct-shadow-clustered.json"
"$ablate" context "$logs" --quiet --json > "$work/direct-context.json"
results_rows=$(count "$exp/results.parquet")
shadow_rows=$(count "$logs/shadow.parquet")
context_rows=$(count "$logs/context_log.parquet")
for engine in duckdb spark; do
  if [ "$engine" = spark ] && ! command -v java > /dev/null; then
    printf '%-8s %-22s %12s %9s  %s\n' spark all - - "skipped: no java (apt-get install default-jre-headless)"
    continue
  fi
  for case in sweep shadow shadow-clustered context; do
    case "$case" in
      sweep) rows=$results_rows
        "$ablate" sql sweep "$exp" --dialect "$engine" --table "results=$exp/results.parquet" > "$work/$engine-$case.sql"
        verb=(sweep "$exp" --bootstrap 1000) ;;
      shadow) rows=$shadow_rows
        "$ablate" sql shadow "$logs" --dialect "$engine" --by turns --table "shadow=$logs/shadow.parquet" > "$work/$engine-$case.sql"
        verb=(shadow --by turns) ;;
      shadow-clustered) rows=$shadow_rows
        "$ablate" sql shadow "$logs" --dialect "$engine" --by turns --cluster-by slice --table "shadow=$logs/shadow.parquet" > "$work/$engine-$case.sql"
        verb=(shadow --by turns --cluster-by slice) ;;
      context) rows=$context_rows
        "$ablate" sql context "$logs" --dialect "$engine" --table "context_log=$logs/context_log.parquet" > "$work/$engine-$case.sql"
        verb=(context) ;;
    esac
    out="$work/agg-$engine-$case.parquet"
    start=$(date +%s.%N)
    run_query "$engine" "$work/$engine-$case.sql" "$out"
    end=$(date +%s.%N)
    "$ablate" "${verb[@]}" --quiet --json --from-aggregates "$out" > "$work/$engine-$case.json"
    match=$(compare "$work/direct-$case.json" "$work/$engine-$case.json")
    printf '%-8s %-22s %12s %9.2f  %s\n' "$engine" "$case" "$rows" "$(echo "$end - $start" | bc)" "$match"
  done
done
