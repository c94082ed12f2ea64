"""The changelog: each sink's results as the optimistic mode computes them, and their retractions.

An engine notes every item and tombstone that reaches a sink, with the
input event that made it (the cause), which its row carries. A batch (a
local run's batch of arrivals, a Spark micro-batch) is one change: its
changes leave at its end, its items as `+` and its tombstones as `-`,
except that an item and a tombstone of the same output (same sink, event
time and payload) in one batch are no change. A `-` names the event that
started the retraction: a late event, or the event that changed a
window's running value (consecutive `-` records naming one event share the
dict that names it).
"""
from __future__ import annotations

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
    def of_meta(cls, meta) -> "Cause":
        """The input event whose item's meta (not a derivative's) is `meta`.

        >>> from flamespark.core.items import Meta
        >>> Cause.of_meta(Meta(5, "s", 0, (3,)))
        Cause(source='s', ts=5, position=3)
        """
        return cls(meta[1], meta[0], meta[3])


class Change(NamedTuple):
    """One changelog entry: `item` reached `sink` (a `+`, or a `-` if it is a tombstone), made by the input event
    `cause` that its row carried (None if it carried none), which only a `-` names."""

    sink: str
    item: object
    cause: Cause | None


def records(changes: list, sinks) -> dict:
    """Each sink's records of `changes`, as `Result.changes` holds them."""
    by_sink = {sink: [] for sink in sinks}
    for sink, item, cause in changes:
        # A `-` names the cause its row carried (in the buffered baseline, the event whose release by a buffer
        # changed a window's running value), and none if the row carried none.
        by_sink[sink].append(_record(item, _named(cause) if item.tombstone and cause is not None else None))
    return by_sink


def _record(item, cause: dict | None) -> dict:
    """The changelog record of an item (a `+`, `cause` None) or a tombstone (a `-`, `cause` naming its event)."""
    payload = item.payload
    if payload is None:
        payload = unpack(item.data)  # rows keep bytes only
    return {"op": RETRACT if item.tombstone else ADD, "ts": item.meta[0], "payload": payload, "cause": cause}


def _named(cause: Cause) -> dict:
    """A `-` record's `cause`."""
    return {"source": cause[0], "ts": cause[1], "position": cause[2]}


class BatchChanges:
    """A batch's changes, which all leave at its end, on every engine. An item that makes again what the batch
    retracted cancels the earliest such retraction still waiting, and an item that a later tombstone of the
    batch retracts never left: neither pair is a change. `take` gives the items left, in the order they
    came, then the retractions.

    >>> from flamespark.core.items import Item, Meta
    >>> meta = Meta(5, "s", 0, (0,))
    >>> changes = BatchChanges()
    >>> changes.add("out", Item(meta, None, b"\\x01", tombstone=True), Cause("s", 3, 7))
    >>> changes.add("out", Item(meta, None, b"\\x01"), Cause("s", 3, 7))
    >>> changes.add("out", Item(meta, None, b"\\x02"), Cause("s", 3, 7))
    >>> [(item.data, item.tombstone) for _, item, _ in changes.take()]
    [(b'\\x02', False)]
    """

    def __init__(self):
        self._retractions = []  # the batch's tombstones as `(sink, item, cause)`, None where an item cancelled one
        self._waiting = {}  # payload encoding -> the positions of its retractions not cancelled yet
        self._added = []  # the batch's items, None where a tombstone cancelled one
        self._adding = {}  # payload encoding -> the positions of its items not cancelled yet

    def add(self, sink: str, item, cause):
        """Note that `item` (or a tombstone) reached `sink` in the batch, made by the event `cause`."""
        if item.tombstone:
            if not _cancel(self._added, self._adding, sink, item):
                _hold(self._retractions, self._waiting, (sink, item, cause))
        elif not _cancel(self._retractions, self._waiting, sink, item):
            _hold(self._added, self._adding, (sink, item, cause))

    def take(self) -> list:
        """The batch's changes, as `(sink, item or tombstone, cause)`: its items left, in the order they came,
        then its retractions left; the next batch starts afresh."""
        taken = [entry for entry in self._added + self._retractions if entry is not None]
        self._added, self._retractions = [], []
        self._adding.clear()
        self._waiting.clear()
        return taken


def _hold(entries: list, by_payload: dict, entry: tuple):
    """Append `(sink, item, cause)` to `entries`, its position under its payload's encoding in `by_payload`."""
    by_payload.setdefault(entry[1].data, []).append(len(entries))
    entries.append(entry)


