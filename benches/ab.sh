#!/usr/bin/env bash
# Two ablate binaries, alternated: `sweep` and `report` on the 10M-row benchmark, each run's CPU
# (user + sys) and wall time from /usr/bin/time, then the medians. On a noisy machine the CPU
# time separates two builds where one floors.py run cannot (benches/README.md, fourth pass).
#
#   bash benches/ab.sh BEFORE AFTER [ROUNDS]     # ROUNDS defaults to 7
#
# The data folder is ABLATE_BENCH_DIR or /tmp/ablate-bench-20000 (benches/floors.sh makes it).
set -euo pipefail
a="$1"; b="$2"; rounds="${3:-7}"
dir="${ABLATE_BENCH_DIR:-/tmp/ablate-bench-20000}"
[ -d "$dir" ] || { echo "no benchmark data in $dir: run bash benches/floors.sh once" >&2; exit 2; }
log="$(mktemp)"; out="$(mktemp -d)"
trap 'rm -rf "$log" "$out"' EXIT
for _ in $(seq "$rounds"); do
  for side in A B; do
    bin="$a"; [ "$side" = B ] && bin="$b"
    /usr/bin/time -f "$side sweep %U %S %e" "$bin" sweep "$dir" --quiet --json --bootstrap 1000 >/dev/null 2>>"$log"
    rm -rf "$out/r"
    /usr/bin/time -f "$side report %U %S %e" "$bin" report "$dir" --quiet --bootstrap 1000 --out "$out/r" >/dev/null 2>>"$log"
  done
done
python3 - "$log" "$a" "$b" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 5 and p[0] in ("A", "B"):
        runs[(p[0], p[1])].append((float(p[2]) + float(p[3]), float(p[4])))
print("| binary | verb | CPU (median) | wall (median) |")
print("|---|---|---|---|")
for side, name in (("A", sys.argv[2]), ("B", sys.argv[3])):
    for verb in ("sweep", "report"):
        r = runs[(side, verb)]
        print(f"| {side}: {name} | {verb} | {statistics.median(c for c, _ in r):.2f} s "
              f"| {statistics.median(w for _, w in r):.2f} s |")
PY
