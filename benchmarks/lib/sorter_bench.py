"""Compare online sorters on out-of-order streams with punctuations.

    python benchmarks/sorters.py [--events N] [--frequencies 10,100,...] [--quick]

or, from Python::

    settings = Settings(events=100_000)
    print(format_table(run(settings), settings))

Every method sees the same events and punctuations, and its output is
checked equal to a stable sort of the kept events, so a fast but wrong
method cannot win.  See ``Settings`` for the workloads and options.
"""

import gc
import math
import sys
import time
from bisect import bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import count
from operator import itemgetter

import numpy as np
from sortedcontainers import SortedKeyList

from barrier.impatience import ImpatienceSorter
from flamespark.core.errors import InternalError, OptionError

_KEY = itemgetter(0)
_VALUE = itemgetter(1)


# -- competitors --------------------------------------------------------------

class HeapSorter:
    """Online sorter on a binary heap of ``(ts, seq, value)`` entries."""

    __slots__ = ("_heap", "_seq")

    def __init__(self):
        self._heap = []
        self._seq = count().__next__  # tie-break: equal keys stay in order

    def push(self, ts, value):
        heappush(self._heap, (ts, self._seq(), value))

    def flush(self, T):
        heap = self._heap
        out = []
        append = out.append
        while heap and heap[0][0] <= T:
            append(heappop(heap)[2])
        return out

    def __len__(self):
        return len(self._heap)


class SortMergeSorter:
    """The paper's generic adapter: an unsorted and a sorted buffer.

    On a punctuation the unsorted buffer is sorted and merged into the
    sorted buffer, which is then cut at ``T`` by binary search.  Appending
    the unsorted events to the sorted ones and calling ``list.sort`` does
    both in one C call (Timsort sorts the new part's runs, then merges it
    with the old part, stably); that is cheaper than sorting the new part
    on its own first.
    """

    __slots__ = ("_sorted", "_unsorted")

    def __init__(self):
        self._sorted = []    # (ts, value), ascending by ts
        self._unsorted = []  # (ts, value), arrival order

    def push(self, ts, value):
        self._unsorted.append((ts, value))

    def flush(self, T):
        s = self._sorted
        if self._unsorted:
            s += self._unsorted
            s.sort(key=_KEY)
            self._unsorted.clear()
        cut = bisect_right(s, T, key=_KEY)
        out = list(map(_VALUE, s[:cut]))
        del s[:cut]
        return out

    def __len__(self):
        return len(self._sorted) + len(self._unsorted)


class SortedListSorter:
    """Online sorter on sortedcontainers' `SortedKeyList` of ``(ts, value)`` by ``ts``: an event is inserted at
    its place (after equal keys, so equal keys stay in order), a punctuation cuts the prefix."""

    __slots__ = ("_list",)

    def __init__(self):
        self._list = SortedKeyList(key=_KEY)

    def push(self, ts, value):
        self._list.add((ts, value))

    def flush(self, T):
        cut = self._list.bisect_key_right(T)
        out = list(map(_VALUE, self._list.islice(0, cut)))
        del self._list[:cut]
        return out

    def __len__(self):
        return len(self._list)


def _huffman_impatience():
    return ImpatienceSorter(huffman=True)


METHODS = {
    "impatience": ImpatienceSorter,
    "impatience-huffman": _huffman_impatience,
    "heapq": HeapSorter,
    "sort+merge": SortMergeSorter,
    "sortedlist": SortedListSorter,
}
DEFAULT_METHODS = ("impatience", "heapq", "sort+merge", "sortedlist")


# -- workloads ----------------------------------------------------------------

def synthetic(n, rng, p=0.30, d=64.0):
    """Timestamps 0..n-1 in arrival order; a fraction p of them moved back
    by |N(0, d)|, rounded."""
    ts = np.arange(n, dtype=np.int64)
    late = rng.random(n) < p
    delay = np.rint(np.abs(rng.normal(0.0, d, int(late.sum()))))
    ts[late] -= delay.astype(np.int64)
    return ts


