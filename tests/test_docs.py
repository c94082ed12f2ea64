"""Every example in the docstrings of the project's packages runs and prints what it shows, and what a user meets
first (the DSL's operators, `flamespark.run`, the changelog, an operator run on its own) has one."""
import importlib
import pkgutil

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
    "flamespark.result.Result",
    "flamespark.runtime.changes.StepChanges",
    "operators.base.Operator.process",
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


def test_what_a_user_meets_first_has_an_example():
    assert sorted(set(DOCUMENTED) - set(EXAMPLES)) == []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_runs(name):
    assert_runs(EXAMPLES[name])
