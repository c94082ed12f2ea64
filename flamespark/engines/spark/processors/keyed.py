"""The core's keyed operators on a micro-batch's rows, over their states (`buckets`); the barrier's release; what
both modes' stage processors share."""
import time

from barrier.barrier import Barrier
from flamespark.engines.spark.processors.blob import BlobProcessor, metric_row
from flamespark.engines.spark.rows import BEHIND, CHANGE, ITEMS, OUT, PUNCT, Outbox, encode_time
from flamespark.runtime.changes import BatchChanges


class KeyedStage(BlobProcessor):
    """A stage of keyed operators of `topology`, one group per shard, in either mode: `last` if it is the barrier's
    last stage (which also holds what comes from the sources through stateless operators only), `holds_barrier`
    if it holds a part of the barrier (`Topology.barrier_stages`); with `changes`, such a part also emits the
    changelog's rows."""

    def __init__(self, topology, stage: int, changes: bool = False):
        self.topology = topology
        self.stage = stage
        self.last = stage == topology.barrier_stage
        self.holds_barrier = stage in topology.barrier_stages
        self.changes = changes
        self.stage_name = topology.stage_name(stage)


def apply_in_meta_order(topology, stage: int, items, stage_state, outbox, barrier=None,
                        changes: BatchChanges | None = None):
    """Run `(operator, item, cause)` triples of stage `stage` in meta order on their states in `stage_state`
    (a StageState); what their results reach goes into `outbox`, with the item's `cause`.

    Results for a keyed operator of the stage itself (`Topology.stays`) are
    run in turn, in meta order, once the items before them are done. With a
    `barrier` (the stage's part of it), results that reach a sink go into it,
    and into `changes` if given.
    """
    while items:
        items = _apply(topology, stage, items, stage_state, outbox, barrier, changes)


def _apply(topology, stage, items, stage_state, outbox, barrier, changes) -> list:
    """`apply_in_meta_order` of `items`; returns the triples their results make for the stage itself."""
    items = sorted(items, key=_item_identity)
    keys = stage_state.read(items)
    staying = []
    for index, ((operator, item, cause), key_data) in enumerate(zip(items, keys)):
        state = stage_state.states[operator.name]
        results = operator.add(item, state)
        # A tombstone's replacement sorts right after it, with its cause: the work the tombstone left waits for it.
        # What the next item's event caused waits for nothing: a window's results name the event that changed it.
        if (index + 1 == len(items) or items[index + 1][0] is not operator or keys[index + 1] != key_data
                or items[index + 1][2] != cause):
            waited = operator.flush(state)
            if waited:
                results = [*results, *waited]
        item_shard = None  # the item's shard value, once a result of it stays in the stage
        for result in results:
            for target, reached in topology.route(operator.name, result):
                taker = topology.stays(stage, target)
                if taker is not None:
                    if item_shard is None:
                        item_shard = operator.shard_of(item)
                    topology.check_shard(operator, item, item_shard, taker, reached)
                    staying.append((taker, reached, cause))
                elif barrier is not None and target in topology.plan.sinks:
                    push(barrier, changes, topology.plan.sinks[target], reached, cause)
                else:
                    topology.put(outbox, target, reached, cause)
    return staying


def _item_identity(entry):
    return entry[1].identity


def push(barrier: Barrier, changes: BatchChanges | None, sink: str, item, cause):
    """Hand a sink's item or tombstone to the barrier, and to the changelog's step if one is kept."""
    barrier.push(sink, item)
    if changes is not None:
        changes.add(sink, item, cause)


def add_changes(outbox, shard: int, changes: BatchChanges | None):
    """Put the changes of the batch's step into `outbox` (none without a changelog); a retraction is a tombstone."""
    if changes is not None:
        for sink, item, cause in changes.take():
            outbox.add(CHANGE, 0, shard, sink, item, cause if item.tombstone else None)


def split_rows(batch, stage: int):
    """The item bundles bound for `stage`, and the rows that only pass through (neither those nor punctuations,
    nor notes that the batch is behind, which a stage passes on itself)."""
    for_me = (batch["kind"] == ITEMS) & (batch["seq"] == stage)
    return batch[for_me], batch[~for_me & ~batch["kind"].isin((PUNCT, BEHIND))]


def release(stage: int, shard: int, barrier: Barrier, time_now, stored: int = 0, level: int = 1) -> list:
    """Rows for what `barrier`, the part of stage `stage`, shard `shard` and `level`, releases at `time_now` (one
    bundle), and its metric row; `stored` items are held out of it."""
    held = len(barrier) + stored
    outbox = Outbox()
    for item in barrier.punctuate(time_now):
        outbox.add(OUT, 0, shard, item.sink, item)
    out = outbox.rows()
    out.append(metric_row("barrier", shard, {
        "stage": stage, "level": level, "arrived": barrier.arrived, "tombstones": barrier.tombstones, "released": barrier.released,
        "held": held, "horizon": encode_time(barrier.horizon), "at": time.time(),
    }))
    return out
