"""The changelog: each sink's results as the optimistic mode computes them, and their retractions.

An engine records every item and tombstone that reaches a sink, with the
input event it was delivering (the cause), and at the end of each step (one
event locally, one micro-batch on Spark) takes
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

    @classmethod
    def of(cls, item) -> "Cause":
        """The input event whose item (not a derivative) is `item`."""
        meta = item.meta
        return cls(meta.source, meta.ts, meta.position)


class Change(NamedTuple):
    """One changelog entry: `item` reached `sink` (a `+`, or a `-` if it is a tombstone) while the engine was
    delivering the event `cause`, which only a `-` names (it may be None on a `+`)."""

    sink: str
    item: object
    cause: Cause | None


def records(changes: list, sinks) -> dict:
    """Each sink's records of `changes`, as `Result.changes` holds them."""
    by_sink = {sink: [] for sink in sinks}
    for sink, item, cause in changes:
        by_sink[sink].append(_record(item, cause))
    return by_sink


def _record(item, cause: Cause | None) -> dict:
    payload = unpack(item.data) if item.payload is None else item.payload  # rows keep bytes only
    if not item.tombstone:
        return {"op": ADD, "ts": item.meta.ts, "payload": payload, "cause": None}
    return {"op": RETRACT, "ts": item.meta.ts, "payload": payload,
            "cause": {"source": cause[0], "ts": cause[1], "position": cause[2]}}


def _identity(sink: str, item) -> tuple:
    """What a `-` must match of a `+`: sink, event time and payload (as the changelog's reader sees them)."""
    return sink, item.meta.ts, item.data


class StepChanges:
    """What reached the sinks in the current step, in order; `take()` nets and clears it.

    >>> from flamespark.core.items import Item, Meta
    >>> meta = Meta(5, "s", 0, (0,))
    >>> step = StepChanges()
    >>> step.add(("out", Item(meta, None, b"\\x01", tombstone=True), Cause("s", 3, 7)))
    >>> step.add(("out", Item(meta, None, b"\\x01"), Cause("s", 3, 7)))
    >>> step.take()
    []
    """

    def __init__(self):
        self._reached = []
        # add((sink, item, cause)): an item or tombstone reached `sink` while `cause` was being delivered.
        self.add = self._reached.append  # bound once: it runs for every item reaching a sink

    def take(self) -> list:
        """The step's changes as `(sink, item, cause)` entries (see `Change`) in the order they reached the sinks,
        netted; the step starts afresh."""
        reached = self._reached.copy()
        self._reached.clear()
        # What a step both retracts and makes again cancels out, pair by pair. Only a payload that some tombstone
        # and some item of the step carry can be such a pair: most steps have none, and build no identities.
        retracting = {item.data for _, item, _ in reached if item.tombstone}
        if not retracting:
            return reached
        remade = {item.data for _, item, _ in reached if item.data in retracting and not item.tombstone}
        if not remade:
            return reached
        candidates = [(_identity(sink, item), item.tombstone) for sink, item, _ in reached if item.data in remade]
        retracted = Counter(identity for identity, tombstone in candidates if tombstone)
        made = Counter(identity for identity, tombstone in candidates if not tombstone)
        cancelled = {identity: min(count, made[identity]) for identity, count in retracted.items() if made[identity]}
        if not cancelled:
            return reached
        adds_to_skip, retracts_to_skip = dict(cancelled), cancelled
        changes = []
        for entry in reached:
            sink, item, _ = entry
            if item.data in remade:
                identity = _identity(sink, item)
                skip = retracts_to_skip if item.tombstone else adds_to_skip
                if skip.get(identity):
                    skip[identity] -= 1
                    continue
            changes.append(entry)
        return changes


class Changelog:
    """A run's changelog: each sink's records in emission order, their counts and speculative latencies.

    A `-` retracts the latest live `+` of the same sink, event time and
    payload; a `-` with none live is an internal error, since a changelog
    replayed as a multiset must never remove what is absent. Latencies are
    in ms, from an item's `arrival` to when its change was emitted, on the
    same clock.
    """

    def __init__(self, sinks):
        self.records = {sink: [] for sink in sinks}
        self.added = 0
        self.retracted = 0
        # identity -> the latency of its live `+`, or a list of them when there are several. A float is not a
        # container, so the many identities with one live `+` add nothing to what a garbage collection scans.
        self._live = {}

    def extend(self, changes: list, emitted_at: float):
        """Append a step's `changes`, all emitted at `emitted_at`."""
        records, live = self.records, self._live
        retracted = 0
        for sink, item, cause in changes:
            identity = (sink, item.meta.ts, item.data)  # _identity, inlined: this runs for every record
            held = live.get(identity)
            if not item.tombstone:
                latency = (emitted_at - item.arrival) * 1000.0
                if held is None:
                    live[identity] = latency
                elif type(held) is list:
                    held.append(latency)
                else:
                    live[identity] = [held, latency]
            elif held is not None:
                if type(held) is not list or len(held) == 1:
                    del live[identity]
                else:
                    held.pop()
                retracted += 1
            else:
                raise InternalError(
                    f"internal error: the changelog of sink {sink!r} retracts an output of "
                    f"{item.meta.describe()} that it never added"
                )
            records[sink].append(_record(item, cause))
        self.added += len(changes) - retracted
        self.retracted += retracted

    def fill(self, result):
        """Hand the changelog to `result`: its records, the latency of every `+` left live (in no particular
        order) and, in `metrics["changes"]`, the counts and percentiles of that speculative latency."""
        latencies = []
        for held in self._live.values():
            if type(held) is list:
                latencies += held
            else:
                latencies.append(held)
        share = self.retracted / self.added if self.added else 0.0
        result.changes = self.records
        result.speculative_latencies_ms = latencies
        result.metrics["changes"] = {"added": self.added, "retracted": self.retracted, "retracted_share": share,
                                     "speculative_latency_ms": percentiles(latencies)}
