"""The benchmark scripts in benchmarks/: each runs from any directory with its help, and refuses bad options before
its work; the installed packages never import them."""
import ast
import importlib
import os
import pkgutil
import sys
from pathlib import Path

import pytest

import benchmarks.lib
from benchmarks import core, overhead, sorters, state
from tests import processes
from tests.doctests import assert_runs, examples_of

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script, option", [
    ("core", "--overload-rate DOCS_PER_S"), ("sorters", "--frequencies F1,F2,..."),
    ("overhead", "--baseline {key,shard}"), ("state", "--warmup-batches B"), ("kafka_vs_files", "{index,count}"),
])
def test_a_script_runs_from_any_directory_without_pythonpath_and_has_help(script, option, tmp_path):
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = processes.run([sys.executable, str(REPOSITORY / "benchmarks" / f"{script}.py"), "--help"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: benchmarks/{script}.py ") and option in done.stdout
    assert "(default: None)" not in done.stdout and "(default: False)" not in done.stdout


@pytest.mark.parametrize("main, argv", [(state.main, ["--master", "local[two]"]),
                                        (overhead.main, ["--master", "spark:/host"])])
def test_a_wrong_spark_master_is_refused_before_anything_runs(main, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "not a Spark master URL" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["-p", "150"], "argument -p: must be between 0 and 100, not 150"),
    (["-d", "-5"], "argument -d: must be >= 0, not -5"),
    (["--seed", "-1"], "argument --seed: must be >= 0, not -1"),
])
def test_a_sorter_disorder_that_means_nothing_is_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        sorters.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("main, argv", [(core.main, ["docs.jsonl"]), (overhead.main, []), (state.main, [])])
def test_a_report_file_is_checked_before_the_work(main, argv, tmp_path, capsys):
    for out, message in [(tmp_path, f"{tmp_path} is a directory: give a file name"),
                         (tmp_path / "no" / "r.json", f"{tmp_path / 'no' / 'r.json'}: no directory {tmp_path / 'no'}")]:
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--out", str(out)])
        assert exit_info.value.code == 2
        assert f"argument --out: {message}" in capsys.readouterr().err


def test_the_installed_packages_never_import_the_benchmarks():
    for package in ("flamespark", "operators", "barrier"):
        for path in (REPOSITORY / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                assert not any(name.split(".")[0] == "benchmarks" for name in names), path


EXAMPLES = {test.name: test for module in pkgutil.walk_packages(benchmarks.lib.__path__, "benchmarks.lib.")
            for test in examples_of(importlib.import_module(module.name))}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_examples_in_the_docstrings_run(name):
    assert_runs(EXAMPLES[name])
