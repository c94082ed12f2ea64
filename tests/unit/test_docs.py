"""Every example in the docstrings of the project's packages runs and prints what it shows, and what a user meets
first (the DSL's operators, `flamespark.run`, the changelog, an operator run on its own) has one. So does every
Python session (a ```pycon block) in README.md and the documentation site's pages."""
import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from tests.doctests import assert_runs, examples_of

PACKAGES = ["flamespark", "operators", "barrier"]
DOCUMENTED = [
    *(f"flamespark.graph.{name}" for name in ["Graph", "Graph.source", "Stream.map", "Stream.flat_map",
                                              "Stream.filter", "Stream.branch", "Stream.group_by",
                                              "Stream.stateful", "Stream.union", "Stream.sink",
                                              "Stream.tumbling_window", "Stream.hopping_window",
                                              "Stream.session_window", "Stream.interval_join",
                                              "Graph.to_networkx", "Graph.validate"]),
    *(f"flamespark.windows.Window.{name}" for name in ["count", "sum", "min", "max", "mean", "collect", "aggregate"]),
    "flamespark.api.run",
    "flamespark.api.run_with_options",
    "flamespark.spark.frames.stream",
    "flamespark.spark.frames.payloads",
    "flamespark.result.Result",
    "flamespark.runtime.changes.BatchChanges",
    "operators.base.Operator.apply",
    "flamespark.engines.spark.batch_time.batch_time",
    "flamespark.tools.bench_report.batch_time_markdown",
]


def _modules():
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield root
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not module.name.endswith(".__main__"):  # importing it runs the command line
                yield importlib.import_module(module.name)


EXAMPLES = {test.name: test for module in _modules() for test in examples_of(module)}
# The examples of `flamespark.spark.stream` and `payloads` run queries on a session.
ON_SPARK = "flamespark.spark.frames."


def test_what_a_user_meets_first_has_an_example():
    assert sorted(set(DOCUMENTED) - set(EXAMPLES)) == []


@pytest.mark.parametrize("name", sorted(name for name in EXAMPLES if not name.startswith(ON_SPARK)))
def test_the_example_runs(name):
    assert_runs(EXAMPLES[name])


@pytest.mark.parametrize("name", sorted(name for name in EXAMPLES if name.startswith(ON_SPARK)))
def test_the_spark_example_runs(name, spark):
    """On the test session (the `spark` fixture), which the example's `getOrCreate` finds."""
    assert_runs(EXAMPLES[name])


ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "setup.cfg").exists())
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SESSION = re.compile(r"^```pycon\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def page_example(page: Path) -> doctest.DocTest:
    """The Python sessions of one page as one doctest, so that a later session uses what an earlier one defined."""
    sessions = SESSION.findall(page.read_text(encoding="utf-8"))
    name = str(page.relative_to(ROOT))
    return doctest.DocTestParser().get_doctest("\n".join(sessions), {}, name, str(page), 0)


PAGE_EXAMPLES = {test.name: test for test in map(page_example, PAGES) if test.examples}


def test_the_readme_has_examples_and_starts_with_the_quick_start():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_shell_block = re.search(r"^```bash\n(.*?)^```$", readme, re.DOTALL | re.MULTILINE).group(1)
    assert "examples/demo.py" in first_shell_block
    assert "README.md" in PAGE_EXAMPLES
    assert len(readme.splitlines()) <= 250, "the README is for a reader with five minutes: details go to docs/"


@pytest.mark.parametrize("name", sorted(PAGE_EXAMPLES))
def test_the_page_examples_run(name):
    assert_runs(PAGE_EXAMPLES[name])
