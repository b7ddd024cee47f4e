"""The same analysis as `ablate sweep --bootstrap 1000`, in pandas + numpy, for the comparison in
benches/README.md: read the results, mean per (case, arm), paired drops against the baseline, and
1000 multinomial bootstrap resamples of the cases, each one matrix product (weights @ drops).

Usage: python3 benches/pandas_sweep.py DIR [B]   (B = 0: no bootstrap, the rest only)
"""

import sys
import time

import numpy as np
import pandas as pd

directory = sys.argv[1]
b = int(sys.argv[2]) if len(sys.argv) > 2 else 1000

start = time.perf_counter()
results = pd.read_parquet(f"{directory}/results.parquet", columns=["case_id", "arm", "score"])
means = results.groupby(["case_id", "arm"], sort=False)["score"].mean().unstack("arm")
drops = means[["baseline"]].to_numpy() - means.drop(columns="baseline").to_numpy()
n = drops.shape[0]
point = drops.mean(axis=0)
se = drops.std(axis=0, ddof=1) / np.sqrt(n)
if b > 0:
    rng = np.random.default_rng(0)
    replicates = np.empty((b, drops.shape[1]))
    for r in range(b):
        weights = rng.multinomial(n, np.full(n, 1.0 / n))
        replicates[r] = weights @ drops / n
    low, high = np.percentile(replicates, [2.5, 97.5], axis=0)
elapsed = time.perf_counter() - start
print(f"pandas+numpy sweep, {len(results):,} rows, {drops.shape[1]} arms, B={b}: {elapsed:.2f} s")
