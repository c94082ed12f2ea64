"""Ingest: events in, in arrival order; items with meta, late events, and each source's punctuations out.

A replayed source is ingested where it is read (`ReplayIngest`, in the
source's read tasks), since what ingest needs of the events before a batch
is a function of the file alone; the others (a directory, or any source of
a run with an idle timeout, which judges by the batches' clock) go through
`IngestProcessor`, a keyed operator that keeps its Punctuations in
Spark's state store. Both run `ingest_events` on a batch.
"""
import itertools
import time

from flamespark.core.codec import pack, unpack
from flamespark.engines.spark.processors.blob import BlobProcessor, behind_rows, handler, metric_row, punctuation_rows
from flamespark.engines.spark.rows import END, LATE, Outbox, concat, control_row, frame
from flamespark.engines.spark.topology import INGEST_STAGE
from flamespark.runtime.changes import Cause
from flamespark.runtime.heap import collections_paused
from flamespark.runtime.punctuations import Punctuations


class Arrived:
    """One ingest partition's raw events of a micro-batch, by lane, in each lane's arrival order: per lane its
    source and the columns of its events (times, encoded payloads, arrivals, positions in the source, or None
    where `Punctuations` counts them), and the lanes whose end came after them."""

    def __init__(self):
        self.lanes = {}
        self.ended = []

    def add(self, lane, source: str, ts: int, data: bytes, arrival: float, position):
        columns = self.lanes.get(lane)
        if columns is None:
            columns = self.lanes[lane] = (source, [], [], [], [])
        columns[1].append(ts)
        columns[2].append(data)
        columns[3].append(arrival)
        columns[4].append(position)

    @classmethod
    def of_rows(cls, rows, topology, lanes: dict) -> "Arrived":
        """The events of `(kind, source, ts, payload bytes, arrival, seq)` rows in arrival order. An event's
        position is its `seq` when its source is spread over partitions or read in lanes; a Kafka topic of
        `lanes` (see `ingest_events`) puts its records in the lane of their partition."""
        arrived = cls()
        for kind, source, ts, payload, arrival, seq in rows:
            parts = lanes.get(source)
            lane = source if parts is None else parts[seq % len(parts)]
            if kind == END:
                arrived.ended.append(lane)
            else:
                arrived.add(lane, source, ts, payload, arrival,
                            seq if parts is not None or topology.partitions[source] > 1 else None)
        return arrived


