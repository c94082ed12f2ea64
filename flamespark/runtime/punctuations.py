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
from itertools import compress, repeat
from math import inf
from zlib import adler32, crc32

from flamespark.core.codec import pack
from flamespark.core.errors import InternalError, LateEventError
import numpy as np

from flamespark.core.batch import Batch
from flamespark.core.items import Meta, encode_event, new_meta

POLICIES = ("drop", "adjust", "fail")


def mint(source: str, times: list, payloads: list, arrivals: list, positions: list, datas: list | None = None) -> Batch:
    """The batch of a source's admitted events: meta from each event itself, and its `position` (its 0-based place
    in its source's arrival order) as the path, which tells identical events (same source, time and payload)
    apart. `datas`, if given, are the payloads' encodings.

    Which copy gets which position cannot change any output, since the
    copies are interchangeable; a position is the same on every replay of
    the source, and unique without any count kept of the events before.
    """
    if datas is None:
        try:
            datas = list(map(pack, payloads))
        except (TypeError, ValueError, OverflowError):
            for ts, payload in zip(times, payloads):
                encode_event(source, ts, payload)  # raises the PayloadError naming the first that fails
            raise
    tiebreaks = [crc32(data) << 32 | adler32(data) for data in datas]  # `event_tiebreak`, without a call each
    metas = list(map(new_meta, repeat(Meta), zip(times, repeat(source), tiebreaks, positions)))
    return Batch(metas, payloads, datas, [1] * len(metas), arrivals)


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
    each is a *level*: `admit` tells the first level each event is on time
    at (judged as above, with Dk), `times()` each level's global
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

    def admit(self, lane: str, times: list, payloads: list, arrivals: list, positions: list | None = None,
              datas: list | None = None) -> tuple:
        """Admit a lane's events in arrival order (`times[i]`, `payloads[i]`, that arrived at `arrivals[i]`;
        `datas`, if given, are the payloads' encodings). Returns the batch of the events admitted (see `mint`)
        and, with several reorder latencies, each one's first on-time level (else None). An event's position in
        its source's arrival order is, if not given, counted from the events this saw before. `lane` is a source,
        or a lane of a source read in lanes."""
        state = self._heard(lane)
        source, lanes, index = self._lanes.get(lane, (lane, 1, 0))
        count = len(times)
        if not count:
            return mint(source, [], [], [], []), [] if len(self.latencies) > 1 else None
        if positions is None:
            first = state.received * lanes + index
            positions = range(first, first + count * lanes, lanes)
        state.received += count
        before, late = self._judge(state, times)
        levels = None
        if len(self.latencies) > 1:
            levels = (np.searchsorted(self.latencies, before - times, side="left") + 1).tolist()
        if late:
            times, payloads, arrivals, positions, datas, levels = self._judged(
                source, state, late, before, times, payloads, arrivals, positions, datas, levels)
        if times:
            newest = max(times)
            if state.max_ts is None or newest > state.max_ts:
                state.max_ts = newest
        state.events += len(times)
        return mint(source, times, payloads, arrivals, positions, datas), levels

    def _judge(self, state, times: list) -> tuple:
        """For each of `times`, the newest time before it in its lane (the first's own if the lane had none), as
        a numpy array: the running maximum; and the indexes of the late events: at or below the lane's
        punctuation, or more than the reorder latency behind the newest event before them."""
        try:
            ts = np.fromiter(times, dtype=np.int64, count=len(times))
        except OverflowError:
            ts = np.array(times, dtype=object)
        start = ts[0] if state.max_ts is None else state.max_ts
        before = np.maximum.accumulate(np.concatenate(([start], ts[:-1])).astype(ts.dtype))
        late = (ts < before - self.reorder_latency) | (ts <= state.punctuation)
        return before, np.flatnonzero(late).tolist()

    def _judged(self, source, state, late, before, times, payloads, arrivals, positions, datas, levels) -> tuple:
        """The columns of the events kept once the late policy judged the `late` ones (indexes, in order): a
        dropped event leaves them, an adjusted one stays at its new time."""
        times = list(times)
        dropped = set()
        for index in late:
            ts = self._late(source, state, times[index], payloads[index], positions[index], int(before[index]))
            if ts is None:
                dropped.add(index)
            else:
                times[index] = ts
        if not dropped:
            return times, payloads, arrivals, positions, datas, levels
        kept = [index not in dropped for index in range(len(times))]
        return tuple(None if column is None else list(compress(column, kept))
                     for column in (times, payloads, arrivals, positions, datas, levels))

    def end(self, source: str):
        """The source's input ended: from the next `advance`, it holds nothing back."""
        self._heard(source).ended = True

    def advance(self) -> dict:
        """Raise every source's punctuation to what it now supports; returns `{source: time}` of those that rose."""
        risen = {}
        lowest = inf  # _lowest(), in the same pass: an engine advances at every punctuation it issues
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

    def _late(self, source, state, ts, payload, position, newest):
        """The time to process a late event at, or None if it is dropped; `newest` is the newest time before it
        in its lane."""
        punctuation = self._bar(state, newest)
        if self.late == "fail":
            # Its position counts from 0, as in a changelog's cause; a run from files adds the file and line.
            raise LateEventError.of(source, ts, position, punctuation, payload)
        if self.late == "adjust":
            state.late_adjusted += 1
            return int(punctuation) + 1
        state.late_dropped += 1
        self.dead_letters.append({"source": source, "ts": ts, "payload": payload, "punctuation": punctuation})
        return None

    def _bar(self, state, newest):
        """The time at or below which an event is late: the punctuation the newest event before it supports (None
        if there is none), or the one its lane was given if higher (an idle source's)."""
        if newest is None:
            return state.punctuation
        return max(state.punctuation, newest - self.reorder_latency - 1)

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
