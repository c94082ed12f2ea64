"""Ctrl-C during a Spark run: one clean stop instead of py4j's tracebacks.

PySpark's own SIGINT handler calls the JVM (`cancelAllJobs`) from inside the
handler. When Ctrl-C comes while the main thread waits on the JVM, as it does
in `awaitTermination`, that call re-enters py4j's connection, and py4j logs
each failed call, and the KeyboardInterrupt it then raises, with a traceback:
dozens of lines for one Ctrl-C. Hence:

- while a query runs, `interrupt_flag` makes SIGINT only set a flag, so the
  wait goes on undisturbed and the caller stops the query between calls;
- at other moments Ctrl-C raises KeyboardInterrupt as usual, and
  `quiet_interrupts` keeps what py4j logs about the call it broke off the
  terminal (the exception itself still reaches the caller), and delivers
  again a KeyboardInterrupt that landed in a finalizer, where Python would
  print "Exception ignored" and drop it.
"""
import logging
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

_REDELIVERY_DELAY_S = 0.05


@contextmanager
def interrupt_flag():
    """Within the block, SIGINT sets the yielded Event instead of raising; the previous handler comes back after.

    Signal handlers belong to the main thread: in any other thread the Event
    is yielded as is and never set (Ctrl-C reaches the main thread there).
    """
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _not_from_py4j_send_command(record: logging.LogRecord) -> bool:
    """False for what py4j logs on the root logger when a call to the JVM fails (the failure is raised too)."""
    return not (record.funcName == "send_command" and Path(record.pathname).parent.name == "py4j")


def _interrupt_main_thread():
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _unraisable_hook(previous):
    def hook(unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # Signalled from inside the hook, the main thread would raise right here; a moment later it
            # raises wherever it is then, as if Ctrl-C came again.
            again = threading.Timer(_REDELIVERY_DELAY_S, _interrupt_main_thread)
            again.daemon = True
            again.start()
        else:
            previous(unraisable)

    hook.flamespark = True
    return hook


def quiet_interrupts():
    """Install the py4j log filter and the finalizer hook of the module docstring, once per process."""
    root = logging.getLogger()
    if _not_from_py4j_send_command not in root.filters:
        root.addFilter(_not_from_py4j_send_command)
    if not getattr(sys.unraisablehook, "flamespark", False):
        sys.unraisablehook = _unraisable_hook(sys.unraisablehook)