def ingest_events(punctuations, arrived: Arrived, topology, partition: int, sources: list, changes: bool,
                  behind: bool = False, lanes: dict | None = None) -> list:
    """The rows one ingest partition makes of a batch's `arrived` events: item bundles, then punctuations that
    rose, when the batch is `behind` its input (in the optimistic mode) rows that tell every shard so (see
    `held_back`), dead letters and each source's counts in this batch (a metric row, naming the partition,
    that says whether the batch was behind).

    Each lane's events are admitted as one batch (`Punctuations.admit`), each
    payload decoded once and its bytes kept as its encoding; then the lanes
    that ended end. With `changes`, each item carries its event as the
    changelog's cause. `lanes[source]`, for a Kafka topic whose partitions
    this partition takes together, names the lanes `punctuations` knows for
    the topic's partitions (see `Arrived.of_rows` and kafka_source), and the
    topic's punctuation is its lowest lane's.
    With several reorder latencies (`topology.levels`), an event goes to
    the copies of the graph of its first on-time level and the later ones,
    and each source's metric row also counts its events by first level
    (`by_level`) and names the later levels' events (`late`, as
    `[level, source, ts, position]`), which the corrections' causes come
    from.
    """
    lanes = lanes or {}
    before = {source: _counts(punctuations, source, lanes.get(source)) for source in sources}
    outbox = Outbox()
    levels = topology.levels.count
    # With several levels, each source's events by first on-time level, and its later levels' events.
    levelled = {source: {"by_level": [0] * levels, "late": []} for source in sources}
    for lane, (source, times, datas, arrivals, positions) in arrived.lanes.items():
        batch, first_levels = punctuations.admit(lane, times, list(map(unpack, datas)), arrivals,
                                                 None if positions[0] is None else positions, datas)
        if changes:
            batch.causes = list(map(Cause.of_meta, batch.metas))
        if first_levels is None:
            topology.send_event(outbox, source, 1, batch)
            continue
        counted = levelled[source]
        for level in range(1, levels + 1):  # an adjusted event is late at every level: of the last
            rows = [row for row, first in enumerate(first_levels) if min(first, levels) == level]
            if rows:
                part = batch.selected(rows)
                topology.send_event(outbox, source, level, part)
                counted["by_level"][level - 1] += len(rows)
                if level > 1:
                    counted["late"] += [[level, meta[1], meta[0], meta[3]] for meta in part.metas]
    for lane in arrived.ended:
        punctuations.end(lane)
    out = outbox.rows()
    laned_before = {source: _lowest(punctuations, parts) for source, parts in lanes.items()}
    # Lanes are not sources (see IngestProcessor): the topics read in lanes are taken by their lowest lane below.
    advanced = {(source, partition): time for source, time in punctuations.advance().items()
                if source in topology.partitions}
    for source, parts in lanes.items():
        time = _lowest(punctuations, parts)
        if time > laned_before[source]:
            advanced[(source, partition)] = time
    out.extend(punctuation_rows(advanced, topology.shard_keys))
    behind = behind and topology.mode == "optimistic"  # the baseline holds every item back anyway
    if behind:
        out.extend(behind_rows(topology.shard_keys))
    # Dead letters and counts only pass through the stages to the driver: under the first shard, as the
    # stages group rows by shard and would run a group of their own for another key.
    reported = topology.shard_keys[0]
    for source in sources:
        out.extend(control_row(LATE, source, reported, payload=pack(dead))
                   for dead in punctuations.dead_letters if dead["source"] == source)
        counts = _counts(punctuations, source, lanes.get(source))
        batch = {key: counts[key] - before[source][key] for key in counts}
        batch.update(source=source, partition=partition, behind=behind)
        if levels > 1:
            batch.update(levelled[source])
        out.append(metric_row("ingest", reported, batch))
    return out


def _counts(punctuations, source: str, lanes: list | None) -> dict:
    """The source's counts (`Punctuations.counts`), summed over its `lanes` if it is read in lanes."""
    if lanes is None:
        return punctuations.counts(source)
    each = [punctuations.counts(lane) for lane in lanes]
    return {key: sum(counts[key] for counts in each) for key in each[0]}


def _lowest(punctuations, lanes: list):
    return min(punctuations.punctuation(lane) for lane in lanes)


def _batch_time_ms(timerValues) -> int:
    """The micro-batch's processing time, which Spark keeps in its offset log, so a rerun batch sees the same."""
    now = timerValues.getCurrentProcessingTimeInMs()
    return now if now > 0 else int(time.time() * 1000)