def interleaved(n, rng, sources=64, skew=20_000, burst=1.0):
    """n events from in-order sources, each lagging by a fixed random amount
    in [0, skew).  Arrival i has timestamp i - lag of its source; sources
    take turns at random, in bursts of mean length ``burst``."""
    if burst > 1:
        src = np.repeat(rng.integers(0, sources, n),
                        rng.geometric(1.0 / burst, n))[:n]
    else:
        src = rng.integers(0, sources, n)
    lag = rng.integers(0, skew, sources)
    return np.arange(n, dtype=np.int64) - lag[src]


def reorder_latency(ts, quantile=0.9999):
    """How far behind the high-watermark all but ~(1 - quantile) of the
    events arrive."""
    if len(ts) < 2:
        return 0
    behind = np.maximum.accumulate(ts)[:-1] - ts[1:]
    return max(int(np.ceil(np.quantile(behind, quantile))), 0)


def plan(ts, freq, latency):
    """Cut a stream into punctuated segments.

    A punctuation follows every ``freq`` arrivals, with
    ``T = (max ts so far) - latency``.  Events with ``ts <=`` the previous
    punctuation's T are late and dropped.  Returns ``(segments, stats)``:
    each segment is ``(ts_list, value_list, T)``, a value being the event's
    arrival index.
    """
    n = len(ts)
    ends = np.minimum(np.arange(freq, n + freq, freq), n)
    puncts = np.maximum.accumulate(ts)[ends - 1] - latency
    seg = np.arange(n) // freq
    floor = np.concatenate(([np.iinfo(np.int64).min], puncts[:-1]))[seg]
    keep = ts > floor
    kept_ts = ts[keep]
    kept_idx = np.flatnonzero(keep)
    kept_seg = seg[keep]
    bounds = np.searchsorted(kept_seg, np.arange(len(ends) + 1)).tolist()
    tl = kept_ts.tolist()
    vl = kept_idx.tolist()
    segments = [(tl[a:b], vl[a:b], T)
                for a, b, T in zip(bounds, bounds[1:], puncts.tolist())]
    # An event is held from its own push until the punctuation releasing it
    # (or the final flush); average the buffer size seen after each push.
    release = np.maximum(np.searchsorted(puncts, kept_ts), kept_seg)
    pushed = np.append(bounds[1:], len(kept_ts))  # pushed by each release
    held = pushed[release] - np.arange(len(kept_ts))
    stats = {
        "events": len(kept_ts),
        "late": n - len(kept_ts),
        "buffered": float(held.mean()) if len(held) else 0.0,
        "expected": kept_idx[np.argsort(kept_ts, kind="stable")].tolist(),
    }
    return segments, stats


def drive(factory, segments, clock=time.process_time):
    """Feed ``segments`` to ``factory()``, then flush(inf).

    Returns ``(seconds, output)``.  The garbage collector is off while
    timing, as in ``timeit``.
    """
    sorter = factory()
    push = sorter.push
    flush = sorter.flush
    out = []
    extend = out.extend
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = clock()
        for ts, vals, T in segments:
            for t, v in zip(ts, vals):
                push(t, v)
            extend(flush(T))
        extend(flush(math.inf))
        seconds = clock() - t0
    finally:
        if gc_was_enabled:
            gc.enable()
    return seconds, out


# -- the benchmark ------------------------------------------------------------

WORKLOADS = ("synthetic", "sources")
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
# A timing longer than this is not repeated: its noise is small anyway.
NO_REPEAT_SECONDS = 10.0


@dataclass(frozen=True)
class Settings:
    """What `run` measures: `events` events per workload, a punctuation every F events for each F of
    `frequencies`, each method of `methods` timed `repeat` times on the `clock` ("cpu" or "wall").

    Workload "synthetic" moves `percent` % of the timestamps 0..N-1 back by
    |N(0, stddev)|; "sources" interleaves `sources` in-order sources lagging
    by up to `skew`, in bursts of mean length `burst` (see `synthetic`,
    `interleaved`, `plan`). `seed` seeds numpy.
    """

    events: int = 1_000_000
    frequencies: tuple[int, ...] = (10, 100, 1000, 10_000, 100_000)
    seed: int = 1
    repeat: int = 3
    workloads: tuple[str, ...] = WORKLOADS
    methods: tuple[str, ...] = DEFAULT_METHODS
    percent: float = 30.0
    stddev: float = 64.0
    sources: int = 64
    skew: int = 20_000
    burst: float = 1.0
    clock: str = "cpu"

    def __post_init__(self):
        for name in ("events", "repeat", "sources", "skew"):
            if getattr(self, name) < 1:
                raise OptionError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.frequencies or min(self.frequencies) < 1:
            raise OptionError(f"frequencies must be integers >= 1, got {self.frequencies!r}")
        for name, known in (("workloads", WORKLOADS), ("methods", tuple(METHODS))):
            chosen = getattr(self, name)
            if not chosen or any(choice not in known for choice in chosen):
                raise OptionError(f"{name} must be chosen from {', '.join(known)}, got {chosen!r}")
        if self.clock not in CLOCKS:
            raise OptionError(f"clock must be one of {', '.join(CLOCKS)}, got {self.clock!r}")


