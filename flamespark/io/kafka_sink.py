"""Kafka topics as sinks, exactly once: each batch of outputs in one Kafka transaction, none written twice.

A sink `kafka://HOST:PORT/TOPIC` gets its released payloads as JSON values,
each with the output's event time as its record timestamp (Kafka takes
positive times only: a time at or below 0 leaves the broker's) and, exactly,
in the header `ts`; with changes kept, its changelog records go to
`TOPIC.changes`. A run writes in numbered batches (a Spark micro-batch; the
whole of a local run), and each batch in one transaction, with a marker
record saying which batch it was in the small compacted topic `COMMITS`,
keyed by the writer's transactional id. A writer that starts (again) fences
every earlier one of its id and aborts what it left open, then reads the
last committed marker: a batch at or below it was written, and a replay of
it writes nothing. So a `read_committed` consumer sees every output once,
whatever number of times the run was killed and restarted.
"""
from __future__ import annotations

import json

from flamespark.core.errors import BrokerError, InputError
from flamespark.io.jsonl import dumps
from flamespark.io.kafka import CONNECT_TIMEOUT_S, KafkaTopic, client_config, committed_consumer, unreachable

COMMITS = "flamespark.commits"
# How long a transaction may stay open before the broker aborts it; a batch's records go in well within it.
TRANSACTION_TIMEOUT_MS = 60_000
# Kafka's CreateTime is a non-negative ms count; librdkafka reads 0 as "now".
_LATEST_RECORD_TIME = (1 << 63) - 1


def kafka_sinks(sinks: dict | None, graph_sinks) -> dict[str, KafkaTopic]:
    """The Kafka topics of the sinks given as `{sink: "kafka://..."}`, checked to be sinks of the graph.

    >>> kafka_sinks({"index": "kafka://127.0.0.1:9092/index"}, ["index", "stats"])
    {'index': KafkaTopic(servers='127.0.0.1:9092', topic='index', record_time=False)}
    """
    topics = {}
    for sink, url in (sinks or {}).items():
        if sink not in graph_sinks:
            raise InputError(f"sink {sink!r}: the graph has no sink of that name (its sinks: "
                             f"{', '.join(graph_sinks)})")
        if not isinstance(url, str) or not url.startswith("kafka://"):
            raise InputError(f"sink {sink!r}: expected a Kafka address kafka://HOST:PORT/TOPIC, got {url!r}")
        topic = KafkaTopic.parse(url, f"sink {sink!r}")
        if topic.record_time:
            raise InputError(f"sink {sink!r}: ts=record is an input's option; a sink's records always carry "
                             f"their output's event time")
        topics[sink] = topic
    return topics


def _admin(servers: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_config(servers))


