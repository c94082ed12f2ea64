"""Kafka topics as sinks, against a real broker: what a read_committed consumer sees is every output once,
with its event time; a replayed batch writes nothing, an earlier writer is fenced. (Spark runs killed mid-run:
test_kafka_spark.py.)"""
import json
import random
import time

import pytest

import flamespark as fs
from examples.running_sum import graph as running_sum, readings
from flamespark.cli import main
from flamespark.io.kafka_sink import KafkaSinkWriter, kafka_sinks
from tests.kafka_broker import free_port
from tests.kafka_topics import committed_records, produce, values

pytestmark = pytest.mark.kafka

LATENCY = 6


def disordered_readings(count: int, behind: int, seed: int = 1) -> list:
    """`count` readings, each less than `behind` ms behind the newest."""
    rng = random.Random(seed)
    events = list(readings(count, sensors=5, seed=seed))
    return sorted(events, key=lambda reading: reading["ts"] + rng.randrange(behind))


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def assert_event_times(records, totals):
    """Each record has its output's event time in its header `ts`, and as its timestamp where Kafka can
    hold it (above 0: the broker stamps the others)."""
    assert [headers["ts"] for *_, headers in records] == [str(total["ts"]).encode() for total in totals]
    assert [(timestamp, total["ts"]) for (*_, timestamp, _), total in zip(records, totals) if total["ts"] > 0] == \
        [(total["ts"], total["ts"]) for total in totals if total["ts"] > 0]


def test_a_local_run_sends_its_outputs_and_changelog_once_with_their_event_times(kafka_broker, tmp_path):
    events = write_jsonl(tmp_path / "readings.jsonl", disordered_readings(60, 2 * LATENCY))  # some late
    topic = f"totals-local-{random.randrange(10**9)}"
    result = fs.run(running_sum, {"readings": str(events)}, reorder_latency=LATENCY, changes=True,
                    sinks={"totals": kafka_broker.url(topic)})
    records = committed_records(kafka_broker, topic)
    assert values(records) == result.outputs["totals"] and result.late
    assert_event_times(records, result.outputs["totals"])
    assert values(committed_records(kafka_broker, f"{topic}.changes")) == result.changes["totals"]


def test_a_batch_is_written_once_however_often_it_is_replayed_and_an_earlier_writer_is_fenced(kafka_broker):
    topic = kafka_sinks({"out": kafka_broker.url(f"fenced-{random.randrange(10**9)}")}, ["out"])["out"]
    first = KafkaSinkWriter("out", topic, f"writer-{topic.topic}").open()
    assert first.write(0, [({"n": 0}, 5)])
    # A restarted run's writer, of the same id: it fences the first, and knows batch 0 was written.
    second = KafkaSinkWriter("out", topic, f"writer-{topic.topic}").open()
    assert second.committed == 0
    assert not second.write(0, [({"n": 0}, 5)])
    with pytest.raises(fs.BrokerError, match="did not take batch 1"):
        first.write(1, [({"n": 1}, 6)])
    assert second.write(1, [({"n": 1}, 6)])
    assert values(committed_records(kafka_broker, topic.topic)) == [{"n": 0}, {"n": 1}]
    first.close()
    second.close()


def test_a_run_that_fails_before_its_first_batch_writes_nothing_to_its_sink(kafka_broker, tmp_path):
    events = write_jsonl(tmp_path / "readings.jsonl", [{"ts": 1, "sensor": "a", "value": 1}, {"sensor": "a"}])
    topic = f"never-{random.randrange(10**9)}"
    with pytest.raises(fs.InputError, match="readings.jsonl:2: missing event time"):
        fs.run(running_sum, {"readings": str(events)}, sinks={"totals": kafka_broker.url(topic)})
    with pytest.raises(fs.InputError, match="the graph has no sink of that name"):
        fs.run(running_sum, {"readings": str(events)}, sinks={"total": kafka_broker.url(topic)})
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_broker.address})
    assert topic not in admin.list_topics(timeout=10).topics


def test_the_cli_runs_from_a_topic_to_a_topic_on_the_local_engine(kafka_broker, tmp_path, capsys):
    events = disordered_readings(40, LATENCY)
    source = kafka_broker.new_topic("cli-readings")
    produce(kafka_broker, source, [events])
    sink = f"cli-totals-{source}"
    out = tmp_path / "out"
    assert main(["run", "examples/running_sum.py:graph", "--engine", "local", "--reorder-latency", str(LATENCY),
                 "--input", f"readings={kafka_broker.url(source)}", "--sink", f"totals={kafka_broker.url(sink)}",
                 "--out", str(out)]) == 0
    expected = fs.run(running_sum, {"readings": [(event["ts"], event) for event in events]},
                      reorder_latency=LATENCY)
    assert values(committed_records(kafka_broker, sink)) == expected.outputs["totals"]
    assert sorted(path.name for path in out.iterdir()) == ["late.jsonl", "metrics.json"]
    with pytest.raises(SystemExit):
        main(["run", "examples/running_sum.py:graph", "--input", "readings=x.jsonl", "--sink", "totals=out.jsonl",
              "--out", str(out)])
    assert "expected NAME=kafka://HOST:PORT/TOPIC, got 'totals=out.jsonl'" in capsys.readouterr().err


def test_a_sink_on_an_unreachable_broker_fails_the_run_within_15_s_naming_its_address():
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(fs.BrokerError, match=rf"^Kafka broker {address} cannot be reached \("):
        fs.run(running_sum, {"readings": [(1, {"sensor": "s0", "value": 1})]},
               sinks={"totals": f"kafka://{address}/totals"})
    assert time.monotonic() - started < 15
