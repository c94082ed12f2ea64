"""The keyed Spark operators: ingest, stages of boundary operators, and the barrier.

Each is a `StatefulProcessor` for `transformWithStateInPandas` that keeps one
msgpack blob per grouping key (a source, or a shard) in a ValueState, and
runs the core's operator objects on the rows of one micro-batch. Punctuation
rows travel with the data: every stage receives them on every shard, applies
them after the batch's items, and shard 0 passes them on to every shard of
the next stage, so the barrier releases in the same micro-batch.
"""
import math
import time

import msgpack
from pyspark.sql.streaming import StatefulProcessor

from barrier.barrier import Barrier
from barrier.late import LatePolicy
from flamespark.codec import pack, unpack
from flamespark.engines.spark.rows import (
    END,
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
)
from flamespark.ingest import EventMinter
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


class IngestProcessor(BlobProcessor):
    """Stage 0, one group per source: late policy, meta, stateless operators, punctuations."""

    def __init__(self, topology, reorder_latency: int, late: str):
        self.topology = topology
        self.reorder_latency = reorder_latency
        self.late = late

    def handleInputRows(self, key, rows, timerValues):
        source = key[0]
        state = self.load({"max_ts": None, "horizon": -math.inf, "ended": False, "seen": [], "events": 0})
        batch = concat(rows).sort_values("seq", kind="stable")
        late = LatePolicy(self.late)
        minter = EventMinter()
        minter.load(state["seen"])
        out = []
        for row in batch.itertuples(index=False):
            if row.kind == END:
                state["ended"] = True
                continue
            payload = unpack(row.payload)
            ts = late.admit(source, row.ts, payload, state["horizon"])
            if ts is None:
                continue
            state["events"] += 1
            state["max_ts"] = ts if state["max_ts"] is None else max(state["max_ts"], ts)
            out.extend(self.topology.rows_after(source, minter.mint(source, ts, payload, row.arrival)))
        if state["ended"]:
            horizon = math.inf
        elif state["max_ts"] is None:
            horizon = -math.inf
        else:
            horizon = state["max_ts"] - self.reorder_latency - 1
        state["horizon"] = max(state["horizon"], horizon)
        minter.forget(state["horizon"])
        state["seen"] = minter.dump()
        out.extend(_punctuation_rows({source: state["horizon"]}, self.topology.shards))
        out.extend(control_row(LATE, source, payload=pack(dead)) for dead in late.dead_letters)
        state["late_dropped"] = state.get("late_dropped", 0) + len(late.dead_letters)
        state["late_adjusted"] = state.get("late_adjusted", 0) + late.adjusted
        self.save(state)
        metrics = {k: state[k] for k in ("events", "late_dropped", "late_adjusted")}
        out.append(_metric_row("ingest", 0, dict(metrics, source=source)))
        yield frame(out)


class StageProcessor(BlobProcessor):
    """One stage of boundary operators, one group per shard; buckets kept per operator and key."""

    def __init__(self, topology, stage: int):
        self.topology = topology
        self.stage = stage

    def init(self, handle):
        super().init(handle)
        self.operators = self.topology.boundary_operators(self.stage)

    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        topology = self.topology
        state = self.load({"horizons": {}, "buckets": {}})
        horizons = Horizons(topology.sources, state["horizons"])
        store = state["buckets"]
        batch = concat(rows)
        for_me = (batch["kind"] == ITEM) & batch["target"].isin(list(self.operators))
        passing = batch[~for_me & (batch["kind"] != PUNCT)]
        if len(passing):
            yield passing
        mine = batch[for_me]
        touched = {name: set() for name in self.operators}
        for name, operator in self.operators.items():
            operator.buckets = {}
            operator.horizon = horizons.time
            stored = store.setdefault(name, {})
            operator.load_bucket = self._loader(operator, stored, touched[name])
        items = sorted(((row.target, row_item(row)) for row in mine.itertuples(index=False)),
                       key=lambda pair: pair[1].identity)
        out = []
        for target, item in items:
            operator = self.operators[target]
            for result in operator.process(item):
                out.extend(topology.rows_after(target, result))
        advanced = horizons.update(batch[batch["kind"] == PUNCT].itertuples(index=False))
        for operator in self.operators.values():
            operator.punctuate(horizons.time)
        for name, operator in self.operators.items():
            stored = store[name]
            for key_data in touched[name] | set(operator.buckets):
                bucket = operator.buckets.get(key_data)
                if bucket:
                    stored[key_data] = msgpack.packb(bucket.dump())
                else:
                    stored.pop(key_data, None)
        state["horizons"] = horizons.dump()
        self.save(state)
        if shard == 0 and advanced:
            out.extend(_punctuation_rows(advanced, topology.shards))
        if out:
            yield frame(out)

    @staticmethod
    def _loader(operator, stored, touched):
        def load(key_data):
            touched.add(key_data)
            blob = stored.get(key_data)
            return None if blob is None else Bucket.load(operator.window, msgpack.unpackb(blob))

        return load


class BarrierProcessor(BlobProcessor):
    """The barrier, one group per shard: releases in the batch whose punctuation covers an item."""

    def __init__(self, topology):
        self.topology = topology

    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state = self.load({"horizons": {}, "barrier": None})
        horizons = Horizons(self.topology.sources, state["horizons"])
        barrier = Barrier.load(state["barrier"]) if state["barrier"] else Barrier()
        batch = concat(rows)
        passing = batch[batch["kind"].isin([LATE, METRIC])]
        if len(passing):
            yield passing
        for row in batch[batch["kind"] == ITEM].itertuples(index=False):
            barrier.push(row.target, row_item(row))
        held = len(barrier)
        horizons.update(batch[batch["kind"] == PUNCT].itertuples(index=False))
        released = barrier.punctuate(horizons.time)
        state["horizons"] = horizons.dump()
        state["barrier"] = barrier.dump()
        self.save(state)
        out = [item_row(OUT, sink, shard, item) for sink, item in released]
        out.append(_metric_row("barrier", shard, {
            "arrived": barrier.arrived, "tombstones": barrier.tombstones, "released": barrier.released,
            "held": held, "horizon": encode_time(horizons.time), "at": time.time(),
        }))
        yield frame(out)
