"""Kafka topics as inputs: addresses, reaching the broker, and a topic's records as checked events.

An input `kafka://HOST:PORT/TOPIC` reads a topic's records as events: a
record's value is a JSON object with an integer `ts`, as a JSONL line is,
and the object is the payload; with `?ts=record` the value may be any JSON
and the record's own timestamp is the event time. Every partition of the
topic is a part of the source of its own (a *lane*, `(source, partition)`),
which judges lateness by its own events. Records are read `read_committed`:
a transaction's records once it commits, never those of an aborted one.
Whatever is wrong raises InputError naming topic, partition and offset; a
broker that cannot be reached raises BrokerError naming its address, within
`CONNECT_TIMEOUT_S`.
"""
from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass
from heapq import heappop, heappush
from urllib.parse import parse_qs, urlsplit

from flamespark.core.errors import BrokerError, InputError
from flamespark.io.parsing import check_event_time, parse_event_line

SCHEME = "kafka"
# How long a client waits for the broker before the run fails naming its address (the run must fail in 15 s).
CONNECT_TIMEOUT_S = 10.0
# How long a finite read waits for records it knows exist before it gives up on the broker.
STALL_TIMEOUT_S = 30.0
# How many records a read holds back at most, to let the earliest of its partitions' records go first.
MERGE_LIMIT = 100_000
# How many records a read takes from the client at once.
CONSUME_BATCH = 1000


@dataclass(frozen=True)
class KafkaTopic:
    """A topic on a broker, as a `kafka://HOST:PORT/TOPIC[?ts=record]` address gives it.

    >>> KafkaTopic.parse("kafka://127.0.0.1:9092/clicks?ts=record", "input 'clicks'")
    KafkaTopic(servers='127.0.0.1:9092', topic='clicks', record_time=True)
    >>> KafkaTopic.parse("kafka://127.0.0.1:9092/", "sink 'index'")
    Traceback (most recent call last):
    ...
    flamespark.core.errors.InputError: sink 'index': kafka://127.0.0.1:9092/ names no topic (kafka://HOST:PORT/TOPIC)
    """

    servers: str
    topic: str
    record_time: bool = False

    @classmethod
    def parse(cls, url: str, what: str) -> KafkaTopic:
        """The topic `url` names, or InputError naming `what` (the input or sink it is for)."""
        parts = urlsplit(url)
        topic = parts.path.removeprefix("/")
        if parts.scheme != SCHEME or not parts.netloc:
            raise InputError(f"{what}: {url} is no Kafka address (kafka://HOST:PORT/TOPIC)")
        if not topic or "/" in topic:
            raise InputError(f"{what}: {url} names no topic (kafka://HOST:PORT/TOPIC)")
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"ts"})
        if unknown or query.get("ts", ["value"]) not in (["value"], ["record"]):
            raise InputError(f"{what}: {url}: the only option is ts=record (the record's timestamp as event time) "
                             f"or ts=value (the value's field 'ts', the default)")
        return cls(parts.netloc, topic, query.get("ts") == ["record"])

    @property
    def url(self) -> str:
        return f"{SCHEME}://{self.servers}/{self.topic}" + ("?ts=record" if self.record_time else "")


def client_config(servers: str, **settings) -> dict:
    """librdkafka settings for a client of `servers`: quiet (FlameSpark reports what goes wrong itself), and
    quick to give up on a broker that does not answer."""
    return {"bootstrap.servers": servers, "client.id": "flamespark", "log_level": 0,
            "socket.connection.setup.timeout.ms": int(CONNECT_TIMEOUT_S * 1000), **settings}


def unreachable(servers: str, exc) -> BrokerError:
    return BrokerError(f"Kafka broker {servers} cannot be reached ({_reason(exc)}); start one with "
                       f"scripts/kafka-broker.sh start, or give the address of a running one")


def _reason(exc) -> str:
    error = exc.args[0] if getattr(exc, "args", None) else exc
    return error.str() if hasattr(error, "str") else str(error)


def topic_partitions(topic: KafkaTopic, what: str) -> list[int]:
    """The partitions of `topic`: BrokerError if its broker cannot be reached, InputError naming `what` if the
    topic does not exist."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(topic.servers))
    try:
        # All topics: asking for one by name may have a broker that creates topics on use create it.
        metadata = admin.list_topics(timeout=CONNECT_TIMEOUT_S)
    except KafkaException as exc:
        raise unreachable(topic.servers, exc) from None
    found = metadata.topics.get(topic.topic)
    if found is None or found.error is not None or not found.partitions:
        raise InputError(f"{what}: Kafka topic {topic.topic!r} does not exist on {topic.servers}")
    return sorted(found.partitions)


def committed_consumer(servers: str, **settings):
    """A consumer of `servers` that reads committed records only, assigned partitions by hand (no group)."""
    from confluent_kafka import Consumer

    return Consumer(client_config(servers, **{
        "group.id": "flamespark", "enable.auto.commit": False, "enable.auto.offset.store": False,
        "isolation.level": "read_committed", "enable.partition.eof": True, "auto.offset.reset": "earliest",
        **settings}))


def end_offsets(consumer, topic: KafkaTopic, partitions) -> dict[int, int]:
    """`{partition: offset}` just after the last committed record of each partition now."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic.topic, p), timeout=CONNECT_TIMEOUT_S)[1]
                for p in partitions}
    except KafkaException as exc:
        raise unreachable(topic.servers, exc) from None


