"""The examples in the operators' docstrings run and print what they show."""
import doctest

import pytest

import flamespark.graph

DOCUMENTED = ["Graph", "Graph.source", "Stream.map", "Stream.flat_map", "Stream.filter", "Stream.group_by",
              "Stream.stateful", "Stream.union", "Stream.sink"]
EXAMPLES = {test.name.removeprefix("flamespark.graph."): test
            for test in doctest.DocTestFinder().find(flamespark.graph) if test.examples}


def test_every_operator_has_an_example():
    assert sorted(EXAMPLES) == sorted(DOCUMENTED)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_the_example_runs(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(EXAMPLES[name], out=report.append)
    assert runner.failures == 0, "".join(report)
