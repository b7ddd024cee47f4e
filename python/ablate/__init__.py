"""ablate: which parts of an LLM prompt are earning their tokens.

Each verb of the command line is a function here, with its options as keyword parameters
(`help(ablate.sweep)` lists them). It takes an experiment folder, or the experiment's tables as
DataFrames (Polars, pandas or pyarrow) with its settings, and returns a Result whose attributes
are the verb's tables: `.to_polars()`, `.to_pandas()`, or any library that reads the Arrow
PyCapsule interface (`polars.DataFrame(t)`, `pyarrow.table(t)`).

>>> import ablate
>>> out = ablate.sweep("notebooks-data/support-eval-v3", bootstrap=200)
>>> arms = out.arms.to_polars()
>>> arms.select("arm", "verdict", "confidence").row(0)
('without-system', 'needed', 'confident')
>>> out.arms.to_pandas().set_index("arm").loc["without-system", "lost_cases"]
np.int64(133)
>>> out.provenance["bootstrap"], out.provenance["command"][3]
(200, 'sweep')

A misspelt option is Python's own error:

>>> ablate.sweep("notebooks-data/support-eval-v3", boostrap=200)
Traceback (most recent call last):
TypeError: sweep() got an unexpected keyword argument 'boostrap'...

Errors of the command raise AblateError with its message. The numbers are the binary's own.
"""

from ._run import AblateError, Result, Table, binary, run, schema
from ._verbs import *  # noqa: F403 - one function per verb, generated (python/generate.py)
from ._verbs import __all__ as _verbs

__all__ = ["AblateError", "Result", "Table", "binary", "run", "schema", *_verbs]
