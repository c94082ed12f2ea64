"""What both modes' stage processors share: the stage's keyed operators run on one shard's batches of a
micro-batch (`StageRun`), and the release of the stage's part of the barrier."""
import time

from barrier.barrier import Barrier
from flamespark.core.batch import Batch
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


class StageRun:
    """The keyed operators of stage `stage` on one shard for one micro-batch, as a local pipeline runs its
    operators: each takes, in topological order, all that reached it as one batch, so that it reads and writes
    each key it touches once and leaves no work waiting past the batch.

    What their results reach goes on: to a keyed operator of the stage
    itself (`Topology.stays`), which takes it in its turn; to the stage's
    part of the barrier (`barrier`) and the changelog's batch (`changes`),
    for a sink; else into `outbox`, for a later stage. `states` is the
    stage's `buckets.StageState`.
    """

    def __init__(self, topology, stage: int, states, outbox, barrier=None, changes: BatchChanges | None = None):
        self.topology = topology
        self.stage = stage
        self.states = states
        self.outbox = outbox
        self.barrier = barrier
        self.changes = changes
        self._waiting = {name: [] for name in states.operators}

    def take(self, target: str, batch, keys: list | None = None):
        """Let `batch` (with its rows' key encodings, if known) wait for the stage's operator `target`."""
        self._waiting[target].append((batch, keys))

    def run(self):
        """Every operator, in topological order, takes what waits for it."""
        for name in self._waiting:
            self._take(name)

    def punctuate(self, time_of):
        """Hand each operator, in topological order, its punctuation, `time_of(operator name)`, once it took what
        waits for it; what it releases goes on."""
        for name, operator in self.states.operators.items():
            self._take(name)
            released = operator.punctuate(time_of(name), self.states.states[name])
            if released:
                self._send(operator, released)

    def _take(self, name: str):
        waiting = self._waiting[name]
        if not waiting:
            return
        operator = self.states.operators[name]
        batch = Batch.concat([batch for batch, _ in waiting])
        if all(keys is not None for _, keys in waiting):
            keys = waiting[0][1] if len(waiting) == 1 else [key for _, part in waiting for key in part]
        else:
            keys = operator.keys_of(batch)
        waiting.clear()
        self.states.read(name, keys)
        made = operator.take(batch, self.states.states[name], keys)
        if made:
            self._send(operator, made, batch)

    def _send(self, operator, batch, made_from=None):
        """Send on what `operator` made, `batch` (from `made_from`, its input, if it took one)."""
        topology = self.topology
        for target, reached in topology.plan.routed(operator.name, batch):
            taker = topology.stays(self.stage, target)
            if taker is not None:  # in the baseline too: made in meta order in this stage, it needs no buffer
                topology.check_shard(operator, made_from, taker, reached)
                self.take(taker.name, reached)
            elif self.barrier is not None and target in topology.plan.sinks:
                push(self.barrier, self.changes, topology.plan.sinks[target], reached)
            else:
                topology.put(self.outbox, target, reached)


def push(barrier: Barrier, changes: BatchChanges | None, sink: str, batch):
    """Hand a sink's batch to the barrier, and to the changelog's batch if one is kept."""
    barrier.push(sink, batch)
    if changes is not None:
        for item, cause in zip(batch.items(), batch.row_causes()):
            changes.add(sink, item, cause)


def add_changes(outbox, shard: int, changes: BatchChanges | None):
    """Put the batch's changes into `outbox` (none without a changelog); a retraction is a tombstone,
    and only a retraction names its cause."""
    if changes is None:
        return
    taken = changes.take()
    for sink in dict.fromkeys(sink for sink, _, _ in taken):
        items = [item for target, item, _ in taken if target == sink]
        causes = [cause if item.tombstone else None for target, item, cause in taken if target == sink]
        outbox.add(CHANGE, 0, shard, sink, Batch.of_items(items, causes))


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
    released = barrier.punctuate(time_now)
    for sink in dict.fromkeys(row.sink for row in released):
        rows = [row for row in released if row.sink == sink]
        outbox.add(OUT, 0, shard, sink, Batch([row.meta for row in rows], [None] * len(rows),
                                              [row.data for row in rows], [1] * len(rows),
                                              [row.arrival for row in rows]))
    out = outbox.rows()
    out.append(metric_row("barrier", shard, {
        "stage": stage, "level": level, "arrived": barrier.arrived, "tombstones": barrier.tombstones,
        "released": barrier.released, "held": held, "horizon": encode_time(barrier.horizon), "at": time.time(),
    }))
    return out
