"""A Spark streaming source over a Kafka topic: a Python data source that reads with confluent-kafka.

Spark's own Kafka source (`spark-sql-kafka-0-10`) is not published for the
pinned Spark 4.3.0, and it would hand each record to the Python ingest as a
row to decode again; this one makes FlameSpark's raw event rows where it
reads (see docs/kafka.md for the choice). Its offset is `{partition: next
offset}` (JSON object keys are strings), kept by Spark in the checkpoint's
offset log, so a restarted query reads from where the last committed
micro-batch ended and a replayed batch reads the same records. Each Kafka
partition is read in a task of its own and keyed by its ingest partition's
key (option `keys`, one per Kafka partition), so that each is ingested as a
partition of its own. A finite run (Trigger.AvailableNow) reads up to the
end offsets the topic has when the query starts, then gives every partition
an end-of-input row. A record's
position in the source is `offset * partitions + partition`, unique and the
same on every replay. Records are read `read_committed`.
"""
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from flamespark.core.items import encode_event
from flamespark.engines.spark.rows import END, EVENT, INFINITY, ROW_SCHEMA
from flamespark.io.kafka import KafkaTopic, committed_consumer, end_offsets, record_event, unreachable
from flamespark.runtime.heap import freeze_what_lives

FORMAT = "flamespark-kafka"


def kafka_stream(spark, source: str, url: str, keys: list, follow: bool, max_rows: int | None = None):
    """A streaming DataFrame of ROW_SCHEMA event rows of the topic `url`, partition `p`'s under key `keys[p]`,
    at most `max_rows` offsets a micro-batch if given."""
    spark.dataSource.register(KafkaSource)
    reader = (spark.readStream.format(FORMAT).option("url", url).option("source", source)
              .option("keys", ",".join(map(str, keys))).option("follow", "true" if follow else "false"))
    if max_rows:
        reader = reader.option("maxRowsPerBatch", str(max_rows))
    return reader.load()


class KafkaSource(DataSource):
    """`spark.readStream.format("flamespark-kafka").option("url", ...).option("source", ...)`."""

    @classmethod
    def name(cls):
        return FORMAT

    def schema(self):
        return ROW_SCHEMA

    def streamReader(self, schema):
        return KafkaReader(self.options)


class KafkaPartition(InputPartition):
    """Records `start` to `stop` (excluded) of Kafka partition `partition`, under ingest key `key`; with `end`,
    the partition's end-of-input row after them."""

    def __init__(self, partition: int, start: int, stop: int, key: int, end: bool):
        self.partition, self.start, self.stop, self.key, self.end = partition, start, stop, key, end


class KafkaReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches by end offsets on the driver; reads a partition's records in its task.

    An offset is `{"next": {partition: next offset}, "ended": bool}`: a
    finite run's last batch reads up to the end offsets it started with and
    ends the input (`ended`); a run resumed after it reads nothing more.
    With option `maxRowsPerBatch`, a batch reads at most that many offsets
    over all partitions (a transaction's marker takes an offset too).
    """

    def __init__(self, options):
        self.url = options["url"]
        self.source = options["source"]
        self.keys = [int(key) for key in options["keys"].split(",")]
        self.follow = options.get("follow") == "true"
        self.max_rows = int(options.get("maxRowsPerBatch") or 0)
        self.topic = KafkaTopic.parse(self.url, f"input {self.source!r}")
        self.final = None  # the end offsets a finite run reads up to, once known
        self._consumer = None

    def _ends(self) -> dict:
        """The end offsets of the topic's partitions now."""
        if self._consumer is None:
            self._consumer = committed_consumer(self.topic.servers)
        return {str(p): end for p, end in end_offsets(self._consumer, self.topic, range(len(self.keys))).items()}

    def initialOffset(self):
        return {"next": {str(p): 0 for p in range(len(self.keys))}, "ended": False}

    def prepareForTriggerAvailableNow(self):
        self.final = self._ends()

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def latestOffset(self, start, limit):
        if start["ended"]:
            return start
        if self.follow:
            ends = self._ends()
        else:
            if self.final is None:  # a trigger other than AvailableNow: what there is when first asked
                self.final = self._ends()
            ends = self.final
        if isinstance(limit, ReadMaxRows):
            share = max(1, limit.max_rows // len(self.keys))
            ends = {p: min(end, start["next"][p] + share) for p, end in ends.items()}
        # The batch that reads a finite run's last records also ends its input.
        return {"next": ends, "ended": not self.follow and ends == self.final}

    def reportLatestOffset(self):
        return {"next": self._ends() if self.follow else self.final, "ended": not self.follow}

    def partitions(self, start, end):
        planned = []
        ends = end["ended"] and not start["ended"]
        for p, key in enumerate(self.keys):
            first, last = start["next"][str(p)], end["next"][str(p)]
            if last > first or ends:
                planned.append(KafkaPartition(p, first, last, key, ends))
        return planned

    def read(self, partition):
        freeze_what_lives()
        now = time.time()
        count = len(self.keys)
        if partition.stop > partition.start:
            for offset, ts, payload in _records(self.source, self.topic, partition):
                yield (EVENT, self.source, partition.key, ts, b"", encode_event(self.source, ts, payload), False,
                       now, offset * count + partition.partition, None)
        if partition.end:
            yield (END, self.source, partition.key, INFINITY, b"", b"", False, now,
                   partition.stop * count + partition.partition, None)

    def commit(self, end):
        pass

    def stop(self):
        if self._consumer is not None:
            self._consumer.close()


def _records(source: str, topic: KafkaTopic, partition: KafkaPartition):
    """`(offset, ts, payload)` of the committed records of `partition`, from its start up to its stop."""
    from confluent_kafka import KafkaError, TopicPartition

    consumer = committed_consumer(topic.servers)
    try:
        consumer.assign([TopicPartition(topic.topic, partition.partition, partition.start)])
        while True:
            message = consumer.poll(10.0)
            if message is None:
                raise unreachable(topic.servers, f"no record of partition {partition.partition} of topic "
                                                 f"{topic.topic!r} within 10 s")
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise unreachable(topic.servers, error)
            # The end of what the partition holds (a transaction's marker may take the last offsets), or a
            # record past the batch's records.
            if error is not None or message.offset() >= partition.stop:
                return
            yield (message.offset(), *record_event(source, topic, message))
            if message.offset() + 1 >= partition.stop:
                return
    finally:
        consumer.close()
