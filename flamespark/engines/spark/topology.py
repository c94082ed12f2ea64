"""How a physical plan splits into Spark stages, and which stage and shard each row of a batch goes to next."""
from zlib import crc32

import numpy as np

from flamespark.core.errors import UserFunctionError
from flamespark.engines.spark.levels import Levels
from flamespark.engines.spark.partitioning import spread_keys
from flamespark.engines.spark.rows import ITEMS
from flamespark.runtime.plan import build_plan
from operators import BufferSort

INGEST_STAGE = "0: ingest"


class Topology:
    """The plan's boundary operators assigned to stages, one keyed Spark operator each.

    Stage 0 ingests the sources (in their read tasks, or in an ingest
    operator); a boundary operator (keyed operator or the
    baseline's buffer) runs one stage after the latest stage its input comes
    from, and the keyed operator behind a buffer shares the buffer's stage;
    stateless operators run inline, in the stage that produced their input.
    A sharded keyed operator (one with a `shard` function) whose input all
    comes from sharded keyed operators of one stage joins that stage
    instead: the items they make for it stay in their shard (`stays`).
    The barrier is split by stage as well as by shard: every stage whose
    keyed operators make sink items holds their part of it
    (`barrier_stages`), and the last stage, `barrier_stage` (stage 1 if
    there are no keyed operators), also the part for items that come from
    the sources through stateless operators only. Batches travel
    in bundles (rows.Outbox) to a stage and a shard: the hash of an
    operator's shard value, or of a sink item's encoded payload, as one of
    `shard_keys`, which Spark's shuffle sends to distinct tasks.
    Stage 0 runs one group per ingest partition, keyed by `ingest_keys`:
    `partitions[source]` (1 if not given) of them take a source's events,
    spread by position.
    With several reorder latencies (`levels`), the plan is that of
    `levels.copied(graph)`: a copy of the graph per level, side by side in
    the same stages (see spark.levels); `origins[source]` names a source's
    copy per level. With `early` (a run that keeps a changelog), windows send
    their values so far.
    """

    def __init__(self, graph, mode: str, shards: int, partitions: dict | None = None, levels: Levels | None = None,
                 early: bool = False):
        self.levels = levels or Levels((0,), graph.sinks)
        self.plan = build_plan(self.levels.copied(graph), mode, early)
        self.mode = mode
        self.sources = graph.sources
        self.origins = {source: [self.levels.copy(source, level) for level in self.levels.levels]
                        for source in self.sources}
        self.shards = shards
        self.partitions = {source: (partitions or {}).get(source, 1) for source in self.sources}
        self.shard_keys = spread_keys(shards, shards)
        self.ingest_keys = spread_keys(max(self.partitions.values(), default=1), shards)
        self.stage_of = {origin: 0 for origins in self.origins.values() for origin in origins}
        parents = {}
        for name, targets in self.plan.downstream.items():
            for target in targets:
                parents.setdefault(target, []).append(name)
        for name, operator in self.plan.operators.items():
            latest = max(self.stage_of[parent] for parent in parents[name])
            if operator.boundary and not self._behind_buffer(parents[name]):
                self.stage_of[name] = latest if self._joins(name, latest, parents) else latest + 1
            else:
                self.stage_of[name] = latest
        self.stages = max(self.stage_of.values())
        self.barrier_stage = max(self.stages, 1)
        self.barrier_stages = {self.barrier_stage} | {
            self.stage_of[name] for name, operator in self.plan.operators.items()
            if operator.boundary and self._reaches_a_sink(name)
        }
        self.stage_of.update((sink, self.barrier_stage) for sink in self.plan.sinks)

    def _behind_buffer(self, parents) -> bool:
        return len(parents) == 1 and isinstance(self.plan.operators.get(parents[0]), BufferSort)

    def _joins(self, name: str, stage: int, parents: dict) -> bool:
        """Whether boundary operator `name` runs in `stage`, the latest its input comes from: it is sharded, and
        all its input comes from sharded keyed operators of that stage. Then, in the baseline too, it gets its
        input from one stage in meta order."""
        if self.keyed_behind(name).shard is None:
            return False
        return all(feeder in self.plan.operators and self.stage_of[feeder] == stage
                   and self.keyed_behind(feeder).shard is not None for feeder in self._feeders(name, parents))

    def _reaches_a_sink(self, name: str) -> bool:
        """Whether outputs of operator `name` reach a sink through stateless operators only."""
        for target in self.plan.downstream[name]:
            operator = self.plan.operators.get(target)
            if operator is None or (not operator.boundary and self._reaches_a_sink(target)):
                return True
        return False

    def _feeders(self, name: str, parents: dict) -> set:
        """The sources and boundary operators whose outputs reach `name` through stateless operators only."""
        found = set()
        for parent in parents[name]:
            operator = self.plan.operators.get(parent)
            if operator is None or operator.boundary:
                found.add(parent)
            else:
                found |= self._feeders(parent, parents)
        return found

    def boundary_operators(self, stage: int) -> dict:
        """The boundary operators that stage `stage` runs, by name."""
        return {
            name: op for name, op in self.plan.operators.items() if op.boundary and self.stage_of[name] == stage
        }

    def keyed_behind(self, name: str):
        """The keyed operator whose key shards rows for boundary operator `name`."""
        operator = self.plan.operators[name]
        if isinstance(operator, BufferSort):
            return self.plan.operators[self.plan.downstream[name][0]]
        return operator

    def send_event(self, outbox, source: str, level: int, batch):
        """Put into `outbox` everything the events of `batch`, of `source`, reach, in the copies of the levels
        from their first on-time `level` on (one copy, the graph itself, with one level)."""
        for origin in self.origins[source][level - 1:]:
            self.send(outbox, origin, batch)

    def send(self, outbox, origin: str, batch):
        """Put into `outbox` everything `batch` reaches from `origin` through stateless operators."""
        for target, reached in self.plan.routed(origin, batch):
            self.put(outbox, target, reached)

    def put(self, outbox, target: str, batch):
        """Put the rows of `batch`, bound for `target`, into `outbox`, each for the stage and shard that take it:
        a sink's by its encoded payload (an item and its tombstones meet), a keyed operator's by its shard
        value (the CRC-32 of its encoding, modulo the shards), with its key's encoding, which the stage that
        takes it then reads its state by."""
        stage = self.stage_of[target]
        if target in self.plan.sinks:
            self._spread(outbox, stage, target, batch, batch.datas)
            return
        keyed = self.keyed_behind(target)
        keys = keyed.keys_of(batch)
        placed = keys if keyed.shard is None else keyed.shard_values(batch)
        self._spread(outbox, stage, target, batch, placed, None if keyed is not self.plan.operators[target] else keys)

    def _spread(self, outbox, stage: int, target: str, batch, placed: list, keys: list | None = None):
        """Add each row of `batch` to the bundle of the shard its value of `placed` hashes to (with its key's
        encoding, if given), grouped by shard in numpy."""
        shards = np.fromiter(map(crc32, placed), dtype=np.int64, count=len(placed)) % self.shards
        first = shards[0]
        if (shards == first).all():
            outbox.add(ITEMS, stage, self.shard_keys[first], target, batch, keys)
            return
        order = np.argsort(shards, kind="stable")
        for rows in np.split(order, np.flatnonzero(np.diff(shards[order])) + 1):
            shard = shards[rows[0]]
            rows = rows.tolist()
            outbox.add(ITEMS, stage, self.shard_keys[shard], target, batch.selected(rows),
                       None if keys is None else [keys[row] for row in rows])

    def stays(self, stage: int, target: str):
        """The keyed operator that takes, in `stage` itself, rows that `stage` makes for `target`; None if they
        go on to another stage or to a sink."""
        if target in self.plan.sinks or self.stage_of[target] != stage:
            return None
        return self.keyed_behind(target)

    @staticmethod
    def check_shard(maker, made_from, taker, batch):
        """Raise a UserFunctionError unless every row of `batch`, which keyed operator `maker` made from
        `made_from` for keyed operator `taker` of the same stage, has the shard value of a row it was made from:
        only then does it stay in its shard. `maker` is a sharded stateful operator (only those feed an operator
        of their own stage, see `_joins`), which makes outputs only from input, never at a punctuation, so there
        always is a `made_from`."""
        values = set(maker.shard_values(made_from))
        for row, value in enumerate(taker.shard_values(batch)):
            if value not in values:
                raise UserFunctionError(
                    f"stateful operator {taker.name!r} is sharded like {maker.name!r}, which feeds it, and so runs "
                    f"in its stage on Spark, but the shard value of an output of {maker.name!r} (of "
                    f"{batch.metas[row].describe()}) differs from its input's: give them shard functions that "
                    f"agree, or drop the shard function of {taker.name!r}"
                )

    def stage_name(self, stage: int) -> str:
        """What stateful operators stage `stage` (1 on) runs, as reports name it, and whether it holds a part of
        the barrier."""
        barrier = ["barrier"] if stage in self.barrier_stages else []
        return f"{stage}: " + ", ".join([*self.boundary_operators(stage), *barrier])

    def stage_names(self, ingesting) -> list:
        """What each stateful operator of the query runs, from the sources on, when the sources `ingesting`
        go through an ingest operator (the others are ingested as they are read): the buffered baseline
        ingests each source in an operator of its own."""
        if self.mode == "buffered":
            ingest = [INGEST_STAGE] * len(ingesting)
        else:
            ingest = [INGEST_STAGE] if ingesting else []
        return ingest + [self.stage_name(stage) for stage in range(1, self.barrier_stage + 1)]
