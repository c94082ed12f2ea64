"""The buffered baseline's stages, driven by Spark's watermark through event-time timers, each holding its part of
the barrier."""
from flamespark.core.codec import unpack
from flamespark.core.items import Meta
from flamespark.engines.spark.processors.blob import BUFFERED_PREFIX, HELD_PREFIX, handler
from flamespark.engines.spark.processors.buckets import StageState
from flamespark.engines.spark.processors.held import StoredBarriers, TimedRecords, earliest_due, level_chunks
from flamespark.engines.spark.processors.stage_run import KeyedStage, StageRun, add_changes, push, split_rows
from flamespark.engines.spark.rows import (
    COLUMNS,
    PUNCT,
    Outbox,
    bundle_batches,
    concat,
    control_row,
    event_time_shift,
    frame,
    with_event_time,
)
from operators.buffer_sort import rows_batch
from flamespark.runtime.changes import BatchChanges, Cause
from operators import BufferSort

LAYOUT = "entries [target, ts, meta as an array, data, arrival, weight, cause as an array or nil]"


def keep_one_timer(handle, state: dict, earliest, shift: int):
    """Keep one event-time timer, at `earliest` (none if None) in `ts` units, which is `shift` below Spark's (see
    rows.TIMED_SCHEMA); `state["timer"]` is the one registered."""
    timer = None if earliest is None else earliest + shift
    if timer == state["timer"]:
        return
    if state["timer"] is not None:
        handle.deleteTimer(state["timer"])
    if timer is not None:
        handle.registerTimer(timer)
    state["timer"] = timer


