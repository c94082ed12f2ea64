"""Measuring one run in a process of its own: its peak resident memory, from a fresh start."""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import resource


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
