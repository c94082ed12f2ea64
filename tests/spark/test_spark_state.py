"""On a real Spark session: a keyed stage's state store calls follow the keys of its rows, not the state held.

The stage runs as usual, but its map states are wrapped to log each call
(state, call, user key) to a file per worker process, one line per
`handleInputRows`, with the keys of the items that call brought. A map
state offers only the calls the stage should make: listing one fails the query.
"""
import json
import os
import time
from functools import partial
from pathlib import Path

from benchmarks.lib import state_bench
from benchmarks.lib.overhead.workload import count_graph
from benchmarks.state import main
import flamespark as fs
from flamespark.engines.spark import query
from flamespark.engines.spark.processors import StageProcessor
from flamespark.engines.spark.processors.blob import BUCKETS_PREFIX
from flamespark.engines.spark.rows import ITEMS, bundle_batches, concat

EVENTS, PER_BATCH = 60, 10


class LoggedMap:
    """A map state's (or `PipelinedMap`'s) reads, updates and removals, each logged as `[state, call, user key
    hex]`."""

    def __init__(self, state, name: str, log: list):
        self._state, self._name, self._log = state, name, log

    def _note(self, call, key):
        self._log.append([self._name, call, key[0].hex() if isinstance(key[0], bytes) else key[0]])

    def getValue(self, key):
        self._note("get", key)
        return self._state.getValue(key)

    def updateValue(self, key, value):
        self._note("update", key)
        self._state.updateValue(key, value)

    def removeKey(self, key):
        self._note("remove", key)
        self._state.removeKey(key)

    def get_many(self, keys):
        for key in keys:
            self._note("get", key)
        return self._state.get_many(keys)

    def write(self, updates, removals):
        for key, _ in updates:
            self._note("update", key)
        for key in removals:
            self._note("remove", key)
        self._state.write(updates, removals)

    @property
    def stopwatch(self):
        return self._state.stopwatch

    def prefixed(self, prefix: bytes, to_bytes=bytes):
        """The logged view of the entries under `prefix`; the buckets' is named so."""
        name = "buckets" if prefix == BUCKETS_PREFIX else f"{self._name}:{prefix!r}"
        return LoggedMap(self._state.prefixed(prefix, to_bytes), name, self._log)


class LoggedStage(StageProcessor):
    def __init__(self, topology, stage, log_dir=None, **options):
        super().__init__(topology, stage, **options)
        self.log_dir = log_dir

    def init(self, handle):
        self.log = []
        super().init(handle)
        self.store = LoggedMap(self.store, "value", self.log)
        self.held = [LoggedMap(chunks, "held", self.log) for chunks in self.held]

    def handleInputRows(self, key, rows, timerValues):
        batch = concat(rows)
        mine = batch[(batch["kind"] == ITEMS) & (batch["seq"] == self.stage)]
        # The stage that sends a keyed operator's rows gives their keys' encodings (`Topology.put`).
        keys = [key.hex() for target, (_, keys) in bundle_batches(mine.itertuples(index=False)).items()
                if target in self.operators for key in keys]
        self.log.clear()
        started = time.time()
        out = list(super().handleInputRows(key, iter([batch]), timerValues))
        with open(Path(self.log_dir) / f"{os.getpid()}.jsonl", "a") as file:
            file.write(json.dumps({"at": started, "shard": int(key[0]), "keys": keys, "calls": self.log}) + "\n")
        yield from out


def test_a_batch_reads_and_writes_only_the_keys_of_its_rows(spark, tmp_path, monkeypatch):
    log_dir = tmp_path / "calls"
    log_dir.mkdir()
    monkeypatch.setattr(query, "StageProcessor", partial(LoggedStage, log_dir=str(log_dir)))
    events = [(event["ts"], event) for event in state_bench.distinct_key_events(EVENTS, 10)]
    result = fs.run(count_graph(), {"events": events}, engine="spark", spark=spark, shards=2,
                    max_rows_per_batch=PER_BATCH, reorder_latency=0, late="fail", timeout=600)
    assert sorted(out["key"] for out in result.outputs["counts"]) == sorted(e["key"] for _, e in events)
    assert {out["count"] for out in result.outputs["counts"]} == {1}
    calls = [json.loads(line) for path in log_dir.iterdir() for line in path.read_text().splitlines()]
    assert sum(len(call["keys"]) for call in calls) == EVENTS
    for call in calls:
        bucket_calls = [(kind, key) for name, kind, key in call["calls"] if name == "buckets"]
        reads = [key for kind, key in bucket_calls if kind == "get"]
        # Each key of its rows read once, and no other: what a punctuation can forget waits for its key's next rows.
        assert sorted(reads) == sorted(set(call["keys"]))
        assert {key for kind, key in bucket_calls if kind != "get"} <= set(reads)
        held_reads = [key for name, kind, key in call["calls"] if name == "held" and kind == "get"]
        assert len(held_reads) <= 2


def test_bench_state_reports_the_thirds_of_a_small_run(spark, tmp_path, capsys):
    out = tmp_path / "state.json"
    assert main(["--events", "40", "--keys", "8", "--state-bytes", "5", "--batch-rows", "10",
                 "--warmup-batches", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["outputs"] == 40 and len(report["batches"]) >= 4
    assert report["thirds"]["ratio"] == report["thirds"]["last_third_ms"] / report["thirds"]["first_third_ms"]
    # One stateful operator, the count's stage: the replayed source is ingested as it is read.
    assert [len(batch["operators"]) for batch in report["batches"]] == [1] * len(report["batches"])
    text = capsys.readouterr().out
    assert "ratio last/first" in text and "40 events over 8 keys (5 more bytes" in text
    assert report["input"]["keys"] == 8


def test_thirds():
    assert state_bench.thirds([9, 1, 2, 3, 4, 5, 6, 7, 8]) == {"first_third_ms": 2, "last_third_ms": 7, "ratio": 3.5}
