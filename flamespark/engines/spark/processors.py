"""The keyed Spark operators: ingest, and stages of boundary operators, the last with the barrier.

Each is a `StatefulProcessor` for `transformWithStateInPandas` that keeps one
msgpack blob per grouping key (a source, or a shard) in a ValueState, and
runs the core's operator objects on the rows of one micro-batch. Punctuation
rows travel with the data: every stage receives them on every shard, applies
them after the batch's items, and shard 0 passes them on to every shard of
the next stage; the last stage holds the barrier, which releases in the same
micro-batch.
"""
import math
import time

import msgpack
from pyspark.sql.streaming import StatefulProcessor

from barrier.barrier import Barrier
from barrier.late import LatePolicy
from flamespark.codec import pack, unpack
from flamespark.engines.spark.rows import (
    COLUMNS,
    END,
    EVENT_TIME_SHIFT_MS,
    ITEM,
    LATE,
    METRIC,
    OUT,
    PUNCT,
    concat,
    control_row,
    decode_time,
    encode_time,
    frame,
    item_row,
    row_item,
    with_event_time,
)
from flamespark.ingest import EventMinter
from operators import BufferSort
from operators.bucket import Bucket

STATE_SCHEMA = "blob BINARY"


class BlobProcessor(StatefulProcessor):
    """Keeps one msgpack value per grouping key."""

    def init(self, handle):
        self._blob = handle.getValueState("state", STATE_SCHEMA)

    def load(self, default):
        return msgpack.unpackb(self._blob.get()[0], strict_map_key=False) if self._blob.exists() else default

    def save(self, value):
        self._blob.update((msgpack.packb(value),))

    def close(self):
        pass


def _punctuation_rows(sources_times: dict, shards: int) -> list:
    return [
        control_row(PUNCT, source, shard, encode_time(time))
        for source, time in sources_times.items()
        for shard in range(shards)
    ]


def _metric_row(stage: str, shard: int, values: dict) -> tuple:
    return control_row(METRIC, stage, shard, payload=msgpack.packb(values))


class Horizons:
    """Each source's latest punctuation; their minimum is the stage's punctuation."""

    def __init__(self, sources, known: dict):
        self.sources = sources
        self.times = {source: decode_time(known.get(source, -math.inf)) for source in sources}

    def update(self, rows) -> dict:
        """Apply punctuation rows; returns the sources whose time advanced."""
        advanced = {}
        for row in rows:
            time = decode_time(row.ts)
            if time > self.times[row.target]:
                self.times[row.target] = advanced[row.target] = time
        return advanced

    @property
    def time(self):
        return min(self.times.values(), default=math.inf)

    def dump(self) -> dict:
        return {source: encode_time(time) for source, time in self.times.items()}


def _batch_time_ms(timerValues) -> int:
    """The micro-batch's processing time, which Spark keeps in its offset log, so a rerun batch sees the same."""
    now = timerValues.getCurrentProcessingTimeInMs()
    return now if now > 0 else int(time.time() * 1000)


