"""Writes python/ablate/_verbs.py: one function per verb of the command line, with real keyword
parameters and a docstring per parameter, from the binary's own definition (`ablate schema`).

    python python/generate.py            rewrite the file
    python python/generate.py --check    exit 1 when the file is not what the binary defines

The binary is $ABLATE_BIN, else target/debug/ablate. python/tests check that the committed file
is up to date, so a verb or an option added to the command line without regenerating fails there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "python" / "ablate" / "_verbs.py"

# Manifest keys a notebook does not set by keyword (blocks are tables of their own in TOML).
MANIFEST_SKIPPED = {"blocks", "synthetic", "simulation"}
MANIFEST_TYPES = {
    "threshold_drop": "float",
    "stress_threshold_drop": "float",
    "pass_mark": "float",
    "quality_threshold": "float",
    "score_min": "float",
    "score_max": "float",
    "strata": "List[str]",
}
# Options whose values are files or folders.
PATHS = {"out", "from_aggregates", "mix_from", "policy", "pilot", "confirm"}
# Option types the schema's defaults do not tell.
OPTION_TYPES = {
    "price_per_mtok": "float",
    "requests_per_day": "float",
    "tokens_per_call": "float",
    "sd": "float",
    "threshold_drop": "float",
    "soft_limit_ratio": "float",
    "model_limit": "int",
    "expected_output": "int",
    "output_buffer": "int",
    "safety_margin": "int",
    "calls": "int",
    "repeats": "int",
    "cluster_by": "str",
    "design": "str",
    "memory": "str",
}
# The functions' first parameter, by verb: what the command line takes as its positional argument.
FIRST = {
    "plan": [("units", "TableLike", "The units table (unit, block, tokens): a path or a DataFrame.")],
    "shadow": [("experiment", "PathLike", "An experiment folder holding shadow.parquet (or give `shadow=`).")],
    "context": [("experiment", "PathLike", "An experiment folder holding context_log.parquet (or give `context_log=`).")],
}
LOG_TABLE = {"shadow": "shadow", "context": "context_log"}


def schema(binary: str) -> dict:
    proc = subprocess.run([binary, "schema"], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def option_type(o: dict) -> str:
    name = o["name"]
    if o["flag"]:
        return "bool"
    if o["multiple"]:
        return "List[str]"
    if name in OPTION_TYPES:
        return OPTION_TYPES[name]
    if name in PATHS:
        return "PathLike"
    default = o.get("default")
    if default is not None:
        try:
            int(default)
            return "int"
        except ValueError:
            pass
        try:
            float(default)
            return "float"
        except ValueError:
            pass
    return "Any"


def sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith(".") else text + "."


def params_of(verb: dict, s: dict) -> "list[tuple[str, str, str, bool]]":
    """(name, type, doc, required) for every keyword of the verb's function, in order: the
    experiment and its tables, experiment.toml settings, then the verb's options."""
    name = verb["name"]
    out: list = []
    seen: set = set()

    def add(pname: str, ptype: str, doc: str, required: bool = False) -> None:
        if pname not in seen:
            seen.add(pname)
            out.append((pname, ptype, doc, required))

    if verb["reads_experiment"]:
        add("experiment", "PathLike", "The experiment folder (or build one from the tables and settings below).")
        for t in s["experiment_tables"]:
            add(t, "TableLike", f"The `{t}` table: a .parquet or .csv path, or a DataFrame (Polars, pandas, pyarrow); beside a folder it replaces the folder's.")
        for k in s["manifest_keys"]:
            if k not in MANIFEST_SKIPPED:
                add(k, MANIFEST_TYPES.get(k, "str"), f"experiment.toml's `{k}`, when the experiment is built from tables.")
    for pname, ptype, doc in FIRST.get(name, []):
        add(pname, ptype, doc)
    if name in LOG_TABLE:
        t = LOG_TABLE[name]
        add(t, "TableLike", f"The {t} log: a .parquet or .csv path, or a DataFrame.")
    for o in verb["options"]:
        if o["positional"] or o["name"] == "export":
            continue
        doc = sentence(o["help"] or o["name"])
        if o.get("default") is not None and not o["flag"]:
            doc += f" Default: {o['default']}."
        if o.get("possible_values"):
            doc += " One of: " + ", ".join(o["possible_values"]) + "."
        if name == "report" and o["name"] == "out":
            doc = "The report folder. Default: a new temporary folder (its path is the result's `out`); never a folder in the working directory."
        add(o["name"], option_type(o), doc, o["required"])
    return out


def function(verb: dict, s: dict) -> str:
    params = params_of(verb, s)
    first = "experiment" if verb["reads_experiment"] or verb["name"] in ("shadow", "context") else "units"
    lines = []
    sig = []
    for pname, ptype, _, required in params:
        annotation = f"Optional[{ptype}]" if ptype != "Any" else "Any"
        if pname == first:
            sig.append(f"    {pname}: {annotation} = None,")
            sig.append("    *,")
        elif required:
            sig.append(f"    {pname}: {ptype},")
        else:
            sig.append(f"    {pname}: {annotation} = None,")
    tables = ", ".join(t["name"] for t in verb["tables"]) if verb["tables"] else "every section's tables, named <section>_<table>"
    doc = [sentence(verb["about"]), "", f"Returns a Result: its tables ({tables}) as attributes, and its JSON.", "", "Args:"]
    for pname, _, pdoc, required in params:
        body = textwrap.fill(
            pdoc + (" Required." if required else ""),
            width=92,
            initial_indent=f"    {pname}: ",
            subsequent_indent="        ",
            break_on_hyphens=False,
        )
        doc.append(body)
    doc += ["", "Raises:", "    AblateError: bad input or a failed run, with the command line's message.", "    TypeError: a keyword the verb does not take, or a missing required one."]
    name = verb["name"]
    py = "next" if name == "next" else name
    lines.append(f"def {py}(")
    lines += sig
    lines.append(") -> Result:" + ("  # noqa: A001 - the verb's name" if name == "next" else ""))
    lines.append('    """' + doc[0])
    lines += [("    " + line if line else "") for d in doc[1:] for line in d.split("\n")]
    lines.append('    """')
    lines.append(f"    return run({name!r}, **_given(locals()))")
    return "\n".join(lines)


def module_verbs(s: dict) -> "list[dict]":
    return [v for v in s["verbs"] if v["tables"] or v["name"] == "report"]


def render(s: dict) -> str:
    verbs = module_verbs(s)
    head = '''"""One function per verb of the command line, with its options as keyword parameters.

Generated by python/generate.py from `ablate schema` (the command line's own definition): do not
edit; run `python python/generate.py` after changing a verb or an option.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from ._run import Result, run

PathLike = Union[str, "os.PathLike[str]"]
TableLike = Any  # a path, or an object with __arrow_c_stream__ (Polars, pandas >= 2.2, pyarrow)

__all__ = [''' + ", ".join(repr(v["name"]) for v in verbs) + ''']


def _given(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """The keyword arguments that were given (None means the command line's default)."""
    return {k: v for k, v in arguments.items() if v is not None}
'''
    return head + "\n\n" + "\n\n\n".join(function(v, s) for v in verbs) + "\n"


def main() -> int:
    binary = os.environ.get("ABLATE_BIN") or str(ROOT / "target" / "debug" / "ablate")
    text = render(schema(binary))
    if "--check" in sys.argv:
        if not TARGET.is_file() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is not what `ablate schema` defines: run python python/generate.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
