"""Kafka in and out against files in and out, side by side on one machine (docs/benchmarks.md, section Kafka).

    python benchmarks/kafka_vs_files.py BROKER index WIKI.jsonl [--rounds 2]
    python benchmarks/kafka_vs_files.py BROKER count [--events 200000] [--partitions 8] [--rounds 2]

`index`: the inverted index (benchmarks/inverted_index_tuned.py) on Spark local[2], reorder latency 3 s, the
documents of WIKI.jsonl offered at 10 docs/s, alternating: from the file (replayed at that rate) to files,
the same with the events ingested by the ingest operator (as a topic's are) rather than in the replay's
read tasks, and from a topic of 2 partitions, into which a producer puts the documents at that rate while the run
follows it, to two topics. Once the producer is done and the topic run has released what it can, the run is
stopped and run again from its checkpoint to the end of the topic, which ends the input and releases the
rest; then its topics' committed records must equal the file run's outputs. Latency: the final latency of
the outputs the topic run released while it followed, in both runs, from each one's arrival (for the file,
when the replay clock made the document due; for the topic, when the batch read it), and how long each
record waited in the topic before the batch that read it started.

`count`: the running sum (examples/running_sum.py) of N in-order readings of 1,000 sensors, unpaced, read to
the end, alternating: from a JSONL file to files, and from a topic of P partitions to a topic; on the local
engine (the CLI, a process a run) and on Spark local[2] (one session; the file's events spread over P ingest
partitions, as the topic's P partitions are). Outputs must be equal.

Each run prints a JSON line; the last line is the summary.
"""
import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

if not __package__:  # run as `python benchmarks/kafka_vs_files.py`: this checkout's packages first
    import _checkout  # noqa: F401

import msgpack

import flamespark as fs
from flamespark.tools.arguments import DefaultsHelpFormatter, positive_int
from flamespark.core.codec import unpack

REPO = Path(__file__).resolve().parents[1]
RATE = 10.0
INDEX_LATENCY_MS = 3000
INDEX_PARTITIONS = 2  # as many as the file run's ingest partitions (its shards)
SENSORS = 1000
TIMEOUT_S = 1800
QUIET_S = 5.0  # a following run that wrote no batch for this long, its producer done, has released what it can


# --- topics ------------------------------------------------------------------------------------------------


