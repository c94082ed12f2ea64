"""Several reorder latencies on the Spark engine: each level a copy of the graph in one query, corrections made
by the driver batch by batch, exactly once across restarts.

Each drawn disorder runs every graph of tests/graphs.py and a session window
in one query, in either mode, compared with the local engine (whose levels
tests/engine/test_levels.py holds to single-latency runs) and, at the last
level, with the in-order interpreter. In one ingest partition both engines
judge every event alike.
"""
import json
import math
import random
from collections import Counter
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.engines.spark.rows import decode_time
from tests import graphs
from tests.engine.test_levels import check_causes, kept_events, replayed
from tests.engine.test_windows import payload, reference_windows, window_graph
from tests.oracles.changelog_checks import check_changelog
from tests.oracles.reference import reference_run
from tests.spark.test_spark import all_graphs, disorder, in_order_inputs, replay_the_last_batch, run_spark

LATENCIES = (2, 6, 15)
SESSIONS = {"gap": 4}


def levelled_graphs():
    """Every graph of tests/graphs.py, and a count per session window, as one graph."""
    merged = all_graphs()
    merged.nodes.update(window_graph("session", SESSIONS, "count").nodes)
    return merged


def comparable(records: list) -> Counter:
    """Correction records as a multiset, without their causes (the engines name them by different rules)."""
    return Counter((record["op"], record["ts"], pack(record["payload"]), record["level"]) for record in records)


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_level_agrees_with_the_local_engine_and_the_last_with_the_in_order_run(spark, mode, seed):
    rnd = random.Random(seed)
    events = in_order_inputs(rnd)
    times = sorted(rnd.randint(0, 50) for _ in range(20))
    events["events"] = [payload((ts, rnd.randint(0, 20))) for ts in times]
    # Most events on time at the first latency; three a source arrive later, on time at a later level or at none.
    arrival = {source: disorder(given, LATENCIES[0], rnd) for source, given in events.items()}
    for given in arrival.values():
        for _ in range(3):
            moved = rnd.randrange(len(given))
            given.insert(rnd.randrange(moved, len(given)), given.pop(moved))
    graph = levelled_graphs()
    result = run_spark(graph, arrival, spark, mode=mode, reorder_latency=LATENCIES, max_rows_per_batch=9,
                       ingest_partitions=1)
    local = fs.run(graph, arrival, mode=mode, reorder_latency=LATENCIES)
    assert result.outputs == local.outputs
    assert sorted(map(pack, result.late)) == sorted(map(pack, local.late))  # the sources' in another order
    assert [level["events"] for level in result.metrics["levels"]] == \
        [level["events"] for level in local.metrics["levels"]]
    for sink, records in result.corrections.items():
        assert comparable(records) == comparable(local.corrections[sink]), sink
        check_causes(records, arrival, LATENCIES)
    assert sum(level["corrections"] for level in result.metrics["levels"]) > 0

    kept = kept_events(arrival, result.late)
    in_order = reference_run(all_graphs(), {source: kept[source] for source in ("numbers", "docs", "left", "right")})
    in_order["results"] = reference_windows(kept["events"], "session", SESSIONS, "count")
    for sink, outputs in result.outputs.items():
        assert replayed(outputs, result.corrections[sink], len(LATENCIES)) == Counter(map(pack, in_order[sink])), sink


def test_corrections_leave_batch_by_batch_and_a_replayed_batch_corrects_alike_beside_a_changelog(spark, tmp_path):
    events = [(ts, ts % 7) for ts in range(0, 120, 3)]
    arrival = disorder(events, 2, random.Random(5))
    for late, at in ((12, 20), (30, 25), (60, 33)):  # later than the first latency, within the second
        arrival.insert(at, (late, 100))
    out = tmp_path / "out"

    def run():
        return run_spark(graphs.running_sum(), {"numbers": arrival}, spark, reorder_latency=(4, 40),
                         checkpoint=tmp_path / "checkpoint", output=out, max_rows_per_batch=6, ingest_partitions=1,
                         changes=True)

    result = run()
    check_changelog(result, {"numbers": arrival})  # the first level's, beside the corrections
    written = sorted((out / "sums.corrections").glob("batch-*.jsonl"))
    assert len(written) > 1  # corrections leave with the batches that make them, not all at the end
    records = [json.loads(line) for path in written for line in path.read_text().splitlines()]
    assert records == result.corrections["sums"] != []
    assert {record["level"] for record in records} == {2}

    # Each level released at its own punctuation, 36 ms apart, and each batch's corrections are those its second
    # level's punctuation passed.
    passed = -math.inf
    for part in map(msgpack.unpackb, map(Path.read_bytes, sorted((tmp_path / "checkpoint" / "parts").glob("*")))):
        first_level, second_level = map(decode_time, part["levelled"]["times"])
        assert first_level == second_level + 36 or first_level == second_level == math.inf, part["batch"]
        assert all(passed < record["ts"] <= second_level for _, record, _ in part["levelled"]["corrections"])
        passed = second_level

    # Run again from before the last batch's commit: its corrections, rebuilt from the batches before it, are
    # the same, and so are the files.
    first, again = replay_the_last_batch(tmp_path / "checkpoint", run, result)
    assert [entry[:2] for entry in again["levelled"]["corrections"]] == \
        [entry[:2] for entry in first["levelled"]["corrections"]] != []
    assert [json.loads(line) for path in written for line in path.read_text().splitlines()] == records
