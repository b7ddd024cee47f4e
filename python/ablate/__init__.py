"""ablate: which parts of an LLM prompt are earning their tokens.

Each verb of the command line is a function here. It takes an experiment folder, or the
experiment's tables as DataFrames (Polars, pandas or pyarrow) with its settings, and returns a
Result whose attributes are the verb's tables (`out.arms`, ...) as Arrow tables: pass one to
`polars.DataFrame(...)`, `pyarrow.table(...)` or `pandas.DataFrame(pyarrow.table(...))`.

    import ablate, polars as pl
    out = ablate.sweep("notebooks-data/support-eval-v3", bootstrap=1000)
    arms = pl.DataFrame(out.arms)

Errors raise AblateError with the command line's message. The numbers are the binary's own.
"""

from ._run import AblateError, Result, binary, run, schema

__all__ = ["AblateError", "Result", "binary", "run", "schema", "plan", "check", "sweep", "variance", "reweight", "stress", "interactions", "need", "curve", "selector", "record", "shadow", "context", "report", "watch", "next"]

def check(experiment=None, **options):
    """Validates an experiment folder; tables summary, arms, blocks, strata_counts, tables, warnings.

    See the type stubs (or `ablate check --help`) for the arguments."""
    return run("check", experiment=experiment, **options)


def sweep(experiment=None, **options):
    """Every arm against the baseline: paired drops with CIs, verdicts, churn; tables summary, arms, lost_by_slice, warnings.

    See the type stubs (or `ablate sweep --help`) for the arguments."""
    return run("sweep", experiment=experiment, **options)


def variance(experiment=None, **options):
    """Repeat variance, minimum detectable drop and cases needed; tables summary, arms, warnings.

    See the type stubs (or `ablate variance --help`) for the arguments."""
    return run("variance", experiment=experiment, **options)


def reweight(experiment=None, **options):
    """Drops under production weights (post-stratification or raking), coverage gaps; tables summary, arms, coverage, warnings.

    See the type stubs (or `ablate reweight --help`) for the arguments."""
    return run("reweight", experiment=experiment, **options)


def stress(experiment=None, **options):
    """The main set next to the stress slice; tables summary, arms.

    See the type stubs (or `ablate stress --help`) for the arguments."""
    return run("stress", experiment=experiment, **options)


def interactions(experiment=None, **options):
    """Composed cuts against the sum of their parts, pairwise interactions, Shapley values, designed experiments; tables composed, composed_lost_by_slice, pairwise, shapley, shapley_interactions, design_effects, design_interactions, warnings.

    See the type stubs (or `ablate interactions --help`) for the arguments."""
    return run("interactions", experiment=experiment, **options)


def need(experiment=None, **options):
    """The needed context fraction; tables summary, by_block, removable_units, forced_needed, warnings.

    See the type stubs (or `ablate need --help`) for the arguments."""
    return run("need", experiment=experiment, **options)


def curve(experiment=None, **options):
    """Budget curves per selector; tables summary, selectors, points, cost, warnings.

    See the type stubs (or `ablate curve --help`) for the arguments."""
    return run("curve", experiment=experiment, **options)


def selector(experiment=None, **options):
    """Reranker replay; tables summary, points.

    See the type stubs (or `ablate selector --help`) for the arguments."""
    return run("selector", experiment=experiment, **options)


def record(experiment=None, **options):
    """The decision record; tables record, forced_needed.

    See the type stubs (or `ablate record --help`) for the arguments."""
    return run("record", experiment=experiment, **options)


def shadow(experiment=None, **options):
    """Shadow traffic above the replay noise floor; tables summary, by_stratum, warnings.

    See the type stubs (or `ablate shadow --help`) for the arguments."""
    return run("shadow", experiment=experiment, **options)


def context(experiment=None, **options):
    """Context sizes against the hard limit, and a budget-policy replay; tables summary, composition, histogram, policy_evicted, warnings.

    See the type stubs (or `ablate context --help`) for the arguments."""
    return run("context", experiment=experiment, **options)


def report(experiment=None, **options):
    """Writes the HTML report (out=FOLDER) and returns every section's tables, named <section>_<table>.

    See the type stubs (or `ablate report --help`) for the arguments."""
    return run("report", experiment=experiment, **options)


def plan(units=None, design="loo", **options):
    """Emits an arms table for a design (loo, pairs, factorial, fractional) with its cost and power."""
    return run("plan", units=units, design=design, **options)


def watch(experiment=None, **options):
    """Anytime-valid monitoring of a running ablation: each arm's tests at the threshold and state
    (needed, removable, continue); tables summary, arms, warnings. With replay=True, a complete
    experiment replayed sequentially: tables summary (calls saved), arms, warnings."""
    return run("watch", experiment=experiment, **options)


def next(experiment=None, calls=None, out=None, **options):  # noqa: A001 - the verb's name
    """Writes the next batch of (case_id, arm, repeat) for the arms still open to `out` (.csv or
    .parquet) and returns it as the table `calls`."""
    if calls is None or out is None:
        raise TypeError("next needs calls= (the calls to spend) and out= (the batch file)")
    return run("next", experiment=experiment, calls=calls, out=str(out), **options)
