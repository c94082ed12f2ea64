"""Corrections: what each later reorder latency changes among the outputs released at the one before it.

A run with reorder latencies `(D1, ..., Dn)` computes each level k over the
events within Dk and releases it at its own punctuation. Level 1's releases
are the outputs; for k >= 2, once level k's punctuation passes a time, the
outputs of levels k - 1 and k up to it are both final, and their difference
(as multisets of sink, event time and payload) leaves as level k's
corrections: a `-` for what level k - 1 released and level k does not hold,
a `+` for what level k adds. Outputs replayed with the corrections of the
levels up to k are then the outputs of a run with the single latency Dk.

A record is a changelog record with its level, `{"op", "ts", "payload",
"cause", "level"}`. Its `cause` names a late event of level k's own (on
time at Dk, late at Dk-1). In the optimistic mode, where the rows that
reach a sink in level k's computation carry their causes, it is the first
of the level's late events to touch that output there (retract it, or
make it anew) in the batch it arrived in. Otherwise it is the latest of
them to arrive at or before the output's time: for an output made only
after its late event had gone by (a running total's later values); for a
window's result, which a later level makes only as its punctuation passes
the window, with no cause to carry, so that the event named may have
fallen into another window; for an output made of a batch that joined
rows with causes and rows without (`Batch.concat` then keeps none); and
for any output of the buffered mode, which applies events only as its
buffers release them.
"""
from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right
from collections import Counter, deque

from flamespark.core.codec import unpack
from flamespark.runtime.changes import ADD, RETRACT
from flamespark.runtime.metrics import percentiles


class _Touches:
    """Level k's notes of the late event that first touched each output, `(sink, meta) -> cause`, per event
    time, forgotten as the level's punctuation passes."""

    def __init__(self):
        self.by_ts = {}
        self._times = []  # a heap of the event times in `by_ts`

    def note(self, sink, meta, cause):
        ts = meta[0]
        notes = self.by_ts.get(ts)
        if notes is None:
            notes = self.by_ts[ts] = {}
            heapq.heappush(self._times, ts)
        notes.setdefault((sink, meta), cause)

    def cause(self, sink, meta):
        notes = self.by_ts.get(meta[0])
        return None if notes is None else notes.get((sink, meta))

    def forget(self, time):
        """Drop the notes at or below `time`."""
        times = self._times
        while times and times[0] <= time:
            del self.by_ts[heapq.heappop(times)]


class _Latest:
    """Level k's late events so far, to tell the latest to arrive at or before a time.

    Of two events, the one that arrived first and is later in time can never
    be the answer, so the events kept grow in time as in arrival order; and
    of those at or below the level's punctuation only the last can still be.
    """

    def __init__(self):
        self._times = []
        self._causes = []

    def add(self, cause):
        times = self._times
        while times and times[-1] >= cause[1]:
            times.pop()
            self._causes.pop()
        times.append(cause[1])
        self._causes.append(cause)

    def at_or_before(self, ts):
        index = bisect_right(self._times, ts) - 1
        return self._causes[index] if index >= 0 else None

    def forget(self, time):
        """Keep, of the events at or below `time`, only the last."""
        index = bisect_right(self._times, time) - 1
        if index > 0:
            del self._times[:index], self._causes[:index]