def new_topic(broker: str, name: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"{name}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker, "log_level": 0})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def fill(broker: str, topic: str, values: list, partitions: int):
    """Value i into partition i % `partitions`, JSON-encoded, in order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "linger.ms": 20, "log_level": 0})
    for index, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, json.dumps(value).encode(), partition=index % partitions)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def committed_values(broker: str, topic: str) -> list:
    """The values of the committed records of `topic` (one partition, as FlameSpark's sinks make them)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker, "group.id": "bench", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True, "log_level": 0})
    try:
        partition = TopicPartition(topic, 0, 0)
        end = consumer.get_watermark_offsets(partition, timeout=30)[1]
        consumer.assign([partition])
        found = []
        while end:
            message = consumer.poll(30)
            assert message is not None, f"no record of {topic} within 30 s"
            error = message.error()
            if error is None:
                found.append(json.loads(message.value()))
            elif error.code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(error.str())
            if error is not None or message.offset() + 1 >= end:
                return found
        return found
    finally:
        consumer.close()


# --- index: the inverted index at 10 docs/s on Spark -------------------------------------------------------


def batch_parts(checkpoint: Path) -> list:
    return [msgpack.unpackb(path.read_bytes()) for path in sorted((checkpoint / "parts").glob("batch-*.msgpack"))]


def output_key(sink: str, data: bytes) -> str:
    return sink + json.dumps(unpack(data), sort_keys=True)


def final_latencies(parts: list) -> dict:
    """`{output: final latency (ms)}` of the outputs the batch files `parts` released."""
    return {output_key(sink, data): (part["released_at"] - arrival) * 1000.0
            for part in parts for sink, data, arrival in part["outputs"]}


def watch(spark) -> Future:
    """The next query that starts on `spark`, once it has (its progress outlives it)."""
    found = Future()

    def look():
        while not spark.streams.active:
            time.sleep(0.05)
        found.set_result(spark.streams.active[0])

    threading.Thread(target=look, daemon=True).start()
    return found


def batch_phases(progress: list) -> dict:
    """The number of micro-batches of `progress` and the median of each phase of their time (ms), as Spark
    reports it (`addBatch` runs the batch and the foreachBatch sink; `latestOffset` asks the source)."""
    phases = {}
    progress = [entry for entry in progress if "addBatch" in entry.get("durationMs", {})]  # no idle triggers
    for entry in progress:
        for phase, ms in entry["durationMs"].items():
            phases.setdefault(phase, []).append(ms)
    return {"batches": len(progress), **{phase: statistics.median(ms) for phase, ms in sorted(phases.items())}}


def index_file_run(spark, graph, wiki: Path, workdir: Path, through_ingest: bool) -> dict:
    """The file run; `through_ingest`, with its events ingested by the ingest operator, as a topic's are (an idle
    timeout longer than the run has them go through it), rather than in the replay's read tasks."""
    watched = watch(spark)
    result = fs.run(graph, {"docs": str(wiki)}, engine="spark", spark=spark, shards=2, rate=RATE,
                    reorder_latency=INDEX_LATENCY_MS, checkpoint=workdir / "checkpoint", output=workdir / "out",
                    progress=False, timeout=TIMEOUT_S, idle_timeout=float(TIMEOUT_S) if through_ingest else None)
    progress = [json.loads(entry.json) for entry in watched.result().recentProgress]
    return {"run": "file to files" + (", ingest operator" if through_ingest else ""), "outputs": result.outputs,
            "batches": batch_phases(progress), "latencies": final_latencies(batch_parts(workdir / "checkpoint"))}


def _batch_read(progress: list, partition: int, offset: int):
    """The trigger time (epoch s) of the batch of `progress` that read record `offset` of `partition`."""
    for entry in progress:
        if not entry.get("sources"):
            continue
        start, end = (_offset(entry["sources"][0][key]) for key in ("startOffset", "endOffset"))
        if start.get(str(partition), 0) <= offset < end.get(str(partition), 0):
            stamp = entry["timestamp"].replace("Z", "+00:00")
            return datetime.datetime.fromisoformat(stamp).timestamp()
    return None


def _offset(given) -> dict:
    """`{partition: next offset}` of a progress entry's offset of the Kafka source (JSON, as text or parsed; none
    before the first batch)."""
    if given is None:
        return {}
    return (json.loads(given) if isinstance(given, str) else given)["next"]


def index_kafka_run(spark, graph, broker: str, docs: list, workdir: Path) -> dict:
    from confluent_kafka import Producer

    source = new_topic(broker, "docs", INDEX_PARTITIONS)
    sinks = {sink: f"kafka://{broker}/{sink}-{source}" for sink in graph.sinks}
    checkpoint = workdir / "checkpoint"
    sent = {}  # (partition, offset) -> when the record was produced (epoch s)
    done = threading.Event()

    def produce():
        while not spark.streams.active:
            time.sleep(0.05)
        producer = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "linger.ms": 0,
                             "log_level": 0})
        start = time.time()
        for index, doc in enumerate(docs):
            time.sleep(max(0.0, start + index / RATE - time.time()))
            produced = time.time()
            producer.produce(source, json.dumps(doc).encode(), partition=index % INDEX_PARTITIONS,
                             on_delivery=lambda error, message, at=produced: sent.__setitem__(
                                 (message.partition(), message.offset()), at))
            producer.poll(0)
        producer.flush(60)
        done.set()

    def run(follow: bool):
        return fs.run(graph, {"docs": f"kafka://{broker}/{source}"}, engine="spark", spark=spark, shards=2,
                      reorder_latency=INDEX_LATENCY_MS, follow=follow, checkpoint=checkpoint, sinks=sinks,
                      output=workdir / "out", progress=False, timeout=TIMEOUT_S)

    follower = threading.Thread(target=run, args=(True,))
    producer = threading.Thread(target=produce)
    follower.start()
    producer.start()
    done.wait(TIMEOUT_S)
    written = -1
    while written != len(batch_parts(checkpoint)):  # until no batch comes for QUIET_S
        written = len(batch_parts(checkpoint))
        time.sleep(QUIET_S)
    query = spark.streams.active[0]
    progress = [json.loads(entry.json) for entry in query.recentProgress]
    query.stop()
    follower.join()
    producer.join()
    followed = batch_parts(checkpoint)
    run(follow=False)  # to the end of the topic: ends the input, releases the rest
    waits = [(_batch_read(progress, *place) - at) * 1000.0 for place, at in sent.items()
             if _batch_read(progress, *place) is not None]
    return {"run": "topic to topics", "batches": batch_phases(progress),
            "outputs": {sink: committed_values(broker, url.rsplit("/", 1)[1]) for sink, url in sinks.items()},
            "latencies": final_latencies(followed), "topic_wait_ms": waits}


