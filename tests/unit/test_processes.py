"""A test run that is interrupted leaves nothing running: a pytest run started here, whose test starts a child
(which starts a grandchild, as a Spark driver starts its JVM) through tests.processes, is stopped mid-test."""
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests import processes

REPOSITORY = Path(__file__).resolve().parents[2]

HANGING_TEST = '''
import sys
import time
from pathlib import Path

from tests import processes

FAMILY = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(grandchild.pid, flush=True)
time.sleep(600)
"""


def test_hangs_with_a_child_and_a_grandchild():
    with open({grandchild!r}, "w") as grandchild_pid:
        child = processes.start([sys.executable, "-c", FAMILY], stdout=grandchild_pid)
    Path({child!r}).write_text(str(child.pid))
    time.sleep(600)
'''


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by whoever inherited it, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("stop, dies", [
    (signal.SIGINT, ["child", "grandchild"]),  # Ctrl-C: pytest tears the test down, which kills the child's group
    (signal.SIGKILL, ["child"]),  # no teardown: the kernel kills the child (a grandchild must watch its parent)
], ids=["ctrl-c", "kill"])
def test_children_die_with_an_interrupted_test_run(tmp_path, stop, dies):
    child_file, grandchild_file = tmp_path / "child.pid", tmp_path / "grandchild.pid"
    test_file = tmp_path / "test_hanging.py"
    test_file.write_text(HANGING_TEST.format(child=str(child_file), grandchild=str(grandchild_file)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")])))
    # tests.conftest as a plugin: the hanging test has the suite's fixtures, the one that stops children too
    with open(tmp_path / "pytest.log", "w") as log:
        run = processes.start([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                               str(test_file)], cwd=tmp_path, env=env, stdout=log, stderr=log)
    wait_until(lambda: child_file.exists() and grandchild_file.exists() and grandchild_file.read_text().strip(), 120,
               "the hanging test's child and grandchild")
    family = {"child": int(child_file.read_text()), "grandchild": int(grandchild_file.read_text())}
    assert all(alive(pid) for pid in family.values())
    os.kill(run.pid, stop)
    run.wait(timeout=60)
    for name in dies:
        wait_until(lambda: not alive(family[name]), 30, f"the {name} to die")
    for pid in family.values():  # what survives is this test's to clean up
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
