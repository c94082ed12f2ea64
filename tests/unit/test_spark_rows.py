"""Items between Spark stages: bundles of records, one row per kind, stage and shard; metric rows."""
from types import SimpleNamespace

import msgpack
import pandas as pd

from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from flamespark.engines.spark.batch_time import batch_time
from flamespark.engines.spark.collector import _handler_times
from flamespark.engines.spark.processors.blob import HANDLER, BlobProcessor, handler, metric_row
from flamespark.engines.spark.processors.pipelined import Stopwatch
from flamespark.runtime.changes import Cause
from flamespark.engines.spark.rows import (
    COLUMNS,
    END_OF_TIME_MS,
    INFINITY,
    ITEMS,
    METRIC,
    OUT,
    PUNCT,
    Outbox,
    bundle_batches,
    bundle_records,
    control_row,
    frame,
    with_event_time,
)


def item(ts, payload, path=(0,), tombstone=False):
    return Item(Meta(ts, "src", 7, path), payload, pack(payload), tombstone, 1.5)


def batch(*items, causes=None):
    return Batch.of_items(list(items), causes)


def test_an_outbox_makes_one_row_per_kind_stage_and_shard_whose_ts_is_its_latest_record():
    outbox = Outbox()
    outbox.add(ITEMS, 2, 0, "count", batch(item(5, "a")))
    outbox.add(ITEMS, 2, 0, "count", batch(item(9, "b")))
    outbox.add(ITEMS, 2, 1, "count", batch(item(3, "c")))
    outbox.add(ITEMS, 3, 0, "out", batch(item(4, "d"), causes=[Cause("src", 4, 0)]))
    outbox.add(OUT, 0, 0, "out", batch(item(1, "e")))
    rows = frame(outbox.rows())
    assert list(rows.columns) == COLUMNS
    assert sorted(zip(rows["kind"], rows["seq"], rows["shard"], rows["ts"])) == [
        (ITEMS, 2, 0, 9), (ITEMS, 2, 1, 3), (ITEMS, 3, 0, 4), (OUT, 0, 0, 1)]
    assert outbox.rows() == []


def test_bundled_batches_come_back_as_they_went_with_payloads_left_encoded():
    outbox = Outbox()
    counted = batch(item(5, {"w": "a"}, path=(0, 2)), item(5, {"w": "a"}, tombstone=True))
    outbox.add(ITEMS, 1, 0, "count", counted, [b"ka", b"kb"])
    outbox.add(ITEMS, 1, 0, "out", batch(item(6, [1, 2]), causes=[Cause("src", 6, 3)]))
    rows = list(frame(outbox.rows()).itertuples(index=False))
    back = bundle_batches(rows)
    (count, keys), (out, no_keys) = back["count"], back["out"]
    assert (count.metas, count.datas, count.weights, count.arrivals, count.causes) == (
        counted.metas, counted.datas, [1, -1], [1.5, 1.5], None)
    assert keys == [b"ka", b"kb"] and no_keys is None
    assert all(type(meta) is Meta and type(meta.path) is tuple for meta in count.metas)
    assert count.payloads == [None, None] and out.payloads == [None]  # a stage decodes only what it applies
    assert out.causes == [Cause("src", 6, 3)]
    assert [record[0] for row in rows for record in bundle_records(row.payload)] == ["count", "count", "out"]


def test_handler_times_are_summed_per_batch_and_stage_over_tasks_and_calls():
    def took(stage, shard, ms, state_ms):  # a metric row as a batch file keeps it
        row = dict(zip(COLUMNS, metric_row(HANDLER, shard, {"stage": stage, "ms": ms, "state_ms": state_ms})))
        return [row["target"], row["shard"], row["payload"]]

    parts = [
        {"batch": 3, "metrics": [took("1: count", 0, 10.0, 4.0), took("1: count", 1, 30.0, 6.0),
                                 took("2: barrier", 0, 5.0, 1.0), ["barrier", 0, b"ignored"]]},
        {"batch": 4, "metrics": [took("2: barrier", 1, 2.0, 0.5), took("2: barrier", 1, 3.0, 0.5)]},
    ]
    assert _handler_times(parts) == {
        3: {"1: count": {"ms": 40.0, "state_ms": 10.0}, "2: barrier": {"ms": 5.0, "state_ms": 1.0}},
        4: {"2: barrier": {"ms": 5.0, "state_ms": 1.0}},
    }


def test_a_stages_handlers_are_timed_at_the_median_batch_after_the_first_and_summed_over_the_run():
    def report(batch):
        return {"batchId": batch, "durationMs": {"triggerExecution": 100 * batch},
                "stateOperators": [{"allUpdatesTimeMs": 10, "commitTimeMs": 1, "numRowsUpdated": 2}]}

    # A burst: the first batch (left out of the medians) and one of three after it carry the work.
    handlers = {0: {"1: count": {"ms": 500.0, "state_ms": 300.0}}, 1: {"1: count": {"ms": 20.0, "state_ms": 5.0}},
                2: {"1: count": {"ms": 400.0, "state_ms": 250.0}}, 3: {"1: count": {"ms": 30.0, "state_ms": 6.0}}}
    stage, = batch_time([report(batch) for batch in range(4)], ["1: count"], handlers)["stages"]
    assert (stage["handler_ms"], stage["state_ms"]) == (30.0, 6.0)
    assert (stage["handler_total_ms"], stage["state_total_ms"]) == (950.0, 561.0)


def test_a_handler_yields_its_rows_and_its_metric_row_as_one_frame():
    # PySpark converts every frame a handler yields to Arrow on its own, at a cost per frame.
    class Stage(BlobProcessor):
        stage_name = "1: count"
        store = SimpleNamespace(stopwatch=Stopwatch())

        @handler
        def handleInputRows(self, key, rows, timerValues):
            yield frame([])
            yield frame([(OUT, "out", 0, 5, b"", b"a", False, 0.0, 0, None)])
            yield frame([(OUT, "out", 0, 6, b"", b"b", False, 0.0, 0, None)])

    frames = list(Stage().handleInputRows((1,), iter([]), None))
    assert len(frames) == 1 and list(frames[0].columns) == COLUMNS
    assert list(frames[0]["kind"]) == [OUT, OUT, METRIC] and list(frames[0]["payload"][:2]) == [b"a", b"b"]
    metric = frames[0].iloc[2]
    assert metric["target"] == HANDLER and msgpack.unpackb(metric["payload"])["stage"] == "1: count"


def test_the_baselines_event_time_is_the_items_time_shifted_the_end_of_time_or_none():
    rows = frame([control_row(ITEMS, "", ts=5), control_row(PUNCT, "a", ts=INFINITY), control_row(METRIC, "m"),
                  control_row(PUNCT, "a", ts=7), control_row(ITEMS, "", ts=9 * 10**12 - 100)])
    millis = [None if pd.isna(time) else time.value // 10**6 for time in with_event_time(rows, 16)["event_time"]]
    assert millis == [21, END_OF_TIME_MS, None, None, 9 * 10**12 - 84]
    released = with_event_time(rows, 16, released_at=100)["event_time"]
    assert [time.value // 10**6 for time in released[[0, 4]]] == [100, 9 * 10**12 - 84]
