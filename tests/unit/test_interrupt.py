"""Ctrl-C during a Spark run, without Spark: the flag that defers it, py4j's log filter, the finalizer hook.

The whole path (a `flamespark run` on Spark stopped by SIGINT) is tested in
tests/spark/test_spark.py and tests/spark/test_spark_inputs.py.
"""
import gc
import logging
import os
import signal
import sys
import threading

import pytest

from flamespark.engines.spark.interrupt import interrupt_flag, quiet_interrupts


def test_sigint_only_sets_the_flag_inside_the_block():
    before = signal.getsignal(signal.SIGINT)
    with interrupt_flag() as interrupted:
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupted.wait(5)
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        threading.Event().wait(5)


def test_outside_the_main_thread_the_flag_is_never_set():
    seen = []

    def wait():
        with interrupt_flag() as interrupted:
            seen.append(interrupted.is_set())

    thread = threading.Thread(target=wait)
    thread.start()
    thread.join()
    assert seen == [False]


@pytest.fixture
def restored():
    root, hook = logging.getLogger(), sys.unraisablehook
    filters = list(root.filters)
    yield
    root.filters[:] = filters
    sys.unraisablehook = hook


def record(function, path):
    return logging.LogRecord("root", logging.ERROR, path, 1, "Exception while sending command.", None, None,
                             func=function)


def test_what_py4j_logs_on_a_broken_call_is_filtered_and_nothing_else(restored):
    quiet_interrupts()
    quiet_interrupts()
    root = logging.getLogger()
    assert len(root.filters) == len(set(map(id, root.filters)))
    assert not root.filter(record("send_command", "/site-packages/py4j/java_gateway.py"))
    assert root.filter(record("send_command", "/home/me/my_module.py"))
    assert root.filter(record("other", "/site-packages/py4j/java_gateway.py"))


def test_a_ctrl_c_caught_in_a_finalizer_is_delivered_again(restored, capsys):
    quiet_interrupts()

    class Finalized:
        def __del__(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Finalized()
        gc.collect()
        threading.Event().wait(5)
    assert "Exception ignored" not in capsys.readouterr().err
