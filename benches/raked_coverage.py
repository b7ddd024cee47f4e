"""Production intervals of `ablate reweight` against known truth, raked and post-stratified, in
the world a 2026-12-08 review built (benches/README.md, "Raked and reverse worlds"): two stratum
columns A and B, independent in the eval set (20% a1, 20% b1) and in production (60%, 60%), so
that the cell (a1, b1) is 4% of the set and 36% of production, and the arm's losses sit there.

    benches/.venv/bin/python benches/raked_coverage.py ABLATE_BINARY [RUNS] [WORK_DIR]

Each run writes an experiment (3 arms, one repeat), then judges it raked (--mix A --mix B) and
post-stratified on the crossed mix (--mix AB):
- `cont` (continuous drops, cell means 0, 0.04, 0.04, 0.15, noise 0.1) and `bin` (losses with
  those probabilities), the threshold at the true production drop: the coverage of the 95%
  interval, and how often some arm is called confident (any confident verdict is wrong there:
  the family error, at most 0.05);
- `bin2` (0.25 in the heavy cell; the arm truly needed in production, 0.109, the threshold 0.06):
  how often some arm is called confidently removable in production (wrong; about 0 expected).
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import polars as pl

PA_E, PB_E, PA_P, PB_P = 0.2, 0.2, 0.6, 0.6
MEANS = {
    "cont": {(0, 0): 0.0, (1, 0): 0.04, (0, 1): 0.04, (1, 1): 0.15},
    "bin": {(0, 0): 0.0, (1, 0): 0.04, (0, 1): 0.04, (1, 1): 0.15},
    "bin2": {(0, 0): 0.0, (1, 0): 0.04, (0, 1): 0.04, (1, 1): 0.25},
}


def production_truth(kind):
    mu = MEANS[kind]
    return sum(
        mu[(a, b)] * (PA_P if a else 1 - PA_P) * (PB_P if b else 1 - PB_P)
        for a in (0, 1)
        for b in (0, 1)
    )


def write(d, n, kind, rng, guarantee, threshold, arms=3):
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    a = (rng.random(n) < PA_E).astype(int)
    b = (rng.random(n) < PB_E).astype(int)
    ids = [f"c{i:04d}" for i in range(n)]
    pl.DataFrame(
        {"case_id": ids, "A": ["a1" if x else "a0" for x in a], "B": ["b1" if x else "b0" for x in b]}
    ).write_parquet(f"{d}/cases.parquet")
    base = np.clip(0.6 + 0.1 * rng.standard_normal(n), 0, 1) if kind == "cont" else np.ones(n)
    mu = np.array([MEANS[kind][(x, y)] for x, y in zip(a, b)])
    rows = {"case_id": list(ids), "arm": ["baseline"] * n, "repeat": [0] * n, "score": list(base)}
    for k in range(arms):
        if kind == "cont":
            score = base - mu - 0.1 * rng.standard_normal(n)
        else:
            score = np.where(rng.random(n) < mu, 0.0, 1.0)
        rows["case_id"] += ids
        rows["arm"] += [f"arm{k}"] * n
        rows["repeat"] += [0] * n
        rows["score"] += [float(s) for s in score]
    pl.DataFrame(rows).write_parquet(f"{d}/results.parquet")
    names = ["baseline"] + [f"arm{k}" for k in range(arms)]
    removed = [[]] + [[f"u{k}"] for k in range(arms)]
    pl.DataFrame(
        {"arm": names, "removed": removed}, schema={"arm": pl.Utf8, "removed": pl.List(pl.Utf8)}
    ).write_parquet(f"{d}/arms.parquet")
    units = [f"u{k}" for k in range(arms)]
    pl.DataFrame({"unit": units, "block": ["b"] * arms, "tokens": [100.0] * arms}).write_parquet(
        f"{d}/units.parquet"
    )
    pl.DataFrame({"A": ["a0", "a1"], "share": [1 - PA_P, PA_P]}).write_parquet(f"{d}/mixA.parquet")
    pl.DataFrame({"B": ["b0", "b1"], "share": [1 - PB_P, PB_P]}).write_parquet(f"{d}/mixB.parquet")
    pl.DataFrame(
        {
            "A": ["a0", "a0", "a1", "a1"],
            "B": ["b0", "b1", "b0", "b1"],
            "share": [
                (1 - PA_P) * (1 - PB_P),
                (1 - PA_P) * PB_P,
                PA_P * (1 - PB_P),
                PA_P * PB_P,
            ],
        }
    ).write_parquet(f"{d}/mixAB.parquet")
    with open(f"{d}/experiment.toml", "w") as f:
        f.write(
            f'set = "raked"\nbaseline_arm = "baseline"\nthreshold_drop = {threshold}\n'
            f'strata = ["A", "B"]\nguarantee = "{guarantee}"\n'
        )


def reweight(binary, d, *mixes):
    args = [binary, "reweight", d, "--json", "--quiet"]
    for m in mixes:
        args += ["--mix", f"{d}/{m}.parquet"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    work = sys.argv[3] if len(sys.argv) > 3 else "/tmp/ablate-raked-coverage"
    print("| world | n | guarantee | design | runs | coverage | P(some arm confident) | fallbacks |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, n in (("cont", 60), ("cont", 100), ("bin", 100), ("bin2", 100)):
        guarantee = "normal"
        truth = production_truth(kind)
        threshold = 0.06 if kind == "bin2" else truth
        rng = np.random.default_rng(11 + n + len(kind))
        tally = {"raked": [0, 0, 0, 0, 0], "crossed": [0, 0, 0, 0, 0]}
        for _ in range(runs):
            d = f"{work}/{kind}-{n}"
            write(d, n, kind, rng, guarantee, threshold)
            for design, mixes in (("raked", ("mixA", "mixB")), ("crossed", ("mixAB",))):
                j = reweight(binary, d, *mixes)
                if j is None:
                    continue
                t = tally[design]
                t[0] += 1
                wrong = False
                for a in j["arms"]:
                    lo, hi = a["ci_production_low"], a["ci_production_high"]
                    if lo is not None:
                        t[1] += 1
                        t[2] += lo <= truth <= hi
                    if kind == "bin2":
                        wrong |= (
                            a["confidence_production"] == "confident"
                            and a["verdict_production"] == "removable-on-this-set"
                        )
                    else:
                        wrong |= a["confidence_production"] == "confident"
                t[3] += wrong
                t[4] += any(w["code"] in ("reweight.thin_cell", "reweight.thin_stratum") for w in j["warnings"])
        for design, t in tally.items():
            print(
                f"| {kind} | {n} | {guarantee} | {design} | {t[0]} | {t[2] / max(t[1], 1):.3f} "
                f"| {t[3] / max(t[0], 1):.3f} | {t[4]} |"
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
