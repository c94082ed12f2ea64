"""The streaming query of the DataFrame restart tests, the same in the test process and in one it kills:
the windows-and-join graph of test_windows_spark over JSON files read one a micro-batch per source, its
outputs, changelog and dead letters written by Spark's Parquet file sink.

    python -m tests.spark.frames_query DIRECTORY     # runs until killed, on DIRECTORY's inputs and checkpoint
"""
import json
import os
import sys
import time
from pathlib import Path

from flamespark.spark import stream
from tests.spark.test_windows_spark import LATENCY, graph

SOURCES = {"events": "ts LONG, t LONG, k LONG, v LONG", "clicks": "ts LONG, t LONG, k LONG, v LONG"}


def write_files(directory: Path, source: str, chunks: list, first: int = 0):
    """Each chunk of `(ts, payload)` events as a JSON file of `directory/source/`, numbered from `first`, each
    modified a second after the one before: Spark's file source takes files in that order."""
    folder = directory / "inputs" / source
    folder.mkdir(parents=True, exist_ok=True)
    for number, events in enumerate(chunks, first):
        path = folder / f"{number:03d}.json"
        staged = folder.parent / f".{source}-{number:03d}.json"  # moved in whole, never read half-written
        staged.write_text("".join(json.dumps({"ts": ts, **payload}) + "\n" for ts, payload in events))
        stamp = time.time() - 1000 + number
        os.utime(staged, (stamp, stamp))
        staged.rename(path)


def start(spark, directory: Path, trigger: dict, reorder_latency: int = LATENCY):
    """The query over `directory`'s inputs, writing to `directory/results` from `directory/checkpoint`."""
    inputs = {source: spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
              .json(str(directory / "inputs" / source)) for source, schema in SOURCES.items()}
    out = stream(graph(), inputs, event_time="ts", reorder_latency=reorder_latency, changes=True, shards=2)
    return (out.writeStream.format("parquet").option("checkpointLocation", str(directory / "checkpoint"))
            .trigger(**trigger).start(str(directory / "results")))


if __name__ == "__main__":
    from flamespark.engines.spark.session import spark_session

    start(spark_session("local[2]", 2), Path(sys.argv[1]), {"processingTime": "0 seconds"}).awaitTermination()
