"""Puts this checkout first on `sys.path`, for a benchmark that runs as a script.

`python benchmarks/NAME.py` puts benchmarks/ on the path, not the checkout
that holds it: neither `benchmarks.lib` nor the examples beside it would
be found, and `flamespark` would come from wherever it is installed rather
than from this checkout. So each script, when it runs as one (its
`__package__` is empty), imports this module before anything of the
project; imported as `benchmarks.NAME` (by the tests), it finds the
checkout on the path already.
"""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)
