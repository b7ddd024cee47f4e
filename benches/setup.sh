# Sourced by compare.sh and floors.sh: builds the release binary ($ablate; or takes $ABLATE),
# makes benches/.venv ($py: polars, duckdb, pandas, numpy and pyarrow from PyPI) when missing,
# and writes the benchmark experiment into $dir when missing ($cases cases × 100 arms ×
# $cell_repeats repeats).
# Expects $here, $root, $dir, $cases and $cell_repeats to be set.
cd "$root"
# ABLATE=path times a binary already built (say, the profiling build) instead of building one.
if [ -n "${ABLATE:-}" ]; then
  ablate="$ABLATE"
else
  cargo build --release --quiet
  ablate="$root/target/release/ablate"
fi
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet polars duckdb pandas numpy pyarrow
fi
py="$here/.venv/bin/python"
if [ ! -f "$dir/results.parquet" ]; then
  "$ablate" simulate --quiet --out "$dir" --cases "$cases" --stress-cases 0 --arms 100 \
    --repeats "$cell_repeats" --shadow-requests 10 --context-requests 5 > /dev/null
fi
