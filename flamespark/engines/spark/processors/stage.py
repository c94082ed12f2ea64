"""The optimistic mode's keyed stages, driven by punctuation rows, each holding its part of the barrier."""
import math

from flamespark.engines.spark.processors.blob import (
    HELD_BACK_PREFIX,
    HELD_PREFIX,
    behind_rows,
    handler,
    metric_row,
    punctuation_rows,
)
from flamespark.engines.spark.processors.buckets import StageState
from flamespark.engines.spark.processors.held import StoredBarriers, chunk_map, level_chunks
from flamespark.engines.spark.processors.held_back import HeldBack
from flamespark.engines.spark.processors.stage_run import KeyedStage, StageRun, add_changes, push, split_rows
from flamespark.engines.spark.rows import (
    BEHIND,
    COLUMNS,
    PUNCT,
    Outbox,
    bundle_batches,
    concat,
    decode_time,
    encode_time,
    frame,
)
from flamespark.runtime.changes import BatchChanges


class Horizons:
    """The latest punctuation of each source's ingest partitions.

    A source's punctuation is the minimum over its partitions (as Flink
    combines input channels); the stage's punctuation is the minimum over
    sources.
    """

    def __init__(self, partitions: dict, known: dict):
        self.times = {
            source: [decode_time(time) for time in known.get(source, [-math.inf] * count)]
            for source, count in partitions.items()
        }

    def update(self, rows) -> dict:
        """Apply punctuation rows; returns `{(source, partition): time}` of the partitions whose time advanced."""
        advanced = {}
        for row in rows:
            time = decode_time(row.ts)
            times = self.times[row.target]
            if time > times[row.seq]:
                times[row.seq] = advanced[(row.target, row.seq)] = time
        return advanced

    @property
    def time(self):
        return min((min(times) for times in self.times.values()), default=math.inf)

    def dump(self) -> dict:
        return {source: [encode_time(time) for time in times] for source, times in self.times.items()}


class StageProcessor(KeyedStage):
    """One stage of keyed operators, one group per shard, driven by punctuation rows.

    A stage whose operators make sink items holds them in its part of the
    barrier (`Topology.barrier_stages`), as the last stage holds the items
    that come from the sources: every sink item and its tombstones come from
    one key of one operator, or carry one meta, so they meet in one stage and
    shard, and the barrier needs no shuffle of its own. Every part releases
    at the stage's punctuation, which is the same in every stage of a batch;
    with several reorder latencies, each level's operators and part of the
    barrier take it shifted to their level (`spark.levels`).
    With `changes`, a stage holding a part also emits the batch's changelog
    rows of its items (a batch is one change). Every stage but the last passes
    the punctuations on.

    A batch that is behind its input (it carries `BEHIND` rows) applies only
    the items its punctuation has made final and holds the others back
    (`held_back.HeldBack`); one that is not applies everything on arrival,
    and what was held back a part at a time. Every stage but the last passes
    the note on.

    The shard's value holds only what is small (horizons, the barrier's
    counters and index, the index of what is held back); buckets and held
    items are in map states, read and written as far as the batch touches
    them.
    """

    def init(self, handle):
        super().init(handle)
        self.operators = self.topology.boundary_operators(self.stage)
        self.held_back = chunk_map(self.store, HELD_BACK_PREFIX)
        self.held = [level_chunks(self.store, HELD_PREFIX, level) for level in self.topology.levels.levels]

    @handler
    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        state = self.load({"horizons": {}, "barrier": None, "held_back": None, "states": None})
        horizons = Horizons(self.topology.partitions, state["horizons"])
        batch = concat(rows)
        mine, passing = split_rows(batch, self.stage)
        if len(passing):
            yield passing[COLUMNS]
        advanced = horizons.update(batch[batch["kind"] == PUNCT].itertuples(index=False))
        behind = bool((batch["kind"] == BEHIND).any())
        levels = self.topology.levels
        stored = StoredBarriers(self.held, state["barrier"], levels) if self.holds_barrier else None
        barrier = stored.pusher if self.holds_barrier else None
        changes = BatchChanges() if self.holds_barrier and self.changes else None
        outbox = Outbox()
        stage = StageRun(self.topology, self.stage, StageState(self.operators, self.store, state["states"]), outbox,
                         barrier, changes)
        # Payloads are decoded only for the rows applied now (`HeldBack.sort_out`).
        arrived = bundle_batches(mine.itertuples(index=False))
        for target in [target for target in arrived if target not in self.operators]:
            batch, _ = arrived.pop(target)  # the barrier holds it until its punctuation in any case
            push(barrier, changes, self.topology.plan.sinks[target], batch)
        held_back = HeldBack(self.held_back, state["held_back"])
        times = levels.times(horizons.time)
        # Final for the first level, whose punctuation is the highest: the later levels take them as they come.
        for target, (batch, keys) in held_back.sort_out(arrived, behind, times[0]).items():
            stage.take(target, batch, keys)
        stage.run()
        stage.punctuate(lambda name: times[levels.level_of(name) - 1])
        add_changes(outbox, shard, changes)
        out = outbox.rows()
        if behind or held_back.resumed or len(held_back):
            out.append(metric_row("held_back", shard, {
                "stage": self.stage, "behind": behind, "held_back": held_back.held_back, "waiting": len(held_back),
            }))
        state["held_back"] = held_back.index
        state["states"] = stage.states.save()
        state["horizons"] = horizons.dump()
        if self.holds_barrier:
            out.extend(stored.release(self.stage, shard, times))
            state["barrier"] = stored.save()
        if not self.last and shard == 0:
            if advanced:
                out.extend(punctuation_rows(advanced, self.topology.shard_keys))
            if behind:
                out.extend(behind_rows(self.topology.shard_keys))
        self.save(state)
        if out:
            yield frame(out)
