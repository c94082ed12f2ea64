"""Compare online sorters on out-of-order streams with punctuations.

    python -m flamespark.tools.sorter_bench [--events N] [--frequencies 10,100,...] [--quick]

Every method sees the same events and punctuations, and its output is
asserted equal to a stable sort of the kept events, so a fast but wrong
method cannot win.  See ``--help`` for the workloads and options.
"""

import argparse
import gc
import math
import sys
import time
from bisect import bisect_right
from heapq import heappop, heappush
from itertools import count
from operator import itemgetter

import numpy as np

from barrier.impatience import ImpatienceSorter

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


def _huffman_impatience():
    return ImpatienceSorter(huffman=True)


METHODS = {
    "impatience": ImpatienceSorter,
    "impatience-huffman": _huffman_impatience,
    "heapq": HeapSorter,
    "sort+merge": SortMergeSorter,
}
DEFAULT_METHODS = ("impatience", "heapq", "sort+merge")


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


# -- command line -------------------------------------------------------------

WORKLOADS = ("synthetic", "sources")
# A timing longer than this is not repeated: its noise is small anyway.
_NO_REPEAT_SECONDS = 10.0


def _csv(kind):
    def parse(text):
        try:
            return [kind(x) for x in text.split(",") if x.strip()]
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def _parser():
    ap = argparse.ArgumentParser(
        prog="python -m flamespark.tools.sorter_bench",
        description="Events/s of online sorters on out-of-order streams "
        "with punctuations: Impatience sort, a heapq heap, and the paper's "
        "sort-then-merge buffers (sort+merge).  A punctuation follows every "
        "F events with T = (max ts seen) - (reorder latency); events with "
        "ts <= the previous T are late and dropped before any sorter sees "
        "them.  All methods get the same events and punctuations, and each "
        "output is asserted equal to a stable sort of the kept events.",
        epilog="Workloads: 'synthetic' has timestamps 0..N-1 in arrival "
        "order with p%% of them moved back by |N(0, d)|; 'sources' has N "
        "events from --sources in-order sources, each lagging by a fixed "
        "random amount below --skew, interleaved at random.  The reorder "
        "latency is the 99.99th percentile of how far events arrive behind "
        "the high-watermark.  Table: buffered = mean number of events held "
        "(sampled after every push), late = dropped events, then events/s "
        "per method (best of --repeat; timings over %(nr)gs are not "
        "repeated) and the speedup of Impatience over the best other "
        "method." % {"nr": _NO_REPEAT_SECONDS},
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--events", type=int, default=1_000_000,
                    help="events per workload")
    ap.add_argument("--frequencies", type=_csv(int),
                    default="10,100,1000,10000,100000",
                    help="punctuation frequencies F (events between "
                    "punctuations), comma-separated")
    ap.add_argument("--seed", type=int, default=1, help="numpy seed")
    ap.add_argument("--quick", action="store_true",
                    help="sanity run: 100,000 events, timed once")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timings per method and setting; the best counts")
    ap.add_argument("--workloads", type=_csv(str), default=",".join(WORKLOADS),
                    help="comma-separated, from: " + ", ".join(WORKLOADS))
    ap.add_argument("--methods", type=_csv(str),
                    default=",".join(DEFAULT_METHODS),
                    help="comma-separated, from: " + ", ".join(METHODS))
    ap.add_argument("-p", type=float, default=30.0,
                    help="synthetic: percentage of delayed events")
    ap.add_argument("-d", type=float, default=64.0,
                    help="synthetic: standard deviation of a delay")
    ap.add_argument("--sources", type=int, default=64,
                    help="sources: number of sources")
    ap.add_argument("--skew", type=int, default=20_000,
                    help="sources: lags are drawn from [0, skew)")
    ap.add_argument("--burst", type=float, default=1.0,
                    help="sources: mean number of consecutive arrivals "
                    "from one source")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: this process's CPU time (steadier on a busy "
                    "machine); wall: elapsed time")
    return ap


def _rate(x):
    return f"{x / 1e6:.2f}M"


def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
    if args.quick:
        args.events = 100_000
        args.repeat = 1
    for name in args.workloads:
        if name not in WORKLOADS:
            ap.error(f"unknown workload {name!r}")
    for name in args.methods:
        if name not in METHODS:
            ap.error(f"unknown method {name!r}")
    if (args.events < 1 or args.repeat < 1 or not args.frequencies
            or min(args.frequencies) < 1 or not args.methods):
        ap.error("--events, --repeat, --frequencies and --methods must be "
                 "positive / non-empty")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    rows = []
    cells = len(args.workloads) * len(args.frequencies)
    for name in args.workloads:
        rng = np.random.default_rng(args.seed)
        if name == "synthetic":
            ts = synthetic(args.events, rng, args.p / 100, args.d)
        else:
            ts = interleaved(args.events, rng, args.sources, args.skew,
                             args.burst)
        latency = reorder_latency(ts)
        for freq in args.frequencies:
            progress(f"[{len(rows) + 1}/{cells}] {name}, F={freq:,}, "
                     f"latency {latency:,} "
                     f"({time.perf_counter() - started:.0f}s elapsed)")
            segments, stats = plan(ts, freq, latency)
            best = dict.fromkeys(args.methods, math.inf)
            for rep in range(args.repeat):
                for m in args.methods:  # round robin: drift hits all alike
                    if rep and best[m] > _NO_REPEAT_SECONDS:
                        continue
                    seconds, out = drive(METHODS[m], segments, clock)
                    assert out == stats["expected"], \
                        f"{m}: wrong output ({name}, F={freq})"
                    del out
                    best[m] = min(best[m], seconds)
                    progress(f"    {m:<18} "
                             f"{stats['events'] / max(seconds, 1e-9):>12,.0f}"
                             f" events/s  (run {rep + 1})")
            rates = {m: stats["events"] / max(t, 1e-9)
                     for m, t in best.items()}
            rows.append((name, freq, latency, stats, rates))

    ours = [m for m in args.methods if m.startswith("impatience")]
    others = [m for m in args.methods if m not in ours]
    head = ["workload", "F", "latency", "buffered", "late"] + args.methods
    if ours and others:
        head.append("speedup")
    table = [head]
    for name, freq, latency, stats, rates in rows:
        row = [name, f"{freq:,}", f"{latency:,}", f"{stats['buffered']:,.0f}",
               f"{stats['late']:,}"] + [_rate(rates[m]) for m in args.methods]
        if ours and others:
            speedup = (max(rates[m] for m in ours)
                       / max(rates[m] for m in others))
            row.append(f"{speedup:.2f}x")
        table.append(row)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    print(f"# {args.events:,} events per workload, seed {args.seed}, best of "
          f"{args.repeat}, {args.clock} time, Python "
          f"{sys.version.split()[0]}")
    print(f"# synthetic: p={args.p:g}%, d={args.d:g}; sources: "
          f"{args.sources} sources, lags < {args.skew:,}, "
          f"mean burst {args.burst:g}")
    print("# buffered = mean events held; late = events dropped (the same "
          "for every method); method columns = events/s")
    for r in table:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))
    progress(f"done in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
