"""A user's DataFrame as the raw event rows that ingest takes: its columns checked, its rows made payloads.

An event's payload is its row as a dict of its columns, nested structs as
dicts, arrays as lists, maps as dicts (what `Row.asDict(recursive=True)`
gives), with the values msgpack carries: strings, integers, floats,
booleans, binary (bytes) and nulls. Two Spark types are converted first, by
Spark: a TIMESTAMP column becomes its integer milliseconds since the epoch
(as the event time does) and a DATE column its ISO string (`2024-01-31`).
Anything else msgpack cannot carry (decimals, intervals, variants, a
TIMESTAMP_NTZ, a timestamp or date inside a struct, array or map) is refused
before anything is planned, naming the column and what to cast it to.

Each event row carries its place in the order ingest takes it in (see
`flamespark.spark.ingest`): the file it was read from (none for a source of
no files) and its input partition's index in `meta`, its place in its
partition in `seq`. Spark's file source packs small files into one
partition by size, not in their order, so each file's rows are a part of
their own, taken as arriving beside the other files of the batch; ingest
numbers the parts' events in the order of their files' names.
"""
from __future__ import annotations

import time

from pyspark.sql import functions as F
from pyspark.sql import types as T

from flamespark.core.errors import InputError, OptionError
from flamespark.engines.spark.files import event_batch, event_row
from flamespark.engines.spark.rows import END, INFINITY, ROW_SCHEMA

# The `meta` of an input's end row: after every part's (a file name in UTF-8, which has no byte 0xff, a NUL and a
# 4-byte partition index), so that ingest takes it last.
END_PART = b"\xff"

_CARRIED = (T.StringType, T.BinaryType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType,
            T.FloatType, T.DoubleType, T.NullType)
_CASTS = {
    T.DecimalType: "DOUBLE (approximate) or STRING (exact)",
    T.TimestampNTZType: "TIMESTAMP (it has no time zone, so no instant in milliseconds)",
    T.DayTimeIntervalType: "a LONG of milliseconds",
    T.YearMonthIntervalType: "an INT of months",
}


def check_columns(source: str, frame, event_time) -> None:
    """OptionError unless `frame`, the input of `source`, has an event-time column `event_time` that is a LONG
    (ms) or a TIMESTAMP, and only columns whose values a payload can carry."""
    schema = frame.schema
    names = schema.fieldNames()
    if not isinstance(event_time, str) or event_time not in names:
        raise OptionError(f"input {source!r} has no event-time column {event_time!r}; its columns are "
                          f"{', '.join(names)}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise OptionError(f"input {source!r} has several columns named {', '.join(map(repr, duplicates))}: a "
                          f"payload is a dict of the columns, so their names must differ")
    kind = schema[event_time].dataType
    if not isinstance(kind, (T.LongType, T.TimestampType)):
        raise OptionError(f"event-time column {event_time!r} of input {source!r} is {kind.simpleString().upper()}: "
                          f"it must be a LONG of milliseconds or a TIMESTAMP (cast it to one)")
    for field in schema.fields:
        problem = _problem(field.dataType, top=True)
        if problem:
            raise OptionError(f"column {field.name!r} of input {source!r} {problem}")


def _problem(kind, top: bool) -> str | None:
    """Why a column of Spark type `kind` cannot be a payload's value (None if it can); `top` if it is a column
    itself, not inside one (where a timestamp or date is converted)."""
    if isinstance(kind, (T.TimestampType, T.DateType)):
        if top:
            return None
        return (f"holds a {kind.simpleString().upper()} inside a struct, array or map, which a payload cannot "
                f"carry: select it as a column of its own, or as milliseconds (unix_millis) or a string")
    if isinstance(kind, _CARRIED):
        return None
    if isinstance(kind, T.ArrayType):
        return _problem(kind.elementType, top=False)
    if isinstance(kind, T.MapType):
        return _problem(kind.keyType, top=False) or _problem(kind.valueType, top=False)
    if isinstance(kind, T.StructType):
        return next(filter(None, (_problem(field.dataType, top=False) for field in kind.fields)), None)
    cast = next((cast for type_, cast in _CASTS.items() if isinstance(kind, type_)), "a type msgpack carries")
    return f"is {kind.simpleString().upper()}, which a payload cannot carry: cast it to {cast}"


def _converted(field):
    """The column of `field` as a payload holds it: a TIMESTAMP as its milliseconds, a DATE as its ISO string."""
    column = F.col(f"`{field.name}`")
    if isinstance(field.dataType, T.TimestampType):
        return F.unix_millis(column).alias(field.name)
    if isinstance(field.dataType, T.DateType):
        return column.cast("string").alias(field.name)
    return column


def event_rows(source: str, frame, event_time: str, key: int):
    """The raw event rows (ROW_SCHEMA) of `frame`, the input of `source`, all with ingest group `key`; columns
    checked by `check_columns`."""
    # The file first: the user's columns may have any names.
    payloads = frame.select(F.input_file_name(), *map(_converted, frame.schema.fields))
    return payloads.mapInArrow(_PartitionEvents(source, event_time, key), ROW_SCHEMA)


def end_rows(spark, sources_and_keys: dict):
    """A static DataFrame of one end row per source, `{source: ingest group key}`: a static input ends."""
    rows = [(END, source, key, INFINITY, END_PART, b"", False, 0.0, 0, None) for source, key in sources_and_keys.items()]
    return spark.createDataFrame(rows, ROW_SCHEMA)


class _PartitionEvents:
    """`mapInArrow`'s function: one input partition's rows as event rows, in their order."""

    def __init__(self, source: str, event_time: str, key: int):
        self.source = source
        self.event_time = event_time
        self.key = key

    def __call__(self, batches):
        from pyspark import TaskContext

        partition = TaskContext.get().partitionId()
        suffix = b"\0" + partition.to_bytes(4, "big")
        source, event_time, key = self.source, self.event_time, self.key
        index = 0
        for batch in batches:
            now = time.time()
            rows = []
            files = batch.column(0).dictionary_encode()  # a file's name made into bytes once, not once a row
            parts = [name.encode() + suffix for name in files.dictionary.to_pylist()]
            for file, payload in zip(files.indices.to_pylist(), batch.remove_column(0).to_pylist(
                    maps_as_pydicts="strict")):
                ts = payload[event_time]
                if ts is None:
                    raise InputError(f"input {source!r}: row {index} of partition {partition} has a null event "
                                     f"time {event_time!r}: {payload!r}")
                rows.append(event_row(source, key, ts, payload, parts[file], index, now))
                index += 1
            yield event_batch(rows)