class IngestProcessor(BlobProcessor):
    """Stage 0, one group for `sources`: late policy, meta, stateless operators, punctuations.

    A source ends at its end row, or once it has delivered `expected[source]`
    events (a directory read up to the files it held at the start). With
    `idle_timeout` (seconds), a source that has delivered nothing for that
    long stops holding the others back: its punctuation is raised to the
    lowest of the other sources', so that its later events at or below that
    are late.
    """

    def __init__(self, topology, sources: list, reorder_latency: int, late: str, expected: dict | None = None,
                 idle_timeout: float | None = None):
        self.topology = topology
        self.sources = sources
        self.reorder_latency = reorder_latency
        self.late = late
        self.expected = expected or {}
        self.idle_ms = None if idle_timeout is None else idle_timeout * 1000

    def handleInputRows(self, key, rows, timerValues):
        now = _batch_time_ms(timerValues)
        state = self.load({"sources": {}, "seen": []})
        sources = {source: state["sources"].get(source) or _new_source(now) for source in self.sources}
        batch = concat(rows).sort_values("seq", kind="stable")
        late = {source: LatePolicy(self.late) for source in sources}
        minter = EventMinter()
        minter.load(state["seen"])
        out = []
        for row in batch.itertuples(index=False):
            progress = sources[row.target]
            progress["last_seen"] = now
            if row.kind == END:
                progress["ended"] = True
                continue
            progress["received"] += 1
            payload = unpack(row.payload)
            ts = late[row.target].admit(row.target, row.ts, payload, progress["horizon"])
            if ts is None:
                continue
            progress["events"] += 1
            progress["max_ts"] = ts if progress["max_ts"] is None else max(progress["max_ts"], ts)
            out.extend(self.topology.rows_after(row.target, minter.mint(row.target, ts, payload, row.arrival)))
        before = {source: progress["horizon"] for source, progress in sources.items()}
        for source, progress in sources.items():
            progress["horizon"] = max(progress["horizon"], self._horizon(source, progress))
        self._pass_idle(sources, now)
        minter.forget(min(progress["horizon"] for progress in sources.values()))
        advanced = {source: p["horizon"] for source, p in sources.items() if p["horizon"] > before[source]}
        out.extend(_punctuation_rows(advanced, self.topology.shards))
        for source, progress in sources.items():
            policy = late[source]
            out.extend(control_row(LATE, source, payload=pack(dead)) for dead in policy.dead_letters)
            progress["late_dropped"] += len(policy.dead_letters)
            progress["late_adjusted"] += policy.adjusted
            metrics = {k: progress[k] for k in ("events", "late_dropped", "late_adjusted")}
            out.append(_metric_row("ingest", 0, dict(metrics, source=source)))
        state["seen"] = minter.dump()
        state["sources"] = sources
        self.save(state)
        yield frame(out)

    def _horizon(self, source, progress):
        """The source's own punctuation: +inf once it ended, else its newest time less the reorder latency."""
        expected = self.expected.get(source)
        if progress["ended"] or (expected is not None and progress["received"] >= expected):
            return math.inf
        if progress["max_ts"] is None:
            return -math.inf
        return progress["max_ts"] - self.reorder_latency - 1

    def _pass_idle(self, sources: dict, now: int):
        """Raise idle sources' punctuations to the lowest of the active ones'."""
        if self.idle_ms is None:
            return
        idle = {s for s, p in sources.items() if not p["ended"] and now - p["last_seen"] >= self.idle_ms}
        active = [p["horizon"] for s, p in sources.items() if s not in idle]
        if idle and active:
            for source in idle:
                sources[source]["horizon"] = max(sources[source]["horizon"], min(active))


def _new_source(now: int) -> dict:
    return {"max_ts": None, "horizon": -math.inf, "ended": False, "received": 0, "events": 0,
            "late_dropped": 0, "late_adjusted": 0, "last_seen": now}


class KeyedStore:
    """The buckets of one stage's keyed operators, kept per operator and key as msgpack blobs.

    Only the buckets a batch touches are decoded, and only they are written back.
    """

    def __init__(self, operators: dict, stored: dict, horizon):
        self.operators = operators
        self.stored = stored
        self.touched = {name: set() for name in operators}
        for name, operator in operators.items():
            operator.buckets = {}
            operator.horizon = horizon
            operator.load_bucket = self._loader(operator, stored.setdefault(name, {}), self.touched[name])

    @staticmethod
    def _loader(operator, stored, touched):
        def load(key_data):
            touched.add(key_data)
            blob = stored.get(key_data)
            return None if blob is None else Bucket.load(operator.window, msgpack.unpackb(blob))

        return load

    def punctuate(self, time):
        for operator in self.operators.values():
            operator.punctuate(time)

    def save(self) -> dict:
        for name, operator in self.operators.items():
            stored = self.stored[name]
            for key_data in self.touched[name] | set(operator.buckets):
                bucket = operator.buckets.get(key_data)
                if bucket:
                    stored[key_data] = msgpack.packb(bucket.dump())
                else:
                    stored.pop(key_data, None)
        return self.stored


