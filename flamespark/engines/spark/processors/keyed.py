"""Running the core's keyed operators on a micro-batch's rows, and releasing from a barrier."""
import time

import msgpack

from barrier.barrier import Barrier
from flamespark.engines.spark.processors.blob import metric_row
from flamespark.engines.spark.rows import ITEM, OUT, PUNCT, encode_time, item_row
from operators.bucket import Bucket


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


def apply_in_meta_order(topology, items, barrier=None) -> list:
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


def split_rows(batch, targets):
    """Rows for `targets`, and the rows that only pass through (neither those nor punctuations)."""
    for_me = (batch["kind"] == ITEM) & batch["target"].isin(list(targets))
    return batch[for_me], batch[~for_me & (batch["kind"] != PUNCT)]


def load_barrier(state) -> Barrier:
    return Barrier.load(state["barrier"]) if state["barrier"] else Barrier()


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
