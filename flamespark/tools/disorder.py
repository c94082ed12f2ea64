"""Synthetic disorder: turn an in-order event stream into an out-of-order one.

This is the data generator of the Impatience-sort paper (Chandramouli,
Goldstein, Li; section VI-A): it takes a dataset sorted by timestamp and
delays *p* % of the events by ``|N(0, d)|`` milliseconds, where ``N(0, d)``
is a normal distribution with mean 0 and standard deviation *d*.  The paper's
default synthetic workload is ``p = 30``, ``d = 64``.

The paper phrases it as moving the delayed events' timestamps backward while
they keep their position; here the equivalent, more natural view is taken:
every event keeps its event time ``ts`` and a delayed event *arrives* late,
at ``ts + delay``.  The output is the events in arrival order, i.e. sorted
stably by ``ts + delay`` (events with equal arrival time keep their original
relative order; events that are not delayed arrive at ``ts``).

Library use::

    from flamespark.tools.disorder import disorder_events
    shuffled = disorder_events(events, percent=30, stddev_ms=64, seed=1)

Command line (``flamespark.cli.disorder``)::

    flamespark disorder IN.jsonl --out OUT.jsonl --percent 30 --stddev-ms 64 --seed 1

Input files are read and checked by :mod:`flamespark.io.inputs`, like every
other event input.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flamespark.core.errors import InputError
from flamespark.io.atomic import replacing
from flamespark.io.inputs import jsonl_lines, open_event_file
from flamespark.io.parsing import check_record, parse_event_line

__all__ = [
    "DEFAULT_PERCENT",
    "DEFAULT_STDDEV_MS",
    "DEFAULT_SEED",
    "disorder_events",
    "disorder_file",
    "count_inversions",
    "count_runs",
]

DEFAULT_PERCENT = 30.0
DEFAULT_STDDEV_MS = 64.0
DEFAULT_SEED = 0


# --------------------------------------------------------------------------
# Parameter validation
# --------------------------------------------------------------------------

def _check_percent(percent: float) -> float:
    if isinstance(percent, bool) or not isinstance(percent, (int, float)):
        raise ValueError(f"percent must be a number, not {percent!r}")
    if not 0.0 <= percent <= 100.0:  # also rejects NaN
        raise ValueError(f"percent must be between 0 and 100, not {percent}")
    return float(percent)


def _check_stddev(stddev_ms: float) -> float:
    if isinstance(stddev_ms, bool) or not isinstance(stddev_ms, (int, float)):
        raise ValueError(f"stddev_ms must be a number, not {stddev_ms!r}")
    if not (stddev_ms >= 0.0 and math.isfinite(stddev_ms)):
        raise ValueError(
            f"stddev_ms must be a finite number >= 0, not {stddev_ms}")
    return float(stddev_ms)


def _check_sorted(ts: int, previous: int | None, where: str) -> None:
    if previous is not None and ts < previous:
        raise InputError(f"{where}: ts {ts} is smaller than the previous event's ts {previous}; "
                         "the input must be sorted by ts")


# --------------------------------------------------------------------------
# Core
# --------------------------------------------------------------------------

def _arrival_order(
    ts: Sequence[int], percent: float, stddev_ms: float, seed: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(order, delays)`` for timestamps *ts* (already validated).

    ``order`` is the permutation giving the new arrival order; ``delays`` has
    one entry per input event (0.0 for events that are not delayed).
    """
    n = len(ts)
    n_delayed = math.floor(n * percent / 100.0 + 0.5)
    n_delayed = min(n, n_delayed)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(n, size=n_delayed, replace=False)
    delays = np.zeros(n, dtype=np.float64)
    delays[chosen] = np.abs(rng.normal(0.0, stddev_ms, size=n_delayed))
    # float64 is exact for |ts| < 2**53 ms (~285,000 years), i.e. any
    # realistic millisecond timestamp.
    arrival = np.asarray(ts, dtype=np.float64) + delays
    order = np.argsort(arrival, kind="stable")
    return order, delays


def disorder_events(
    events: Sequence[Mapping[str, Any]],
    percent: float,
    stddev_ms: float,
    seed: int | None,
) -> list:
    """Delay *percent* % of *events* by ``|N(0, stddev_ms)|`` ms each.

    *events* are mappings with an integer ``"ts"`` (event time in ms) given
    in arrival order, which for the input means sorted by ``ts``.  Exactly
    ``round(len(events) * percent / 100)`` events, chosen uniformly at
    random by ``numpy.random.default_rng(seed)``, get a delay; the result is
    a new list of the *same* event objects (not copies; ``ts`` untouched)
    ordered by arrival time ``ts + delay``, stable for ties.  Equal
    arguments give equal results.

    Raises ``ValueError`` for percent outside [0, 100], a negative or
    non-finite stddev, and :class:`~flamespark.InputError` naming the event
    for an event without an integer ``ts`` or input not sorted by ``ts``.
    """
    percent = _check_percent(percent)
    stddev_ms = _check_stddev(stddev_ms)
    events = list(events)
    ts: list[int] = []
    for index, event in enumerate(events):
        where = f"event {index}"
        value, _ = check_record(event, where)
        _check_sorted(value, ts[-1] if ts else None, where)
        ts.append(value)
    order, _ = _arrival_order(ts, percent, stddev_ms, seed)
    return [events[i] for i in order]