def _apply(topology, items, barrier=None) -> list:
    """Run `(operator, item)` pairs in meta order; rows for everything their results reach.

    With a `barrier`, results that reach a sink go into it instead of becoming rows.
    """
    out = []
    for operator, item in sorted(items, key=lambda pair: pair[1].identity):
        for result in operator.process(item):
            if barrier is None:
                out.extend(topology.rows_after(operator.name, result))
                continue
            for target, reached in topology.plan.route(operator.name, result):
                if target not in topology.plan.sinks:
                    raise AssertionError(f"the last stage feeds keyed operator {target!r}")
                barrier.push(topology.plan.sinks[target], reached)
    return out


def _split(batch, targets):
    """Rows for `targets`, and the rows that only pass through (neither those nor punctuations)."""
    for_me = (batch["kind"] == ITEM) & batch["target"].isin(list(targets))
    return batch[for_me], batch[~for_me & (batch["kind"] != PUNCT)]


class StageProcessor(BlobProcessor):
    """One stage of keyed operators, one group per shard, driven by punctuation rows.

    The last stage (`final`) also holds the barrier: every sink item and its
    tombstones come from one key of one operator, or carry one meta, so they
    meet in one shard, and the barrier needs no shuffle of its own.
    """

    def __init__(self, topology, stage: int, final: bool = False):
        self.topology = topology
        self.stage = stage
        self.final = final

    def init(self, handle):
        super().init(handle)
        self.operators = self.topology.boundary_operators(self.stage)

    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state = self.load({"horizons": {}, "buckets": {}, "barrier": None})
        horizons = Horizons(self.topology.sources, state["horizons"])
        batch = concat(rows)
        targets = list(self.operators) + (list(self.topology.plan.sinks) if self.final else [])
        mine, passing = _split(batch, targets)
        if len(passing):
            yield passing[COLUMNS]
        store = KeyedStore(self.operators, state["buckets"], horizons.time)
        barrier = _load_barrier(state) if self.final else None
        items = []
        for row in mine.itertuples(index=False):
            if row.target in self.operators:
                items.append((self.operators[row.target], row_item(row)))
            else:
                barrier.push(self.topology.plan.sinks[row.target], row_item(row))
        out = _apply(self.topology, items, barrier)
        advanced = horizons.update(batch[batch["kind"] == PUNCT].itertuples(index=False))
        store.punctuate(horizons.time)
        state["buckets"] = store.save()
        state["horizons"] = horizons.dump()
        if self.final:
            out.extend(_release(shard, barrier, horizons.time))
            state["barrier"] = barrier.dump()
        elif shard == 0 and advanced:
            out.extend(_punctuation_rows(advanced, self.topology.shards))
        self.save(state)
        if out:
            yield frame(out)


