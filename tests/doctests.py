"""Running the examples in docstrings as tests."""
import doctest


def examples_of(module) -> list:
    """The doctests of `module` that have examples."""
    return [test for test in doctest.DocTestFinder().find(module) if test.examples]


def assert_runs(example):
    """Run one doctest; on a failure, the assertion shows doctest's report."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(example, out=report.append)
    assert runner.failures == 0, "".join(report)
