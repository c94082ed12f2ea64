"""The changelog: each sink's results as the optimistic mode computes them, and their retractions.

An engine records every item and tombstone that reaches a sink, with the
input event it was delivering (the cause), and at the end of each step (one
event or batch of waiting arrivals locally, one micro-batch on Spark) takes
the step's changes: `+` for an item, `-` for a tombstone, with what was
retracted and re-made identically inside the step netted away. A `-`
names the late event whose arrival started the retraction.
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.runtime.metrics import percentiles

ADD, RETRACT = "+", "-"


class Cause(NamedTuple):
    """An input event: its source, event time and 0-based place in its source's arrival order."""

    source: str
    ts: int
    position: int


class Change(NamedTuple):
    """One changelog entry: `op` (ADD or RETRACT) of `item` at `sink`; `cause` is kept on retractions only."""

    sink: str
    op: str
    item: object
    cause: Cause | None

    def record(self) -> dict:
        """The entry as `Result.changes` holds it."""
        cause = None if self.cause is None else self.cause._asdict()
        return {"op": self.op, "ts": self.item.meta.ts, "payload": unpack(self.item.data), "cause": cause}


class StepChanges:
    """What reached the sinks in the current step, in order; `take()` nets and clears it.

    >>> from flamespark.core.items import Item, Meta
    >>> meta = Meta(5, "s", 0, (0,))
    >>> step = StepChanges()
    >>> step.add("out", Item(meta, None, b"\\x01", tombstone=True), Cause("s", 3, 7))
    >>> step.add("out", Item(meta, None, b"\\x01"), Cause("s", 3, 7))
    >>> step.take()
    []
    """

    def __init__(self):
        self._reached = []

    def add(self, sink: str, item, cause: Cause | None):
        self._reached.append((sink, item, cause))

    def take(self) -> list[Change]:
        reached, self._reached = self._reached, []
        if not any(item.tombstone for _, item, _ in reached):
            return [Change(sink, ADD, item, None) for sink, item, _ in reached]
        net = Counter()
        for sink, item, _ in reached:
            net[(sink, item.meta, item.data)] += -1 if item.tombstone else 1
        changes = []
        for sink, item, cause in reached:
            identity = (sink, item.meta, item.data)
            left = net[identity]
            if left > 0 and not item.tombstone:
                changes.append(Change(sink, ADD, item, None))
                net[identity] = left - 1
            elif left < 0 and item.tombstone:
                changes.append(Change(sink, RETRACT, item, cause))
                net[identity] = left + 1
        return changes


class ChangeTally:
    """Counts a run's changes and, for the `+` never retracted, the speculative latency.

    A `-` retracts the latest live `+` of an equal item; a `-` with none
    live is an internal error, since a changelog replayed as a multiset
    must never remove what is absent. Latencies are in ms, from an item's
    `arrival` to when its change was emitted, on the same clock.
    """

    def __init__(self):
        self.added = 0
        self.retracted = 0
        self._live = {}

    def count(self, change: Change, emitted_at: float):
        identity = (change.sink, change.item.meta, change.item.data)
        if change.op == ADD:
            self.added += 1
            self._live.setdefault(identity, []).append((emitted_at - change.item.arrival) * 1000.0)
            return
        live = self._live.get(identity)
        if not live:
            raise InternalError(
                f"internal error: the changelog of sink {change.sink!r} retracts an output of "
                f"{change.item.meta.describe()} that it never added"
            )
        live.pop()
        self.retracted += 1

    def speculative_latencies_ms(self) -> list:
        """The latency of every `+` left live, in no particular order."""
        return [latency for latencies in self._live.values() for latency in latencies]

    def summary(self) -> dict:
        """`Result.metrics["changes"]`: the counts, and percentiles of the speculative latency."""
        share = self.retracted / self.added if self.added else 0.0
        return {"added": self.added, "retracted": self.retracted, "retracted_share": share,
                "speculative_latency_ms": percentiles(self.speculative_latencies_ms())}
