#!/usr/bin/env bash
# Seeds the corpora and runs every fuzz target for SECONDS each (default 300), one after another.
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Run from the repository root: bash fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-300}
bash seed.sh
for t in csv_table parquet_table manifest policy; do
  echo "== $t ($secs s)"
  cargo +nightly fuzz run --dev -s none "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 2>&1 \
    | grep -E "^#[0-9]+.*(DONE|pulse)|ERROR|panicked|SUMMARY|Done [0-9]+ runs" | tail -4
done
