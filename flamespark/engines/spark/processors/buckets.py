"""Keyed operators' buckets in Spark's state store: one MapState per operator, one msgpack blob per key.

A batch reads the buckets of the keys its items reach and writes back those
whose encoding changed, each one state store call, so its state I/O follows
the keys it touches, not the state held. One MapState entry per key beats
small key groups: a batch's keys are spread over the key space, so a group
would cost the same calls and read and write its neighbours too.
"""
import math

import msgpack

from operators.store import KeyedState

BUCKET_KEY_SCHEMA = "key BINARY"
BUCKET_SCHEMA = "bucket BINARY"

_UNREAD = object()  # a key put or deleted without being read first: written whatever it held


def bucket_maps(handle, operators) -> dict:
    """Each keyed operator's MapState, named by its place among `operators` (the graph fixes their order)."""
    return {
        name: handle.getMapState(f"buckets_{index}", BUCKET_KEY_SCHEMA, BUCKET_SCHEMA)
        for index, name in enumerate(operators)
    }


class StoreBuckets(KeyedState):
    """One keyed operator's buckets on one shard for one batch, over its MapState.

    A bucket is read when first asked for and written back at `save` if its
    encoding changed. A sweep (at every punctuation) collects the buckets the
    batch read, and the keys of `due` whose time the punctuation reached:
    `due` maps each key a punctuation left holding something later than
    itself to the latest event time it holds. So what no punctuation can
    change is forgotten without reading every key each batch. `horizon` is
    the punctuation of the batch, which `StageState.punctuate` sets.
    """

    def __init__(self, buckets, load, due: dict):
        self._buckets = buckets
        self._load = load
        self._due = due
        self._held = {}  # key -> bucket, or None where there is none
        self._read = {}  # key -> its blob as read (None: absent), or _UNREAD
        self.horizon = -math.inf

    def get(self, key):
        if key in self._held:
            return self._held[key]
        row = self._buckets.getValue((key,))
        blob = self._read[key] = None if row is None else row[0]
        bucket = self._held[key] = None if blob is None else self._load(msgpack.unpackb(blob))
        return bucket

    def put(self, key, bucket):
        self._held[key] = bucket
        self._read.setdefault(key, _UNREAD)

    def delete(self, key):
        self._held[key] = None
        self._read.setdefault(key, _UNREAD)

    def due(self, time):
        keys = [key for key, bucket in self._held.items() if bucket is not None]
        keys += [key for key, latest in self._due.items() if latest <= time and key not in self._held]
        return keys

    def save(self):
        """Write back the buckets whose encoding changed, remove the emptied ones; update `due`."""
        for key, bucket in self._held.items():
            read = self._read[key]
            if bucket is None:
                if read is not None:
                    self._buckets.removeKey((key,))
                self._due.pop(key, None)
                continue
            blob = msgpack.packb(bucket.dump())
            if blob != read:
                self._buckets.updateValue((key,), (blob,))
            latest = bucket.latest
            if latest is not None and latest > self.horizon:
                self._due[key] = latest
            else:
                self._due.pop(key, None)
        self._held.clear()
        self._read.clear()


class StageState:
    """The states of one stage's keyed operators on one shard for one batch.

    `maps` holds each operator's MapState (`bucket_maps`); `due` each one's
    keys due for a sweep (see StoreBuckets), which the shard keeps in its
    small state: `save` returns it.
    """

    def __init__(self, operators: dict, maps: dict, due: dict):
        self.operators = operators
        self.due = due
        self.states = {
            name: StoreBuckets(maps[name], operator.load_bucket, due.setdefault(name, {}))
            for name, operator in operators.items()
        }

    def punctuate(self, time):
        for name, operator in self.operators.items():
            self.states[name].horizon = time
            operator.punctuate(time, self.states[name])

    def save(self) -> dict:
        for state in self.states.values():
            state.save()
        return self.due
