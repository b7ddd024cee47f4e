"""Runs the ablate binary and returns its tables.

Each verb function builds the command line `ablate --json --quiet --export TMP VERB ...`, runs
the binary installed with this package, parses the JSON and reads every exported Parquet file
with arro3. Tables come back as [`Table`]: `.to_polars()`, `.to_pandas()`, and the Arrow PyCapsule
interface, which Polars, pandas and pyarrow read without a copy. Nothing is computed in Python:
the numbers are the command line's, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

_SCHEMA: Optional[Dict[str, Any]] = None


def schema() -> Dict[str, Any]:
    """The command line's own definition (`ablate schema`, read once): every verb with its
    options and tables, the experiment.toml keys and the tables an experiment folder may hold.
    The module takes its lists from here rather than copying them."""
    global _SCHEMA
    if _SCHEMA is None:
        proc = subprocess.run([binary(), "schema"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise AblateError(proc.stderr.strip(), proc.returncode, [binary(), "schema"])
        _SCHEMA = json.loads(proc.stdout)
    return _SCHEMA


def _verb_options(verb: str) -> List[str]:
    """The options `ablate VERB` takes, by their Python names (positional arguments excluded)."""
    for v in schema()["verbs"]:
        if v["name"] == verb:
            return [o["name"] for o in v["options"] if not o["positional"]]
    raise AblateError(f"this ablate binary has no verb {verb!r}: is it older than the module?", 2, [])


class AblateError(Exception):
    """The command failed. The message is the command line's own (file, column, row and fix).

    Attributes:
        message: the error text ablate printed.
        exit_code: 2 for bad input or usage, 1 for any other failure.
        command: the command that was run.
    """

    def __init__(self, message: str, exit_code: int, command: List[str]):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = command


class Table:
    """One of a verb's tables: `to_polars()`, `to_pandas()`, and the Arrow PyCapsule interface
    (`__arrow_c_stream__`), so `polars.DataFrame(t)`, `pyarrow.table(t)` and DuckDB read it as it
    is. `arrow` is the underlying `arro3.core.Table`; `num_rows`, `column_names` and `schema` are
    its own.
    """

    def __init__(self, arrow: Any):
        self.arrow = arrow

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.arrow.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        return self.arrow.__arrow_c_schema__()

    def to_polars(self) -> Any:
        """The table as a `polars.DataFrame` (needs Polars)."""
        import polars as pl

        return pl.DataFrame(self.arrow)

    def to_pandas(self) -> Any:
        """The table as a `pandas.DataFrame` (needs pandas and pyarrow: `pip install
        ablate[pandas]`): pandas' own Arrow reader where it has one (pandas 3, which reads
        through pyarrow), else pyarrow's. List columns stay lists."""
        import pandas as pd

        try:
            if hasattr(pd.DataFrame, "from_arrow"):
                return pd.DataFrame.from_arrow(self.arrow)
            import pyarrow as pa

            return pa.table(self.arrow).to_pandas()
        except ImportError as e:
            if "pyarrow" not in str(e):
                raise
            raise ImportError(
                "Table.to_pandas() needs pyarrow (pandas reads Arrow tables through it): "
                "pip install pyarrow (or ablate[pandas]); to_polars() needs only Polars"
            ) from e

    @property
    def num_rows(self) -> int:
        return self.arrow.num_rows

    @property
    def column_names(self) -> List[str]:
        return list(self.arrow.column_names)

    @property
    def schema(self) -> Any:
        return self.arrow.schema

    def __len__(self) -> int:
        return self.arrow.num_rows

    def __repr__(self) -> str:
        return f"<ablate.Table: {self.num_rows} rows; {', '.join(self.column_names)}>"


# Provenance keys whose values are numbers or lists (the Parquet metadata holds text).
_PROVENANCE_TYPES = {"seed": int, "bootstrap": int, "confidence": float, "command": json.loads}


