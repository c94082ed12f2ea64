"""Keyed operators keep one bucket per key and forget what no punctuation can change."""
from flamespark.core.errors import FlameSparkError
from flamespark.core.items import encode
from operators.base import Operator
from operators.bucket import Bucket


class KeyedOperator(Operator):
    """Routes items to per-key buckets (keyed by the key's msgpack encoding).

    An engine that keeps buckets in a state store sets `load_bucket(key_data)`
    to fetch the buckets not yet in `buckets`.

    On a punctuation `T` a bucket drops its items with `ts <= T` except the last
    `window - 1`, which later windows may still need. Buckets are collected when
    next touched, and all of them in a sweep once per `len(buckets)`
    punctuations, so the cost per punctuation stays constant.
    """

    boundary = True

    def __init__(self, name, key, window):
        super().__init__(name)
        if not callable(key):
            raise TypeError(f"key of operator {name!r} must be callable")
        self.key = key
        self.window = window
        self.buckets: dict[bytes, Bucket] = {}
        self.horizon = float("-inf")
        self.load_bucket = None
        self._since_sweep = 0

    def key_of(self, item) -> bytes:
        """The msgpack encoding of the item's key."""
        return encode(self.call("key", self.key, item, item.payload), self.name, item.meta)

    def bucket_for(self, item) -> Bucket:
        key_data = self.key_of(item)
        bucket = self.buckets.get(key_data)
        if bucket is None and self.load_bucket is not None:
            bucket = self.load_bucket(key_data)
            if bucket is not None:
                self.buckets[key_data] = bucket
        if bucket is None:
            bucket = self.buckets[key_data] = Bucket(self.window)
        elif bucket.horizon < self.horizon:
            self._collect(bucket)
        return bucket

    def punctuate(self, time):
        self.horizon = time
        self._since_sweep += 1
        if self._since_sweep >= len(self.buckets):
            self._since_sweep = 0
            for key_data, bucket in list(self.buckets.items()):
                self._collect(bucket)
                if not bucket:
                    del self.buckets[key_data]
        return []

    def _collect(self, bucket):
        orphans = bucket.collect(self.horizon)
        if orphans:
            raise FlameSparkError(
                f"internal error: operator {self.name!r} holds {orphans} tombstone(s) below "
                f"punctuation {self.horizon} whose items never arrived"
            )

    def buffered(self) -> int:
        """Items held in all buckets."""
        return sum(len(bucket) for bucket in self.buckets.values())
