"""What waits for a time in Spark's state store: the barrier's held items, the baseline's buffers.

Records live in a MapState in chunks of at most CHUNK records sorted by
event time; a small index of the chunks (their earliest time and size) lives
in the shard's value. A batch writes its new records as new chunks without
reading any, and reads only the chunks that hold a record at or before the
time it releases, writing back what they keep. So its state I/O follows what
it adds and releases, not what is held.
"""
import msgpack

from barrier.barrier import Barrier, BarrierState
from flamespark.engines.spark.processors.pipelined import PipelinedMap
from flamespark.engines.spark.processors.stage_run import release

CHUNK = 512


def chunk_map(store: PipelinedMap, prefix: bytes) -> PipelinedMap:
    """Chunks (keyed by their int id) in the processor's map state `store`, under `prefix` (see
    `blob.BlobProcessor`)."""
    return store.prefixed(prefix, _chunk_key)


def level_chunks(store: PipelinedMap, prefix: bytes, level: int) -> PipelinedMap:
    """`chunk_map` of a level's own (see spark.levels): level 1's under `prefix`, level k's under `prefix` and k."""
    return chunk_map(store, prefix if level == 1 else prefix + str(level).encode())


def _chunk_key(chunk: int) -> bytes:
    return chunk.to_bytes(8, "big")


class TimedRecords:
    """Msgpack-able records, each with an event time (`time_of`), in chunks of a MapState.

    `index` is the msgpack-able index (a new one if None) that the caller
    keeps: `[next chunk id, {chunk id: [earliest time, records]}]`.
    """

    def __init__(self, chunks, index, time_of):
        self._chunks = chunks
        self._time_of = time_of
        self.index = index or [0, {}]

    def __len__(self):
        return sum(size for _, size in self.index[1].values())

    def earliest(self):
        """The earliest time held, or None."""
        return min((earliest for earliest, _ in self.index[1].values()), default=None)

    def take(self, time) -> list:
        """Remove and return the records of every chunk holding one at or before `time` (later ones too)."""
        taken = []
        chunks = self.index[1]
        for chunk in [chunk for chunk, (earliest, _) in chunks.items() if earliest <= time]:
            taken.extend(msgpack.unpackb(self._chunks.getValue((chunk,))[0]))
            self._chunks.removeKey((chunk,))
            del chunks[chunk]
        return taken

    def add(self, records: list):
        """Write `records` as new chunks."""
        records = sorted(records, key=self._time_of)
        for start in range(0, len(records), CHUNK):
            part = records[start:start + CHUNK]
            chunk = self.index[0]
            self.index[0] += 1
            self._chunks.updateValue((chunk,), (msgpack.packb(part),))
            self.index[1][chunk] = [self._time_of(part[0]), len(part)]


def meta_time(record) -> int:
    """The event time of a record whose second field is its meta (a row of `BarrierState.dump_rows()`, a held-back
    record of `held_back`): the meta's first field."""
    return record[1][0]


class StoredBarrier:
    """One shard's barrier for one batch: horizon and counters in the shard's value, held items in TimedRecords.

    `barrier` takes the batch's pushes; `release` reads the held items it can
    release and releases; `save` writes what stays held and returns the
    value to keep, `[horizon and counters, index of the held chunks]`.
    """

    def __init__(self, chunks, saved):
        counters, index = saved or (None, None)
        self.held = TimedRecords(chunks, index, meta_time)
        self.barrier = Barrier(BarrierState.load([*counters, []]) if counters else None)

    def earliest(self):
        """The smallest event time held, or None."""
        times = [time for time in (self.barrier.earliest(), self.held.earliest()) if time is not None]
        return min(times, default=None)

    def release(self, stage: int, shard: int, time, level: int = 1) -> list:
        """Rows for what the barrier (the part of stage `stage` and `level`) releases at `time`, and its metric
        row."""
        if time > self.barrier.horizon:
            self.barrier.state.hold(self.held.take(time))
        return release(stage, shard, self.barrier, time, stored=len(self.held), level=level)

    def save(self) -> list:
        state = self.barrier.state
        self.held.add(state.unload())
        return [[state.horizon, state.arrived, state.tombstones, state.released], self.held.index]


class StoredBarriers:
    """One shard's barrier in a stage for one batch: a `StoredBarrier` per level (see spark.levels), each in
    its map of chunks of `chunks` (`level_chunks`); `saved` is what `save` returned before.

    `pusher` takes the batch's pushes, each into its sink's level (the one
    barrier, with one level); `release` releases every level at its own
    punctuation; `save` returns the value to keep, one `StoredBarrier`'s
    per level.
    """

    def __init__(self, chunks: list, saved, levels):
        self.levels = levels
        self.parts = [StoredBarrier(*pair) for pair in zip(chunks, saved or [None] * levels.count)]
        if levels.count == 1:
            self.pusher = self.parts[0].barrier
        else:
            self.pusher = _ByLevel({sink: self.parts[level - 1].barrier for sink, level in levels.sink_levels.items()})

    def due(self):
        """The earliest of the last level's punctuations at which a level has something to release, or None."""
        return earliest_due(self.levels, [part.earliest() for part in self.parts])

    def release(self, stage: int, shard: int, times: tuple) -> list:
        """Rows for what every level releases at its time of `times`, and their metric rows."""
        return [row for level, (part, time) in enumerate(zip(self.parts, times), 1)
                for row in part.release(stage, shard, time, level)]

    def save(self) -> list:
        return [part.save() for part in self.parts]


def earliest_due(levels, earliest: list):
    """The earliest of the last level's punctuations at which a level reaches its earliest time held, of
    `earliest` (per level, None where it holds nothing); None if no level holds anything."""
    return min((levels.released_at(time, level) for level, time in zip(levels.levels, earliest) if time is not None),
               default=None)


class _ByLevel:
    """Hands each sink's batches to the barrier of its level."""

    def __init__(self, barriers: dict):
        self._barriers = barriers

    def push(self, sink: str, batch):
        self._barriers[sink].push(sink, batch)