def _typed_provenance(meta: Mapping[str, str]) -> Dict[str, Any]:
    """The provenance with its values' types: `command` a list, numbers numbers, the rest text."""
    out: Dict[str, Any] = {}
    for key, value in meta.items():
        convert = _PROVENANCE_TYPES.get(key)
        try:
            out[key] = convert(value) if convert else value
        except ValueError:
            out[key] = value
    return out


class Result:
    """What a verb returned: its tables as attributes, and its JSON.

    `out.arms`, `out.summary`, ... are [`Table`]s (the table names are those of `--export`,
    listed in docs/tables.md); any other attribute is looked up in the verb's JSON
    (`out.threshold_drop`). `out.json` is the whole JSON, `out.tables` the tables by name, and
    `out.provenance` the metadata every exported file carries (set hash, model, seed, bootstrap,
    confidence, tool version, command line), typed: `command` is a list, `seed` and `bootstrap`
    integers, `confidence` a float.
    """

    def __init__(self, verb: str, json_value: Any, tables: Dict[str, Any], provenance: Dict[str, Any]):
        self.verb = verb
        self.json = json_value
        self.tables = tables
        self.provenance = provenance

    def __getattr__(self, name: str) -> Any:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        value = self.__dict__.get("json")
        if isinstance(value, dict) and name in value:
            return value[name]
        raise AttributeError(
            f"ablate {self.__dict__.get('verb')} has no table or field {name!r}; "
            f"tables: {', '.join(sorted(tables))}"
        )

    def __dir__(self) -> List[str]:
        keys = list(self.tables)
        if isinstance(self.json, dict):
            keys += list(self.json)
        return sorted(set(keys) | set(super().__dir__()))

    def __repr__(self) -> str:
        parts = [f"{name}: {t.num_rows} rows" for name, t in self.tables.items()]
        return f"<ablate {self.verb}: " + "; ".join(parts) + ">"


