"""Waiting on a CLI process that a test started: for what it writes, while it must keep running."""
import time
from pathlib import Path


def wait_for(condition, process, stderr: Path, what: str, timeout: float, poll: float = 0.1):
    """Poll `condition()` until it holds; fail, with the process's stderr, if the process ends first, and fail
    after `timeout` seconds naming `what` was awaited."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, stderr.read_text()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)
