"""A status line on stderr, rewritten in place while a long run goes on."""
import sys
import threading
from contextlib import contextmanager

INTERVAL_S = 1.0


@contextmanager
def status_line(status, stream=None, interval_s: float | None = None):
    """While the block runs, write `status()` to `stream` (stderr) every `interval_s` s (INTERVAL_S), one line
    rewritten in place, and end that line once the block ends. A block shorter than the interval writes
    nothing. A background thread writes it, so the block's own work pays nothing per item for it; `status`
    should only read counters.

    >>> import io, time
    >>> out = io.StringIO()
    >>> with status_line(lambda: "working", out, interval_s=0.01):
    ...     time.sleep(0.1)
    >>> out.getvalue().startswith("\\rworking") and out.getvalue().endswith("\\n")
    True
    """
    stream = sys.stderr if stream is None else stream
    interval_s = INTERVAL_S if interval_s is None else interval_s
    stop = threading.Event()
    shown = False

    def show():
        nonlocal shown
        while not stop.wait(interval_s):
            stream.write(f"\r{status()}   ")
            stream.flush()
            shown = True

    thread = threading.Thread(target=show, name="flamespark-status", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if shown:
            stream.write("\n")
            stream.flush()