class Corrections:
    """The corrections of a run with `levels` reorder latencies over `sinks`.

    The engine tells it of each batch (`begin_batch`) and of its late events of the
    levels k >= 2 (`arrived`), hands level k's sink arrivals to `note(k)`
    (for their causes) and every level's releases to `released`, level
    after level (each released row has the fields of a `barrier.Held`). The corrections
    made wait in `made`, as `[sink, record, latency in ms]`, until the
    engine takes them (`take`).
    """

    def __init__(self, sinks, levels: int):
        self.sinks = list(sinks)
        self.levels = levels
        self._pending = [deque() for _ in range(levels - 1)]  # level k's releases that level k + 1 compares with
        self._touches = [_Touches() for _ in range(levels)]
        self._latest = [_Latest() for _ in range(levels)]
        self._batch_late = [set() for _ in range(levels)]  # each level's late events of the current batch
        self.made = []

    def begin_batch(self):
        """The engine begins a batch: the late events it names next (`arrived`) are the batch's."""
        for causes in self._batch_late:
            causes.clear()

    def arrived(self, cause, level: int):
        """A late event `cause` of `level` (k >= 2) arrived: a cause for the outputs at or after its time, and for
        what its arrival makes in the batch."""
        self._latest[level - 1].add(cause)
        self._batch_late[level - 1].add(cause)

    def note(self, level: int):
        """The function that notes a batch reaching `sink` in `level` (k >= 2): each row that a late event of the
        level arriving in this batch made touched its output."""
        touches, batch_late = self._touches[level - 1], self._batch_late[level - 1]

        def noted(sink, batch):
            if batch_late and batch.causes is not None:
                for meta, cause in zip(batch.metas, batch.causes):
                    if cause in batch_late:
                        touches.note(sink, meta, cause)

        return noted

    def released(self, level: int, time, items: list, now: float):
        """`level` released `items` (in meta order) at its punctuation `time`, at `now` on the engine's clock.
        Level 1's outputs wait for level 2; a later level's are compared with the level before it."""
        if level < self.levels:
            self._pending[level - 1].extend(items)
        if level == 1:
            return
        earlier = self._pending[level - 2]
        before = []
        while earlier and earlier[0].meta[0] <= time:
            before.append(earlier.popleft())
        self._compare(level, before, items, now)
        self._touches[level - 1].forget(time)
        self._latest[level - 1].forget(time)

    def _compare(self, level: int, before: list, after: list, now: float):
        unmatched = Counter((item.sink, item.meta[0], item.data) for item in before)
        added = []
        for item in after:
            key = (item.sink, item.meta[0], item.data)
            if unmatched[key] > 0:
                unmatched[key] -= 1
            else:
                added.append(item)
        removed = []
        for item in reversed(before):  # the latest copies of equal outputs are the unmatched ones
            key = (item.sink, item.meta[0], item.data)
            if unmatched[key] > 0:
                unmatched[key] -= 1
                removed.append(item)
        changes = [(item.meta, 0, RETRACT, item) for item in removed] + [(item.meta, 1, ADD, item) for item in added]
        changes.sort(key=_order)
        touches, latest, made = self._touches[level - 1], self._latest[level - 1], self.made
        for _, _, op, item in changes:
            cause = touches.cause(item.sink, item.meta) or latest.at_or_before(item.meta[0])
            payload = unpack(item.data) if item.payload is None else item.payload
            record = {
                "op": op, "ts": item.meta[0], "payload": payload, "level": level,
                "cause": None if cause is None else {"source": cause[0], "ts": cause[1], "position": cause[2]},
            }
            made.append([item.sink, record, (now - item.arrival) * 1000.0])

    def take(self) -> list:
        """The corrections made since the last call, as `[sink, record, latency in ms]` in the order made."""
        made, self.made = self.made, []
        return made


def summarised(made, sinks, latencies: tuple, output_latencies, events: list) -> tuple:
    """A run's corrections `{sink: [record]}` from `made` (`[sink, record, latency in ms]` in the order made),
    and per level of the reorder `latencies`: the events first applied at it (`events`), how many corrections
    it made and the percentiles of their latencies (level 1: of the outputs', `output_latencies`)."""
    records = {sink: [] for sink in sinks}
    latencies_ms = [output_latencies] + [array("d") for _ in latencies[1:]]
    counts = Counter()
    for sink, record, latency in made:
        records[sink].append(record)
        latencies_ms[record["level"] - 1].append(latency)
        counts[record["level"]] += 1
    levels = [{"level": level, "reorder_latency": latency, "events": events[level - 1],
               "corrections": counts.get(level, 0), "latency_ms": percentiles(latencies_ms[level - 1])}
              for level, latency in enumerate(latencies, 1)]
    return records, levels


def _order(change):
    return change[0], change[1]
