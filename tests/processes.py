"""The processes a test starts, and waiting on them: each child dies with the test process.

A test that runs `flamespark run` (and with it a Spark JVM and its Python
workers) must not leave them running when the test run ends, however it
ends. So every child starts through `start` or `run`:

- in a process group of its own, so that one signal reaches the child and
  what it started (a test sends Ctrl-C to the group, as a terminal does);
- killed with its group when the test that started it ends (the
  `stop_children` fixture in conftest.py), and at exit of the test process;
- on Linux, killed by the kernel if the test process dies without cleaning
  up (SIGKILL, a crash): PR_SET_PDEATHSIG, set in the child before it
  execs. That reaches the child only; a Spark driver's JVM exits when the
  driver's end of its stdin closes, and its workers with it.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_running: list[subprocess.Popen] = []


def _parent_death_signal():
    """The preexec_fn that has the kernel SIGKILL the child when this process dies, or None off Linux. The libc
    call is looked up here, in the parent: the child between fork and exec only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl
    parent = os.getpid()

    def die_with_parent():
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the call: nothing would signal this child
            os._exit(1)

    return die_with_parent


_DIE_WITH_PARENT = _parent_death_signal()


def start(command, **options) -> subprocess.Popen:
    """`subprocess.Popen(command, **options)` in a new process group that dies with this process (see above)."""
    process = subprocess.Popen(command, start_new_session=True, preexec_fn=_DIE_WITH_PARENT, **options)
    _running.append(process)
    return process


def run(command, *, timeout: float, input=None, **options) -> subprocess.CompletedProcess:
    """`subprocess.run(command, timeout=timeout, **options)` through `start`: on a timeout, or anything else that
    ends the wait, the child's whole group is killed."""
    if options.pop("capture_output", False):
        options.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        options["stdin"] = subprocess.PIPE
    process = start(command, **options)
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    finally:
        stop(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def stop(process: subprocess.Popen):
    """Kill `process`'s group if anything of it still runs, and reap the child."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone (PermissionError: on macOS, a zombie leader)
        pass
    process.wait()
    if process in _running:
        _running.remove(process)


def stop_all():
    """Kill every group started here that still runs."""
    for process in list(_running):
        stop(process)


atexit.register(stop_all)


def wait_for(condition, process, stderr: Path, what: str, timeout: float, poll: float = 0.1):
    """Poll `condition()` until it holds; fail, with the process's stderr, if the process ends first, and fail
    after `timeout` seconds naming `what` was awaited."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, stderr.read_text()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)
