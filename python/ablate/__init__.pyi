"""Type stubs for ablate: one function per verb of the command line.

Each returns a Result whose attributes are the verb's tables (arro3.core.Table, through the
Arrow PyCapsule interface) named as in docs/tables.md, plus its JSON.
"""

import os
from typing import Any, Dict, List, Optional, Union

from typing_extensions import TypedDict, Unpack

PathLike = Union[str, "os.PathLike[str]"]
TableLike = Any  # a path, or an object with __arrow_c_stream__ (Polars, pandas >= 2.2, pyarrow)

class AblateError(Exception):
    """The command failed; `message` is the command line's own error (file, column, row, fix)."""

    message: str
    exit_code: int
    command: List[str]

class Result:
    """A verb's tables as attributes (arro3.core.Table), its JSON (`json`), and the provenance
    every exported file carries (`provenance`: set, set_sha256, model, seed, bootstrap,
    confidence, version, command)."""

    verb: str
    json: Any
    tables: Dict[str, Any]
    provenance: Dict[str, str]
    def __getattr__(self, name: str) -> Any: ...

class Inputs(TypedDict, total=False):
    """What the verbs on an experiment take besides the folder.

    The experiment's tables, as paths or DataFrames; given beside a folder, they replace the
    folder's. Without a folder: results and cases at least, with threshold_drop and any other
    experiment.toml setting. Then the verb's options, exactly those `ablate VERB --help` lists
    (underscores for dashes); one the verb does not take raises TypeError.
    """

    results: TableLike
    cases: TableLike
    arms: TableLike
    units: TableLike
    case_units: TableLike
    mix: TableLike
    passages: TableLike
    shadow: TableLike
    context_log: TableLike
    threshold_drop: float
    stress_threshold_drop: float
    baseline_arm: str
    set: str
    model: str
    measured_at: str
    pass_mark: float
    strata: List[str]
    quality_threshold: float
    score_min: float
    score_max: float
    description: str
    seed: int
    bootstrap: int
    confidence: float
    per_arm: bool
    memory: str
    from_aggregates: PathLike
    by: List[str]
    cluster_by: str
    allow_unmeasured: bool
    mix_from: PathLike
    price_per_mtok: float
    requests_per_day: float
    policy: PathLike
    model_limit: int
    expected_output: int
    output_buffer: int
    safety_margin: int
    soft_limit_ratio: float
    replicates: int
    out: PathLike
    open: bool

def binary() -> str:
    """The ablate executable: $ABLATE_BIN, else the one installed with this package, else PATH."""

def schema() -> Dict[str, Any]:
    """The command line's definition (`ablate schema`): verbs with their options and tables,
    experiment.toml keys, and the tables an experiment folder may hold."""

def run(verb: str, *positional: Any, **options: Any) -> Result:
    """Runs any verb: positional arguments follow it, keyword arguments become its options."""

def check(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Validates an experiment folder; tables summary, arms, blocks, strata_counts, tables, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def sweep(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Every arm against the baseline: paired drops with CIs, verdicts, churn; tables summary, arms, lost_by_slice, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def variance(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Repeat variance, minimum detectable drop and cases needed; tables summary, arms, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def reweight(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Drops under production weights (post-stratification or raking), coverage gaps; tables summary, arms, coverage, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def stress(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """The main set next to the stress slice; tables summary, arms.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def interactions(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Composed cuts against the sum of their parts, pairwise interactions, Shapley values, designed experiments; tables composed, composed_lost_by_slice, pairwise, shapley, shapley_interactions, design_effects, design_interactions, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def need(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """The needed context fraction; tables summary, by_block, removable_units, forced_needed, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def curve(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Budget curves per selector; tables summary, selectors, points, cost, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def selector(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Reranker replay; tables summary, points.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def record(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """The decision record; tables record, forced_needed.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def shadow(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Shadow traffic above the replay noise floor (a folder, or shadow= a log path or DataFrame); tables summary, by_stratum, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def context(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Context sizes against the hard limit, and a budget-policy replay (a folder, or context_log= a log); tables summary, composition, histogram, policy_evicted, warnings.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def report(experiment: Optional[PathLike] = None, **options: Unpack[Inputs]) -> Result:
    """Writes the HTML report (out=FOLDER) and returns every section's tables, named <section>_<table>.

    Raises:
        AblateError: bad input or a failed run, with the command line's message.
    """

def plan(
    units: Optional[TableLike] = None,
    design: str = "loo",
    *,
    pilot: Optional[PathLike] = None,
    confirm: Optional[PathLike] = None,
    unit: Optional[List[str]] = None,
    cases: Optional[int] = None,
    repeats: Optional[int] = None,
    tokens_per_call: Optional[float] = None,
    price_per_mtok: Optional[float] = None,
    sd: Optional[float] = None,
    threshold_drop: Optional[float] = None,
    sequential: bool = False,
    out: Optional[PathLike] = None,
    force: bool = False,
    **options: Any,
) -> Result:
    """Emits an arms table for a design (loo, pairs, factorial, fractional) with its cost and
    power; tables summary, arms, sequential_arms. With pilot=FOLDER the power comes from that
    experiment, and sequential=True projects the calls of a sequential run."""

def watch(
    experiment: Optional[PathLike] = None,
    *,
    replay: bool = False,
    reopen: bool = False,
    repeats: Optional[int] = None,
    seed: Optional[int] = None,
    confidence: Optional[float] = None,
    **options: Any,
) -> Result:
    """Anytime-valid monitoring of a running ablation (two one-sided betting tests at the
    threshold per arm, Bonferroni across arms at α = 1 − confidence): tables summary, arms (state
    needed / removable / continue, units, drop and its interval, the tests' p-values, units still
    needed), warnings. replay=True replays a complete
    experiment: where each arm would have stopped, agreement with the full run, calls saved.
    Decisions are recorded in the folder's .ablate-watch.json; reopen=True decides again."""

def next(
    experiment: Optional[PathLike] = None,
    calls: Optional[int] = None,
    out: Optional[PathLike] = None,
    *,
    repeats: Optional[int] = None,
    force: bool = False,
    seed: Optional[int] = None,
    **options: Any,
) -> Result:
    """Writes the next batch of calls (case_id, arm, repeat) for the arms still open to `out`
    (.parquet or .csv), spending `calls`, and returns it as the table `calls`."""
