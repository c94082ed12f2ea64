"""The core's keyed operators on a micro-batch's rows, over their buckets in the shard's blob; the barrier's release."""
import time

import msgpack

from barrier.barrier import Barrier, BarrierState
from flamespark.core.errors import InternalError
from flamespark.engines.spark.processors.blob import metric_row
from flamespark.engines.spark.rows import CHANGE, ITEM, OUT, PUNCT, encode_time, item_row
from flamespark.runtime.changes import StepChanges
from operators.store import KeyedState


class BlobBuckets(KeyedState):
    """One keyed operator's buckets on one shard for one batch, as msgpack blobs by key in the shard's state.

    A bucket is decoded when first asked for; `save` encodes back only the
    buckets put since. `blobs` is the operator's part of the shard's state.
    Every bucket held was touched in this batch and is written back anyway,
    so each punctuation sweeps them all.
    """

    def __init__(self, blobs: dict, load):
        self._blobs = blobs
        self._load = load
        self._held = {}
        self._changed = set()

    def get(self, key):
        bucket = self._held.get(key)
        if bucket is None:
            blob = self._blobs.get(key)
            if blob is not None:
                bucket = self._held[key] = self._load(msgpack.unpackb(blob))
        return bucket

    def put(self, key, bucket):
        self._held[key] = bucket
        self._changed.add(key)

    def delete(self, key):
        self._held.pop(key, None)
        self._blobs.pop(key, None)
        self._changed.discard(key)

    def held(self):
        return list(self._held)

    def sweep_due(self):
        return True

    def save(self):
        """Write the changed buckets back into `blobs`."""
        for key in self._changed:
            self._blobs[key] = msgpack.packb(self._held[key].dump())
        self._changed.clear()


class StageState:
    """The states of one stage's keyed operators on one shard, over `stored` (operator -> key -> bucket blob)."""

    def __init__(self, operators: dict, stored: dict):
        self.operators = operators
        self.stored = stored
        self.states = {
            name: BlobBuckets(stored.setdefault(name, {}), operator.load_bucket)
            for name, operator in operators.items()
        }

    def punctuate(self, time):
        for name, operator in self.operators.items():
            operator.punctuate(time, self.states[name])

    def save(self) -> dict:
        for state in self.states.values():
            state.save()
        return self.stored


def apply_in_meta_order(topology, items, stage: StageState, barrier=None, changes: StepChanges | None = None) -> list:
    """Run `(operator, item, cause)` triples in meta order on their states in `stage`; rows for what their
    results reach, which carry the item's `cause`.

    With a `barrier`, results that reach a sink go into it instead of becoming
    rows, and into `changes` if given.
    """
    out = []
    for operator, item, cause in sorted(items, key=_item_identity):
        for result in operator.process(item, stage.states[operator.name]):
            if barrier is None:
                out.extend(topology.rows_after(operator.name, result, cause))
                continue
            for target, reached in topology.route(operator.name, result):
                if target not in topology.plan.sinks:
                    raise InternalError(f"internal error: the last stage feeds keyed operator {target!r}")
                push(barrier, changes, topology.plan.sinks[target], reached, cause)
    return out


def _item_identity(entry):
    return entry[1].identity


def push(barrier: Barrier, changes: StepChanges | None, sink: str, item, cause):
    """Hand a sink's item or tombstone to the barrier, and to the changelog's step if one is kept."""
    barrier.push(sink, item)
    if changes is not None:
        changes.add(sink, item, cause)


def change_rows(shard: int, changes: StepChanges | None) -> list:
    """Rows for the changes of the batch's step (none without a changelog); a retraction is a tombstone row."""
    if changes is None:
        return []
    return [item_row(CHANGE, change.sink, shard, change.item, change.cause) for change in changes.take()]


def split_rows(batch, targets):
    """Rows for `targets`, and the rows that only pass through (neither those nor punctuations)."""
    for_me = (batch["kind"] == ITEM) & batch["target"].isin(list(targets))
    return batch[for_me], batch[~for_me & (batch["kind"] != PUNCT)]


def load_barrier(state) -> Barrier:
    """The barrier over the state saved in `state["barrier"]` (`barrier.state.dump()`), or a new one."""
    return Barrier(BarrierState.load(state["barrier"]) if state["barrier"] else None)


def release(shard: int, barrier: Barrier, time_now) -> list:
    """Rows for what `barrier` releases at `time_now`, and its metric row."""
    held = len(barrier)
    released = barrier.punctuate(time_now)
    out = [item_row(OUT, sink, shard, item) for sink, item in released]
    out.append(metric_row("barrier", shard, {
        "arrived": barrier.arrived, "tombstones": barrier.tombstones, "released": barrier.released,
        "held": held, "horizon": encode_time(barrier.horizon), "at": time.time(),
    }))
    return out
