"""Putting events into and reading records out of a test broker's topics, with the plain client."""
import json
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def produce(broker, topic: str, partitions: list[list], timestamps: list[list] | None = None):
    """Write each partition's values (JSON-encoded unless bytes) to it, in order, as committed records."""
    # Idempotent: a retried batch never lands behind a later one, which would disorder the partition.
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5, "enable.idempotence": True})
    for partition, values in enumerate(partitions):
        for index, value in enumerate(values):
            data = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()
            stamp = timestamps[partition][index] if timestamps else 0
            producer.produce(topic, data, partition=partition, timestamp=stamp)
    assert producer.flush(30) == 0


def _settled_ends(broker, topic: str, consumer, timeout: float) -> dict:
    """The end offsets of `topic`'s partitions once no transaction is open in them: a transaction's commit
    returns before the broker has written its markers, and until then a committed consumer stops short of it."""
    partitions = sorted(consumer.list_topics(topic, timeout=timeout).topics[topic].partitions)
    uncommitted = Consumer({"bootstrap.servers": broker.address, "group.id": "tests"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                    for p in partitions}
            high = {p: uncommitted.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                    for p in partitions}
            if ends == high:
                return ends
            assert time.monotonic() < deadline, f"a transaction stays open in {topic}"
            time.sleep(0.05)
    finally:
        uncommitted.close()


def committed_records(broker, topic: str, timeout: float = 30.0) -> list:
    """Every committed record of `topic` now, `(partition, offset, value, timestamp, headers)`, read
    `read_committed` once no transaction is open in it: what a consumer of the results sees."""
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "tests", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        ends = _settled_ends(broker, topic, consumer, timeout)
        partitions = sorted(ends)
        reading = {p for p in partitions if ends[p] > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in reading])
        records = []
        while reading:
            message = consumer.poll(timeout)
            assert message is not None, f"no record of {topic} within {timeout} s"
            error = message.error()
            assert error is None or error.code() == KafkaError._PARTITION_EOF, error
            if error is None:
                records.append((message.partition(), message.offset(), json.loads(message.value()),
                                message.timestamp()[1], dict(message.headers() or [])))
            if error is not None or message.offset() + 1 >= ends[message.partition()]:
                reading.discard(message.partition())
        return sorted(records, key=lambda record: record[:2])
    finally:
        consumer.close()


def values(records) -> list:
    return [record[2] for record in records]