@dataclass(frozen=True)
class Row:
    """One workload at one punctuation frequency: its reorder latency, what `plan` found, and events/s per method."""

    workload: str
    frequency: int
    latency: int
    events: int
    late: int
    buffered: float
    rates: dict


def _timestamps(workload, settings, rng):
    if workload == "synthetic":
        return synthetic(settings.events, rng, settings.percent / 100, settings.stddev)
    return interleaved(settings.events, rng, settings.sources, settings.skew, settings.burst)


def run(settings=Settings(), say=None):
    """Time every method of `settings` on every workload and frequency; one Row each.

    `say(text)`, if given, hears of every timing.  A method whose output
    differs from the stable sort of the kept events raises InternalError.
    """
    say = say or (lambda text: None)
    clock = CLOCKS[settings.clock]
    started = time.perf_counter()
    rows = []
    cells = len(settings.workloads) * len(settings.frequencies)
    for workload in settings.workloads:
        ts = _timestamps(workload, settings, np.random.default_rng(settings.seed))
        latency = reorder_latency(ts)
        for freq in settings.frequencies:
            say(f"[{len(rows) + 1}/{cells}] {workload}, F={freq:,}, latency {latency:,} "
                f"({time.perf_counter() - started:.0f}s elapsed)")
            segments, stats = plan(ts, freq, latency)
            best = dict.fromkeys(settings.methods, math.inf)
            for rep in range(settings.repeat):
                for m in settings.methods:  # round robin: drift hits all alike
                    if rep and best[m] > NO_REPEAT_SECONDS:
                        continue
                    seconds, out = drive(METHODS[m], segments, clock)
                    if out != stats["expected"]:
                        raise InternalError(f"sorter {m} gave a wrong output ({workload}, F={freq})")
                    del out
                    best[m] = min(best[m], seconds)
                    say(f"    {m:<18} {stats['events'] / max(seconds, 1e-9):>12,.0f} events/s  (run {rep + 1})")
            rows.append(Row(workload, freq, latency, stats["events"], stats["late"], stats["buffered"],
                            {m: stats["events"] / max(t, 1e-9) for m, t in best.items()}))
    return rows


def _rate(x):
    return f"{x / 1e6:.2f}M"


def format_table(rows, settings):
    """The rows as a table under a few lines saying what was measured.

    Columns: buffered = mean number of events held (sampled after every push),
    late = dropped events, then events/s per method, and the speedup of
    Impatience over the best other method.
    """
    ours = [m for m in settings.methods if m.startswith("impatience")]
    others = [m for m in settings.methods if m not in ours]
    head = ["workload", "F", "latency", "buffered", "late"] + list(settings.methods)
    if ours and others:
        head.append("speedup")
    table = [head]
    for row in rows:
        cells = [row.workload, f"{row.frequency:,}", f"{row.latency:,}", f"{row.buffered:,.0f}",
                 f"{row.late:,}"] + [_rate(row.rates[m]) for m in settings.methods]
        if ours and others:
            speedup = max(row.rates[m] for m in ours) / max(row.rates[m] for m in others)
            cells.append(f"{speedup:.2f}x")
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = [
        f"# {settings.events:,} events per workload, seed {settings.seed}, best of {settings.repeat}, "
        f"{settings.clock} time, Python {sys.version.split()[0]}",
        f"# synthetic: p={settings.percent:g}%, d={settings.stddev:g}; sources: {settings.sources} sources, "
        f"lags < {settings.skew:,}, mean burst {settings.burst:g}",
        "# buffered = mean events held; late = events dropped (the same for every method); "
        "method columns = events/s",
    ]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
              for r in table]
    return "\n".join(lines)