def binary() -> str:
    """The ablate executable: $ABLATE_BIN, else the one installed beside this interpreter, else PATH."""
    env = os.environ.get("ABLATE_BIN")
    if env:
        return env
    exe = "ablate.exe" if os.name == "nt" else "ablate"
    for scheme_dir in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scheme_dir) / exe
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("ablate")
    if found:
        return found
    raise AblateError(
        "the ablate command is not installed: pip install the ablate wheel, or set ABLATE_BIN to the binary",
        1,
        [],
    )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _options(options: Mapping[str, Any]) -> List[str]:
    """Keyword arguments as command-line options: True is a bare flag, a list repeats it. Values
    are attached with `=` (`--out=-batch.csv`), so a value that starts with `-` is never read as
    an option."""
    args: List[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        if value is True:
            args.append(_flag(name))
        elif isinstance(value, (list, tuple)):
            for v in value:
                args.append(f"{_flag(name)}={os.fspath(v) if isinstance(v, os.PathLike) else v}")
        else:
            args.append(f"{_flag(name)}={os.fspath(value) if isinstance(value, os.PathLike) else value}")
    return args


def _write_table(data: Any, path: Path) -> None:
    """Writes a DataFrame-like object as Parquet through the Arrow PyCapsule interface."""
    from arro3.io import write_parquet

    if not hasattr(data, "__arrow_c_stream__"):
        try:  # pandas before 2.2
            import pyarrow as pa

            data = pa.Table.from_pandas(data, preserve_index=False)
        except Exception as e:  # noqa: BLE001
            raise TypeError(
                f"cannot read a {type(data).__name__} as a table: pass a path, or a Polars, pandas (>= 2.2) or pyarrow table"
            ) from e
    write_parquet(data, str(path))


def _toml_string(text: str) -> str:
    """A TOML basic string: `"` and `\\` escaped, control characters (U+0000-U+001F, U+007F) as
    \\uXXXX, everything else as it is. (json.dumps would write a character beyond U+FFFF as a
    surrogate pair, \\ud83d\\ude00, which TOML refuses.)"""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return _toml_string(str(v))


def _experiment(
    work: Path, experiment: Optional[os.PathLike], tables: Mapping[str, Any], manifest: Mapping[str, Any]
) -> Path:
    """The experiment folder to run on: `experiment` itself, or a folder in `work` built from it
    and the tables and experiment.toml keys given."""
    given = {k: v for k, v in tables.items() if v is not None}
    keys = {k: v for k, v in manifest.items() if v is not None}
    if not given and not keys:
        if experiment is None:
            raise TypeError("give an experiment folder, or its tables (results=..., cases=..., ...)")
        return Path(experiment)
    folder = work / "experiment"
    folder.mkdir()
    if experiment is not None:
        source = Path(experiment)
        if keys:
            raise TypeError(
                f"{', '.join(keys)}: experiment.toml settings apply when the experiment is built from tables; "
                f"edit {source / 'experiment.toml'} instead"
            )
        for item in source.iterdir():
            stem = item.name.split(".")[0]
            # Hidden files (watch's decisions, ablate's marker) belong to the folder itself.
            if stem not in given and item.is_file() and not item.name.startswith("."):
                os.symlink(item.resolve(), folder / item.name)
    else:
        missing = [k for k in ("results", "cases") if k not in given]
        if missing:
            raise TypeError(f"an experiment needs {' and '.join(missing)} (a path or a DataFrame)")
        if "threshold_drop" not in keys:
            raise TypeError("threshold_drop is required: the drop agreed before the run (e.g. 0.005)")
        keys.setdefault("set", "notebook")
        lines = [f"{k} = {_toml_value(v)}" for k, v in keys.items()]
        (folder / "experiment.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, data in given.items():
        if isinstance(data, (str, os.PathLike)):
            path = Path(data)
            suffix = path.suffix.lower()
            if suffix not in (".parquet", ".csv"):
                raise TypeError(f"{name}={path}: give a .parquet or .csv file, or a DataFrame")
            os.symlink(path.resolve(), folder / f"{name}{suffix}")
        else:
            _write_table(data, folder / f"{name}.parquet")
    return folder


def _read_tables(folder: Path) -> "tuple[Dict[str, Table], Dict[str, Any]]":
    from arro3.io import read_parquet

    tables: Dict[str, Table] = {}
    provenance: Dict[str, Any] = {}
    if not folder.is_dir():
        return tables, provenance
    for path in sorted(folder.glob("*.parquet")):
        table = read_parquet(str(path)).read_all()
        tables[path.stem] = Table(table)
        if not provenance:
            meta = table.schema.metadata_str
            provenance = _typed_provenance(
                {k[len("ablate.") :]: v for k, v in meta.items() if k.startswith("ablate.") and k != "ablate.table"}
            )
    return tables, provenance


# Verbs that write a folder or print text rather than return tables: the command line's own.
_COMMAND_LINE_ONLY = {
    "import": "writes an experiment folder from a harness's logs",
    "simulate": "writes a synthetic experiment folder",
    "sql": "prints SQL for an engine",
    "completions": "prints a shell completion script",
    "man": "prints a manual page",
}


def run(verb: str, *positional: Any, **options: Any) -> Result:
    """Runs `ablate VERB` and returns its tables and JSON.

    Positional arguments follow the verb (an experiment folder, a log file). Keyword arguments:
    the tables of an experiment (results, cases, arms, units, case_units, mix, passages, shadow,
    context_log) as paths or DataFrames; experiment.toml settings (threshold_drop, baseline_arm,
    set, ...) when the experiment is built from tables; and any option of the verb (seed,
    bootstrap, confidence, per_arm, memory, from_aggregates where the verb takes them; see
    `ablate VERB --help`), spelt with underscores (`by=["tier"]`, `allow_unmeasured=True`).

    Raises:
        AblateError: the command failed; the message is the command line's.
        TypeError: a verb that returns no tables (import, simulate, sql, completions, man), or an
            option the verb does not take.
    """
    if verb in _COMMAND_LINE_ONLY:
        raise TypeError(
            f"ablate.run({verb!r}): `ablate {verb}` {_COMMAND_LINE_ONLY[verb]}, not tables; run it "
            f"on the command line (`ablate {verb} --help`), then give the experiment folder to the "
            "verb functions"
        )
    s = schema()
    tables = {k: options.pop(k, None) for k in s["experiment_tables"]}
    # Several production mixes (raking): `mix=[a, b]` becomes one --mix per table, for the verbs
    # that take --mix; a single mix stays the experiment's own mix table.
    mixes = tables.get("mix")
    if isinstance(mixes, (list, tuple)):
        if verb not in ("reweight", "report"):
            raise TypeError(f"{verb}() takes one mix table; several (raking) are for reweight() and report()")
        tables["mix"] = None
    else:
        mixes = None
    manifest = {k: options.pop(k, None) for k in s["manifest_keys"]}
    experiment = options.pop("experiment", None)
    known = _verb_options(verb)
    for name in options:
        if name not in known:
            raise TypeError(
                f"{verb}() got an unexpected keyword argument {name!r}; it takes the experiment's "
                f"tables, experiment.toml settings, and {', '.join(known)}"
            )
    if positional and experiment is None and verb not in ("plan",):
        experiment, positional = positional[0], positional[1:]
    if verb == "report" and options.get("out") is None:
        # A notebook's report goes to a fresh temporary folder, never into the working directory.
        options["out"] = tempfile.mkdtemp(prefix="ablate-report-")
    with tempfile.TemporaryDirectory(prefix="ablate-") as tmp:
        work = Path(tmp)
        export = work / "tables"
        args: List[str] = [binary(), "--json", "--quiet", verb, f"--export={export}"]
        if verb == "plan":
            # plan builds no experiment: its threshold_drop is an option of its own.
            options.update({k: v for k, v in manifest.items() if v is not None and k in known})
            for key in ("units", "pilot"):
                data = tables.get(key) if key == "units" else options.get(key)
                if data is not None and not isinstance(data, (str, os.PathLike)):
                    path = work / f"{key}.parquet"
                    _write_table(data, path)
                    options[key] = str(path)
            if tables.get("units") is not None and "units" not in options:
                options["units"] = tables["units"]
            if experiment is not None:
                options.setdefault("pilot", experiment)
        elif verb in ("shadow", "context") and experiment is None:
            # A log on its own: a path, or a DataFrame written to one.
            stem = "shadow" if verb == "shadow" else "context_log"
            data = tables.get(stem)
            if data is None:
                raise TypeError(f"give the {stem} log (a path or a DataFrame), or an experiment folder")
            if not isinstance(data, (str, os.PathLike)):
                path = work / f"{stem}.parquet"
                _write_table(data, path)
                data = path
            positional = (data, *positional)
        else:
            folder = _experiment(work, experiment, tables, manifest)
            built = experiment is None or folder != Path(experiment)
            if built and (verb == "next" or (verb == "watch" and not options.get("replay"))):
                raise TypeError(
                    f"{verb} keeps its decisions in the experiment folder (.ablate-watch.json): "
                    "pass the folder itself, without tables in place of its own, "
                    "or use watch(..., replay=True) on a complete experiment"
                )
            positional = (folder, *positional)
        for i, m in enumerate(mixes or []):
            if not isinstance(m, (str, os.PathLike)):
                path = work / f"mix-{i}.parquet"
                _write_table(m, path)
                m = path
            args.append(f"--mix={os.fspath(m)}")
        args += _options(options)
        # Paths after `--`: a folder named `-exp` is a path, and a string such as
        # "--export=elsewhere" is a (missing) path, never an option.
        args += ["--", *(os.fspath(p) if isinstance(p, os.PathLike) else str(p) for p in positional)]
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            message = proc.stderr.strip()
            if message.startswith("ablate: error: "):
                message = message[len("ablate: error: ") :]
            raise AblateError(message, proc.returncode, args)
        value = json.loads(proc.stdout) if proc.stdout.strip() else None
        found, provenance = _read_tables(export)
    return Result(verb, value, found, provenance)
