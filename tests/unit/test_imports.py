"""The packages' imports point down their layers, as docs/design.md draws them, and go round no circle; every
top-level package imports on its own, first, in a fresh interpreter: no import circle hides behind another.
A local run pays only for what it uses: neither PySpark nor networkx is imported."""
import ast
import re
import sys
from pathlib import Path

import networkx as nx
import pytest

from tests import processes

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("flamespark", "operators", "barrier")
DESIGN = ROOT / "docs" / "design.md"


def design_layers(page: str) -> list[list[str]]:
    """The layers of the design page's "Layers" section, from the bottom up: each the paths its line names (a
    folder ending in "/", or a module ending in ".py"), from the section's first block. A line that starts with
    a space goes on describing the layer above it."""
    section = page.split("## Layers\n", 1)[1]
    block = re.search(r"^```text\n(.*?)^```$", section, re.DOTALL | re.MULTILINE).group(1)
    layers = []
    for line in block.splitlines():
        if line and not line[0].isspace():
            words = line.split()
            layers.append([word for word in words[:next((i for i, w in enumerate(words)
                                                          if not w.endswith(("/", ".py"))), len(words))]])
    return layers[::-1]


def module_name(path: Path) -> str:
    """The dotted name of the module in the file `path` (relative to the root): a package by its __init__.py."""
    parts = path.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path, packages) -> dict[str, Path]:
    """Every module of `packages` (folders under `root`), by dotted name, with its file relative to `root`."""
    return {module_name(path.relative_to(root)): path.relative_to(root)
            for package in packages for path in sorted((root / package).rglob("*.py"))}


def imports(root: Path, modules: dict[str, Path]):
    """`(importer, imported, line)` for every import statement in the modules, at their top or anywhere in a
    function, of another module of the project. `from P import N` imports the module P.N where there is one, else
    P; a package's __init__.py, which runs before its modules, is not counted as one of their imports (Python
    runs it whatever they import; the fresh-interpreter tests below catch a circle through it)."""
    def owner(name: str):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for importer, path in modules.items():
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importer's package, one level up per dot past the first
                    parents = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*parents, base] if base else parents)
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for name in names:
                imported = owner(name)
                if imported is not None and imported != importer:
                    yield importer, imported, node.lineno


def layer_of(path: Path, layers: list[list[str]]):
    """The index (from the bottom) of the layer whose longest path holds the module file `path`, or None."""
    text = path.as_posix()
    matches = [(len(named), index) for index, layer in enumerate(layers) for named in layer
               if text == named or (named.endswith("/") and text.startswith(named))]
    return max(matches)[1] if matches else None


def layering_problems(root: Path, layers: list[list[str]], packages=PACKAGES) -> list[str]:
    """What breaks the layering of `packages` under `root`: a module in no layer, an import of a module of a
    higher layer, and each circle of imports (one line each, naming files and lines)."""
    modules = project_modules(root, packages)
    placed = {name: layer_of(path, layers) for name, path in modules.items()}
    problems = [f"{path} is in no layer of docs/design.md" for name, path in modules.items() if placed[name] is None]
    graph = nx.DiGraph()
    for importer, imported, line in imports(root, modules):
        if not graph.has_edge(importer, imported):  # an import's first line stands for all of them
            graph.add_edge(importer, imported, line=line)
    for importer, imported, line in graph.edges(data="line"):
        if None not in (placed[importer], placed[imported]) and placed[imported] > placed[importer]:
            problems.append(f"{modules[importer]}:{line} imports {imported}, of a layer above its own "
                            f"({' '.join(layers[placed[imported]])} over {' '.join(layers[placed[importer]])})")
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            circle = nx.find_cycle(graph.subgraph(component))
            problems.append("an import circle: " + ", ".join(
                f"{modules[importer]}:{graph.edges[importer, imported]['line']} imports {imported}"
                for importer, imported in circle))
    return problems


def test_the_design_page_draws_the_layers_from_the_core_up():
    layers = design_layers(DESIGN.read_text(encoding="utf-8"))
    assert layers[0] == ["flamespark/core/"] and layers[-1] == ["flamespark/cli/", "flamespark/__main__.py"]
    assert len(layers) >= 8


def test_every_import_points_down_the_layers_and_none_goes_round_a_circle():
    assert layering_problems(ROOT, design_layers(DESIGN.read_text(encoding="utf-8"))) == []


LAYERS = [["pkg/low/"], ["pkg/high/", "pkg/top.py"]]


@pytest.mark.parametrize("files, problem", [
    ({"low/a.py": "from pkg.high import b", "high/b.py": ""},
     ["pkg/low/a.py:1 imports pkg.high.b, of a layer above its own (pkg/high/ pkg/top.py over pkg/low/)"]),
    ({"low/a.py": "def later():\n    import pkg.low.b", "low/b.py": "from pkg.low.a import later"},
     ["an import circle: ", "pkg/low/a.py:2 imports pkg.low.b", "pkg/low/b.py:1 imports pkg.low.a"]),
    ({"low/__init__.py": "from pkg.low.a import x\ny = 1", "low/a.py": "from pkg.low import y\nx = y"},
     ["an import circle: ", "pkg/low/__init__.py:1", "pkg/low/a.py:1"]),
    ({"low/a.py": "from . import b\nfrom .. import top", "low/b.py": "", "top.py": ""},
     ["pkg/low/a.py:2 imports pkg.top, of a layer above its own"]),
    ({"low/a.py": "", "other.py": ""}, ["pkg/other.py is in no layer of docs/design.md"]),
    ({"low/__init__.py": "from pkg.low import a", "low/a.py": "from . import b", "low/b.py": "import os",
      "high/c.py": "def f():\n    import pkg.low.b", "top.py": "from pkg.high.c import f\nfrom pkg import low"}, []),
])
def test_the_check_finds_an_arrow_up_a_circle_and_a_module_in_no_layer(files, problem, tmp_path):
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text + "\n")
    found = layering_problems(tmp_path, LAYERS, ["pkg"])
    assert len(found) == bool(problem) and all(part in found[0] for part in problem), found


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


def test_the_pyspark_pipeline_package_imports_first():
    done = processes.run([sys.executable, "-c", "import flamespark.spark"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
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
