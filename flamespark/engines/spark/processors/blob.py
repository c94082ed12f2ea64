"""What every keyed Spark operator of a FlameSpark query shares: one map state per group, control rows, handlers
that report their time.

A group's whole state is one map state: its small msgpack value under one
key, and whatever else its processor keeps (buckets, held records) under
keys of a prefix of their own. Each task opens its state variables at every
micro-batch, and opening one costs the JVM about 12 ms, so one is cheaper
than three.
"""
import functools
import time

import msgpack
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import BinaryType, StructField, StructType

from flamespark.engines.spark.processors.pipelined import PipelinedMap
from flamespark.engines.spark.rows import BEHIND, METRIC, PUNCT, concat, control_row, encode_time, frame
from flamespark.runtime.heap import collections_paused, freeze_what_lives


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
BUCKETS_PREFIX, HELD_PREFIX, BUFFERED_PREFIX, HELD_BACK_PREFIX = b"b", b"h", b"u", b"w"
WINDOWS_PREFIX, DUE_PREFIX = b"e", b"d"
# The `target` of the metric rows in which `handler` reports a handler's time.
HANDLER = "handler"


class BlobProcessor(StatefulProcessor):
    """Keeps a group's state in one map state, `store` (a `PipelinedMap`): a msgpack value (`load`, `save`) and
    what the subclass keeps under prefixes of its own. A subclass names its `stage_name`, under which its
    `handler`s report their time, and makes its rows into frames with `output_frame`."""

    stage_name = ""

    def init(self, handle):
        freeze_what_lives()
        self.store = PipelinedMap(handle.getMapState("state", KEY_SCHEMA, VALUE_SCHEMA))

    def load(self, default):
        row = self.store.getValue(_GROUP_VALUE)
        return default if row is None else msgpack.unpackb(row[0], strict_map_key=False)

    def save(self, value):
        self.store.updateValue(_GROUP_VALUE, (msgpack.packb(value),))

    def output_frame(self, rows: list):
        return frame(rows)

    def metric_shard(self, key) -> int:
        """The shard under which the group `key`'s metric rows travel on: its own. A stage downstream groups its
        rows by it, so it must be one of the stage's shards, or that stage would run a group for them alone."""
        return key[0]

    def close(self):
        pass


def handler(generator_function):
    """Make a processor's batch handler run to its end with collections paused (a batch makes many short-lived
    objects in one go: its items, steps and rows; see `heap.collections_paused`), then yield its rows and a
    metric row of what it took (`ms` in all, `state_ms` of it in state-store calls, under the processor's
    `stage_name`) as one frame: PySpark converts each frame a handler yields to Arrow on its own, about 2 ms
    a frame however few its rows. PySpark's own work on the rows (Arrow, the runner) is not in the metric.
    """

    @functools.wraps(generator_function)
    def run(self, key, *args, **kwargs):  # PySpark names some arguments
        stopwatch = self.store.stopwatch
        started, in_state = time.perf_counter(), stopwatch.seconds
        with collections_paused():
            frames = list(generator_function(self, key, *args, **kwargs))
        took = {"stage": self.stage_name, "ms": (time.perf_counter() - started) * 1000.0,
                "state_ms": (stopwatch.seconds - in_state) * 1000.0}
        frames = [part for part in frames if len(part)]  # pandas deprecates concatenating empty frames
        frames.append(self.output_frame([metric_row(HANDLER, self.metric_shard(key), took)]))
        yield concat(frames)

    return run


def punctuation_rows(times: dict, shard_keys: list) -> list:
    """Rows for `{(source, ingest partition): time}` to every shard; a punctuation row's `seq` is its partition."""
    return [
        control_row(PUNCT, source, shard, encode_time(time), seq=partition)
        for (source, partition), time in times.items()
        for shard in shard_keys
    ]


def behind_rows(shard_keys: list) -> list:
    """Rows that tell every shard that the batch is behind its input (see `held_back`)."""
    return [control_row(BEHIND, "", shard) for shard in shard_keys]


def metric_row(stage: str, shard: int, values: dict) -> tuple:
    return control_row(METRIC, stage, shard, payload=msgpack.packb(values))
