"""Ad clicks inside a PySpark pipeline: JSON files in through Spark's file source, Parquet out.

    python examples/spark_dataframes.py              # works in ./spark-dataframes/
    python examples/spark_dataframes.py WORKDIR      # or there

It writes three hours of made-up ad traffic (examples/ad_clicks.py), 30 % of it
late by |N(0, 20 s)|, as JSON files a producer would drop into
WORKDIR/incoming/, reads them with `spark.readStream`, runs the ad-clicks
graph on them with `flamespark.spark.stream`, and writes its results twice,
the two ways a user would:

- `writeStream.format("parquet")`: every row of the result (all sinks, with
  their `sink` and `kind` columns) into one table, WORKDIR/results/, by
  Spark's file sink, exactly once across restarts;
- `foreachBatch`, split by sink: each sink's outputs as typed columns
  (`flamespark.spark.payloads`) into a table of its own,
  WORKDIR/tables/<sink>/, each micro-batch under `batch=<id>` (overwritten
  if Spark runs the batch again, so it too is written once).

Each query runs the graph on its own; a pipeline picks the one it needs.
A stream has no end: a result is released once events later than it by the
reorder latency have come from both sources, so the last minutes of the
hour stay open until more traffic comes (run it again on the same WORKDIR
to see the query resume and read only new files).
"""
import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from flamespark.spark import payloads, stream
from flamespark.tools.disorder import disorder_pairs
from flamespark.tools.loader import load_module

HERE = Path(__file__).resolve().parent
ad_clicks = load_module(HERE / "ad_clicks.py")  # loaded so that Spark's workers get its functions by value

REORDER_LATENCY = 120_000  # ms: an event may come up to 2 minutes behind the newest one
SCHEMA = "impression LONG, ad STRING, ts LONG"
# The typed columns of each sink's payloads.
TABLES = {
    "clicks_per_minute": "key STRING, start LONG, end LONG, value LONG",
    "unclicked": "impression LONG, ad STRING, ts LONG",
    "ctr_per_hour": "key STRING, start LONG, end LONG, value STRUCT<impressions: LONG, clicks: LONG, ctr: DOUBLE>",
}


def write_incoming(folder: Path, minutes: int = 180, files: int = 4):
    """The traffic of `minutes`, out of order, as `files` JSON files per source under `folder/<source>/`, each
    written aside and moved in whole (a file source must never read a file half-written)."""
    traffic = ad_clicks.traffic(minutes=minutes, seed=7)
    for index, (source, pairs) in enumerate(traffic.items()):
        arrival = disorder_pairs(pairs, 30.0, 20_000, seed=index)
        (folder / source).mkdir(parents=True, exist_ok=True)
        size = -(-len(arrival) // files)
        for number in range(files):
            part = arrival[number * size:(number + 1) * size]
            staged = folder / f".{source}-{number}.json"
            staged.write_text("".join(json.dumps(payload) + "\n" for _, payload in part))
            staged.rename(folder / source / f"part-{number}.json")


def session() -> SparkSession:
    """A local session with what FlameSpark's stages need: RocksDB's state store (for transformWithStateInPandas),
    and as many shuffle partitions as cores, over which FlameSpark spreads its shards."""
    spark = (SparkSession.builder.master("local[2]").appName("spark_dataframes")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def each_sink_to_parquet(tables: Path):
    """The `foreachBatch` function that writes each sink's outputs of a micro-batch as typed Parquet."""
    def write(frame, batch_id):
        frame.persist()  # one computation of the batch for every sink
        for sink, schema in TABLES.items():
            payloads(frame, sink, schema).write.mode("overwrite").parquet(str(tables / sink / f"batch={batch_id}"))
        frame.unpersist()

    return write


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    work = Path(args[0] if args else "spark-dataframes").resolve()
    if not (work / "incoming").is_dir():
        write_incoming(work / "incoming")
    spark = session()
    events = {source: spark.readStream.schema(SCHEMA).json(str(work / "incoming" / source))
              for source in ("impressions", "clicks")}
    out = stream(ad_clicks.graph(), events, event_time="ts", reorder_latency=REORDER_LATENCY)

    everything = (out.writeStream.format("parquet").option("checkpointLocation", str(work / "checkpoints" / "all"))
                  .trigger(availableNow=True).start(str(work / "results")))
    by_sink = (out.writeStream.foreachBatch(each_sink_to_parquet(work / "tables"))
               .option("checkpointLocation", str(work / "checkpoints" / "by_sink")).trigger(availableNow=True).start())
    everything.awaitTermination()
    by_sink.awaitTermination()

    results = spark.read.parquet(str(work / "results"))
    late = results.where("kind = 'late'").count()
    print(f"spark_dataframes: results in {work / 'results'} and {work / 'tables'}; {late} late event(s) dropped")
    for sink in TABLES:
        table = spark.read.parquet(str(work / "tables" / sink))
        first = table.orderBy(*table.columns[:2]).first()
        print(f"{sink}: {table.count()} released, e.g. {first.asDict(recursive=True) if first else None}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