def ensure_topics(servers: str, topics: dict[str, dict]):
    """Create those of `topics` (`{name: config}`) that do not exist, with one partition (the outputs' release
    order is one partition's order); BrokerError if the broker cannot be reached."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = _admin(servers)
    try:
        existing = admin.list_topics(timeout=CONNECT_TIMEOUT_S).topics
        missing = [NewTopic(name, 1, -1, config=config) for name, config in topics.items() if name not in existing]
        for name, future in (admin.create_topics(missing, request_timeout=CONNECT_TIMEOUT_S).items()
                             if missing else ()):
            try:
                future.result()
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # another writer made it meanwhile
                    raise BrokerError(f"Kafka broker {servers} refused to create topic {name!r}: "
                                      f"{exc.args[0].str()}") from None
    except KafkaException as exc:
        raise unreachable(servers, exc) from None


def topics_written(topic: KafkaTopic, changes: bool) -> dict[str, dict]:
    """The topics a sink's writer writes, `{name: config}`: its own, its changelog's, and COMMITS."""
    topics = {topic.topic: {}, COMMITS: {"cleanup.policy": "compact"}}
    if changes:
        topics[f"{topic.topic}.changes"] = {}
    return topics


def make_sink_topics(topics: dict[str, KafkaTopic], changes: bool):
    """Make the topics the sinks of `topics` write where they are missing: BrokerError if a broker cannot be
    reached."""
    for topic in topics.values():
        ensure_topics(topic.servers, topics_written(topic, changes))


class KafkaSinkWriter:
    """Writes one sink's batches of outputs (and changelog records) to its topic, each batch once.

    `transactional_id` must be the same for every run that goes on with the
    same outputs (a Spark run resumed from its checkpoint) and differ for
    any other: it fences a killed run's producer and finds the last batch
    the runs of that id committed.
    """

    def __init__(self, sink: str, topic: KafkaTopic, transactional_id: str, changes: bool = False):
        self.sink = sink
        self.topic = topic
        self.transactional_id = transactional_id
        self.changes_topic = f"{topic.topic}.changes" if changes else None
        self.producer = None
        self.committed = None  # the last batch written, once `open` has read it

    def open(self):
        """Make the topics if need be, fence earlier writers of the id, and read the last batch they committed."""
        from confluent_kafka import KafkaException, Producer

        ensure_topics(self.topic.servers, topics_written(self.topic, self.changes_topic is not None))
        self.producer = Producer(client_config(self.topic.servers, **{
            "transactional.id": self.transactional_id, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "linger.ms": 5}))
        try:
            self.producer.init_transactions(CONNECT_TIMEOUT_S)
        except KafkaException as exc:
            raise unreachable(self.topic.servers, exc) from None
        self.committed = self._last_marker()
        return self

    def _last_marker(self):
        """The batch of the last marker of this id in COMMITS, or None."""
        from confluent_kafka import KafkaError, TopicPartition

        key = self.transactional_id.encode()
        consumer = committed_consumer(self.topic.servers)
        try:
            partition = TopicPartition(COMMITS, 0, 0)
            end = consumer.get_watermark_offsets(partition, timeout=CONNECT_TIMEOUT_S)[1]
            last = None
            if end == 0:
                return None
            consumer.assign([partition])
            while True:
                message = consumer.poll(CONNECT_TIMEOUT_S)
                if message is None:
                    raise BrokerError(f"Kafka broker {self.topic.servers} sent no record of topic {COMMITS!r} "
                                      f"within {CONNECT_TIMEOUT_S:.0f} s")
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise unreachable(self.topic.servers, error)
                if error is None and message.key() == key:
                    last = json.loads(message.value())["batch"]
                if error is not None or message.offset() + 1 >= end:
                    return last
        finally:
            consumer.close()

    def write(self, batch: int, outputs, changes=()) -> bool:
        """Write one batch, `(payload, event time)` outputs and changelog records (dicts with `ts`), in one
        transaction with its marker; False, writing nothing, if the batch was written before."""
        from confluent_kafka import KafkaException

        if self.committed is not None and batch <= self.committed:
            return False
        producer = self.producer
        try:
            producer.begin_transaction()
            for payload, ts in outputs:
                self._produce(self.topic.topic, payload, ts)
            if self.changes_topic:
                for record in changes:
                    self._produce(self.changes_topic, record, record["ts"])
            self._produce_marker(batch)
            producer.commit_transaction(TRANSACTION_TIMEOUT_MS / 1000)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                producer.abort_transaction(CONNECT_TIMEOUT_S)
            raise BrokerError(f"sink {self.sink!r}: Kafka broker {self.topic.servers} did not take batch {batch} "
                              f"for topic {self.topic.topic!r} ({error.str()})") from None
        self.committed = batch
        return True

    def _produce(self, topic: str, value, ts: int):
        data = dumps(value).encode()  # as a JSONL sink writes its lines
        stamp = ts if 0 < ts <= _LATEST_RECORD_TIME else 0
        self._send(topic=topic, value=data, timestamp=stamp, headers=[("ts", str(ts).encode())])

    def _produce_marker(self, batch: int):
        self._send(topic=COMMITS, key=self.transactional_id.encode(), value=json.dumps({"batch": batch}).encode())

    def _send(self, **record):
        while True:
            try:
                self.producer.produce(**record)
                return
            except BufferError:  # the producer's queue is full: let it send, then go on
                self.producer.poll(0.1)

    def close(self):
        if self.producer is not None:
            self.producer.flush(CONNECT_TIMEOUT_S)
            self.producer = None


def open_writers(topics: dict[str, KafkaTopic], writer_id: str, changes: bool = False) -> dict:
    """An opened KafkaSinkWriter per sink of `topics`, of transactional id `<writer_id>-<sink>`."""
    writers = {}
    try:
        for sink, topic in topics.items():
            writers[sink] = KafkaSinkWriter(sink, topic, f"{writer_id}-{sink}", changes).open()
    except BaseException:
        close_writers(writers)
        raise
    return writers


def close_writers(writers: dict):
    for writer in writers.values():
        writer.close()
