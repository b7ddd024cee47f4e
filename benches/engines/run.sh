#!/usr/bin/env bash
# The warehouse path on real engines: `ablate sql sweep` run unchanged by DuckDB and by Spark
# (local mode) over a generated 10M-row results table, then `ablate sweep --from-aggregates`
# compared with the direct run. Prints: engine, rows, seconds, whether the results match.
#
#   bash benches/engines/run.sh            # N = 10M rows (20,000 cases × 100 arms × 5 repeats)
#   CASES=2000 bash benches/engines/run.sh  # smaller, for a quick look
#
# Installs DuckDB and PySpark into benches/engines/.venv from PyPI; Spark needs Java
# (Debian: apt-get install default-jre-headless). Not run by CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${ABLATE_ENGINES_DIR:-/tmp/ablate-engines}"
cases="${CASES:-20000}"
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
rows=$("$py" -c "import duckdb,sys; print(duckdb.sql(\"select count(*) from read_parquet('$exp/results.parquet')\").fetchall()[0][0])")

"$ablate" sweep "$exp" --quiet --json --bootstrap 1000 > "$work/direct.json"

printf '%-8s %12s %9s  %s\n' engine rows seconds "matches the direct run"
for engine in duckdb spark; do
  sql="$work/$engine.sql"
  out="$work/agg-$engine.parquet"
  if [ "$engine" = duckdb ]; then
    "$ablate" sql sweep "$exp" --dialect duckdb --table "results=$exp/results.parquet" > "$sql"
    start=$(date +%s.%N)
    "$py" - "$sql" "$out" <<'PY'
import sys, duckdb
q = open(sys.argv[1]).read()
duckdb.sql(q).write_parquet(sys.argv[2])
PY
  else
    if ! command -v java > /dev/null; then
      printf '%-8s %12s %9s  %s\n' spark "$rows" - "skipped: no java (apt-get install default-jre-headless)"
      continue
    fi
    "$ablate" sql sweep "$exp" --dialect spark --table "results=$exp/results.parquet" > "$sql"
    start=$(date +%s.%N)
    "$py" - "$sql" "$out" <<'PY'
import sys, os, glob, shutil
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").appName("ablate")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
q = open(sys.argv[1]).read()
tmp = sys.argv[2] + ".dir"
shutil.rmtree(tmp, ignore_errors=True)
spark.sql(q).coalesce(1).write.parquet(tmp)
part = glob.glob(os.path.join(tmp, "part-*.parquet"))[0]
shutil.move(part, sys.argv[2]); shutil.rmtree(tmp)
PY
  fi
  end=$(date +%s.%N)
  "$ablate" sweep "$exp" --quiet --json --bootstrap 1000 --from-aggregates "$out" > "$work/$engine.json"
  match=$("$py" - "$work/direct.json" "$work/$engine.json" <<'PY'
import json, sys
def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-10 * max(abs(a), abs(b), 1.0)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b
print("yes" if same(json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))) else "NO")
PY
)
  printf '%-8s %12s %9.2f  %s\n' "$engine" "$rows" "$(echo "$end - $start" | bc)" "$match"
done
