"""A Spark streaming source that replays a recorded event file in arrival order, at a set rate.

The file holds msgpack records `[ts, payload_bytes]` (see `write_replay_file`).
Offsets are record indexes, so a query restarted from its checkpoint replays
exactly the batches it logged. Index `n` (the number of records) is a synthetic
end-of-input row. With option `keys` (comma-separated ingest partition keys),
record `i` carries key `i % len(keys)` in its `shard` column, the same on every
replay, and every key gets an end-of-input row. A source made by
`ingesting_source` ingests where it reads (processors.ingest.ReplayIngest):
each ingest partition's records in a task of its own, told how many of the
partition's records came before and the latest time among them. With a rate,
an event's arrival time is when it became due on the replay clock; the clock
starts after the first (warm-up) batch, which carries one event, since
Spark's first batch is slow.

A paced replay also judges, as it plans each batch, whether the batch is
behind its input (`behind`), and records it in the batch's end offset, so
that a batch run again after a restart is judged the same; an ingesting
source hands the judgement to its ingest (see `processors.held_back`).
"""
import time
import uuid

import msgpack
import numpy as np
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from flamespark.engines.spark.rows import END, EVENT, INFINITY, ROW_SCHEMA
from flamespark.runtime.heap import freeze_what_lives


def write_replay_file(path, events):
    """Write `(ts, payload_bytes)` pairs as a replay file; returns the number of events."""
    count = 0
    with open(path, "wb") as out:
        packer = msgpack.Packer()
        for ts, data in events:
            out.write(packer.pack([ts, data]))
            count += 1
    return count


def _scan(path) -> tuple:
    """The byte offset of every record, plus the end of the file, and every record's event time."""
    offsets, times = [0], []
    with open(path, "rb") as handle:
        unpacker = msgpack.Unpacker(handle)
        for ts, _ in unpacker:
            offsets.append(unpacker.tell())
            times.append(ts)
    return offsets, np.array(times, dtype=np.int64)


class ReplaySource(DataSource):
    """`spark.readStream.format("flamespark-replay").option("path", ...).option("source", ...)`."""

    ingest = None  # what a source made by `ingesting_source` ingests with

    @classmethod
    def name(cls):
        return "flamespark-replay"

    def schema(self):
        return ROW_SCHEMA

    def streamReader(self, schema):
        return ReplayReader(self.options, self.ingest)


def ingesting_source(ingest) -> type:
    """A ReplaySource that ingests its records with `ingest` (a processors.ingest.ReplayIngest) as it reads
    them, under a format name of its own: registering it carries `ingest` to the tasks that read."""
    name = f"flamespark-replay-{uuid.uuid4().hex}"
    return type("IngestingReplaySource", (ReplaySource,), {"ingest": ingest, "name": classmethod(lambda cls: name)})


class ReplayPartition(InputPartition):
    """Records `start` to `end` of the file, spread over ingest partition `keys`; for an ingesting source,
    only those of ingest partition `only`, after `received` earlier ones there, the latest at `latest`, in a
    batch `behind` its input or not."""

    def __init__(self, start, end, byte_start, clock, keys, only=None, received=0, latest=None, behind=False):
        self.start, self.end, self.byte_start, self.clock, self.keys = start, end, byte_start, clock, keys
        self.only, self.received, self.latest, self.behind = only, received, latest, behind


# How long the first event a paced batch reads may have been due before the batch counts as behind its input (s).
BEHIND_AFTER_S = 1.0
# After a batch behind its input, how long that event may have been due for the run to count as caught up (s).
CAUGHT_UP_S = 0.5


def behind(first: int, end: int, due: int, waited_s: float, was_behind: bool = False) -> bool:
    """Whether a paced batch that reads records `first` to `end`, when records up to `due` are due and the
    first of them has been due for `waited_s` seconds, is behind its input: it leaves due records for later
    batches (a cap on its rows), or they have waited longer than BEHIND_AFTER_S, or, after a batch that
    `was_behind`, longer than CAUGHT_UP_S.

    Spark reads all that is due in every batch, so an engine that keeps up
    reads what came during its previous batch, which waited about one
    batch; one that falls behind finds its batches growing, each reading
    what waited through a longer one. A batch behind is quicker than one
    that applies everything, as it applies only what is final, so the wait
    that follows it understates the load: the next batch not behind would
    apply all that was held back at once, a long batch after which the run
    is behind again. So a run behind leaves the regime only once its batches
    are as short as those of an engine with time to spare.

    >>> behind(10, 14, 14, 0.4), behind(10, 13, 14, 0.0), behind(10, 14, 14, 1.5)
    (False, True, True)
    >>> behind(10, 14, 14, 0.7), behind(10, 14, 14, 0.7, was_behind=True), behind(10, 14, 14, 0.3, was_behind=True)
    (False, True, False)
    """
    return end < due or waited_s > (CAUGHT_UP_S if was_behind else BEHIND_AFTER_S)


class ReplayReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Runs in one long-lived driver-side process, so the replay clock persists across calls."""

    def __init__(self, options, ingest=None):
        self.ingest = ingest
        self.path = options["path"]
        self.source = options["source"]
        self.rate = float(options.get("rate") or 0)
        self.max_rows = int(options.get("maxRowsPerBatch") or 0)
        self.keys = [int(key) for key in options.get("keys", "0").split(",")]
        self.offsets, times = _scan(self.path)
        # Per ingest partition, the latest event time among its first n records, at index n - 1.
        self.latest = [np.maximum.accumulate(times[spread::len(self.keys)]) for spread in range(len(self.keys))]
        self.events = len(self.offsets) - 1
        self.total = self.events + 1
        self.clock = None
        self.calls = 0

    def initialOffset(self):
        return {"i": 0}

    def _due(self, start):
        if self.rate <= 0:
            return self.total
        now = time.time()
        if self.clock is None:
            self.clock = (now, start)
        anchor, first = self.clock
        due = first + int((now - anchor) * self.rate) + 1
        # The end of the input is known once its last event is due: the batch that reads that event ends it too.
        return self.total if due >= self.events else due

    def latestOffset(self, start, limit):
        first = start["i"]
        if first >= self.total:
            return start
        self.calls += 1
        if self.rate > 0 and self.calls == 1:
            return {"i": first + 1}
        due = self._due(first)
        if due <= first:
            # Trigger.AvailableNow ends the query the first time nothing is new: wait for the next event.
            anchor, origin = self.clock
            time.sleep(max(0.0, anchor + (first - origin) / self.rate - time.time()))
            due = self._due(first)
        end = max(first, due)
        if isinstance(limit, ReadMaxRows):
            end = min(end, first + limit.max_rows)
        # `start` is the previous batch's end offset, as the offset log holds it: a rerun batch sees the same.
        if self.rate > 0 and end > first and behind(first, end, due, self._waited_s(first), start.get("behind", False)):
            return {"i": end, "behind": True}
        return {"i": end}

    def _waited_s(self, index) -> float:
        """How long record `index` has been due (s), by the replay clock."""
        anchor, origin = self.clock
        return time.time() - (anchor + (index - origin) / self.rate)

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self):
        pass

    def reportLatestOffset(self):
        return {"i": self.total}

    def partitions(self, start, end):
        first, last = start["i"], end["i"]
        if last <= first:
            return []
        clock = (self.clock[0], self.clock[1], self.rate) if self.clock and self.rate > 0 else None
        byte_start = self.offsets[min(first, self.events)]
        if self.ingest is None:
            return [ReplayPartition(first, last, byte_start, clock, self.keys)]
        return [ReplayPartition(first, last, byte_start, clock, self.keys, only, *self._before(first, only),
                                behind=end.get("behind", False))
                for only in range(len(self.keys))]

    def _before(self, first, only) -> tuple:
        """How many records of ingest partition `only` come before record `first`, and their latest time."""
        earlier = len(range(only, first, len(self.keys)))
        return earlier, (int(self.latest[only][earlier - 1]) if earlier else None)

    def read(self, partition):
        freeze_what_lives()
        if self.ingest is None:
            yield from self._rows(partition)
            return
        yield from self.ingest(partition.only, partition.received, partition.latest, *self._columns(partition),
                               partition.behind)

    def _rows(self, partition):
        """The partition's event rows, then end-of-input rows if it holds the end."""
        now = time.time()
        source, keys, only = self.source, partition.keys, partition.only
        for index, ts, data in self._events(partition):
            spread = index % len(keys)
            if only is None or spread == only:
                arrival = self._arrival(partition.clock, index, now)
                yield (EVENT, source, keys[spread], ts, b"", data, False, arrival, index, None)
        if partition.start <= self.events < partition.end:
            for spread, key in enumerate(keys):
                if only is None or spread == only:
                    yield (END, source, key, INFINITY, b"", b"", False, now, self.events, None)

    def _columns(self, partition) -> tuple:
        """The events of the partition's one ingest partition (`partition.only`) as columns, `(times, encoded
        payloads, arrivals, positions)`, and whether it holds the end."""
        now = time.time()
        spread, only = len(partition.keys), partition.only
        times, datas, arrivals, positions = [], [], [], []
        for index, ts, data in self._events(partition):
            if index % spread == only:
                times.append(ts)
                datas.append(data)
                arrivals.append(self._arrival(partition.clock, index, now))
                positions.append(index)
        return (times, datas, arrivals, positions), partition.start <= self.events < partition.end

    def _events(self, partition):
        """`(position, event time, encoded payload)` of each event in the partition's range of the file."""
        index = partition.start
        with open(self.path, "rb") as handle:
            handle.seek(partition.byte_start)
            unpacker = msgpack.Unpacker(handle)
            while index < min(partition.end, self.events):
                ts, data = unpacker.unpack()
                yield index, ts, data
                index += 1

    @staticmethod
    def _arrival(clock, index, now):
        if clock is None:
            return now
        anchor, origin, rate = clock
        return min(now, anchor + (index - origin) / rate) if index >= origin else now

    def commit(self, end):
        pass
