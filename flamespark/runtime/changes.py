"""The changelog: each sink's results as the optimistic mode computes them, and their retractions.

An engine records every item and tombstone that reaches a sink, with the
input event it was delivering (the cause), and at the end of each step (one
event locally, one micro-batch on Spark) takes
the step's changes: `+` for an item, `-` for a tombstone, with what was
retracted and re-made identically inside the step netted away. A `-`
names the late event whose arrival started the retraction.
"""
from __future__ import annotations

from itertools import compress
from operator import attrgetter, itemgetter, not_
from typing import NamedTuple

from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.runtime.metrics import percentiles

ADD, RETRACT = "+", "-"
_ITEM, _IS_TOMBSTONE, _DATA = itemgetter(1), attrgetter("tombstone"), attrgetter("data")


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
    _append_records(changes, by_sink)
    return by_sink


def _append_records(changes: list, by_sink: dict):
    """Append the record of each of `changes` to its sink's list in `by_sink`."""
    for sink, item, cause in changes:
        payload = item.payload
        if payload is None:
            payload = unpack(item.data)  # rows keep bytes only
        if item.tombstone:
            record = {"op": RETRACT, "ts": item.meta[0], "payload": payload,
                      "cause": {"source": cause[0], "ts": cause[1], "position": cause[2]}}
        else:
            record = {"op": ADD, "ts": item.meta[0], "payload": payload, "cause": None}
        by_sink[sink].append(record)


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
        # The step's entries are read column by column in C (`map`, `compress`): this runs for every entry.
        items = list(map(_ITEM, reached))
        retracts = list(map(_IS_TOMBSTONE, items))
        if not any(retracts):
            return reached
        payloads = list(map(_DATA, items))
        remade = set(compress(payloads, retracts)).intersection(compress(payloads, map(not_, retracts)))
        if not remade:
            return reached
        # The entries that may net are found in C as well; the step's other entries are kept by slices.
        positions = compress(range(len(reached)), map(remade.__contains__, payloads))
        netted = _netted_pairs(reached, positions)
        changes = []
        start = 0
        for position in sorted(netted):
            changes += reached[start:position]
            start = position + 1
        changes += reached[start:]
        return changes


def _netted_pairs(reached: list, positions) -> set:
    """The positions among `positions` (in order) of `reached` entries that cancel out: of each identity, as many
    of its first retractions as of its first additions, as many as both have."""
    retractions, additions = {}, {}
    for position in positions:
        sink, item, _ = reached[position]
        (retractions if item.tombstone else additions).setdefault(_identity(sink, item), []).append(position)
    netted = set()
    for identity, added in additions.items():
        retracted = retractions.get(identity, ())
        pairs = min(len(added), len(retracted))
        netted.update(added[:pairs], retracted[:pairs])
    return netted


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
        live = self._live
        retracted = 0
        # `_identity`, inlined, and one lookup of the live map per entry: this runs for every record.
        for sink, item, _ in changes:
            identity = (sink, item.meta[0], item.data)
            if not item.tombstone:
                latency = (emitted_at - item.arrival) * 1000.0
                held = live.setdefault(identity, latency)
                if held is not latency:
                    if type(held) is list:
                        held.append(latency)
                    else:
                        live[identity] = [held, latency]
                continue
            held = live.pop(identity, None)
            if held is None:
                raise InternalError(
                    f"internal error: the changelog of sink {sink!r} retracts an output of "
                    f"{item.meta.describe()} that it never added"
                )
            if type(held) is list and len(held) > 1:
                held.pop()
                live[identity] = held
            retracted += 1
        _append_records(changes, self.records)
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
