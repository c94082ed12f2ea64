"""Spark's Kafka connector or FlameSpark's Python data source: one topic read to its end, side by side.

    python benchmarks/kafka_sources.py BROKER TOPIC python|connector

Starts a local[2] session (with `connector`, one that loads spark-sql-kafka-0-10 4.2.0, the newest Maven
Central serves, through spark.jars.packages), then reads TOPIC to its end (Trigger.AvailableNow) into a
foreachBatch count twice: the first query pays for starting Spark's tasks, the second reads warm. Prints one
JSON line: the session's start (s), and per query its wall time (s), rows, and Spark's batch durations (ms).
The connector's rows get their `ts` decoded in the JVM only; the Python source's rows are FlameSpark's event
rows, every value checked and encoded.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as `python benchmarks/kafka_sources.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from flamespark.tools.arguments import DefaultsHelpFormatter

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
SOURCES = ("python", "connector")


def session(which: str):
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2"))
    if which == "connector":
        builder = builder.config("spark.jars.packages", CONNECTOR)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stream(spark, which: str, broker: str, topic: str):
    from pyspark.sql import functions as F

    if which == "connector":
        records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker)
                   .option("subscribe", topic).option("startingOffsets", "earliest")
                   .option("kafka.isolation.level", "read_committed").load())
        return records.select(F.get_json_object(F.col("value").cast("string"), "$.ts").cast("long").alias("ts"))
    from flamespark.engines.spark.kafka_source import kafka_stream
    from flamespark.io.kafka import check_topic

    url = f"kafka://{broker}/{topic}"
    return kafka_stream(spark, "events", url, list(range(len(check_topic("events", url)))), follow=False)


def query(spark, which: str, broker: str, topic: str, checkpoint: Path) -> dict:
    counts = []
    started = time.perf_counter()
    running = (stream(spark, which, broker, topic).writeStream
               .foreachBatch(lambda frame, batch: counts.append(frame.count()))
               .trigger(availableNow=True).option("checkpointLocation", str(checkpoint)).start())
    running.awaitTermination()
    return {"wall_s": round(time.perf_counter() - started, 2), "rows": sum(counts),
            "batches_ms": [entry["durationMs"].get("triggerExecution") for entry in running.recentProgress]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/kafka_sources.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what is measured.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("broker", metavar="BROKER", help="the broker's HOST:PORT")
    parser.add_argument("topic", metavar="TOPIC", help="the topic to read to its end (JSONL records with a 'ts')")
    parser.add_argument("source", choices=SOURCES, help="which source reads it")
    return parser


def command(args) -> int:
    started = time.perf_counter()
    spark = session(args.source)
    session_s = round(time.perf_counter() - started, 2)
    with tempfile.TemporaryDirectory() as directory:
        queries = [query(spark, args.source, args.broker, args.topic, Path(directory) / str(n)) for n in range(2)]
    print(json.dumps({"source": args.source, "session_s": session_s, "queries": queries}))
    spark.stop()
    return 0


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
