"""The examples in the operators' docstrings, `flamespark.run`'s, the changelog's, running an operator on its own
and the batch timing's, run and print what they show."""
import doctest

import pytest

import flamespark.api
import flamespark.engines.spark.batch_time
import flamespark.graph
import flamespark.runtime.changes
import operators.base

DOCUMENTED = ["Graph", "Graph.source", "Stream.map", "Stream.flat_map", "Stream.filter", "Stream.branch",
              "Stream.group_by", "Stream.stateful", "Stream.union", "Stream.sink"]
EXAMPLES = {test.name.removeprefix("flamespark.graph."): test
            for test in doctest.DocTestFinder().find(flamespark.graph) if test.examples}


def test_every_operator_has_an_example():
    assert sorted(EXAMPLES) == sorted(DOCUMENTED)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_the_example_runs(name):
    assert_runs(EXAMPLES[name])


def test_the_run_example_runs():
    (example,) = [test for test in doctest.DocTestFinder().find(flamespark.api) if test.examples]
    assert example.name == "flamespark.api.run"
    assert_runs(example)


def test_the_changelog_example_runs():
    (example,) = [test for test in doctest.DocTestFinder().find(flamespark.runtime.changes) if test.examples]
    assert example.name == "flamespark.runtime.changes.StepChanges"
    assert_runs(example)


def test_the_example_of_running_an_operator_on_its_own_runs():
    (example,) = [test for test in doctest.DocTestFinder().find(operators.base) if test.examples]
    assert example.name == "operators.base.Operator.process"
    assert_runs(example)


def test_the_batch_time_example_runs():
    (example,) = [test for test in doctest.DocTestFinder().find(flamespark.engines.spark.batch_time) if test.examples]
    assert example.name == "flamespark.engines.spark.batch_time.batch_time"
    assert_runs(example)


def assert_runs(example):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(example, out=report.append)
    assert runner.failures == 0, "".join(report)
