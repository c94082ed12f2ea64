"""Kafka topics as inputs of the local engine, against a real broker: the same outputs as from a JSONL file,
lateness judged per partition, record timestamps, and the errors of bad records and unreachable brokers."""
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flamespark as fs
from tests.kafka_topics import produce
from tests.oracles.reference import reference_run
from tests.strategies import disordered, in_order_events

pytestmark = pytest.mark.kafka

LATENCY = 4
EXAMPLES = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _add(total, record):
    total = (total or 0) + record["v"]
    return total, [{"k": record["k"], "total": total}]


def keyed_totals():
    """A running total per key: every output depends on the order of its key's events."""
    graph = fs.Graph("totals")
    graph.source("records").stateful(key=lambda record: record["k"], update=_add, name="total").sink("totals")
    return graph


records_in_order = in_order_events(st.fixed_dictionaries({"k": st.integers(0, 2), "v": st.integers(0, 9)}),
                                   max_size=25)


def as_records(events) -> list:
    return [dict(payload, ts=ts) for ts, payload in events]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@given(data=st.data())
@EXAMPLES
def test_a_topic_of_one_partition_gives_what_its_records_as_a_jsonl_file_give(kafka_broker, tmp_path_factory, data):
    # Disorder beyond the reorder latency, so that some records are late and dropped.
    records = as_records(data.draw(disordered(data.draw(records_in_order), 2 * LATENCY)))
    topic = kafka_broker.new_topic("one-partition")
    produce(kafka_broker, topic, [records])
    file = write_jsonl(tmp_path_factory.mktemp("jsonl") / "records.jsonl", records)

    from_topic = fs.run(keyed_totals(), {"records": kafka_broker.url(topic)}, reorder_latency=LATENCY)
    from_file = fs.run(keyed_totals(), {"records": str(file)}, reorder_latency=LATENCY)
    assert from_topic.outputs == from_file.outputs
    assert from_topic.late == from_file.late
    assert from_topic.metrics["events"] == from_file.metrics["events"] == len(records) - len(from_file.late)


@given(data=st.data(), partitions=st.integers(2, 4))
@EXAMPLES
def test_each_partition_judges_lateness_by_its_own_records(kafka_broker, tmp_path_factory, data, partitions):
    parts = [as_records(data.draw(disordered(data.draw(records_in_order), 2 * LATENCY)))
             for _ in range(partitions)]
    topic = kafka_broker.new_topic("partitions", partitions)
    produce(kafka_broker, topic, parts)

    result = fs.run(keyed_totals(), {"records": kafka_broker.url(topic)}, reorder_latency=LATENCY)
    # Each partition alone, as a file, drops what it drops within the topic: lateness is the partition's own.
    directory = tmp_path_factory.mktemp("partitions")
    alone = [fs.run(keyed_totals(), {"records": str(write_jsonl(directory / f"{index}.jsonl", part))},
                    reorder_latency=LATENCY) for index, part in enumerate(parts)]
    late = [dead for run in alone for dead in run.late]
    assert sorted(map(json.dumps, result.late)) == sorted(map(json.dumps, late))
    # The rest is what an in-order run over the admitted records releases.
    admitted = [record for part in parts for record in part]
    for dead in late:
        admitted.remove(dead["payload"])
    reference = reference_run(keyed_totals(), {"records": [(record["ts"], record) for record in admitted]})
    assert result.outputs == reference


def test_ts_record_takes_the_records_timestamps_as_event_times(kafka_broker):
    topic = kafka_broker.new_topic("record-time")
    values = [{"k": 0, "v": 1}, {"k": 0, "v": 2}, {"k": 0, "v": 4}]
    produce(kafka_broker, topic, [values], timestamps=[[30, 10, 20]])
    result = fs.run(keyed_totals(), {"records": kafka_broker.url(topic, "ts=record")}, reorder_latency=100)
    # The records' times order them: v=2 (10), v=4 (20), v=1 (30).
    assert [output["total"] for output in result.outputs["totals"]] == [2, 6, 7]


@pytest.fixture(scope="module")
def bad_topic(kafka_broker):
    """A topic of two partitions whose partition 1 holds good records, then one bad record at offset 2."""
    def make(bad):
        topic = kafka_broker.new_topic("bad", 2)
        produce(kafka_broker, topic, [[{"ts": 1, "k": 0, "v": 1}], [{"ts": 1, "k": 0, "v": 1},
                                                                    {"ts": 2, "k": 0, "v": 1}, bad]])
        return topic
    return make


@pytest.mark.parametrize("bad, problem", [
    (b"{not json", "malformed JSON"),
    ({"k": 0, "v": 1}, "missing event time field 'ts'"),
    ({"ts": "soon", "k": 0, "v": 1}, "'ts' must be an integer (ms), got \"soon\""),
    (None, "the record has no value"),
])
def test_a_bad_record_is_named_by_topic_partition_and_offset(kafka_broker, bad_topic, bad, problem):
    topic = bad_topic(bad)
    with pytest.raises(fs.InputError) as caught:
        fs.run(keyed_totals(), {"records": kafka_broker.url(topic)})
    assert str(caught.value).startswith(f"input 'records': Kafka topic {topic!r}, partition 1, offset 2: {problem}")


def test_a_missing_topic_and_a_bad_address_are_input_errors(kafka_broker):
    with pytest.raises(fs.InputError, match=rf"^input 'records': Kafka topic 'absent' does not exist on "
                                            rf"{kafka_broker.address}$"):
        fs.run(keyed_totals(), {"records": kafka_broker.url("absent")})
    with pytest.raises(fs.InputError, match="the only option is ts=record"):
        fs.run(keyed_totals(), {"records": kafka_broker.url("absent", "ts=wall")})


def test_an_unreachable_broker_fails_the_run_within_15_s_naming_its_address(kafka_broker):
    from tests.kafka_broker import free_port

    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(fs.BrokerError, match=rf"^Kafka broker {address} cannot be reached \("):
        fs.run(keyed_totals(), {"records": f"kafka://{address}/records"})
    assert time.monotonic() - started < 15
