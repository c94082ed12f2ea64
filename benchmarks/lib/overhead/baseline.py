"""Query B: the running count per key as a Spark user writes it when order does not matter."""
from __future__ import annotations

import shutil
import tempfile
import time
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming import StatefulProcessor

from benchmarks.lib.overhead.settings import BASELINES
from flamespark.core.codec import pack
from flamespark.engines.spark.replay import ReplaySource, write_replay_file
from flamespark.engines.spark.rows import EVENT
from flamespark.io.atomic import write_atomic
BASELINE_SCHEMA = "key STRING, count LONG, ts LONG"


class KeyCounter(StatefulProcessor):
    """Grouped by key: the key's count in a ValueState; rows counted in the order they come."""

    def init(self, handle):
        self.seen = handle.getValueState("seen", "n LONG")

    def handleInputRows(self, key, rows, timerValues):
        batch = pd.concat(list(rows), ignore_index=True)
        stored = self.seen.get()  # None for a new key: one state call, not exists() + get()
        before = stored[0] if stored else 0
        counts = np.arange(before + 1, before + len(batch) + 1, dtype=np.int64)
        self.seen.update((int(counts[-1]),))
        yield pd.DataFrame({"key": batch["key"], "count": counts, "ts": batch["ts"]})

    def close(self):
        pass


class ShardCounter(StatefulProcessor):
    """Grouped by shard: all of the shard's counts in one msgpack dict (one state read and write a batch)."""

    def init(self, handle):
        self.blob = handle.getValueState("counts", "blob BINARY")

    def handleInputRows(self, key, rows, timerValues):
        batch = pd.concat(list(rows), ignore_index=True)
        stored = self.blob.get()
        counts = msgpack.unpackb(stored[0]) if stored else {}
        before = batch["key"].map(counts).fillna(0).astype(np.int64)
        batch["count"] = before + batch.groupby("key").cumcount() + 1
        counts.update(batch.groupby("key")["count"].max().astype(int).to_dict())
        self.blob.update((msgpack.packb(counts),))
        yield batch[["key", "count", "ts"]]

    def close(self):
        pass


def decoder(shards: int):
    """`mapInArrow` function: replay rows to `key, ts, shard`, the key read from the msgpack payload."""

    def decode(batches):
        for batch in batches:
            keys = [msgpack.unpackb(data)["key"] for data in batch.column("payload").to_pylist()]
            shard = [zlib.crc32(key.encode()) % shards for key in keys]
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys, pa.string()), batch.column("ts"), pa.array(shard, pa.int32())],
                names=["key", "ts", "shard"])

    return decode


def build_baseline(spark, replay_path, max_rows: int | None, baseline: str = "key", shards: int = 2):
    """B as a streaming DataFrame of `key, count, ts`: one row per event."""
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    spark.dataSource.register(ReplaySource)
    reader = spark.readStream.format(ReplaySource.name()).option("path", str(replay_path)).option("source", "events")
    if max_rows:
        reader = reader.option("maxRowsPerBatch", str(max_rows))
    events = reader.load().filter(f"kind = '{EVENT}'").select("ts", "payload")
    decoded = events.mapInArrow(decoder(shards), "key STRING, ts LONG, shard INT")
    if baseline == "key":
        grouped, processor = decoded.select("key", "ts").groupBy("key"), KeyCounter()
    else:
        grouped, processor = decoded.groupBy("shard"), ShardCounter()
    return grouped.transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=BASELINE_SCHEMA, outputMode="Append", timeMode="None")


class PartWriter:
    """`foreachBatch` sink like FlameSpark's: one collect, one part file per batch, written atomically."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def __call__(self, frame, batch_id):
        rows = frame.collect()
        write_atomic(self.directory / f"batch-{batch_id:08d}.msgpack", msgpack.packb(
            {"batch": batch_id, "released_at": time.time(), "outputs": [[r.key, r["count"], r.ts] for r in rows]}))

    def outputs(self) -> int:
        return sum(len(msgpack.unpackb(p.read_bytes())["outputs"]) for p in self.directory.glob("batch-*.msgpack"))

    def batches(self) -> int:
        return len(list(self.directory.glob("batch-*.msgpack")))


def write_baseline_input(path, events) -> int:
    """B's replay file: the payloads encoded as FlameSpark encodes them for its own replay file."""
    return write_replay_file(path, ((event["ts"], pack(event)) for event in events))


def run_baseline(spark, replay_path, events: int, max_rows: int | None, baseline: str, shards: int, listener,
                 timeout: float | None = None) -> dict:
    """Run B once from an existing replay file; the run's facts and Spark's progress reports."""
    workdir = Path(tempfile.mkdtemp(prefix="flamespark-overhead-"))
    try:
        name = f"overhead_baseline_{baseline}"
        listener.expect(name)
        started = time.perf_counter()
        stream = build_baseline(spark, replay_path, max_rows, baseline, shards)
        writer = PartWriter(workdir / "parts")
        query_started = time.perf_counter()
        query = (stream.writeStream.foreachBatch(writer).trigger(availableNow=True)
                 .option("checkpointLocation", str(workdir / "checkpoint")).queryName(name).start())
        if query.awaitTermination(timeout) is False:  # a failed query raises here
            query.stop()
            raise RuntimeError(f"the baseline query did not finish within {timeout} s")
        wall_s = time.perf_counter() - query_started
        outputs, batches = writer.outputs(), writer.batches()
        total_s = time.perf_counter() - started
        reports = listener.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"query": f"baseline-{baseline}", "wall_s": wall_s, "total_s": total_s, "events": events,
            "outputs": outputs, "batches": batches, "reports": reports}
