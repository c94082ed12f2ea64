"""The benchmark scripts in benchmarks/: each runs as the documentation shows, `python benchmarks/NAME.py` at the
root of a clone, and from any directory, with its help, and refuses bad options before its work; the installed
packages never import them."""
import ast
import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchmarks.lib
from benchmarks import core, overhead, sorters, state
from tests import processes
from tests.doctests import assert_runs, examples_of

REPOSITORY = Path(__file__).resolve().parents[2]


SCRIPTS = sorted(path.stem for path in (REPOSITORY / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__":' in path.read_text())
DOCUMENTED = re.compile(r"\bpython benchmarks/([a-z_]+)\.py\b")  # NAME.py stands for any


def test_every_script_is_documented_as_a_user_runs_it():
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").rglob("*.md"))]
    documented = {name for page in pages for name in DOCUMENTED.findall(page.read_text(encoding="utf-8"))}
    assert len(SCRIPTS) >= 9 and sorted(set(SCRIPTS) - documented) == []
    assert sorted(documented - set(SCRIPTS)) == []


def copy_checkout(destination: Path) -> Path:
    """The files of this checkout that git tracks or would (not ignored), as they are in its work tree, copied
    under `destination`: what a fresh clone holds, with the changes not yet committed."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPOSITORY,
                            capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPOSITORY / name
        if source.is_file():  # a file deleted but not yet committed is not there to copy
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    """Each script's `python benchmarks/NAME.py --help`, typed at the root of a copy of the checkout without
    PYTHONPATH, as the benchmarks page says to run it; all at once, as each mostly waits on its imports."""
    clone = copy_checkout(tmp_path_factory.mktemp("clone"))
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    started = {name: processes.start([sys.executable, f"benchmarks/{name}.py", "--help"], cwd=clone, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in SCRIPTS}
    done = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        done[name] = (process.returncode, stdout, stderr)
    return done


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_shows_its_help_when_run_from_the_root_of_a_clone(script, helps):
    returncode, stdout, stderr = helps[script]
    assert returncode == 0, stderr
    assert stdout.startswith(f"usage: benchmarks/{script}.py ")
    assert "(default: None)" not in stdout and "(default: False)" not in stdout


@pytest.mark.parametrize("script, option", [
    ("core", "--overload-rate DOCS_PER_S"), ("sorters", "--frequencies F1,F2,..."),
    ("overhead", "--baseline {key,shard}"), ("state", "--warmup-batches B"), ("kafka_vs_files", "{index,count}"),
])
def test_a_script_runs_from_any_directory_without_pythonpath(script, option, tmp_path):
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = processes.run([sys.executable, str(REPOSITORY / "benchmarks" / f"{script}.py"), "--help"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: benchmarks/{script}.py ") and option in done.stdout


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
