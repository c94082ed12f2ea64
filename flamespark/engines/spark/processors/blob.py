"""What every keyed Spark operator of a FlameSpark query shares: a small msgpack value per group, control rows."""
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


STATE_SCHEMA = state_schema(blob=BinaryType())


class BlobProcessor(StatefulProcessor):
    """Keeps one msgpack value per grouping key."""

    def init(self, handle):
        self._blob = handle.getValueState("state", STATE_SCHEMA)

    def load(self, default):
        return msgpack.unpackb(self._blob.get()[0], strict_map_key=False) if self._blob.exists() else default

    def save(self, value):
        self._blob.update((msgpack.packb(value),))

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