def disorder_pairs(pairs: Sequence[tuple], percent: float, stddev_ms: float, seed: int | None) -> list:
    """`disorder_events` for `(ts, payload)` pairs sorted by `ts`, as `flamespark.run` takes them."""
    order = disorder_events([{"ts": ts, "at": i} for i, (ts, _) in enumerate(pairs)], percent, stddev_ms, seed)
    return [pairs[event["at"]] for event in order]


# --------------------------------------------------------------------------
# Disorder measures (Estivill-Castro & Wood, as used in the paper's Table I)
# --------------------------------------------------------------------------

def count_inversions(ts: Sequence[int]) -> int:
    """Number of pairs ``i < j`` with ``ts[i] > ts[j]`` (equal ts: no inversion).

    O(n log^2 n) in numpy: a bottom-up merge sort over ranks where each level
    counts, for every element of a right half, the larger elements in the
    matching left half with one vectorised ``searchsorted``.
    """
    n = len(ts)
    if n < 2:
        return 0
    # Ranks 0..n-1; a stable argsort makes equal timestamps rank in their
    # current order, so ties never count as inversions.
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(np.asarray(ts, dtype=np.float64), kind="stable")] = \
        np.arange(n, dtype=np.int64)
    size = 1 << (n - 1).bit_length()
    # Padding with ever larger values at the end adds no inversions.
    arr = np.concatenate([ranks, np.arange(n, size, dtype=np.int64)])
    total = 0
    width = 1
    while width < size:
        blocks = arr.reshape(-1, 2 * width)
        offsets = (np.arange(blocks.shape[0], dtype=np.int64) * size)[:, None]
        left = (blocks[:, :width] + offsets).ravel()   # globally sorted
        right = (blocks[:, width:] + offsets).ravel()
        below = np.searchsorted(left, right)            # absolute positions
        row_start = np.repeat(np.arange(blocks.shape[0]) * width, width)
        total += int(np.sum(width - (below - row_start)))
        arr = np.sort(blocks, axis=1).ravel()
        width *= 2
    return total


def count_runs(ts: Sequence[int]) -> int:
    """Number of maximal non-decreasing runs (1 for sorted, 0 for empty)."""
    if len(ts) == 0:
        return 0
    values = np.asarray(ts, dtype=np.float64)
    return 1 + int(np.count_nonzero(values[1:] < values[:-1]))


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

def _read_lines(path: Path) -> tuple[list[str], list[int]]:
    """The event lines of a JSONL file sorted by ts, and their ts; checked by the shared input reader."""
    lines: list[str] = []
    stamps: list[int] = []
    with open_event_file(path) as handle:
        for number, text in jsonl_lines(handle, str(path)):
            where = f"{path}:{number}"
            ts, _ = parse_event_line(text, where)
            _check_sorted(ts, stamps[-1] if stamps else None, where)
            lines.append(text)
            stamps.append(ts)
    return lines, stamps


def _write_lines(out_path: Path, lines: list[str], order: np.ndarray) -> None:
    with replacing(out_path) as temporary, open(temporary, "w", encoding="utf-8", newline="\n") as fh:
        for i in order:
            fh.write(lines[i])
            fh.write("\n")


def disorder_file(
    in_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    percent: float,
    stddev_ms: float,
    seed: int | None,
) -> dict:
    """Apply :func:`disorder_events` to a JSONL file of events.

    Every non-blank line of *in_path* must be a JSON object with an integer
    ``"ts"``, sorted by ``ts``; otherwise :class:`~flamespark.InputError` is
    raised with ``FILE:LINE`` in its message and nothing is written.  Lines
    are copied byte for byte (less a UTF-8 byte order mark and line ends),
    only their order changes, and the output is written to a temporary file
    next to *out_path* that is renamed into place at the end; an *out_path*
    that is *in_path* is refused, as the in-order input would be lost. The
    same seed and timestamps give the same order as :func:`disorder_events`.

    Returns a summary: ``events``, ``delayed``, ``max_delay_ms``,
    ``mean_delay_ms`` (over delayed events), ``inversions`` and ``runs``
    (disorder of the output by ``ts``), plus the parameters and paths.
    """
    percent = _check_percent(percent)
    stddev_ms = _check_stddev(stddev_ms)
    src = Path(in_path)
    dst = Path(out_path)
    if dst.exists() and src.exists() and dst.samefile(src):
        raise InputError(f"{dst} is the input file: give --out another path, or the in-order input would be lost")
    lines, stamps = _read_lines(src)
    order, delays = _arrival_order(stamps, percent, stddev_ms, seed)
    _write_lines(dst, lines, order)
    delayed = math.floor(len(stamps) * percent / 100.0 + 0.5)
    delayed = min(len(stamps), delayed)
    out_ts = [stamps[i] for i in order]
    positive = delays[delays > 0]
    return {
        "input": str(src),
        "output": str(dst),
        "percent": percent,
        "stddev_ms": stddev_ms,
        "seed": seed,
        "events": len(stamps),
        "delayed": delayed,
        "max_delay_ms": float(delays.max()) if len(delays) else 0.0,
        "mean_delay_ms": float(positive.mean()) if len(positive) else 0.0,
        "inversions": count_inversions(out_ts),
        "runs": count_runs(out_ts),
    }
