"""What every keyed Spark operator of a FlameSpark query shares: one map state per group, control rows.

A group's whole state is one map state: its small msgpack value under one
key, and whatever else its processor keeps (buckets, held records) under
keys of a prefix of their own. Each task opens its state variables at every
micro-batch, and opening one costs the JVM about 12 ms, so one is cheaper
than three.
"""
import msgpack
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import BinaryType, StructField, StructType

from flamespark.engines.spark.rows import METRIC, PUNCT, control_row, encode_time


def state_schema(**fields) -> StructType:
    """A state variable's schema, `{column: type}`. Not DDL: PySpark has the JVM parse a DDL schema, a round trip
    of a few ms for each state variable of each task of each micro-batch.

    >>> state_schema(blob=BinaryType()).simpleString()
    'struct<blob:binary>'
    """
    return StructType([StructField(name, kind) for name, kind in fields.items()])


KEY_SCHEMA = state_schema(key=BinaryType())
VALUE_SCHEMA = state_schema(value=BinaryType())
# A group's map state: its own value under the key b"v", and each kind of entry under a prefix of its own.
_GROUP_VALUE = (b"v",)
BUCKETS_PREFIX, HELD_PREFIX, BUFFERED_PREFIX = b"b", b"h", b"u"


class PrefixedMap:
    """The entries of a map state whose keys start with `prefix`, read and written by the rest of their key:
    the calls of a map state on one-column keys, `to_bytes(key)` giving the rest."""

    def __init__(self, store, prefix: bytes, to_bytes=bytes):
        self._store = store
        self._prefix = prefix
        self._to_bytes = to_bytes

    def _key(self, key: tuple) -> tuple:
        return (self._prefix + self._to_bytes(key[0]),)

    def getValue(self, key):
        return self._store.getValue(self._key(key))

    def updateValue(self, key, value):
        self._store.updateValue(self._key(key), value)

    def removeKey(self, key):
        self._store.removeKey(self._key(key))


class BlobProcessor(StatefulProcessor):
    """Keeps a group's state in one map state, `store`: a msgpack value (`load`, `save`) and what the subclass
    keeps under prefixes of its own."""

    def init(self, handle):
        self.store = handle.getMapState("state", KEY_SCHEMA, VALUE_SCHEMA)

    def load(self, default):
        row = self.store.getValue(_GROUP_VALUE)
        return default if row is None else msgpack.unpackb(row[0], strict_map_key=False)

    def save(self, value):
        self.store.updateValue(_GROUP_VALUE, (msgpack.packb(value),))

    def close(self):
        pass


def punctuation_rows(times: dict, shard_keys: list) -> list:
    """Rows for `{(source, ingest partition): time}` to every shard; a punctuation row's `seq` is its partition."""
    return [
        control_row(PUNCT, source, shard, encode_time(time), seq=partition)
        for (source, partition), time in times.items()
        for shard in shard_keys
    ]


def metric_row(stage: str, shard: int, values: dict) -> tuple:
    return control_row(METRIC, stage, shard, payload=msgpack.packb(values))
