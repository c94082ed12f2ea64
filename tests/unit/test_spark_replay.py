"""The paced replay source's verdict on each micro-batch it plans: behind its input or not, from its clock and the
previous batch's end offset (as Spark's offset log holds it)."""
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from flamespark.engines.spark import replay
from flamespark.engines.spark.replay import ReplayReader, write_replay_file

RATE = 10  # events a second: event i + 1 is due at i / RATE s after the warm-up batch


class Clock:
    def __init__(self):
        self.now = 1000.0

    def time(self):
        return self.now


@pytest.fixture
def planned(tmp_path, monkeypatch):
    """A function of the seconds since the warm-up batch that plans the next batch, as Spark asks a reader after
    each one: with the previous batch's end offset as its start."""
    path = tmp_path / "events.msgpack"
    write_replay_file(path, ((ts, b"x") for ts in range(200)))
    clock = Clock()
    monkeypatch.setattr(replay.time, "time", clock.time)
    reader = ReplayReader({"path": str(path), "source": "s", "rate": str(RATE)})
    offsets = [reader.latestOffset(reader.initialOffset(), ReadAllAvailable())]  # the warm-up batch: one event
    start = clock.now

    def plan(after_s: float) -> dict:
        clock.now = start + after_s
        offsets.append(reader.latestOffset(offsets[-1], ReadAllAvailable()))
        return offsets[-1]

    return plan


def test_a_run_behind_its_input_stays_behind_until_its_batches_are_short_again(planned):
    assert planned(0.0) == {"i": 2}  # the clock starts: one event due
    assert planned(0.5) == {"i": 7}  # what came during a short batch
    behind = planned(2.0)  # the first event read was due 1.4 s ago
    assert behind == {"i": 22, "behind": True}
    # The batch behind took 0.75 s: longer than an engine with time to spare takes, so the run is still behind,
    # where a run that was not would count as keeping up.
    assert planned(2.75) == {"i": 29, "behind": True}
    assert replay.behind(22, 29, 29, 0.65) is False
    assert planned(3.0) == {"i": 32}  # a batch of 0.25 s: caught up


def test_a_capped_batch_leaving_due_events_is_behind_whatever_it_waited(tmp_path, monkeypatch):
    path = tmp_path / "events.msgpack"
    write_replay_file(path, ((ts, b"x") for ts in range(50)))
    clock = Clock()
    monkeypatch.setattr(replay.time, "time", clock.time)
    reader = ReplayReader({"path": str(path), "source": "s", "rate": str(RATE), "maxRowsPerBatch": "3"})
    limit = reader.getDefaultReadLimit()
    offset = reader.latestOffset(reader.initialOffset(), limit)
    offset = reader.latestOffset(offset, limit)
    clock.now += 1.0
    assert reader.latestOffset(offset, limit) == {"i": 5, "behind": True}