class BufferedStageProcessor(KeyedStage):
    """The baseline's stage, as a Spark user writes it: buffer per shard, release on event-time timers.

    Items wait in the state until Spark's watermark (the previous batch's
    maximum event time minus the delay) reaches them; a timer at the earliest
    buffered time fires then, and the released items go to the keyed operator
    in meta order. Buffered entries `[target, ts, meta, data, arrival, weight,
    cause]` wait in chunks (`held.TimedRecords`), the operators' state in map
    states (`buckets`); an entry keeps its row's cause (None without one), as
    the local engine's buffer does, for the changelog's `-` that the released
    row makes.

    A stage whose operators make sink items holds their part of the barrier
    (`Topology.barrier_stages`), and the last also the sink items that come
    from the sources; a part releases below the watermark when the shard's
    timer fires (set at the earliest of what is buffered and held), so what
    the stage's own timer makes leaves at once. With `changes`, every item
    a part takes is a `+` of the changelog. The stages before the last pass
    punctuation rows on, to every shard of the next stage.

    With several reorder latencies, Spark's watermark follows the last one,
    and each level's buffers and part of the barrier (kept apart) release at
    the watermark shifted to their level (`spark.levels`): a level's timer
    fires when the watermark reaches its earliest time shifted back.
    """

    def init(self, handle):
        super().init(handle)
        self.handle = handle
        self.buffers = {
            name: self.topology.keyed_behind(name)
            for name, op in self.topology.boundary_operators(self.stage).items()
            if isinstance(op, BufferSort)
        }
        self.keyed = {op.name: op for op in self.buffers.values()}
        self.levels = self.topology.levels
        self.shift = event_time_shift(self.levels.latencies)
        self.chunks = [level_chunks(self.store, BUFFERED_PREFIX, level) for level in self.levels.levels]
        self.held = [level_chunks(self.store, HELD_PREFIX, level) for level in self.levels.levels]

    def output_frame(self, rows: list):
        return self._timed(frame(rows))

    def _timed(self, rows, released_at=None):
        """The frame `rows` as this stage's output: the last stage's go to the sinks as they are, the others' on
        with their event time (see `rows.with_event_time`)."""
        return rows[COLUMNS] if self.last else with_event_time(rows, self.shift, released_at)

    @handler
    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state, buffered, stored = self._load()
        batch = concat(rows)
        mine, passing = split_rows(batch, self.stage)
        if len(passing):
            yield self._timed(passing)
        changes = self._changes()
        entries = [[] for _ in self.levels.levels]
        for target, (part, _) in bundle_batches(mine.itertuples(index=False)).items():
            if target not in self.buffers:
                push(stored.pusher, changes, self.topology.plan.sinks[target], part)
                continue
            # A window's values so far, with a changelog, reach a buffer in this mode too.
            entries[self.levels.level_of(target) - 1] += [
                [target, meta[0], list(meta), data, arrival, weight, cause]
                for meta, data, arrival, weight, cause
                in zip(part.metas, part.datas, part.arrivals, part.weights, part.row_causes())]
        for level_buffer, level_entries in zip(buffered, entries):
            level_buffer.add(level_entries)
        self._save(state, buffered, stored)
        outbox = Outbox()
        add_changes(outbox, shard, changes)
        out = outbox.rows()
        punctuations = batch[batch["kind"] == PUNCT]
        if not self.last and shard == 0 and len(punctuations):
            out += [control_row(PUNCT, row.target, s, row.ts, seq=row.seq)
                    for row in punctuations.itertuples(index=False) for s in self.topology.shard_keys]
        if out:
            yield self.output_frame(out)

    @handler
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        times = self.levels.times(watermark - self.shift)
        state, buffered, stored = self._load()
        state["timer"] = None
        ready = []
        for level_buffer, final in zip(buffered, times):
            taken = level_buffer.take(final)
            ready += [entry for entry in taken if entry[1] <= final]
            level_buffer.add([entry for entry in taken if entry[1] > final])
        outbox = Outbox()
        changes = self._changes()
        barrier = stored.pusher if self.holds_barrier else None
        stage = StageRun(self.topology, self.stage, StageState(self.keyed, self.store, state["states"]), outbox,
                         barrier, changes)
        for target in dict.fromkeys(entry[0] for entry in ready):
            rows = [(Meta.load(meta), unpack(data), data, weight, arrival, None if cause is None else Cause(*cause))
                    for name, _, meta, data, arrival, weight, cause in ready if name == target]
            stage.take(self.buffers[target].name, rows_batch(rows))
        stage.run()
        stage.punctuate(lambda name: times[self.levels.level_of(name) - 1])
        add_changes(outbox, key[0], changes)
        state["states"] = stage.states.save()
        out = outbox.rows()
        if self.holds_barrier:
            out += stored.release(self.stage, key[0], times)
        self._save(state, buffered, stored)
        if out:
            yield self._timed(frame(out), released_at=watermark)

    def _changes(self) -> BatchChanges | None:
        return BatchChanges() if self.holds_barrier and self.changes else None

    def _load(self):
        """The shard's value, its buffered entries per level, and its part of the barrier (if the stage holds
        one)."""
        state = self.load({"buffered": [None] * self.levels.count, "timer": None, "barrier": None, "states": None})
        stored = StoredBarriers(self.held, state["barrier"], self.levels) if self.holds_barrier else None
        buffered = [TimedRecords(chunks, index, _entry_time) for chunks, index in zip(self.chunks, state["buffered"])]
        return state, buffered, stored

    def _save(self, state, buffered, stored):
        """Keep one timer, at the earliest watermark at which a level has something buffered or held to
        release, or a window to close, and save."""
        due = [earliest_due(self.levels, [level_buffer.earliest() for level_buffer in buffered])]
        if stored is not None:
            due.append(stored.due())
        for name, ends in (state["states"] or {}).items():  # the ends (or due times) of a window's state
            if ends:
                due.append(self.levels.released_at(min(ends) - 1, self.levels.level_of(name)))
        keep_one_timer(self.handle, state, min((time for time in due if time is not None), default=None), self.shift)
        state["buffered"] = [level_buffer.index for level_buffer in buffered]
        if stored is not None:
            state["barrier"] = stored.save()
        self.save(state)


def _entry_time(entry) -> int:
    return entry[1]
