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
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flamespark.io.jsonl import replacing

__all__ = [
    "DEFAULT_PERCENT",
    "DEFAULT_STDDEV_MS",
    "DEFAULT_SEED",
    "DisorderInputError",
    "disorder_events",
    "disorder_file",
    "count_inversions",
    "count_runs",
]

DEFAULT_PERCENT = 30.0
DEFAULT_STDDEV_MS = 64.0
DEFAULT_SEED = 0


class DisorderInputError(ValueError):
    """An input file or event list is malformed; the message says where."""


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


def _is_int_ts(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    non-finite stddev, and :class:`DisorderInputError` (a ``ValueError``)
    for an event without an integer ``ts`` or input not sorted by ``ts``.
    """
    percent = _check_percent(percent)
    stddev_ms = _check_stddev(stddev_ms)
    events = list(events)
    ts: list[int] = []
    previous = None
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise DisorderInputError(
                f"event {index} is a {type(event).__name__}, not a mapping")
        value = event.get("ts")
        if not _is_int_ts(value):
            raise DisorderInputError(
                f"event {index} has no integer 'ts' (got {value!r})")
        if previous is not None and value < previous:
            raise DisorderInputError(
                f"event {index} has ts {value} < previous ts {previous}; "
                "input events must be sorted by ts")
        ts.append(value)
        previous = value
    order, _ = _arrival_order(ts, percent, stddev_ms, seed)
    return [events[i] for i in order]


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

def _read_jsonl(path: Path) -> tuple[list[bytes], list[int]]:
    """Read and validate a JSONL event file; return raw lines and their ts."""
    name = str(path)
    lines: list[bytes] = []
    stamps: list[int] = []
    previous: int | None = None
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise DisorderInputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise DisorderInputError(f"{name} is a directory, not a JSONL file") from None
    except OSError as exc:
        raise DisorderInputError(
            f"{name}: cannot open ({exc.strerror or exc})") from None
    with fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue  # blank lines (e.g. a trailing one) are ignored
            where = f"{name}:{lineno}"
            try:
                text = line.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise DisorderInputError(
                    f"{where}: line is not valid UTF-8") from None
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DisorderInputError(
                    f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
            if not isinstance(obj, dict):
                raise DisorderInputError(
                    f"{where}: expected a JSON object, got "
                    f"{_json_type(obj)}")
            if "ts" not in obj:
                raise DisorderInputError(
                    f"{where}: event has no \"ts\" field")
            value = obj["ts"]
            if not _is_int_ts(value):
                raise DisorderInputError(
                    f"{where}: \"ts\" must be an integer, got "
                    f"{json.dumps(value)[:40]}")
            if previous is not None and value < previous:
                raise DisorderInputError(
                    f"{where}: ts {value} is smaller than the previous "
                    f"event's ts {previous}; the input must be sorted by ts")
            previous = value
            lines.append(text.encode("utf-8") if lineno == 1 else line)
            stamps.append(value)
    return lines, stamps


def _json_type(obj: Any) -> str:
    if isinstance(obj, list):
        return "an array"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, bool):
        return "a boolean"
    if obj is None:
        return "null"
    return "a number"


def _write_atomically(out_path: Path, lines: list[bytes], order: np.ndarray) -> None:
    with replacing(out_path) as temporary, open(temporary, "wb") as fh:
        for i in order:
            fh.write(lines[i])
            fh.write(b"\n")


def disorder_file(
    in_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    percent: float,
    stddev_ms: float,
    seed: int | None,
) -> dict:
    """Apply :func:`disorder_events` to a JSONL file of events.

    Every non-blank line of *in_path* must be a JSON object with an integer
    ``"ts"``, sorted by ``ts``; otherwise :class:`DisorderInputError` is
    raised with ``FILE:LINE`` in its message and nothing is written.  Lines
    are copied byte for byte, only their order changes, and the output is
    written to a temporary file next to *out_path* that is renamed into
    place at the end.  The same seed and timestamps give the same order as
    :func:`disorder_events`.

    Returns a summary: ``events``, ``delayed``, ``max_delay_ms``,
    ``mean_delay_ms`` (over delayed events), ``inversions`` and ``runs``
    (disorder of the output by ``ts``), plus the parameters and paths.
    """
    percent = _check_percent(percent)
    stddev_ms = _check_stddev(stddev_ms)
    src = Path(in_path)
    dst = Path(out_path)
    lines, stamps = _read_jsonl(src)
    order, delays = _arrival_order(stamps, percent, stddev_ms, seed)
    _write_atomically(dst, lines, order)
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
