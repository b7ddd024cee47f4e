"""Where a report's CPU goes, by analysis: reads `perf script -F comm,tid,time,ip,sym` output of
a `perf record --call-graph dwarf` run and gives each sample to the innermost frame that names an
analysis (or the load, the charts and pages, the JSON). Innermost, because rayon's work-stealing
runs one task inside another's wait: a thread blocked in Polars' samples read or CSV writer
executes the curve's resamples, and its stack holds both.

    perf record -F 999 --call-graph dwarf,32768 -o perf.data \\
        target/release/ablate report DIR --quiet --bootstrap 1000 --out /tmp/r
    perf script -i perf.data -F comm,tid,time,ip,sym > perf.txt
    python3 benches/perf_by_analysis.py perf.txt [LEAVES]

Needs a release build with symbols (CARGO_PROFILE_RELEASE_STRIP=false
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release). LEAVES (default 0) lists
that many of each part's hottest leaf functions.
"""

import collections
import sys

# The first pattern a frame contains names its part; frames are tried innermost first.
PARTS = [
    ("curve", "ablate_analysis::curve::"),
    ("sweep", "ablate_analysis::sweep::"),
    ("variance", "ablate_analysis::variance::"),
    ("interactions", "ablate_analysis::interactions::"),
    ("reweight", "ablate_analysis::reweight::"),
    ("need", "ablate_analysis::need::"),
    ("selector", "ablate_analysis::selector::"),
    ("stress", "ablate_analysis::stress::"),
    ("decision", "ablate_analysis::decision::"),
    ("record", "ablate_analysis::record::"),
    ("drill", "ablate_analysis::drill"),
    ("check", "ablate_analysis::check::"),
    # Every arm's pairs, built before the analyses (`Paired::build_all`) or on demand.
    ("pairs", "Paired::build_"),
    ("shadow", "ablate_analysis::shadow"),
    ("context", "ablate_analysis::context"),
    ("charts and pages", "ablate_report::"),
    ("load", "ablate_io::"),
    ("json", "serde_json"),
]


def part_of(frames):
    for frame in frames:
        for name, pattern in PARTS:
            if pattern in frame:
                return name
    return "other"


def samples(path):
    """Yields each sample's frames, innermost first."""
    frames = None
    with open(path, errors="replace") as lines:
        for line in lines:
            if not line.strip():
                if frames is not None:
                    yield frames
                frames = None
            elif not line.startswith((" ", "\t")):
                frames = []
            elif frames is not None:
                parts = line.strip().split(None, 1)
                frames.append(parts[1] if len(parts) > 1 else "?")
    if frames is not None:
        yield frames


def main():
    leaves = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    counts = collections.Counter()
    hottest = collections.defaultdict(collections.Counter)
    for frames in samples(sys.argv[1]):
        part = part_of(frames)
        counts[part] += 1
        hottest[part][frames[0][:90] if frames else "?"] += 1
    total = sum(counts.values())
    print("| part | samples | share |")
    print("|---|---|---|")
    for part, n in counts.most_common():
        print(f"| {part} | {n} | {100 * n / total:.1f}% |")
        for leaf, m in hottest[part].most_common(leaves):
            print(f"|   {leaf} | {m} | |")


if __name__ == "__main__":
    main()