class IngestProcessor(BlobProcessor):
    """Stage 0, one group per ingest partition of `sources`: its Punctuations, kept in the state store,
    and the stateless operators.

    Raw rows carry their ingest partition in the `shard` column (a source's
    events are spread over its `topology.partitions` by position), so each
    group sees one part of the sources it takes: it judges lateness by that
    part's punctuation alone, and passes that punctuation on as rows whose
    `seq` is the partition; downstream stages take a source's punctuation as
    the minimum over its partitions (stage.Horizons).
    A source's part ends at its end row (every partition gets one), or once
    it has delivered `expected[source]` events (a directory, read in one
    partition up to the files it held at the start). With `idle_timeout` (seconds), a
    source that has delivered nothing to the partition for that long, by the
    micro-batches' times, stops holding the others back there. Each
    punctuation advances after the batch, and is passed on only when it rose.

    The Kafka topics of `lanes` (`{source: number of Kafka partitions}`) come
    in one ingest partition, their Kafka partitions as lanes of their own
    (`Punctuations`): each judges lateness by its own records and idles on
    its own, so that a quiet Kafka partition stops holding its topic back
    after the idle timeout. That takes one group seeing them all: a group of
    its own per Kafka partition would hear nothing of a quiet one, and know
    nothing of the punctuations an idle one must be raised to. Lanes are
    named by numbers, which no source (a string) takes.
    """

    def __init__(self, topology, sources: list, reorder_latency: int, late: str, expected: dict | None = None,
                 idle_timeout: float | None = None, changes: bool = False, lanes: dict | None = None):
        self.topology = topology
        self.sources = sources
        self.reorder_latency = reorder_latency
        self.late = late
        self.expected = expected or {}
        self.idle_timeout = idle_timeout
        self.changes = changes
        numbers = itertools.count()
        self.lanes = {source: [next(numbers) for _ in range(count)] for source, count in (lanes or {}).items()}
        self.stage_name = INGEST_STAGE

    def metric_shard(self, key) -> int:
        """The first shard: an ingest group's key (an ingest partition's, or a DataFrame input's source's, see
        `flamespark.spark.ingest`) need not be a shard's."""
        return self.topology.shard_keys[0]

    @handler
    def handleInputRows(self, key, rows, timerValues):
        partition = self.topology.ingest_keys.index(key[0])
        now = _batch_time_ms(timerValues)
        sources = [source for source in self.sources if partition < self.topology.partitions[source]]
        lanes = {source: self.lanes[source] for source in sources if source in self.lanes}
        punctuations = Punctuations(sources, self.reorder_latency, self.late, self.expected, self.idle_timeout,
                                  clock_ms=lambda: now, lanes=lanes)
        snapshot = self.load(None)
        if snapshot is not None:
            punctuations.restore(snapshot)
        # In arrival order: a directory's rows by file (in `meta`, see files.py), then line; others by `seq`.
        batch = concat(rows).sort_values(["meta", "seq"], kind="stable")
        events = zip(*(batch[column].tolist() for column in ("kind", "target", "ts", "payload", "arrival", "seq")))
        out = ingest_events(punctuations, Arrived.of_rows(events, self.topology, lanes), self.topology, partition,
                            sources, self.changes, lanes=lanes)
        self.save(punctuations.snapshot())
        yield frame(out)


class ReplayIngest:
    """Ingest of one replayed source in its read tasks, one task per ingest partition.

    What a partition's `Punctuations` knows at the start of a batch is a function
    of the source's file up to the batch: how many of the partition's events
    came before, and the latest time among them (a late event is never the
    latest, so whether earlier ones were late does not matter); lateness is
    judged by the punctuation that supports. So no state is kept, and a
    batch replayed after a restart makes the same rows.
    """

    def __init__(self, topology, source: str, reorder_latency: int, late: str, changes: bool = False):
        self.topology = topology
        self.source = source
        self.reorder_latency = reorder_latency
        self.late = late
        self.changes = changes

    def __call__(self, partition: int, received: int, latest, columns: tuple, ended: bool,
                 behind: bool = False) -> list:
        """The rows of a batch's events in `partition`, after `received` earlier ones there, the latest at event
        time `latest` (None if none): their `columns`, `(times, encoded payloads, arrivals, positions)`, and
        whether the source's end came after them (`ended`); `behind` if the batch is behind its input."""
        punctuations = Punctuations([self.source], self.reorder_latency, self.late)
        punctuations.resume(self.source, received, latest)
        arrived = Arrived()
        if columns[0]:
            spread = self.topology.partitions[self.source] > 1
            arrived.lanes[self.source] = (self.source, *columns[:3], columns[3] if spread else [None])
        if ended:
            arrived.ended.append(self.source)
        with collections_paused():
            return ingest_events(punctuations, arrived, self.topology, partition, [self.source], self.changes,
                                 behind)