def _cancel(entries: list, by_payload: dict, sink: str, item) -> bool:
    """Cancel the earliest entry held (`_hold`) with `item`'s sink, event time and payload, if any: None in its
    place in `entries`; True if there was one."""
    data = item.data
    positions = by_payload.get(data)
    if positions is None:  # most items: the batch holds nothing with their payload
        return False
    ts = item.meta[0]
    for index, position in enumerate(positions):
        held_sink, held, _ = entries[position]
        if held_sink == sink and held.meta[0] == ts:
            entries[position] = None
            del positions[index]
            if not positions:
                del by_payload[data]
            return True
    return False


class SinkChangelog:
    """One sink's changelog records in emission order, and the speculative latency (ms) of each live `+`.

    The latencies are kept per event time, then per payload encoding: a
    float, or a list of them when several equal outputs are live. A batch's
    results share a few event times, so the work is in a few small dicts
    rather than all over one large one, and a float is not a container, which
    a garbage collection would scan.
    """

    __slots__ = ("name", "records", "live", "retracted")

    def __init__(self, name: str):
        self.name = name
        self.records = []
        self.live = {}
        self.retracted = 0

    def add(self, item, emitted_at: float):
        """Append the `+` of `item`, which reached the sink at `emitted_at`."""
        latency = (emitted_at - item.arrival) * 1000.0
        ts, data = item.meta[0], item.data
        live = self.live.get(ts)
        if live is None:
            live = self.live[ts] = {}
        held = live.setdefault(data, latency)
        if held is not latency:
            if type(held) is list:
                held.append(latency)
            else:
                live[data] = [held, latency]
        payload = item.payload
        # `_record` of a `+`, built here: this runs for every output that reaches a sink.
        self.records.append({"op": ADD, "ts": ts, "payload": unpack(data) if payload is None else payload,
                             "cause": None})

    def retract(self, tombstone, cause: dict):
        """Append the `-` of `tombstone`, naming its late event as `cause` (a `-` record's dict)."""
        live = self.live.get(tombstone.meta[0])
        held = None if live is None else live.pop(tombstone.data, None)
        if held is None:
            raise InternalError(
                f"internal error: the changelog of sink {self.name!r} retracts an output of "
                f"{tombstone.meta.describe()} that it never added"
            )
        if type(held) is list and len(held) > 1:
            held.pop()
            live[tombstone.data] = held
        self.records.append(_record(tombstone, cause))
        self.retracted += 1

    def latencies(self):
        """The speculative latency of every `+` left live, in no particular order."""
        for live in self.live.values():
            for held in live.values():
                if type(held) is list:
                    yield from held
                else:
                    yield held


class Changelog:
    """A run's changelog: each sink's `SinkChangelog` (an engine hands a `+` to its sink's `add`), their counts
    and speculative latencies.

    A `-` retracts the latest live `+` of the same sink, event time and
    payload; a `-` with none live is an internal error, since a changelog
    replayed as a multiset must never remove what is absent. Latencies are
    in ms, from an item's `arrival` to when its change was emitted, on the
    same clock.
    """

    def __init__(self, sinks):
        self.sinks = {sink: SinkChangelog(sink) for sink in sinks}
        # The latest cause retracted for and its record's dict, which the `-` records that follow with the same
        # cause share (often all of a batch's): one late event may retract thousands of results, and a dict
        # each would hold as many copies of the same three fields.
        self._cause = self._cause_named = None

    @property
    def records(self) -> dict:
        """Each sink's records so far."""
        return {sink: log.records for sink, log in self.sinks.items()}

    def retract(self, sink: str, tombstone, cause):
        """Append the `-` of `tombstone`, which reached `sink` carrying the event `cause` that made it."""
        if cause != self._cause:
            self._cause, self._cause_named = cause, _named(cause)
        self.sinks[sink].retract(tombstone, self._cause_named)

    def extend(self, changes: list, emitted_at: float):
        """Append `changes` (see `Change`), all emitted at `emitted_at`."""
        for sink, item, cause in changes:
            if item.tombstone:
                self.retract(sink, item, cause)
            else:
                self.sinks[sink].add(item, emitted_at)

    def fill(self, result):
        """Hand the changelog to `result`: its records, the latency of every `+` left live (in no particular
        order) and, in `metrics["changes"]`, the counts and percentiles of that speculative latency."""
        latencies = [latency for log in self.sinks.values() for latency in log.latencies()]
        retracted = sum(log.retracted for log in self.sinks.values())
        added = sum(len(log.records) for log in self.sinks.values()) - retracted
        result.changes = self.records
        result.speculative_latencies_ms = latencies
        result.metrics["changes"] = {"added": added, "retracted": retracted,
                                     "retracted_share": retracted / added if added else 0.0,
                                     "speculative_latency_ms": percentiles(latencies)}
