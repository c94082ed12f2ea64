"""The barrier (the FlameStream paper's Algorithm 3): the one buffer in front of all sinks.

Algorithm 3 in the paper holds items sorted in a buffer: `Insert(item)` puts
an item at its place, or removes the item a tombstone cancels, and
`Punctuation(time)` emits, in order, every item with an earlier time. Here
`push` is Insert for a whole batch and `punctuate` is Punctuation, with two
differences that out-of-order arrival asks for: a tombstone can arrive
before its item, so tombstones are held like items and cancel theirs when
their punctuation comes (an item and its tombstone share their time, so
they leave together); and a punctuation's time is itself released
(`ts <= time`).

The buffer is an Impatience sorter at the grain of batches: a batch's rows,
sorted once, are a run, which goes on the end of the oldest run it follows
in order or starts a run of its own. A punctuation cuts the head of every
run, merges the heads into one sorted list (a stable sort of sorted runs,
which merges them) and cancels equal identities in one pass over it:
items and their tombstones are neighbours there.
"""
import math
from bisect import bisect_right
from itertools import chain, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.core.items import Meta


class Held(NamedTuple):
    """A row the barrier holds: its meta, sink, encoded payload, weight (+1 an item, -1 a tombstone), arrival, and
    its payload as made (None for a row held again from a dump, which keeps only `data`)."""

    meta: tuple
    sink: str
    data: bytes
    weight: int
    arrival: float
    payload: object


_new_held = tuple.__new__  # `_new_held(Held, fields)`: a Held with no Python frame per row
_first = itemgetter(0)  # a row's meta, a meta's event time
_weight = itemgetter(3)
_release_order = itemgetter(0, 1, 2)  # meta, sink, encoded payload: the order a release keeps


def _row_ts(row) -> int:
    return row[0][0]


class BarrierState:
    """What a barrier holds: its runs of rows (each sorted by meta; see the module's docstring), its horizon and
    its counters. `dump()` gives msgpack-able lists without changing the state, and `load()` inverts it, for
    engines that keep the barrier in a state store."""

    __slots__ = ("runs", "size", "loose", "horizon", "arrived", "tombstones", "released")

    def __init__(self):
        # Oldest first; a run's rows are sorted by meta, sink and encoded payload.
        self.runs = []
        self.size = 0  # rows held
        self.loose = 0  # tombstones held
        self.horizon = -math.inf
        self.arrived = 0
        self.tombstones = 0
        self.released = 0

    def dump_rows(self) -> list:
        """The rows held, as `[sink, meta, data, weight, arrival]` lists, in run order."""
        return [[row[1], list(row[0]), row[2], row[3], row[4]] for run in self.runs for row in run]

    def unload(self) -> list:
        """The rows held, as `dump_rows()` gives them, leaving none held (for a store that keeps them apart)."""
        rows = self.dump_rows()
        self.runs, self.size, self.loose = [], 0, 0
        return rows

    def dump(self) -> list:
        return [self.horizon, self.arrived, self.tombstones, self.released, self.dump_rows()]

    @classmethod
    def load(cls, dumped) -> "BarrierState":
        state = cls()
        state.horizon, state.arrived, state.tombstones, state.released, held = dumped
        state.hold(held)
        return state

    def hold(self, dumped_rows: list):
        """Hold again rows of `dump_rows()`, which were counted when they arrived."""
        rows = [_new_held(Held, (Meta.load(meta), sink, data, weight, arrival, None))
                for sink, meta, data, weight, arrival in dumped_rows]
        self.place(rows)

    def place(self, rows: list):
        """Hold `rows` as a run: sorted by meta, sink and encoded payload, then on the end of the oldest run whose
        last row is not after its first, or as a run of its own."""
        if not rows:
            return
        rows.sort(key=_release_order)
        self.size += len(rows)
        self.loose += sum(1 for row in rows if row[3] < 0)
        first = _release_order(rows[0])
        for run in self.runs:
            if _release_order(run[-1]) <= first:
                run += rows
                return
        self.runs.append(rows)

    def cut(self, time) -> list:
        """Remove and return, sorted by meta, sink and encoded payload, every row at or below `time`."""
        heads = []
        runs = []
        for run in self.runs:
            if run[0][0][0] > time:
                runs.append(run)
                continue
            cut = bisect_right(run, time, key=_row_ts)
            heads.append(run[:cut] if cut < len(run) else run)
            if cut < len(run):
                del run[:cut]
                runs.append(run)
        self.runs = runs
        if not heads:
            return []
        rows = heads[0] if len(heads) == 1 else sorted(chain.from_iterable(heads), key=_release_order)
        self.size -= len(rows)
        return rows


