"""Every top-level package imports on its own, first, in a fresh interpreter: no import circle hides behind another.
A local run pays only for what it uses: neither PySpark nor networkx is imported."""
import sys
from pathlib import Path

import pytest

from tests import processes

ROOT = Path(__file__).resolve().parents[2]


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
    done = processes.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


LOCAL_RUN = """
import sys
import flamespark as fs
from flamespark.tools.loader import load_graph

graph = load_graph(sys.argv[1])
outputs = fs.run(graph, {"docs": [(1, {"ts": 1, "doc_id": 7, "title": "t", "text": "to be or not to be"})]}).outputs
assert outputs["docs"] == [{"doc_id": 7, "ts": 1, "words": 4, "new_words": 4}], outputs
print(sorted(name for name in ("pyspark", "networkx") if name in sys.modules))
"""


def test_a_local_run_of_a_pipeline_file_imports_neither_pyspark_nor_networkx():
    done = processes.run([sys.executable, "-c", LOCAL_RUN, str(ROOT / "examples" / "inverted_index.py")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[]"


def test_drawing_a_graph_imports_networkx():
    code = "import sys; from tests import graphs; graphs.running_sum().to_dot(); print('networkx' in sys.modules)"
    done = processes.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
