"""Measuring one run in a process of its own: its wall and CPU time, and its peak resident memory from a fresh
start."""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import resource
import time


def memory_mb(field: str = "VmHWM") -> float:
    """The process's peak (`VmHWM`) or current (`VmRSS`) resident memory, MB. Linux's figures are this process
    image's own, where `ru_maxrss` carries over from the parent that forked it (the fallback elsewhere)."""
    try:
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith(f"{field}:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak():
    """Start the peak over from the current resident memory (Linux: "5" to /proc/self/clear_refs), so that a
    run's peak is not the input's making; elsewhere the peak stays the process's."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass


def in_child(function, *args):
    """`function(*args)` in a fresh Python process, so that each run's time and memory are its own."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def timed(run) -> tuple:
    """`run()`'s result, and what it took: `wall_s` and `cpu_s` (this process's), the resident memory before it
    (`before_run_mb`) and at its peak (`peak_mb`, from the memory before it where the peak can be reset).

    >>> result, took = timed(lambda: sum(range(10)))
    >>> result, sorted(took)
    (45, ['before_run_mb', 'cpu_s', 'peak_mb', 'wall_s'])
    """
    reset_peak()
    before_mb = memory_mb("VmRSS")
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    result = run()
    wall_s, cpu_s = time.perf_counter() - started_wall, time.process_time() - started_cpu
    return result, {"wall_s": wall_s, "cpu_s": cpu_s, "before_run_mb": before_mb, "peak_mb": memory_mb()}
