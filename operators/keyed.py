"""Keyed operators keep one bucket per key and forget what no punctuation can change."""
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
    Subclasses say what a key's bucket is (`new_bucket`, `load_bucket`, `dump_bucket`) and
    implement `apply(bucket, item)`. An engine that spreads keys over shards
    places a key by `shard_of`: `shard(key)` if given, else the key itself.
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
            return encode(key, self.name, item.meta)  # raises the PayloadError naming the event

    def shard_of(self, item) -> bytes:
        """The msgpack encoding of what places the item's key on a shard: `shard(key)`, or the key."""
        if self.shard is None:
            return self.key_of(item)
        key = self._called("key", self.key, item.payload, item)
        return self._encoded(self._called("shard", self.shard, key, item), item)

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
            return encode(value, self.name, item.meta)  # raises the PayloadError naming the event

    def process(self, item, state):
        """The items that adding `item` makes, with any work it left waiting done (for running an operator
        on its own; engines `add` and `flush`)."""
        out = self.add(item, state)
        waited = self.flush(state)
        return [*out, *waited] if waited else out

    def add(self, item, state):
        return self.process_keyed(self.key_of(item), item, state)

    def process_keyed(self, key_data: bytes, item, state):
        """Add `item`, whose key encoding (`key_of`) the caller has already; returns the items that makes.

        A bucket may leave part of the work waiting (a `StateLog`'s re-run
        after a tombstone, which the removed item's replacement usually
        follows): the engine must `flush` before the end of its step, and so
        before a punctuation.
        """
        bucket = state.get(key_data)
        if bucket is None:
            bucket = self.new_bucket()
        out = self.apply(bucket, item)
        if bucket.dirty is not None:
            state.defer(key_data)
        state.put(key_data, bucket)
        return out

    def flush(self, state) -> list:
        """Do the work buckets left waiting since the last flush; returns the items it makes."""
        if not state.deferred:
            return []
        out = []
        for key_data in dict.fromkeys(state.take_deferred()):
            bucket = state.get(key_data)
            if bucket is not None:
                out.extend(self.finish(bucket))
                state.put(key_data, bucket)
        return out

    def finish(self, bucket) -> list:
        """Do the work `bucket` left waiting (it has none unless its kind defers some)."""
        return []

    def new_bucket(self):
        """An empty bucket for a key seen for the first time."""
        raise NotImplementedError

    def load_bucket(self, dumped):
        """A bucket from its `dump_bucket`, for engines that keep buckets in a state store."""
        raise NotImplementedError

    def dump_bucket(self, bucket) -> list:
        """The bucket as msgpack-able lists, which `load_bucket` takes back."""
        raise NotImplementedError

    def apply(self, bucket, item) -> list:
        """Add `item` to its key's `bucket`; returns the items that change makes (a list or tuple the caller reads
        and must not change: it may be the bucket's own)."""
        raise NotImplementedError

    def punctuate(self, time, state):
        for key_data in state.due(time):
            bucket = state.get(key_data)
            if bucket is not None:
                self._collect(bucket, time)
                state.put(key_data, bucket)
        return []

    def _collect(self, bucket, horizon):
        orphans = bucket.collect(horizon)
        if orphans:
            raise InternalError(
                f"internal error: operator {self.name!r} holds {orphans} tombstone(s) below "
                f"punctuation {horizon} whose items never arrived"
            )
