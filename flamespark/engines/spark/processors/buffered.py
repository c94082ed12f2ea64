"""The buffered baseline's stages and barrier, driven by Spark's watermark through event-time timers."""
from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta
from flamespark.engines.spark.processors.blob import BUFFERED_PREFIX, HELD_PREFIX, BlobProcessor, handler
from flamespark.engines.spark.processors.buckets import StageState, bucket_map
from flamespark.engines.spark.processors.held import StoredBarrier, TimedRecords, chunk_map
from flamespark.engines.spark.processors.keyed import add_changes, apply_in_meta_order, push, split_rows
from flamespark.engines.spark.rows import (
    COLUMNS,
    EVENT_TIME_SHIFT_MS,
    ITEMS,
    LATE,
    METRIC,
    PUNCT,
    Outbox,
    bundle_items,
    bundle_records,
    concat,
    control_row,
    frame,
    with_event_time,
)
from flamespark.runtime.changes import BatchChanges
from operators import BufferSort

LAYOUT = "entries [target, ts, meta as an array, data, arrival]"


def keep_one_timer(handle, state: dict, earliest):
    """Keep one event-time timer, at `earliest` (none if None); `state["timer"]` is the one registered."""
    timer = None if earliest is None else earliest + EVENT_TIME_SHIFT_MS
    if timer == state["timer"]:
        return
    if state["timer"] is not None:
        handle.deleteTimer(state["timer"])
    if timer is not None:
        handle.registerTimer(timer)
    state["timer"] = timer


class BufferedStageProcessor(BlobProcessor):
    """The baseline's stage, as a Spark user writes it: buffer per shard, release on event-time timers.

    Items wait in the state until Spark's watermark (the previous batch's
    maximum event time minus the delay) reaches them; a timer at the earliest
    buffered time fires then, and the released items go to the keyed operator
    in meta order. Punctuation rows only pass through, to the barrier.
    Buffered entries `[target, ts, meta, data, arrival]` wait in chunks
    (`held.TimedRecords`), buckets in map states (`buckets`).
    """

    def __init__(self, topology, stage: int):
        self.topology = topology
        self.stage = stage
        self.stage_name = topology.stage_name(stage)

    def init(self, handle):
        super().init(handle)
        self.handle = handle
        self.buffers = {
            name: self.topology.keyed_behind(name)
            for name, op in self.topology.boundary_operators(self.stage).items()
            if isinstance(op, BufferSort)
        }
        self.keyed = {op.name: op for op in self.buffers.values()}
        self.buckets = bucket_map(self.store)
        self.chunks = chunk_map(self.store, BUFFERED_PREFIX)

    def output_frame(self, rows: list):
        return with_event_time(frame(rows))

    @handler
    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state, buffered = self._load()
        batch = concat(rows)
        mine, passing = split_rows(batch, self.stage)
        if len(passing):
            yield with_event_time(passing)
        buffered.add([[target, meta.ts, meta, data, arrival]
                      for row in mine.itertuples(index=False)
                      for target, meta, data, _, arrival, _ in bundle_records(row.payload)])
        self._save(state, buffered)
        punctuations = batch[batch["kind"] == PUNCT]
        if shard == 0 and len(punctuations):
            out = [control_row(PUNCT, row.target, s, row.ts, seq=row.seq) for row in punctuations.itertuples(index=False)
                   for s in self.topology.shard_keys]
            yield self.output_frame(out)

    @handler
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        final = watermark - EVENT_TIME_SHIFT_MS
        state, buffered = self._load()
        state["timer"] = None
        taken = buffered.take(final)
        ready = [entry for entry in taken if entry[1] <= final]
        buffered.add([entry for entry in taken if entry[1] > final])
        stage = StageState(self.keyed, self.buckets)
        items = [(self.buffers[target], Item(Meta.load(meta), unpack(data), data, False, arrival), None)
                 for target, _, meta, data, arrival in ready]
        outbox = Outbox()
        apply_in_meta_order(self.topology, self.stage, items, stage, outbox)
        stage.punctuate(final)
        stage.save()
        self._save(state, buffered)
        out = outbox.rows()
        if out:
            yield with_event_time(frame(out), released_at=watermark)

    def _load(self):
        state = self.load({"buffered": None, "timer": None})
        return state, TimedRecords(self.chunks, state["buffered"], _entry_time)

    def _save(self, state, buffered):
        """Keep one timer, at the earliest buffered event time, and save."""
        keep_one_timer(self.handle, state, buffered.earliest())
        state["buffered"] = buffered.index
        self.save(state)


def _entry_time(entry) -> int:
    return entry[1]


class BufferedBarrierProcessor(BlobProcessor):
    """The baseline's barrier, one group per shard, driven by Spark's watermark.

    Its items come from the baseline's buffers, which release below the
    watermark, so the barrier releases below it too, with a timer at its
    earliest item so that it also flushes in batches without input. With
    `changes`, every item it takes is a `+` of the changelog.
    """

    def __init__(self, topology, changes: bool = False):
        self.topology = topology
        self.changes = changes
        self.stage_name = topology.stage_name(topology.stages + 1)

    def init(self, handle):
        super().init(handle)
        self.handle = handle
        self.held = chunk_map(self.store, HELD_PREFIX)

    @handler
    def handleInputRows(self, key, rows, timerValues):
        state = self.load({"barrier": None, "timer": None})
        batch = concat(rows)
        passing = batch[batch["kind"].isin([LATE, METRIC])]
        if len(passing):
            yield passing[COLUMNS]
        stored = StoredBarrier(self.held, state["barrier"])
        changes = BatchChanges() if self.changes else None
        bundles = batch[batch["kind"] == ITEMS].itertuples(index=False)
        for target, item, _ in bundle_items(bundles, decode=lambda target: False):
            push(stored.barrier, changes, self.topology.plan.sinks[target], item, None)
        outbox = Outbox()
        add_changes(outbox, key[0], changes)
        added = outbox.rows()
        if added:
            yield frame(added)
        yield from self._flush(key[0], state, stored, timerValues)

    @handler
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        state = self.load({"barrier": None, "timer": None})
        state["timer"] = None
        yield from self._flush(key[0], state, StoredBarrier(self.held, state["barrier"]), timerValues)

    def _flush(self, shard, state, stored, timerValues):
        out = stored.release(shard, timerValues.getCurrentWatermarkInMs() - EVENT_TIME_SHIFT_MS)
        state["barrier"] = stored.save()
        keep_one_timer(self.handle, state, stored.earliest())
        self.save(state)
        yield frame(out)
