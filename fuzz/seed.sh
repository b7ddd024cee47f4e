#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets from the demo experiment and the tests' tiny CSV
# experiment (nothing binary is committed). Run from the repository root: bash fuzz/seed.sh
set -euo pipefail
cd "$(dirname "$0")"
demo=../notebooks-data/support-eval-v3
rm -rf corpus && mkdir -p corpus/{csv_table,parquet_table,manifest,policy}
i=0
for stem in results cases arms units mix; do
  printf "\\x$(printf %02x $i)" > corpus/parquet_table/$stem
  cat "$demo/$stem.parquet" >> corpus/parquet_table/$stem
  i=$((i + 1))
done
printf '\x00case_id,arm,repeat,score\nc1,baseline,0,1\nc1,without-ex1,0,0.5\n' > corpus/csv_table/results
printf '\x01case_id,turns,gold_rank,stress,cluster\nc1,single,1,false,k1\n' > corpus/csv_table/cases
printf '\x02arm,removed\nbaseline,\nwithout-ex1,few_shot/01\n' > corpus/csv_table/arms
printf '\x03unit,block,tokens\nfew_shot/01,few_shot,200\n' > corpus/csv_table/units
printf '\x04turns,share\nsingle,0.77\nmulti,0.23\n' > corpus/csv_table/mix
cp "$demo/experiment.toml" corpus/manifest/demo
cat > corpus/policy/readme <<'TOML'
model_limit = 32000
expected_output = 2000
output_buffer = 1000
safety_margin = 1000
soft_limit_ratio = 0.75
global_budget = 20000

[budgets]
retrieval = 12000
history = 6000
TOML
echo "seeded: $(find corpus -type f | wc -l) files"