def comparable(outputs: dict) -> dict:
    """Each sink's outputs as a sorted list of JSON texts: the runs release the same outputs, in batches that may
    differ, and so in orders that may differ within a batch."""
    return {sink: sorted(json.dumps(value, sort_keys=True) for value in values) for sink, values in outputs.items()}


def _percentile(values: list, share: float):
    values = sorted(values)
    return round(values[min(len(values) - 1, int(share * len(values)))]) if values else None


def index(broker: str, wiki: Path, rounds: int):
    from benchmarks.inverted_index_tuned import graph
    from flamespark.engines.spark.session import spark_session

    docs = [json.loads(line) for line in wiki.read_text().splitlines()]
    spark = spark_session("local[2]", 2)
    runs = []
    for round_ in range(rounds):
        for kind in ("file", "file through ingest", "kafka"):
            with tempfile.TemporaryDirectory(prefix="flamespark-bench-") as directory:
                workdir = Path(directory)
                run = (index_kafka_run(spark, graph, broker, docs, workdir) if kind == "kafka"
                       else index_file_run(spark, graph, wiki, workdir, kind != "file"))
            run["round"] = round_ + 1
            runs.append(run)
    spark.stop()
    reference = comparable(runs[0]["outputs"])
    rows = []
    for run in runs:
        # Compared: the outputs that the topic run of the round released while it followed the topic.
        followed = next(other["latencies"] for other in runs
                        if other["round"] == run["round"] and "topic_wait_ms" in other)
        latencies = [ms for output, ms in run["latencies"].items() if output in followed]
        row = {"round": run["round"], "run": run["run"], "outputs_equal": comparable(run["outputs"]) == reference,
               "outputs": sum(map(len, run["outputs"].values())), "compared": len(latencies),
               "p50_ms": _percentile(latencies, 0.5), "p99_ms": _percentile(latencies, 0.99),
               "batches": run["batches"]}
        if "topic_wait_ms" in run:
            row["topic_wait_p50_ms"] = _percentile(run["topic_wait_ms"], 0.5)
            row["topic_wait_p99_ms"] = _percentile(run["topic_wait_ms"], 0.99)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(json.dumps({"summary": "index", "all_outputs_equal": all(row["outputs_equal"] for row in rows)}))


# --- count: the unpaced running sum, local engine and Spark ------------------------------------------------


