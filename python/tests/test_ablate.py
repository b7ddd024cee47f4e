"""The Python module against the command line: same JSON, tables that Polars, pandas and pyarrow
take as they are, DataFrames in, errors as exceptions with the CLI's message, and the notebook.

Run by python/test.sh (CI: against the debug binary through ABLATE_BIN; `--wheel`: against the
built wheel installed in a fresh virtual environment).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ablate

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "notebooks-data" / "support-eval-v3"
B = "200"


def takes(verb, option):
    return any(o["name"] == option for v in ablate.schema()["verbs"] if v["name"] == verb for o in v["options"])


def cli_json(verb, *args):
    resampling = ["--bootstrap", B] if takes(verb, "bootstrap") else []
    proc = subprocess.run(
        [ablate.binary(), "--json", "--quiet", verb, *resampling, *map(str, args)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_installed_command_runs_check_on_the_demo():
    exe = ablate.binary()
    if os.environ.get("ABLATE_WHEEL"):
        # From the wheel: the command sits beside this interpreter, and needs no ABLATE_BIN.
        assert "ABLATE_BIN" not in os.environ
        assert Path(exe).parent == Path(sys.executable).parent, exe
    proc = subprocess.run([exe, "check", str(DEMO)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "support-eval-v3" in proc.stdout


@pytest.mark.parametrize(
    "verb",
    ["check", "sweep", "variance", "reweight", "stress", "interactions", "need", "curve", "selector", "record", "shadow", "context"],
)
def test_every_verb_returns_the_cli_json(verb):
    options = {"bootstrap": int(B)} if takes(verb, "bootstrap") else {}
    out = getattr(ablate, verb)(DEMO, **options)
    assert out.json == cli_json(verb, DEMO)
    assert out.tables, verb
    assert out.provenance["verb"] == verb
    if options:
        assert out.provenance["bootstrap"] == int(B)


def test_the_module_is_generated_from_the_command_lines_schema():
    """The verbs with tables (and report) are the module's functions, python/ablate/_verbs.py is
    what python/generate.py writes from this binary's `ablate schema`, and every option of every
    verb is a keyword parameter of its function: adding a verb or an option to the command line
    without regenerating fails here."""
    import inspect

    s = ablate.schema()
    with_tables = {v["name"] for v in s["verbs"] if v["tables"]}
    module_verbs = set(ablate.__all__) - {"AblateError", "Result", "Table", "binary", "run", "schema"}
    assert module_verbs == with_tables | {"report"}
    check = subprocess.run(
        [sys.executable, str(ROOT / "python" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "ABLATE_BIN": ablate.binary()},
    )
    assert check.returncode == 0, check.stderr
    for v in s["verbs"]:
        if v["name"] not in module_verbs:
            continue
        params = inspect.signature(getattr(ablate, v["name"])).parameters
        for o in v["options"]:
            if not o["positional"] and o["name"] != "export":
                assert o["name"] in params, (v["name"], o["name"])
        if v["reads_experiment"]:
            assert set(s["experiment_tables"]) <= set(params), v["name"]


def test_signatures_and_docstrings_show_every_parameter():
    import inspect

    sig = inspect.signature(ablate.sweep)
    assert list(sig.parameters)[0] == "experiment"
    for name in ("bootstrap", "seed", "confidence", "per_arm", "results", "cases", "threshold_drop"):
        assert sig.parameters[name].kind == inspect.Parameter.KEYWORD_ONLY, name
        assert sig.parameters[name].default is None
    doc = ablate.sweep.__doc__
    assert "bootstrap: Bootstrap resamples" in doc and "Default: 10000." in doc
    assert "seed: Random seed" in doc
    # Required options are required keywords: Python says which are missing.
    with pytest.raises(TypeError, match="missing 2 required keyword-only arguments: 'calls' and 'out'"):
        ablate.next(DEMO)


def test_tables_convert_to_polars_and_pandas_with_the_json_s_values():
    out = ablate.sweep(DEMO, bootstrap=int(B))
    want = out.json["arms"]
    as_polars = out.arms.to_polars()
    assert isinstance(as_polars, pl.DataFrame)
    assert as_polars["drop"].to_list() == [a["drop"] for a in want]
    as_pandas = out.arms.to_pandas()
    assert isinstance(as_pandas, pd.DataFrame)
    assert list(as_pandas["arm"]) == [a["arm"] for a in want]
    assert list(as_pandas["drop"]) == [a["drop"] for a in want]
    assert [list(r) for r in as_pandas["removed"]] == [a["removed"] for a in want]
    assert len(out.arms) == out.arms.num_rows == len(want)
    assert "drop" in out.arms.column_names
    assert "rows" in repr(out.arms)


def test_provenance_values_keep_their_types():
    out = ablate.sweep(DEMO, bootstrap=int(B))
    p = out.provenance
    assert isinstance(p["command"], list) and p["command"][3] == "sweep"
    assert p["bootstrap"] == int(B) and isinstance(p["bootstrap"], int)
    assert p["seed"] == 0 and isinstance(p["seed"], int)
    assert p["confidence"] == 0.95
    assert isinstance(p["set_sha256"], str) and isinstance(p["version"], str)


def test_a_report_from_python_never_writes_into_the_working_directory(
    tmp_path, tmp_path_factory, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    # The temporary folder the report goes to is pytest's, so that test runs leave none behind.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tempdir")))
    results = pl.read_parquet(DEMO / "results.parquet")
    cases = pl.read_parquet(DEMO / "cases.parquet")
    out = ablate.report(results=results, cases=cases, threshold_drop=0.005, bootstrap=int(B))
    assert list(tmp_path.iterdir()) == [], "nothing in the working directory"
    folder = Path(out.out)
    assert folder.is_dir() and (folder / "index.html").is_file()
    assert folder.parent == Path(tempfile.gettempdir())
    given = ablate.report(DEMO, out=tmp_path / "mine", bootstrap=int(B))
    assert Path(given.out) == tmp_path / "mine" and (tmp_path / "mine" / "index.html").is_file()


def test_the_docstring_recipes_run_as_doctests():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--doctest-modules", "-o", "doctest_optionflags=ELLIPSIS NORMALIZE_WHITESPACE", str(ROOT / "python" / "ablate")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout


def test_an_option_the_verb_does_not_take_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bootstrap'"):
        ablate.shadow(DEMO, bootstrap=200)
    with pytest.raises(TypeError, match="unexpected keyword argument 'boostrap'"):
        ablate.sweep(DEMO, boostrap=200)


def test_tables_are_attributes_named_as_in_the_json_and_equal_it():
    out = ablate.sweep(DEMO, bootstrap=int(B))
    arms = pl.DataFrame(out.arms)
    want = out.json["arms"]
    assert arms.height == len(want)
    assert arms["arm"].to_list() == [a["arm"] for a in want]
    assert arms["drop"].to_list() == [a["drop"] for a in want]
    assert arms["ci_high"].to_list() == [a["ci_high"] for a in want]
    # Lists stay lists.
    assert arms.schema["removed"] == pl.List(pl.String)
    assert arms["removed"].to_list() == [a["removed"] for a in want]
    # Scalars of the JSON are attributes too.
    assert out.threshold_drop == 0.005
    with pytest.raises(AttributeError, match="tables: arms"):
        out.no_such_table


def test_polars_pandas_and_pyarrow_take_the_tables_through_the_capsule():
    out = ablate.reweight(DEMO, bootstrap=int(B))
    assert hasattr(out.arms, "__arrow_c_stream__")
    as_arrow = pa.table(out.arms)
    as_polars = pl.DataFrame(out.arms)
    as_pandas = as_arrow.to_pandas()
    assert as_arrow.num_rows == as_polars.height == len(as_pandas) == len(out.json["arms"])
    assert as_polars["flipped"].dtype == pl.Boolean
    assert list(as_pandas["arm"]) == as_polars["arm"].to_list()


def test_several_mixes_rake_from_python_as_on_the_command_line():
    # mix=[a, b] is one --mix per table (issue 46): raking, for reweight and report alike; a
    # DataFrame in the list is written for the run.
    turns = DEMO / "mix.parquet"
    slices = pl.read_parquet(DEMO / "mix-slice.parquet")
    out = ablate.reweight(DEMO, mix=[turns, slices], bootstrap=int(B))
    assert out.json["method"] == "raked"
    assert out.json["strata"] == ["turns", "slice"]
    cli = subprocess.run(
        [ablate.binary(), "--json", "--quiet", "reweight", "--bootstrap", B, "--mix", str(turns),
         "--mix", str(DEMO / "mix-slice.parquet"), str(DEMO)],
        check=True,
        capture_output=True,
        text=True,
    )
    assert json.loads(cli.stdout)["arms"] == out.json["arms"]
    with pytest.raises(TypeError, match="several"):
        ablate.sweep(DEMO, mix=[turns, slices])


def test_pandas_takes_list_columns_too(tmp_path):
    # Lists (the units an arm removes) reach pandas as Python lists, from the capsule and from
    # the exported Parquet file alike.
    out = ablate.sweep(DEMO, bootstrap=int(B))
    arms = pa.table(out.arms).to_pandas()
    assert list(arms["removed"].iloc[0]) == out.json["arms"][0]["removed"]
    subprocess.run(
        [ablate.binary(), "--quiet", "sweep", "--bootstrap", B, "--export", str(tmp_path / "t"), str(DEMO)],
        check=True,
        capture_output=True,
    )
    from_file = pd.read_parquet(tmp_path / "t" / "arms.parquet")
    assert list(from_file["removed"].iloc[0]) == out.json["arms"][0]["removed"]


def test_to_pandas_without_pyarrow_says_what_to_install(monkeypatch):
    # pandas reads Arrow through pyarrow (pandas 3's from_arrow too): without it, the error
    # names the package to install rather than pandas' internals.
    out = ablate.sweep(DEMO, bootstrap=int(B))
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        out.arms.to_pandas()
    # Polars needs no pyarrow.
    assert out.arms.to_polars().height == out.arms.num_rows


def test_provenance_names_the_set_hash_model_and_settings():
    out = ablate.sweep(DEMO, bootstrap=int(B), seed=3, confidence=0.9)
    record = cli_json("record", DEMO)
    p = out.provenance
    assert p["set"] == "support-eval-v3"
    assert p["set_sha256"] == record["set_sha256"]
    assert p["model"] == record["model"]
    assert (p["seed"], p["bootstrap"], p["confidence"]) == (3, int(B), 0.9)
    assert "sweep" in p["command"]


@pytest.mark.parametrize("kind", ["polars", "pandas", "pyarrow"])
def test_dataframes_in_give_the_same_numbers_as_the_folder(kind):
    read = {
        "polars": pl.read_parquet,
        "pandas": pd.read_parquet,
        "pyarrow": pq.read_table,
    }[kind]
    frames = {t: read(DEMO / f"{t}.parquet") for t in ("results", "cases", "arms")}
    out = ablate.sweep(**frames, threshold_drop=0.005, bootstrap=int(B))
    folder = ablate.sweep(DEMO, bootstrap=int(B))
    keep = ["arm", "drop", "se", "ci_low", "ci_high", "verdict", "confidence"]
    assert pl.DataFrame(out.arms).select(keep).equals(pl.DataFrame(folder.arms).select(keep))


def test_a_table_given_beside_a_folder_replaces_the_folders():
    results = pl.read_parquet(DEMO / "results.parquet")
    # Drop every arm but the baseline and one: the sweep then has one arm.
    only = results.filter(pl.col("arm").is_in(["baseline", "without-system"]))
    out = ablate.sweep(DEMO, results=only, bootstrap=int(B))
    assert pl.DataFrame(out.arms)["arm"].to_list() == ["without-system"]


def test_errors_raise_with_the_clis_message():
    proc = subprocess.run(
        [ablate.binary(), "sweep", str(DEMO / "nowhere")], capture_output=True, text=True
    )
    with pytest.raises(ablate.AblateError) as e:
        ablate.sweep(DEMO / "nowhere")
    assert e.value.exit_code == proc.returncode == 2
    assert str(e.value) == proc.stderr.strip().removeprefix("ablate: error: ")
    assert "nowhere" in str(e.value)


def test_bad_dataframes_get_the_loaders_message():
    cases = pl.read_parquet(DEMO / "cases.parquet")
    results = pl.read_parquet(DEMO / "results.parquet").with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(float("nan")).otherwise(pl.col("score")).alias("score")
    )
    with pytest.raises(ablate.AblateError, match="score") as e:
        ablate.sweep(results=results, cases=cases, threshold_drop=0.005, bootstrap=int(B))
    assert e.value.exit_code == 2


def test_missing_settings_are_type_errors():
    with pytest.raises(TypeError, match="threshold_drop"):
        ablate.sweep(results=pl.DataFrame({"a": [1]}), cases=pl.DataFrame({"b": [1]}))
    with pytest.raises(TypeError, match="results"):
        ablate.sweep(cases=pl.DataFrame({"b": [1]}), threshold_drop=0.01)


def test_plan_takes_a_units_frame():
    units = pl.read_parquet(DEMO / "units.parquet")
    out = ablate.plan(units=units, design="loo", pilot=DEMO)
    assert out.json["n_arms"] == units.height + 1
    assert pl.DataFrame(out.arms).height == units.height + 1


def test_shadow_takes_a_log_frame():
    log = pl.read_parquet(DEMO / "shadow.parquet")
    out = ablate.shadow(shadow=log)
    assert out.json == cli_json("shadow", DEMO / "shadow.parquet")


def test_the_notebook_runs_top_to_bottom(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "notebooks-data" / "demo.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks-data")}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the forest plot was drawn"


def test_watch_replay_and_next_from_python(tmp_path):
    replay = ablate.watch(DEMO, replay=True, bootstrap=int(B))
    assert replay.json == cli_json("watch", "--replay", DEMO)
    summary = pl.DataFrame(replay.summary)
    assert summary["calls_full"][0] == 63_000
    assert summary["calls_sequential"][0] < 63_000
    # next on a copy (watch records its decisions in the folder).
    import shutil

    copy = tmp_path / "exp"
    shutil.copytree(DEMO, copy)
    out = ablate.next(copy, calls=600, out=tmp_path / "batch.csv")
    batch = pl.read_csv(tmp_path / "batch.csv")
    assert batch.columns == ["case_id", "arm", "repeat"]
    assert pl.DataFrame(out.calls).height == batch.height


def test_strings_that_look_like_options_are_paths(tmp_path, monkeypatch):
    # A string is the experiment folder, never an option: no export is written elsewhere.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ablate.AblateError) as err:
        ablate.sweep("--export=elsewhere", bootstrap=int(B))
    assert err.value.exit_code == 2
    assert "--export=elsewhere" in err.value.message
    assert not (tmp_path / "elsewhere").exists()
    # A folder and an output file whose names start with '-'.
    import shutil

    shutil.copytree(DEMO, tmp_path / "-exp")
    assert ablate.check("-exp").json["set"] == "support-eval-v3"
    out = ablate.next("-exp", calls=200, out="-batch.csv")
    assert (tmp_path / "-batch.csv").is_file()
    assert pl.DataFrame(out.calls).height == pl.read_csv(tmp_path / "-batch.csv").height


def test_watch_and_next_refuse_a_built_folder():
    results = pl.read_parquet(DEMO / "results.parquet")
    cases = pl.read_parquet(DEMO / "cases.parquet")
    for verb in (ablate.watch, lambda **kw: ablate.next(calls=10, out="b.csv", **kw)):
        with pytest.raises(TypeError, match="keeps its decisions in the experiment folder"):
            verb(results=results, cases=cases, threshold_drop=0.005)
        with pytest.raises(TypeError, match="keeps its decisions"):
            verb(experiment=DEMO, results=results)
    # replay keeps no state: DataFrames are fine.
    out = ablate.watch(results=results, cases=cases, threshold_drop=0.005, replay=True, bootstrap=int(B))
    assert pl.DataFrame(out.summary)["calls_full"][0] == 63_000


def test_settings_and_paths_keep_their_text(tmp_path):
    results = tmp_path / "results.v2.parquet"
    pl.read_parquet(DEMO / "results.parquet").write_parquet(results)
    out = ablate.check(
        results=results,
        cases=DEMO / "cases.parquet",
        threshold_drop=0.005,
        set='evals 😀 "quoted" \\ back',
    )
    assert out.json["set"] == 'evals 😀 "quoted" \\ back'
    # A name is one line of plain text: a tab (or a line break, an escape code) is refused by
    # name, not written into experiment.toml to act in a terminal.
    with pytest.raises(ablate.AblateError, match="key `set`.*U\\+0009"):
        ablate.check(
            results=results,
            cases=DEMO / "cases.parquet",
            threshold_drop=0.005,
            set="evals\ttab",
        )


def test_duckdb_runs_the_printed_queries_with_odd_names(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    # A results file whose path holds a quote, and a stratum column named with a double quote.
    odd = tmp_path / "it's results.parquet"
    pl.read_parquet(DEMO / "results.parquet").write_parquet(odd)
    proc = subprocess.run(
        [ablate.binary(), "sql", "sweep", str(DEMO), "--dialect", "duckdb", f"--table=results={odd}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    rows = duckdb.sql(proc.stdout).fetchall()
    assert len(rows) == pl.read_parquet(DEMO / "results.parquet").select("case_id", "arm").unique().height
    shadow = tmp_path / "shadow.parquet"
    pl.read_parquet(DEMO / "shadow.parquet").rename({"turns": 'tu"rns'}).write_parquet(shadow)
    proc = subprocess.run(
        [ablate.binary(), "sql", "shadow", str(DEMO), "--dialect", "duckdb", '--by=tu"rns', f"--table=shadow={shadow}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert duckdb.sql(proc.stdout).fetchall()
    # The injection that once ran: refused before any SQL is printed.
    proc = subprocess.run(
        [ablate.binary(), "sql", "shadow", str(DEMO), "--dialect", "duckdb", "--by", "turns\nCOPY (SELECT 1) TO 'x.csv';\n--"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert not (tmp_path / "x.csv").exists()


def test_command_line_only_verbs_say_so():
    for verb in ("import", "simulate", "sql"):
        with pytest.raises(TypeError, match="on the command line"):
            ablate.run(verb, "inspect", out="x")
