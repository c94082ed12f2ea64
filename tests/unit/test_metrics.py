"""The one metrics builder: the keys every engine gives, and the local engine's own figures."""
import pytest

import flamespark as fs
from flamespark.runtime.metrics import replay_ratio, run_metrics
from tests import graphs

COMMON_KEYS = {"events", "arrived_at_barrier", "tombstones", "released", "replay_ratio", "late_dropped",
               "late_adjusted", "peak_buffered", "wall_s", "events_per_s", "latency_ms", "changes", "levels",
               "engine"}


def test_the_builder_gives_the_common_keys_and_keeps_engine_figures_apart():
    metrics = run_metrics(events=4, arrived=6, tombstones=1, released=3, late_dropped=1, late_adjusted=0,
                          peak_buffered=2, wall_s=2.0, latencies_ms=[1.0, 2.0, 3.0], rounds=5,
                          engine={"name": "test", "rounds": 5})
    assert set(metrics) == COMMON_KEYS
    assert metrics["replay_ratio"] == 2.0 and metrics["events_per_s"] == 2.0
    assert metrics["latency_ms"] == {"p50": 2.0, "p75": 2.5, "p95": 2.9, "p99": pytest.approx(2.98), "outputs": 3,
                                     "events": 4, "wall_s": 2.0, "batches": 5}
    assert metrics["engine"] == {"name": "test", "rounds": 5}


def test_replay_ratio_without_releases():
    assert replay_ratio(0, 0) == 1.0 and replay_ratio(3, 0) == 3.0 and replay_ratio(6, 4) == 1.5


def test_a_local_run_has_the_common_keys_and_its_punctuations_under_engine():
    result = fs.run(graphs.running_sum(), {"numbers": [(t, t) for t in (3, 1, 2, 6, 5)]}, reorder_latency=2,
                    batch_size=2)
    assert set(result.metrics) == COMMON_KEYS
    assert result.metrics["engine"] == {"name": "local", "punctuations": result.metrics["latency_ms"]["batches"]}
    assert result.metrics["engine"]["punctuations"] >= 2
