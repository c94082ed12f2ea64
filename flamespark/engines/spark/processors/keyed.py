"""The core's keyed operators on a micro-batch's rows, over their states (`buckets`); the barrier's release."""
import time

from barrier.barrier import Barrier
from flamespark.core.errors import InternalError
from flamespark.engines.spark.processors.blob import metric_row
from flamespark.engines.spark.rows import ITEM, OUT, PUNCT, encode_time, item_row


def apply_in_meta_order(topology, items, stage, barrier=None) -> list:
    """Run `(operator, item)` pairs in meta order on their states in `stage`; rows for what their results reach.

    With a `barrier`, results that reach a sink go into it instead of becoming rows.
    """
    out = []
    for operator, item in sorted(items, key=lambda pair: pair[1].identity):
        for result in operator.process(item, stage.states[operator.name]):
            if barrier is None:
                out.extend(topology.rows_after(operator.name, result))
                continue
            for target, reached in topology.route(operator.name, result):
                if target not in topology.plan.sinks:
                    raise InternalError(f"internal error: the last stage feeds keyed operator {target!r}")
                barrier.push(topology.plan.sinks[target], reached)
    return out


def split_rows(batch, targets):
    """Rows for `targets`, and the rows that only pass through (neither those nor punctuations)."""
    for_me = (batch["kind"] == ITEM) & batch["target"].isin(list(targets))
    return batch[for_me], batch[~for_me & (batch["kind"] != PUNCT)]


def release(shard: int, barrier: Barrier, time_now, stored: int = 0) -> list:
    """Rows for what `barrier` releases at `time_now`, and its metric row; `stored` items are held out of it."""
    held = len(barrier) + stored
    released = barrier.punctuate(time_now)
    out = [item_row(OUT, sink, shard, item) for sink, item in released]
    out.append(metric_row("barrier", shard, {
        "arrived": barrier.arrived, "tombstones": barrier.tombstones, "released": barrier.released,
        "held": held, "horizon": encode_time(barrier.horizon), "at": time.time(),
    }))
    return out
