"""The overhead benchmark's two Spark queries on a small input: each emits one count per event."""
from flamespark import overhead
from flamespark.jsonl import write_jsonl

EVENTS = 200
BATCH_ROWS = 120  # 200 events and the end marker: two micro-batches


def test_reorder_latency_admits_every_event():
    events = overhead.make_events(EVENTS, 10, 10, 30.0, 1000.0, seed=3)
    assert sorted(e["ts"] for e in events) == [10 * i for i in range(EVENTS)]
    lag = overhead.max_lag(events)
    newest = float("-inf")
    for event in events:
        assert event["ts"] >= newest - lag
        newest = max(newest, event["ts"])
    assert overhead.max_lag([{"ts": 5}, {"ts": 1}, {"ts": 9}, {"ts": 2}]) == 7


def test_flamespark_and_baseline_emit_one_count_per_event(spark, tmp_path):
    events = overhead.make_events(EVENTS, 10, 10, 10.0, 1000.0, seed=1)
    events_path, replay_path = tmp_path / "events.jsonl", tmp_path / "events.replay"
    write_jsonl(events_path, events)
    assert overhead.write_baseline_input(replay_path, events) == EVENTS
    listener = overhead.ProgressListener()
    spark.streams.addListener(listener)
    try:
        a = overhead.run_flamespark(spark, events_path, EVENTS, BATCH_ROWS, overhead.max_lag(events), 2, listener)
        b = overhead.run_baseline(spark, replay_path, EVENTS, BATCH_ROWS, "key", 2, listener)
    finally:
        spark.streams.removeListener(listener)
    assert a["outputs"] == EVENTS and a["late"] == 0
    assert b["outputs"] == EVENTS
    assert a["batches"] == b["batches"] == len(a["progress"]) == len(b["progress"]) == 2
    split = overhead.summarize(a, overhead.FLAMESPARK_OPERATORS)["time"]
    assert split["micro_batches"] == 2 and len(split["batches"][0]["operators"]) == 2
