"""Directory inputs: Spark's file source over JSONL or Parquet files, turned into event rows.

Each source reads one directory. JSONL files (`*.jsonl`) are read whole, as
bytes, and split into events by the same reader as every other input, so an
error names the file and line; Parquet files (`*.parquet`) are read with the
schema of the files present when the query starts, and each row is checked
like any other event object. Spark's checkpoint
records which files a query has read, so a restart neither rereads nor skips
one. An event row carries its file's path in `meta` (which an item gets only
at ingest) and its line or row number in `seq`: ingest orders a batch's
events by both, so files arrive in name order, as the local engine reads
them, and each file's events in their order.
"""
import io
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from flamespark.core.errors import InputError
from flamespark.core.items import encode_event
from flamespark.engines.spark.rows import COLUMNS, EVENT, ROW_SCHEMA
from flamespark.io.inputs import check_parquet_schema, event_files, jsonl_events
from flamespark.io.parsing import check_record

_ARROW_SCHEMA = pa.schema([
    ("kind", pa.string()), ("target", pa.string()), ("shard", pa.int32()), ("ts", pa.int64()),
    ("meta", pa.binary()), ("payload", pa.binary()), ("tombstone", pa.bool_()), ("arrival", pa.float64()),
    ("seq", pa.int64()), ("cause", pa.binary()),
])

_BINARY_FILE_SCHEMA = T.StructType([
    T.StructField("path", T.StringType()), T.StructField("modificationTime", T.TimestampType()),
    T.StructField("length", T.LongType()), T.StructField("content", T.BinaryType()),
])


def file_stream(spark, source: str, directory, fmt: str, key: int = 0):
    """A streaming DataFrame of ROW_SCHEMA event rows for the files of `directory`, all with shard `key`."""
    directory = str(Path(directory).resolve())
    if fmt == "jsonl":
        files = (
            spark.readStream.format("binaryFile").schema(_BINARY_FILE_SCHEMA).option("pathGlobFilter", "*.jsonl")
            .load(directory).select(F.col("content"), F.col("_metadata.file_path").alias("file"))
        )
        return files.mapInArrow(_jsonl_events(source, key), ROW_SCHEMA)
    schema = _parquet_schema(source, directory)
    rows = (
        spark.readStream.schema(schema).option("pathGlobFilter", "*.parquet").parquet(directory)
        .select(F.struct(*schema.fieldNames()).alias("event"), F.col("_metadata.file_path").alias("file"),
                F.col("_metadata.row_index").alias("row"))
    )
    return rows.mapInArrow(_parquet_events(source, key), ROW_SCHEMA)


def _parquet_schema(source, directory) -> T.StructType:
    files = event_files(directory)
    if not files:
        raise InputError(f"input {source!r}: {directory} has no .parquet file yet to learn the schema from")
    schema = pq.read_schema(files[0])
    check_parquet_schema(files[0], schema)
    return from_arrow_schema(schema)


def event_row(source, key, ts, payload, meta: bytes, seq, now) -> tuple:
    """The raw event row of an event of `source` for ingest group `key`; `meta` and `seq` place it in its
    arrival order (see IngestProcessor)."""
    return (EVENT, source, key, ts, meta, encode_event(source, ts, payload), False, now, seq, None)


def event_batch(rows: list) -> pa.RecordBatch:
    """Event rows as an Arrow batch of ROW_SCHEMA, as `mapInArrow` yields them."""
    columns = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, _ARROW_SCHEMA)], schema=_ARROW_SCHEMA
    )


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def _jsonl_events(source, key):
    def convert(batches):
        for batch in batches:
            now = time.time()
            rows = []
            for content, path in zip(batch.column("content").to_pylist(), batch.column("file").to_pylist()):
                for number, ts, payload in jsonl_events(io.BytesIO(content), _local(path)):
                    rows.append(event_row(source, key, ts, payload, path.encode(), number, now))
            yield event_batch(rows)

    return convert


def _parquet_events(source, key):
    def convert(batches):
        for batch in batches:
            now = time.time()
            rows = []
            for event, path, row in zip(batch.column("event").to_pylist(), batch.column("file").to_pylist(),
                                        batch.column("row").to_pylist()):
                ts, payload = check_record(event, f"{_local(path)}, row {row}")
                rows.append(event_row(source, key, ts, payload, path.encode(), row, now))
            yield event_batch(rows)

    return convert
