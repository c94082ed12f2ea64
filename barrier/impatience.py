"""Impatience sort: an online, stable sorter for nearly ordered streams.

Pushed events are dealt into sorted *runs* as in patience sort: each goes
to the oldest run whose last key (tail) is ``<=`` its key, or starts a new
run.  A punctuation ``flush(T)`` cuts from the front of every run the
events with key ``<= T`` and merges only those head runs, so its cost
follows what is emitted and the number of runs, not how much stays
buffered.  Runs that become empty are dropped.

Pure Python.  Keys and values live in parallel lists per run, and a cursor
per run marks its first buffered element, so a cut-off is a binary search
plus a slice; the consumed prefix is deleted only once it outweighs the
rest of the run.
"""

from bisect import bisect_right
from functools import partial
from heapq import heapify, heappop, heappush
from itertools import compress, repeat
from math import inf
from operator import le

__all__ = ["ImpatienceSorter"]

# A run's consumed prefix is deleted when it is longer than this and than
# the rest of the run; until then the run's cursor skips over it.
_COMPACT = 32


class ImpatienceSorter:
    """Buffer ``(ts, value)`` pairs and release them in ``ts`` order.

    >>> s = ImpatienceSorter()
    >>> for ts in (2, 6, 5, 1):
    ...     s.push(ts, ts)
    >>> s.flush(2)
    [1, 2]
    >>> len(s), s.min_ts
    (2, 5)
    >>> s.flush(float("inf"))
    [5, 6]

    Values with equal keys come out in push order.  Keys need only be
    ordered among themselves (ints, floats, tuples, ...) and ``T`` must
    compare with them, except that ``flush(math.inf)`` releases everything
    whatever the key type.

    With ``huffman=True`` the head runs cut by a flush are merged two at a
    time, always the two shortest (the paper's Huffman merge).  By default
    they are concatenated oldest first and handed to ``list.sort``, whose
    run detection finds the same head runs and merges them stably in C,
    which in CPython is several times faster.
    """

    __slots__ = ("_keys", "_vals", "_start", "_heads", "_tails",
                 "_topk", "_topv", "_last", "_floor", "_merge")

    def __init__(self, huffman=False):
        self._merge = _huffman_merge if huffman else _sort_merge
        self.clear()

    def clear(self):
        """Drop everything buffered."""
        # Runs are kept in ascending order of tails.  A new run is always
        # inserted at index 0, so a higher index means an older run.  The
        # top run (index -1) takes the in-order events.
        self._keys = []   # per run: its keys, ascending
        self._vals = []   # per run: its values, parallel to _keys
        self._start = []  # per run: index of its first buffered element
        self._heads = []  # per run: its first buffered key
        self._tails = []  # per run: its last key; strictly ascending
        self._topk = []   # _keys[-1] while there are runs
        self._topv = []   # _vals[-1] while there are runs
        self._last = 0    # run that took the last out-of-order event
        self._floor = None  # every buffered key is > this (None: unknown)

    def push(self, ts, value):
        """Buffer ``value`` under the sort key ``ts``."""
        tails = self._tails
        try:
            if ts >= tails[-1]:
                # In order, the common case: the top run takes it.
                tails[-1] = ts
                self._topk.append(ts)
                self._topv.append(value)
                return
        except IndexError:
            # Nothing buffered: ts starts the top run.
            self._topk = [ts]
            self._topv = [value]
            self._keys.append(self._topk)
            self._vals.append(self._topv)
            self._start.append(0)
            self._heads.append(ts)
            tails.append(ts)
            self._floor = None
            return
        # Speculative run selection: try the run the previous late event
        # went to; ts belongs there if it fits between that run's tail and
        # the tail of the next older run.
        r = self._last
        if not tails[r] <= ts < tails[r + 1]:
            # The oldest run whose tail is <= ts (not the top run: ts is
            # below its tail).
            r = bisect_right(tails, ts) - 1
            if r < 0:
                # Below every tail: start a new, youngest run.
                self._keys.insert(0, [ts])
                self._vals.insert(0, [value])
                self._start.insert(0, 0)
                self._heads.insert(0, ts)
                tails.insert(0, ts)
                self._last = 0
                self._floor = None
                return
            self._last = r
        self._keys[r].append(ts)
        self._vals[r].append(value)
        tails[r] = ts

    def flush(self, T):
        """Remove and return the values with ``ts <= T``, in ``ts`` order."""
        if T == inf:
            return self._drain()
        floor = self._floor
        if floor is not None and T <= floor:
            return []  # everything buffered is > T: don't scan the runs
        self._floor = T
        heads = self._heads
        hit = list(compress(range(len(heads)), map(le, heads, repeat(T))))
        if not hit:
            return []
        keys = self._keys
        vals = self._vals
        start = self._start
        kcuts = []
        vcuts = []
        dead = []
        for i in reversed(hit):  # oldest run first
            k = keys[i]
            v = vals[i]
            s = start[i]
            c = bisect_right(k, T, s)
            if c == len(k):
                dead.append(i)
                if s:
                    k = k[s:]
                    v = v[s:]
                kcuts.append(k)
                vcuts.append(v)
            else:
                kcuts.append(k[s:c])
                vcuts.append(v[s:c])
                heads[i] = k[c]
                if c > _COMPACT and c + c > len(k):
                    del k[:c]
                    del v[:c]
                    c = 0
                start[i] = c
        if dead:
            tails = self._tails
            for i in dead:  # descending, so the indexes stay valid
                del keys[i], vals[i], start[i], heads[i], tails[i]
            if keys:
                self._topk = keys[-1]
                self._topv = vals[-1]
            self._last = 0
        if len(vcuts) == 1:
            return vcuts[0]
        return self._merge(kcuts, vcuts)

    def _drain(self):
        """Remove and return everything, in ``ts`` order."""
        kcuts = []
        vcuts = []
        for i in reversed(range(len(self._keys))):  # oldest run first
            s = self._start[i]
            kcuts.append(self._keys[i][s:])
            vcuts.append(self._vals[i][s:])
        self.clear()
        if len(vcuts) < 2:
            return vcuts[0] if vcuts else []
        return self._merge(kcuts, vcuts)

    def __len__(self):
        return sum(map(len, self._keys)) - sum(self._start)

    def __bool__(self):
        return bool(self._heads)

    def peek_min(self):
        """Smallest buffered key, or ``None`` when empty."""
        return min(self._heads) if self._heads else None

    @property
    def min_ts(self):
        """Smallest buffered key, or ``None`` when empty."""
        return self.peek_min()

    @property
    def runs(self):
        """Number of sorted runs held."""
        return len(self._heads)

    def snapshot(self):
        """The buffered ``(ts, value)`` pairs in ``ts`` order, as ``flush`` would give them; nothing is removed."""
        pairs = []
        for keys, vals, s in zip(reversed(self._keys), reversed(self._vals), reversed(self._start)):
            pairs += zip(keys[s:], vals[s:])  # oldest run first, so ties stay in push order
        pairs.sort(key=lambda pair: pair[0])
        return pairs