class BufferedStageProcessor(BlobProcessor):
    """The baseline's stage, as a Spark user writes it: buffer per shard, release on event-time timers.

    Items wait in the state until Spark's watermark (the previous batch's
    maximum event time minus the delay) reaches them; a timer at the earliest
    buffered time fires then, and the released items go to the keyed operator
    in meta order. Punctuation rows only pass through, to the barrier.
    """

    def __init__(self, topology, stage: int):
        self.topology = topology
        self.stage = stage

    def init(self, handle):
        super().init(handle)
        self.handle = handle
        self.buffers = {
            name: self.topology.keyed_behind(name)
            for name, op in self.topology.boundary_operators(self.stage).items()
            if isinstance(op, BufferSort)
        }
        self.keyed = {op.name: op for op in self.buffers.values()}

    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state = self.load({"buffered": [], "buckets": {}, "timer": None})
        batch = concat(rows)
        mine, passing = _split(batch, self.buffers)
        if len(passing):
            yield with_event_time(passing)
        state["buffered"].extend(
            [row.target, row.ts, row.meta, row.payload, row.arrival] for row in mine.itertuples(index=False)
        )
        self._arm(state)
        self.save(state)
        punctuations = batch[batch["kind"] == PUNCT]
        if shard == 0 and len(punctuations):
            out = [control_row(PUNCT, row.target, s, row.ts) for row in punctuations.itertuples(index=False)
                   for s in range(self.topology.shards)]
            yield with_event_time(frame(out))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        final = watermark - EVENT_TIME_SHIFT_MS
        state = self.load({"buffered": [], "buckets": {}, "timer": None})
        state["timer"] = None
        ready = [entry for entry in state["buffered"] if entry[1] <= final]
        state["buffered"] = [entry for entry in state["buffered"] if entry[1] > final]
        store = KeyedStore(self.keyed, state["buckets"], final)
        items = []
        for target, ts, meta, data, arrival in ready:
            row = _Row(meta, data, arrival)
            items.append((self.buffers[target], row_item(row)))
        out = _apply(self.topology, items)
        store.punctuate(final)
        state["buckets"] = store.save()
        self._arm(state)
        self.save(state)
        if out:
            yield with_event_time(frame(out), released_at=watermark)

    def _arm(self, state):
        """Keep one timer, at the earliest buffered event time."""
        earliest = min((entry[1] for entry in state["buffered"]), default=None)
        timer = None if earliest is None else earliest + EVENT_TIME_SHIFT_MS
        if timer == state["timer"]:
            return
        if state["timer"] is not None:
            self.handle.deleteTimer(state["timer"])
        if timer is not None:
            self.handle.registerTimer(timer)
        state["timer"] = timer


class _Row:
    """The fields `row_item` reads, for items kept in a buffer."""

    __slots__ = ("meta", "payload", "tombstone", "arrival")

    def __init__(self, meta, payload, arrival):
        self.meta, self.payload, self.tombstone, self.arrival = meta, payload, False, arrival


def _load_barrier(state) -> Barrier:
    return Barrier.load(state["barrier"]) if state["barrier"] else Barrier()


def _release(shard: int, barrier: Barrier, time_now) -> list:
    """Rows for what `barrier` releases at `time_now`, and its metric row."""
    held = len(barrier)
    released = barrier.punctuate(time_now)
    out = [item_row(OUT, sink, shard, item) for sink, item in released]
    out.append(_metric_row("barrier", shard, {
        "arrived": barrier.arrived, "tombstones": barrier.tombstones, "released": barrier.released,
        "held": held, "horizon": encode_time(barrier.horizon), "at": time.time(),
    }))
    return out


class BufferedBarrierProcessor(BlobProcessor):
    """The baseline's barrier, one group per shard, driven by Spark's watermark.

    Its items come from the baseline's buffers, which release below the
    watermark, so the barrier releases below it too, with a timer at its
    earliest item so that it also flushes in batches without input.
    """

    def __init__(self, topology):
        self.topology = topology

    def init(self, handle):
        super().init(handle)
        self.handle = handle

    def handleInputRows(self, key, rows, timerValues):
        state = self.load({"barrier": None, "timer": None})
        batch = concat(rows)
        passing = batch[batch["kind"].isin([LATE, METRIC])]
        if len(passing):
            yield passing[COLUMNS]
        barrier = _load_barrier(state)
        for row in batch[batch["kind"] == ITEM].itertuples(index=False):
            barrier.push(self.topology.plan.sinks[row.target], row_item(row))
        yield from self._flush(key[0], state, barrier, timerValues)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        state = self.load({"barrier": None, "timer": None})
        state["timer"] = None
        yield from self._flush(key[0], state, _load_barrier(state), timerValues)

    def _flush(self, shard, state, barrier, timerValues):
        out = _release(shard, barrier, timerValues.getCurrentWatermarkInMs() - EVENT_TIME_SHIFT_MS)
        earliest = barrier.earliest()
        timer = None if earliest is None else earliest + EVENT_TIME_SHIFT_MS
        if timer is not None and timer != state["timer"]:
            if state["timer"] is not None:
                self.handle.deleteTimer(state["timer"])
            self.handle.registerTimer(timer)
            state["timer"] = timer
        state["barrier"] = barrier.dump()
        self.save(state)
        yield frame(out)
