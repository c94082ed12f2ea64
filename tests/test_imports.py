"""Every top-level package imports on its own, first, in a fresh interpreter: no import circle hides behind another."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("statement", [
    "import operators",
    "from barrier import Barrier, ImpatienceSorter",
    "import flamespark.core.items",
    "import flamespark.runtime.plan",
    "import flamespark.engines.local",
    "import flamespark.cli",
    "import flamespark",
])
def test_a_package_imports_first_without_pyspark(statement):
    code = f"import sys; sys.modules['pyspark'] = None; {statement}"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
