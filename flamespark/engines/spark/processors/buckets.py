"""Keyed operators' buckets in Spark's state store: one MapState per stage, one entry per key.

A key's entry holds the buckets of every operator of the stage that has one
for that key (operators keyed alike, as two counts per word, share it), so
a batch reads and writes each key it touches once, whichever of the stage's
operators touch it: its state I/O follows the keys it touches, not the state
held. One entry per key beats small key groups: a batch's keys are spread
over the key space, so a group would cost the same calls and read and write
its neighbours too. A batch reads the entries of all its keys before it
applies its items, and writes them back at its end, each in one pipelined
exchange with the state store (`pipelined.PipelinedMap`).
"""
import msgpack

from flamespark.engines.spark.processors.blob import BUCKETS_PREFIX
from flamespark.engines.spark.processors.pipelined import PipelinedMap
from operators.store import KeyedState

LAYOUT = ("one map entry per key and stage (prefix b), collected when touched; steps without their outputs, each "
          "packed apart")


def bucket_map(store: PipelinedMap) -> PipelinedMap:
    """The stage's keyed buckets, in its map state `store` (see `blob.BlobProcessor`)."""
    return store.prefixed(BUCKETS_PREFIX)


class _Entries:
    """The entries of the keys a batch touches, each read once: `{operator index: bucket dump}` per key.

    `store` offers `get_many(user keys)` and `write(updates, removals)`, as `PipelinedMap` does.
    """

    def __init__(self, store):
        self._store = store
        self._entries = {}
        self._read = {}  # key -> its blob as read, None if absent

    def read(self, keys):
        """Read the entries of `keys` not read yet, in one pipelined exchange."""
        keys = [key for key in dict.fromkeys(keys) if key not in self._entries]
        for key, row in zip(keys, self._store.get_many([(key,) for key in keys])):
            blob = self._read[key] = None if row is None else row[0]
            self._entries[key] = {} if blob is None else msgpack.unpackb(blob, strict_map_key=False)

    def of(self, key) -> dict:
        if key not in self._entries:
            self.read([key])
        return self._entries[key]

    def save(self):
        """Write back the entries whose encoding changed, remove those left empty."""
        updates, removals = [], []
        for key, entry in self._entries.items():
            read = self._read[key]
            if not entry:
                if read is not None:
                    removals.append((key,))
                continue
            blob = msgpack.packb(entry)
            if blob != read:
                updates.append(((key,), (blob,)))
        if updates or removals:
            self._store.write(updates, removals)
        self._entries.clear()
        self._read.clear()


class StoreBuckets(KeyedState):
    """One keyed operator's buckets on one shard for one batch, in the stage's entries under `index`.

    A bucket is decoded when first asked for and put back into its entry at
    `save`. A punctuation collects the buckets the batch touched: what no
    punctuation can change is forgotten when a batch next touches its key,
    so a batch reads no key its rows do not reach (collecting one would cost
    a read and a write).
    """

    def __init__(self, entries: _Entries, index: int, operator):
        super().__init__()
        self._entries = entries
        self._index = index
        self._load = operator.load_bucket
        self._dump = operator.dump_bucket
        self._held = self.watched = {}  # key -> bucket, or None where there is none: `save` writes each back

    def get(self, key):
        if key in self._held:
            return self._held[key]
        dumped = self._entries.of(key).get(self._index)
        bucket = self._held[key] = None if dumped is None else self._load(dumped)
        return bucket

    def put(self, key, bucket):
        self._held[key] = bucket

    def due(self, time):
        return [key for key, bucket in self._held.items() if bucket is not None]

    def save(self):
        """Put the buckets back into their entries, or take the emptied ones out."""
        for key, bucket in self._held.items():
            entry = self._entries.of(key)
            if bucket is None or bucket.empty:
                entry.pop(self._index, None)
            else:
                entry[self._index] = self._dump(bucket)
        self._held.clear()


class StageState:
    """The states of one stage's keyed operators on one shard for one batch, over the stage's MapState
    (`bucket_map`)."""

    def __init__(self, operators: dict, store):
        self.operators = operators
        self._entries = _Entries(store)
        self.states = {
            name: StoreBuckets(self._entries, index, operator)
            for index, (name, operator) in enumerate(operators.items())
        }

    def read(self, items) -> list:
        """Read the entries of every key that the `(operator, item, cause)` triples touch, in one pipelined
        exchange; returns each triple's key encoding, in order."""
        keys = [operator.key_of(item) for operator, item, _ in items]
        self._entries.read(keys)
        return keys

    def punctuate(self, time_of):
        """Hand each operator its punctuation, `time_of(operator name)`."""
        for name, operator in self.operators.items():
            operator.punctuate(time_of(name), self.states[name])

    def save(self):
        for state in self.states.values():
            state.save()
        self._entries.save()
