"""ablate against the in-process floors (issue 48): in one warm Python process, Polars' scan +
group-by, DuckDB's group-by and Polars' bare read of the columns ablate decodes, each timed
inside the process (no interpreter start-up, no imports); beside them `ablate sweep` and `ablate
report` as whole processes (what a user runs). Runs alternate, one warm-up each, then REPEATS
rounds; the table gives medians, ranges and `sweep` / floor, in wall time and in CPU time (user +
system, every thread: the process's own for the in-process floors, the child's for ablate). On a
2-core machine shared with other work the wall time of one run can move by 20%; the CPU time
moves far less, so the CPU ratio separates two builds that the wall ratio cannot.

Usage: python benches/floors.py DIR ABLATE [REPEATS]   (benches/floors.sh sets it up)
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import duckdb
import polars as pl
import pyarrow.parquet as pq

directory, ablate = sys.argv[1], sys.argv[2]
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
path = f"{directory}/results.parquet"
# The columns ablate's results reader decodes, those this file has.
wanted = ["case_id", "arm", "repeat", "score", "tokens_in", "passed"]
columns = [c for c in wanted if c in pq.read_schema(path).names]
rows = pq.read_metadata(path).num_rows
report_out = tempfile.mkdtemp(prefix="ablate-floors-report-")
con = duckdb.connect()


def polars_group_by():
    pl.scan_parquet(path).group_by(["case_id", "arm"]).agg(pl.col("score").mean()).collect()


def duckdb_group_by():
    con.sql(
        f"SELECT case_id, arm, avg(score) FROM read_parquet('{path}') GROUP BY ALL"
    ).to_arrow_table()


def polars_bare_read():
    pl.read_parquet(path, columns=columns)


def run(*args):
    subprocess.run([ablate, *args], stdout=subprocess.DEVNULL, check=True)


def ablate_sweep():
    run("sweep", directory, "--quiet", "--json", "--bootstrap", "1000")


def ablate_report():
    run("report", directory, "--quiet", "--bootstrap", "1000", "--out", f"{report_out}/r")


tools = {
    "ablate sweep (whole process)": ablate_sweep,
    "ablate report (whole process)": ablate_report,
    "Polars scan + group-by (case, arm), in-process": polars_group_by,
    "DuckDB group-by (case, arm), in-process": duckdb_group_by,
    f"Polars bare read of {', '.join(columns)} (the decode floor)": polars_bare_read,
}


def cpu_seconds():
    """User + system CPU time so far of this process and of its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


times = {name: [] for name in tools}
cpu = {name: [] for name in tools}
for name, f in tools.items():
    f()  # warm-up: file cache, DuckDB's and Polars' thread pools
for _ in range(repeats):
    for name, f in tools.items():
        start, start_cpu = time.perf_counter(), cpu_seconds()
        f()
        times[name].append(time.perf_counter() - start)
        cpu[name].append(cpu_seconds() - start_cpu)

median = {name: statistics.median(t) for name, t in times.items()}
median_cpu = {name: statistics.median(t) for name, t in cpu.items()}
sweep = median["ablate sweep (whole process)"]
sweep_cpu = median_cpu["ablate sweep (whole process)"]
load = os.getloadavg()[0]
print(
    f"{rows:,} rows ({os.path.getsize(path) / 1e6:.1f} MB), medians of {repeats}, "
    f"Polars {pl.__version__}, DuckDB {duckdb.__version__}, {os.cpu_count()} cores, "
    f"load average {load:.2f} at the end\n"
)
print("| | median | range | `sweep` / it | CPU (median) | `sweep` / it, CPU |")
print("|---|---|---|---|---|---|")
for name, t in times.items():
    print(
        f"| {name} | {median[name]:.3f} s | {min(t):.3f}–{max(t):.3f} s | "
        f"{sweep / median[name]:.2f} | {median_cpu[name]:.3f} s | {sweep_cpu / median_cpu[name]:.2f} |"
    )
report = median["ablate report (whole process)"]
report_cpu = median_cpu["ablate report (whole process)"]
print(
    f"\n`report` / `sweep`: {report / sweep:.2f} in wall time, {report_cpu / sweep_cpu:.2f} in CPU time "
    "(target: report ≤ max(0.45 s, 1.5 × sweep), in wall time)"
)