class Barrier:
    """Holds sink rows (items and tombstones) until a punctuation proves them final.

    `push(sink, batch)` (the paper's Insert) holds a batch's rows for
    `sink`; `push_rows` holds rows already made for their sinks.
    `punctuate(T)` (Punctuation) releases, in meta order (then by sink and
    encoded payload), every item with `ts <= T` that no tombstone cancels:
    rows cancel by weight when their sink, meta and encoded payload are
    equal, whichever came first. A released row is a `Held`; engines release
    its payload as it was made, which `data` encodes (a row held again from a
    dump has only its data). A tombstone left without its item is an
    internal error.

    Everything it holds is in `state`, which the engine hands it (a new one
    by default); `horizon` and the counters read from it.

    >>> from flamespark.core.batch import Batch
    >>> barrier = Barrier()
    >>> meta = Meta(5, "s", 0, (0,))
    >>> barrier.push("out", Batch([meta, meta, Meta(7, "s", 0, (1,))], [1, 1, 2], [b"\\x01", b"\\x01", b"\\x02"],
    ...                           [1, -1, 1], [0.0, 0.0, 0.0]))
    >>> [row.payload for row in barrier.punctuate(10)]
    [2]
    """

    def __init__(self, state: BarrierState | None = None):
        self.state = BarrierState() if state is None else state

    @property
    def horizon(self):
        return self.state.horizon

    @property
    def arrived(self) -> int:
        return self.state.arrived

    @property
    def tombstones(self) -> int:
        return self.state.tombstones

    @property
    def released(self) -> int:
        return self.state.released

    def __len__(self):
        return self.state.size

    def earliest(self):
        """The smallest event time held, or None."""
        runs = self.state.runs
        return min(run[0][0][0] for run in runs) if runs else None

    def push(self, sink: str, batch):
        """Hold the rows of `batch` for `sink` until the punctuation of their time (the paper's Insert)."""
        self.push_rows(list(map(_new_held, repeat(Held), zip(
            batch.metas, repeat(sink), batch.datas, batch.weights, batch.arrivals, batch.payloads))))

    def push_rows(self, rows: list):
        """Hold `Held` rows, each for its own sink."""
        if not rows:
            return
        state = self.state
        horizon = state.horizon
        if horizon > -math.inf and min(map(_first, map(_first, rows))) <= horizon:
            early = min(rows, key=_row_ts)
            kind = "tombstone" if early[3] < 0 else "item"
            raise InternalError(
                f"internal error: a {kind} for sink {early[1]!r} from {Meta.describe(early[0])} reached the "
                f"barrier after punctuation {horizon} had released its time"
            )
        state.arrived += len(rows)
        before = state.loose
        state.place(rows)
        state.tombstones += state.loose - before

    def punctuate(self, time) -> list:
        """Release, in meta order, the items with `ts <= time` that no tombstone cancels (the paper's
        Punctuation); a time at or below the horizon releases nothing."""
        state = self.state
        if time <= state.horizon:
            return []
        state.horizon = time
        rows = state.cut(time)
        if state.loose and rows:
            rows = _cancelled(rows, state)
        state.released += len(rows)
        return rows


def _cancelled(rows: list, state: BarrierState) -> list:
    """The items of `rows` (sorted by meta, sink and encoded payload) that no tombstone among them cancels, in that
    order; of equal copies, those that arrived first survive. Counts the tombstones out of `state.loose`.

    Only the rows sharing a meta with a tombstone can cancel, so only those runs are settled; the rows between
    them are kept as slices."""
    weights = np.fromiter(map(_weight, rows), dtype=np.int64, count=len(rows))
    tombstones = np.flatnonzero(weights < 0).tolist()
    if not tombstones:
        return rows
    state.loose -= len(tombstones)
    survivors = []
    kept = 0  # rows before this index are settled or kept
    count = len(rows)
    for index in tombstones:
        if index < kept:
            continue  # in the run of an earlier tombstone
        meta = rows[index][0]
        start = index
        while start > kept and rows[start - 1][0] == meta:
            start -= 1
        end = index + 1
        while end < count and rows[end][0] == meta:
            end += 1
        survivors += rows[kept:start]
        survivors += _settled(rows[start:end])
        kept = end
    survivors += rows[kept:]
    return survivors


def _settled(group: list) -> list:
    """The survivors of rows of one meta: per sink and encoded payload, as many copies as their weights sum to,
    the earliest to arrive first."""
    group.sort(key=itemgetter(1, 2, 4))
    survivors = []
    start = 0
    while start < len(group):
        end = start + 1
        while end < len(group) and group[end][1] == group[start][1] and group[end][2] == group[start][2]:
            end += 1
        same = group[start:end]
        left = sum(row[3] for row in same)
        if left < 0:
            _orphan(same[0], -left)
        survivors += [row for row in same if row[3] > 0][:left]
        start = end
    return survivors


def _orphan(row, missing: int):
    raise InternalError(
        f"internal error: {missing} tombstone(s) for sink {row[1]!r} from {Meta.describe(row[0])} "
        f"never met their item (payload {unpack(row[2])!r})"
    )