def _sort_merge(kcuts, vcuts):
    """Stable merge of sorted runs given oldest first; returns the values.

    ``list.sort`` computes each item's key once, in list order, so an
    iterator over the concatenated keys can serve as the key function.
    The sort finds the runs (or longer ones) and merges them with
    galloping; being stable, it puts older runs first on equal keys.
    """
    keys = []
    for k in kcuts:
        keys += k
    out = []
    for v in vcuts:
        out += v
    out.sort(key=partial(next, iter(keys)))
    return out


def _huffman_merge(kcuts, vcuts):
    """Huffman merge of sorted runs given oldest first; returns the values.

    Runs are merged two at a time, always the two shortest.  That may merge
    two runs before one that lies between them in age, so every key is
    paired with its position in the oldest-first concatenation, which
    breaks ties in push order.
    """
    vals = []
    heap = []
    pos = 0
    for j, k in enumerate(kcuts):
        n = len(k)
        heap.append((n, j, list(zip(k, range(pos, pos + n)))))
        pos += n
        vals += vcuts[j]
    heapify(heap)
    j = len(heap)
    while len(heap) > 1:
        na, _, a = heappop(heap)
        nb, _, b = heappop(heap)
        a += b
        a.sort()  # two sorted runs: one merge, in C
        heappush(heap, (na + nb, j, a))
        j += 1
    return [vals[p] for _, p in heap[0][2]]