def where(source: str, topic: str, partition: int, offset: int) -> str:
    return f"input {source!r}: Kafka topic {topic!r}, partition {partition}, offset {offset}"


def record_event(source: str, topic: KafkaTopic, message) -> tuple:
    """`(ts, payload)` of a consumed record, or InputError naming its topic, partition and offset."""
    value = message.value()
    place = where(source, topic.topic, message.partition(), message.offset())
    if value is None:
        raise InputError(f"{place}: the record has no value (a JSON object with an integer 'ts')")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{place}: the value is not UTF-8 text ({exc.reason} at byte {exc.start + 1})") from None
    if not topic.record_time:
        return parse_event_line(text, place)
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{place}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    return check_event_time(message.timestamp()[1], place), payload


def check_topic(source: str, url: str) -> list[int]:
    """The partitions of the topic input `url` of `source` names, checked to exist (see `topic_partitions`)."""
    return topic_partitions(KafkaTopic.parse(url, f"input {source!r}"), f"input {source!r}")


def topic_lanes(source: str, url: str) -> list[tuple]:
    """The lanes of a topic input: `(source, partition)` for each of its partitions."""
    return [(source, partition) for partition in check_topic(source, url)]


def topic_events(source: str, url: str):
    """`(lane, (ts, payload))` of each committed record of the topic input `url`, up to the end offsets its
    partitions have when reading starts, in each partition's order; then `(lane, None)` once a partition's
    records are all read (at once for an empty one).

    Across partitions any order is an arrival order, and the broker sends a
    partition's records in chunks, which would put whole chunks of one
    partition ahead of earlier records of the others: a disorder that costs
    the optimistic engine retractions, and the buffered one memory. So of
    the records read and waiting, the earliest (by event time) goes first,
    once every partition still being read has one waiting, or `MERGE_LIMIT`
    wait.
    """
    topic = KafkaTopic.parse(url, f"input {source!r}")
    partitions = topic_partitions(topic, f"input {source!r}")
    consumer = committed_consumer(topic.servers)
    try:
        ends = end_offsets(consumer, topic, partitions)
        for p in partitions:
            if ends[p] == 0:
                yield (source, p), None
        reading = {p for p in partitions if ends[p] > 0}
        for p, event in _earliest_first(_arrivals(source, topic, consumer, ends, reading), reading):
            yield (source, p), event
    finally:
        consumer.close()


def _earliest_first(arrivals, reading: set):
    """`(partition, event)` of `arrivals` (see `_arrivals`), the earliest waiting event first once every partition
    of `reading` still read has one waiting (or MERGE_LIMIT wait); `(partition, None)` once a partition's
    events are all out."""
    reading = set(reading)
    waiting = {p: deque() for p in reading}
    heads = []  # `(ts, partition)` of the first event waiting of each partition that has one
    empty = len(reading)  # partitions still read with no event waiting
    held = 0
    while waiting:
        while empty and held < MERGE_LIMIT:
            p, event = next(arrivals)
            queue = waiting[p]
            if event is None:
                reading.discard(p)
                if not queue:
                    empty -= 1
                    del waiting[p]
                    yield p, None
                continue
            if not queue:
                heappush(heads, (event[0], p))
                empty -= 1
            queue.append(event)
            held += 1
        if not heads:
            continue
        _, p = heappop(heads)
        queue = waiting[p]
        held -= 1
        yield p, queue.popleft()
        if queue:
            heappush(heads, (queue[0][0], p))
        elif p in reading:
            empty += 1
        else:
            del waiting[p]
            yield p, None


def _arrivals(source: str, topic: KafkaTopic, consumer, ends: dict, reading: set):
    """`(partition, (ts, payload))` of the records of the partitions `reading`, as the broker sends them, and
    `(partition, None)` once a partition is read to its end offset in `ends`."""
    from confluent_kafka import KafkaError, TopicPartition

    reading = set(reading)
    consumer.assign([TopicPartition(topic.topic, p, 0) for p in sorted(reading)])
    heard = time.monotonic()
    while reading:
        messages = consumer.consume(CONSUME_BATCH, 0.5)  # many a call: a call per record costs more than a record
        if not messages:
            if time.monotonic() - heard > STALL_TIMEOUT_S:
                raise BrokerError(f"input {source!r}: Kafka broker {topic.servers} sent no record of topic "
                                  f"{topic.topic!r} for {STALL_TIMEOUT_S:.0f} s, while records remain to read")
            continue
        heard = time.monotonic()
        for message in messages:
            p, offset, error = message.partition(), message.offset(), message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                if error.code() > 0:  # the broker's answer about this partition, not the client's failure
                    raise InputError(f"{where(source, topic.topic, p, offset)}: {error.str()}")
                raise unreachable(topic.servers, error)
            if p not in reading:
                continue
            if error is None and offset < ends[p]:
                yield p, record_event(source, topic, message)
            # A transaction's commit marker may take the last offset before the end: a partition ends at its end
            # offset or, short of it, where the broker says it has nothing more.
            if error is not None or offset + 1 >= ends[p]:
                reading.discard(p)
                yield p, None