def cli_run(arguments: list, out: Path) -> float:
    command = [sys.executable, "-m", "flamespark", "run", "examples/running_sum.py:graph", "--engine", "local",
               "--out", str(out), *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall_s = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return wall_s


def count_run(engine: str, kind: str, broker: str, file: Path, topic: str, partitions: int, spark, workdir: Path):
    """One run: `(wall s, query s or None, the totals)`."""
    sink = new_topic(broker, "totals", 1)
    given = str(file) if kind == "file" else f"kafka://{broker}/{topic}"
    if engine == "local":
        arguments = ["--input", f"readings={given}"]
        if kind == "kafka":
            arguments += ["--sink", f"totals=kafka://{broker}/{sink}"]
        wall_s = cli_run(arguments, workdir / "out")
        query_s = None
        totals = ([json.loads(line) for line in (workdir / "out" / "totals.jsonl").read_text().splitlines()]
                  if kind == "file" else committed_values(broker, sink))
    else:
        from examples.running_sum import graph

        sinks = {"totals": f"kafka://{broker}/{sink}"} if kind == "kafka" else None
        started = time.perf_counter()
        result = fs.run(graph, {"readings": given}, engine="spark", spark=spark, shards=2,
                        ingest_partitions=partitions, output=workdir / "out", sinks=sinks,
                        checkpoint=workdir / "checkpoint", progress=False, timeout=TIMEOUT_S)
        wall_s = time.perf_counter() - started
        query_s = result.metrics["wall_s"]
        totals = result.outputs["totals"] if kind == "file" else committed_values(broker, sink)
    return wall_s, query_s, totals


def count(broker: str, events: int, partitions: int, rounds: int, engines: list):
    from examples.running_sum import readings

    with tempfile.TemporaryDirectory(prefix="flamespark-bench-") as directory:
        file = Path(directory) / "readings.jsonl"
        values = list(readings(events, sensors=SENSORS))
        file.write_text("".join(json.dumps(value) + "\n" for value in values))
        topic = new_topic(broker, "readings", partitions)
        fill(broker, topic, values, partitions)
        spark = None
        if "spark" in engines:
            from flamespark.engines.spark.session import spark_session

            spark = spark_session("local[2]", 2)
        summary = {}
        reference = None
        for engine in engines:
            walls = {"file": [], "kafka": []}
            for round_ in range(rounds):
                for kind in ("file", "kafka"):
                    with tempfile.TemporaryDirectory(prefix="flamespark-bench-") as run_directory:
                        wall_s, query_s, totals = count_run(engine, kind, broker, file, topic, partitions, spark,
                                                            Path(run_directory))
                    totals = comparable({"totals": totals})
                    if reference is None:
                        reference = totals
                    walls[kind].append(wall_s)
                    print(json.dumps({"engine": engine, "round": round_ + 1, "run": kind, "wall_s": round(wall_s, 1),
                                      "query_s": None if query_s is None else round(query_s, 1),
                                      "outputs": len(totals["totals"]), "outputs_equal": totals == reference}), flush=True)
            summary[engine] = round(statistics.median(walls["kafka"]) / statistics.median(walls["file"]), 2)
        if spark is not None:
            spark.stop()
    print(json.dumps({"summary": "count", "kafka_over_file_median_wall": summary}))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmarks/kafka_vs_files.py", formatter_class=DefaultsHelpFormatter,
        description="Kafka in and out against files in and out, side by side: the inverted index at 10 docs/s on "
                    "Spark local[2] (index), the unpaced running sum on both engines (count). Needs a running "
                    "broker (scripts/kafka-broker.sh start PORT).")
    parser.add_argument("broker", help="HOST:PORT of a running broker")
    which = parser.add_subparsers(dest="benchmark", required=True)
    index_parser = which.add_parser("index", formatter_class=DefaultsHelpFormatter,
                                    help="the inverted index at 10 docs/s on Spark local[2]")
    index_parser.add_argument("wiki", type=Path, help="the documents, JSONL in arrival order")
    index_parser.add_argument("--rounds", type=positive_int, default=2, help="runs of each kind, alternating")
    count_parser = which.add_parser("count", formatter_class=DefaultsHelpFormatter,
                                    help="the unpaced running sum, local engine and Spark")
    count_parser.add_argument("--events", type=positive_int, default=200_000, metavar="N", help="readings")
    count_parser.add_argument("--partitions", type=positive_int, default=8, metavar="P",
                              help="partitions of the topic (and the Spark file run's ingest partitions)")
    count_parser.add_argument("--rounds", type=positive_int, default=2, help="runs of each kind, alternating")
    count_parser.add_argument("--engines", default="local,spark", help="comma-separated: local, spark")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.benchmark == "index":
        index(args.broker, args.wiki, args.rounds)
    else:
        count(args.broker, args.events, args.partitions, args.rounds, args.engines.split(","))


if __name__ == "__main__":
    main()
