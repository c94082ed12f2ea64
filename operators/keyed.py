"""Keyed operators keep one bucket per key and forget what no punctuation can change."""
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.errors import FlameSparkError, InternalError
from flamespark.core.items import encode
from operators.base import BoundaryOperator
from operators.store import DictState


class KeyedOperator(BoundaryOperator):
    """Routes items to per-key buckets, which live in the `KeyedState` it is handed.

    On a punctuation `T` a bucket drops its items with `ts <= T` except the last
    `window - 1`, which later windows may still need. Buckets are collected
    at the punctuations at which the state says they are due.
    Subclasses say what a key's bucket is (`new_bucket`, `load_bucket`,
    `dump_bucket`) and give `combine`, the function its buckets make their
    results with: a bucket's `add(item, combine)` adds an item or tombstone and
    returns the items that change makes (a list or tuple the caller reads
    and must not change: it may be the bucket's own), and a bucket that left
    work waiting (`dirty`) does it in `flush(combine)`. An engine that spreads
    keys over shards places a key by `shard_of`: `shard(key)` if given, else
    the key itself.
    """

    def __init__(self, name, key, shard=None):
        super().__init__(name)
        if not callable(key):
            raise TypeError(f"key of operator {name!r} must be callable")
        if shard is not None and not callable(shard):
            raise TypeError(f"shard of operator {name!r} must be callable or None")
        self.key = key
        self.shard = shard

    def new_state(self) -> DictState:
        return DictState()

    def key_of(self, item) -> bytes:
        """The msgpack encoding of the item's key."""
        # `_called` and `_encoded`, inlined: this runs for every item.
        try:
            key = self.key(item.payload)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure("key", exc, item) from exc
        try:
            return pack(key)
        except (TypeError, ValueError, OverflowError):
            return encode(key, self.name, item.meta, "a key")  # raises the PayloadError naming the event

    def shard_values(self, batch) -> list:
        """The msgpack encoding of what places each row's key on a shard: `shard(key)`, or the key."""
        if self.shard is None:
            return self.keys_of(batch)
        values = []
        for row in range(len(batch)):
            item = batch.item(row)
            key = self._called("key", self.key, item.payload, item)
            values.append(self._encoded(self._called("shard", self.shard, key, item), item))
        return values

    def _called(self, role: str, fn, argument, item):
        try:
            return fn(argument)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure(role, exc, item) from exc

    def _encoded(self, value, item) -> bytes:
        try:
            return pack(value)
        except (TypeError, ValueError, OverflowError):
            return encode(value, self.name, item.meta, "a shard value")  # raises the PayloadError naming the event

    def keys_of(self, batch) -> list:
        """The msgpack encoding of each row's key, in order."""
        try:
            return list(map(pack, map(self.key, batch.payloads)))
        except Exception:  # the rows one at a time, to raise the error naming the first that fails
            for row in range(len(batch)):
                self.key_of(batch.item(row))
            raise

    def take(self, batch, state, keys: list | None = None) -> Batch:
        """Add the batch's rows to their keys' buckets in meta order, then have every bucket that left work waiting
        do it (`flush`); returns the batch of what that makes. Each output carries the cause of the row whose
        change made it (the last to reach its key, for waiting work). `keys` are the rows' key encodings, if the
        engine has them already."""
        batch, keys = batch.in_meta_order(self.keys_of(batch) if keys is None else keys)
        combine, get, put, new_bucket, watched = self.combine, state.get, state.put, self.new_bucket, state.watched
        causes = batch.causes
        made = []
        made_causes = None if causes is None else []
        waiting = {}  # the keys whose buckets left work waiting, and the cause of the last change to each
        for row, (item, key_data) in enumerate(zip(batch.items(), keys)):
            bucket = get(key_data)
            new = bucket is None
            if new:
                bucket = new_bucket()
            elif bucket.dirty is not None and causes is not None and waiting[key_data] != causes[row]:
                # The waiting work belongs to the change that left it: done inside this row's `add`, its outputs
                # would name this row's cause. (A dirty bucket is always in `waiting`: it got there in this loop.)
                outputs = bucket.flush(combine)
                if outputs:
                    made += outputs
                    made_causes += [waiting[key_data]] * len(outputs)
            outputs = bucket.add(item, combine)
            if bucket.dirty is not None:
                waiting[key_data] = None if causes is None else causes[row]
            if new or key_data not in watched:
                put(key_data, bucket)
            if outputs:
                made += outputs
                if causes is not None:
                    made_causes += [causes[row]] * len(outputs)
        state.touched += len(keys)
        for key_data, cause in waiting.items():
            bucket = get(key_data)
            if bucket is None:
                continue
            outputs = bucket.flush(combine)
            if key_data not in watched:  # the store looks at a watched key's bucket by itself
                put(key_data, bucket)
            if outputs:
                made += outputs
                if causes is not None:
                    made_causes += [cause] * len(outputs)
        return Batch.of_items(made, made_causes)

    def new_bucket(self):
        """An empty bucket for a key seen for the first time."""
        raise NotImplementedError

    def load_bucket(self, dumped):
        """A bucket from its `dump_bucket`, for engines that keep buckets in a state store."""
        raise NotImplementedError

    def dump_bucket(self, bucket) -> list:
        """The bucket as msgpack-able lists, which `load_bucket` takes back."""
        raise NotImplementedError

    def punctuate(self, time, state):
        """Forget, in the buckets the state names due, what no punctuation from `time` on can change; releases
        nothing."""
        for key_data in state.collectable(time):
            bucket = state.get(key_data)
            if bucket is not None:
                self._collect(bucket, time)
                state.put(key_data, bucket)
        return None

    def _collect(self, bucket, horizon):
        orphans = bucket.collect(horizon)
        if orphans:
            raise InternalError(
                f"internal error: operator {self.name!r} holds {orphans} tombstone(s) below "
                f"punctuation {horizon} whose items never arrived"
            )
