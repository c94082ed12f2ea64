"""Each source's punctuation, late events and item meta, written once for every engine.

An engine hands a `Punctuations` every event in arrival order (`admit`)
and every end of input (`end`); at each punctuation point it calls
`advance` and issues `time()`, the punctuation all sources support. The
local engine keeps one for the whole run; the Spark engine rebuilds one per
micro-batch, from the `snapshot()` it keeps in its state store or, for a
replayed source, from what the file holds before the batch (`resume`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from math import inf

from flamespark.core.codec import pack
from flamespark.core.errors import InternalError, LateEventError
from flamespark.core.items import Item, Meta, encode_event, event_tiebreak, new_meta

POLICIES = ("drop", "adjust", "fail")


def mint(source: str, ts: int, payload, arrival: float, position: int) -> Item:
    """The item of an event: meta from the event itself, and its `position` (its 0-based place in its source's
    arrival order) as the path, which tells identical events (same source, time and payload) apart.

    Which copy gets which position cannot change any output, since the
    copies are interchangeable; a position is the same on every replay of
    the source, and unique without any count kept of the events before.
    """
    try:
        data = pack(payload)
    except (TypeError, ValueError, OverflowError):
        data = encode_event(source, ts, payload)  # raises the PayloadError naming the event
    return Item(new_meta(Meta, (ts, source, event_tiebreak(data), position)), payload, data, False, arrival)


@dataclass
class _Source:
    """What is known of one source; its fields are what a snapshot keeps of it."""

    max_ts: int | None = None
    punctuation: float = -inf
    ended: bool = False
    received: int = 0  # events delivered, late ones included: what an expected count counts
    events: int = 0  # events admitted
    late_dropped: int = 0
    late_adjusted: int = 0
    last_seen: int | None = None  # the caller's clock (ms) at its latest event or end, if idle sources are passed


class Punctuations:
    """The punctuations of a group of sources, and what they decide: which events are late (the late policy),
    and the items the others become (event minting).

    A source that has seen events up to `max_ts` promises nothing earlier
    than `max_ts - reorder_latency` will come: events may be up to
    `reorder_latency` ms behind the newest one, so its punctuation is
    `max_ts - reorder_latency - 1` (an event exactly `reorder_latency` behind
    is on time). It is `+inf` once the source ended, or once it delivered
    `expected[source]` events; `-inf` while it has said nothing.

    An event is late when its time is at or below the punctuation that the
    newest event before it in its source's arrival order supports (or the
    punctuation its source was given at the last `advance`, if higher): which
    events are late depends on the arrival order alone, not on when
    `advance` is called. The global punctuation, the minimum over sources, is
    never higher, so an admitted event is never behind it.
    `late="drop"` keeps it in `dead_letters`, `"adjust"` moves its time just
    after the punctuation, `"fail"` raises LateEventError.

    With `idle_timeout` (seconds), a source that has not been heard of for
    that long on `clock_ms` (a callable giving the caller's time in ms)
    stops holding the others back: `advance` raises its punctuation to the
    lowest of the other sources'. Its silence counts from the first time
    it hears of the source or of the clock.

    A `Punctuations` that sees one of the disjoint parts an engine splits its
    sources' events into (the Spark engine's ingest partitions) judges
    lateness by that part alone; the engine then gives each event's position
    in its source, and `expected` counts that part's events.

    A source read in parts of its own within one progress (a Kafka topic's
    partitions, on the local engine, and on Spark with an idle timeout) is
    given as `lanes[source]`, a list of
    hashable lane names: the progress then knows its lanes in its source's
    place, events are admitted and ended by lane, each lane judges lateness
    by its own events and idles on its own, and the source holds back the
    others as far as its lowest lane does. A lane's k-th event, of `n` lanes,
    takes position `k * n + i` in the source (`i` the lane's index), which
    no other lane gives.

    With several reorder latencies, `reorder_latency=(D1, ..., Dn)` increasing,
    each is a *level*: `level(source, ts)` tells the first level an event is
    on time at (judged as above, with Dk), `times()` each level's global
    punctuation, and the late policy applies to events later than Dn, the
    latency that `reorder_latency` then names.

    Options are taken as given: `flamespark.runtime.options` checks them.
    """

    def __init__(self, sources, reorder_latency: int | tuple = 0, late: str = "drop", expected: dict | None = None,
                 idle_timeout: float | None = None, clock_ms=None, lanes: dict | None = None):
        if idle_timeout is not None and clock_ms is None:
            raise InternalError("Punctuations: an idle timeout needs a clock")
        self.latencies = tuple(reorder_latency) if isinstance(reorder_latency, (tuple, list)) else (reorder_latency,)
        if idle_timeout is not None and len(self.latencies) > 1:
            raise InternalError("Punctuations: an idle timeout with several reorder latencies")
        reorder_latency = self.latencies[-1]
        self.reorder_latency = reorder_latency
        self.late = late
        self.expected = expected or {}
        self.idle_ms = None if idle_timeout is None else idle_timeout * 1000
        self.clock_ms = clock_ms
        self.dead_letters = []
        lanes = lanes or {}
        self._sources = {lane: _Source() for source in sources for lane in lanes.get(source, [source])}
        # Of each lane: its source, the number of lanes of that source and its index among them.
        self._lanes = {lane: (source, len(parts), index)
                       for source, parts in lanes.items() for index, lane in enumerate(parts)}
        self._time = self._lowest()
        self._times = (self._time,) * len(self.latencies)

    def admit(self, source: str, ts: int, payload, arrival: float, position: int | None = None) -> Item | None:
        """The event as an item with its meta, or None if it is late and dropped. Its `position` in its
        source's arrival order is, if not given, how many of the source's events this saw before. `source` is
        a lane, for a source read in lanes."""
        state = self._sources[source]  # `_heard`, inlined: this runs for every event
        if self.idle_ms is not None:
            state.last_seen = self.clock_ms()
        if self._lanes:  # the lane's source, and its place among the source's events
            source, count, index = self._lanes.get(source, (source, 1, 0))
            if position is None:
                position = state.received * count + index
        elif position is None:
            position = state.received
        state.received += 1
        if ts <= state.punctuation or (state.max_ts is not None and ts < state.max_ts - self.reorder_latency):
            ts = self._late(source, state, ts, payload, position)
            if ts is None:
                return None
        state.events += 1
        if state.max_ts is None or ts > state.max_ts:
            state.max_ts = ts
        return mint(source, ts, payload, arrival, position)

    def level(self, source: str, ts: int) -> int:
        """The first level (1 to n) at whose reorder latency an event of `source` at `ts` would be on time if
        admitted now, or n + 1 if it is late at every level."""
        max_ts = self._sources[source].max_ts
        if max_ts is None:
            return 1
        level = 1
        for latency in self.latencies:
            if ts >= max_ts - latency:
                return level
            level += 1
        return level

    def end(self, source: str):
        """The source's input ended: from the next `advance`, it holds nothing back."""
        self._heard(source).ended = True

    def advance(self) -> dict:
        """Raise every source's punctuation to what it now supports; returns `{source: time}` of those that rose."""
        risen = {}
        lowest = inf  # _lowest(), in the same pass: the local engine advances after every event
        for source, state in self._sources.items():
            supported = self._supported(source, state)
            if supported > state.punctuation:
                state.punctuation = risen[source] = supported
            if state.punctuation < lowest:
                lowest = state.punctuation
        if self.idle_ms is not None:
            before = {source: state.punctuation for source, state in self._sources.items()}
            self._pass_idle(self.clock_ms())
            risen.update((source, state.punctuation) for source, state in self._sources.items()
                         if state.punctuation > before[source])
            lowest = self._lowest()
        self._time = lowest
        if len(self.latencies) > 1:
            self._times = tuple(self._lowest(latency) for latency in self.latencies[:-1]) + (lowest,)
        return risen

    def punctuation(self, source: str):
        """The source's punctuation as of the last `advance`."""
        return self._sources[source].punctuation

    def time(self):
        """The global punctuation: the minimum over sources, as of the last `advance`."""
        return self._time

    def times(self) -> tuple:
        """Each level's global punctuation, as of the last `advance`: for level k, what the sources' newest
        events support with reorder latency Dk (level n's is `time()`)."""
        return self._times if len(self._times) > 1 else (self._time,)

    def counts(self, source: str | None = None) -> dict:
        """Admitted, dropped and adjusted events of `source`, or of all sources (cumulative over snapshots)."""
        states = [self._sources[source]] if source is not None else list(self._sources.values())
        keys = ("events", "late_dropped", "late_adjusted")
        return {key: sum(getattr(state, key) for state in states) for key in keys}

    def snapshot(self) -> dict:
        """Everything but the dead letters, as plain msgpack-able data."""
        return {"sources": {source: asdict(state) for source, state in self._sources.items()}}

    def restore(self, snapshot: dict):
        """Take up where the `Punctuations` that made `snapshot` left off."""
        for source, known in snapshot["sources"].items():
            if source in self._sources:
                self._sources[source] = _Source(**known)
        self._time = self._lowest()

    def resume(self, source: str, received: int, latest: int | None):
        """Take up `source` after `received` events that another `Punctuations` saw and advanced past, the latest
        at time `latest` (None if none); its counts start from zero."""
        state = self._heard(source)
        state.received, state.max_ts = received, latest
        state.punctuation = self._supported(source, state)
        self._time = self._lowest()

    def _lowest(self, latency: int | None = None):
        """The lowest punctuation over sources: as advanced, or (with `latency`) as their events support it."""
        if latency is None:
            return min((state.punctuation for state in self._sources.values()), default=inf)
        return min((self._supported(source, state, latency) for source, state in self._sources.items()), default=inf)

    def _heard(self, source: str) -> _Source:
        state = self._sources[source]
        if self.idle_ms is not None:
            state.last_seen = self.clock_ms()
        return state

    def _late(self, source, state, ts, payload, position):
        """The time to process a late event at, or None if it is dropped."""
        punctuation = self._bar(state)
        if self.late == "fail":
            # Its position counts from 0, as in a changelog's cause; a run from files adds the file and line.
            raise LateEventError.of(source, ts, position, punctuation, payload)
        if self.late == "adjust":
            state.late_adjusted += 1
            return int(punctuation) + 1
        state.late_dropped += 1
        self.dead_letters.append({"source": source, "ts": ts, "payload": payload, "punctuation": punctuation})
        return None

    def _bar(self, state):
        """The time at or below which the source's next event is late: the punctuation its newest event so far
        supports, or the one it was given if higher (an idle source's)."""
        if state.max_ts is None:
            return state.punctuation
        return max(state.punctuation, state.max_ts - self.reorder_latency - 1)

    def _supported(self, source, state, latency: int | None = None):
        if state.ended or (self.expected and state.received >= self.expected.get(source, inf)):
            return inf
        max_ts = state.max_ts
        return -inf if max_ts is None else max_ts - (self.reorder_latency if latency is None else latency) - 1

    def _pass_idle(self, now: int):
        """Raise idle sources' punctuations to the lowest of the active ones'."""
        for state in self._sources.values():
            if state.last_seen is None:
                state.last_seen = now
        idle = {source for source, state in self._sources.items()
                if not state.ended and now - state.last_seen >= self.idle_ms}
        active = [state.punctuation for source, state in self._sources.items() if source not in idle]
        if idle and active:
            for source in idle:
                state = self._sources[source]
                state.punctuation = max(state.punctuation, min(active))
