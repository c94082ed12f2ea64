"""Punctuations on their own: each source's and their minimum, end of input, late policies, minting, idle sources,
snapshots."""
import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.core.items import event_tiebreak
from flamespark.runtime.punctuations import Punctuations


def feed(punctuations, source, *times):
    """Admit events `(ts, ts)` as one batch, in arrival order; returns the times of those admitted."""
    batch, _ = punctuations.admit(source, list(times), list(times), [0.0] * len(times))
    return [meta.ts for meta in batch.metas]


def one(punctuations, source, ts, payload, arrival, position=None):
    """Admit one event as a batch of its own; returns its item, or None if it was dropped."""
    batch, _ = punctuations.admit(source, [ts], [payload], [arrival], None if position is None else [position])
    return batch.item(0) if len(batch) else None


def batches(times: list, cuts: list) -> list:
    """`times` cut into batches, none empty: one ends after the i-th time where `cuts[i]` (and at the end)."""
    cut, batch = [], []
    for ts, end in zip(times, cuts + [False] * len(times)):
        batch.append(ts)
        if end:
            cut.append(batch)
            batch = []
    return cut + [batch] if batch else cut


def test_punctuation_is_the_minimum_over_sources_and_ends_at_infinity():
    punctuations = Punctuations(["a", "b"], reorder_latency=5)
    punctuations.advance()
    assert punctuations.time() == -math.inf
    feed(punctuations, "a", 100)
    feed(punctuations, "b", 40, 30)
    assert punctuations.advance() == {"a": 94, "b": 34}
    assert punctuations.time() == 40 - 5 - 1
    punctuations.end("b")
    assert punctuations.advance() == {"b": math.inf}
    assert punctuations.time() == 94 == punctuations.punctuation("a")
    punctuations.end("a")
    punctuations.advance()
    assert punctuations.time() == math.inf


def test_advance_reports_only_the_sources_that_rose():
    punctuations = Punctuations(["a", "b"])
    feed(punctuations, "a", 10)
    feed(punctuations, "b", 10)
    punctuations.advance()
    feed(punctuations, "a", 5, 20)
    assert punctuations.advance() == {"a": 19}


def test_lateness_is_judged_against_the_newest_event_before_it():
    punctuations = Punctuations(["a"], reorder_latency=5)
    assert feed(punctuations, "a", 100, 95, 94) == [100, 95]  # 94 is late with no punctuation issued yet
    punctuations.advance()
    assert feed(punctuations, "a", 200, 96, 195) == [200, 195]
    assert [(d["source"], d["ts"], d["punctuation"]) for d in punctuations.dead_letters] == [("a", 94, 94),
                                                                                            ("a", 96, 194)]
    assert punctuations.counts() == {"events": 4, "late_dropped": 2, "late_adjusted": 0}


@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.integers(0, 60), max_size=30), cuts=st.lists(st.booleans(), max_size=30),
       latency=st.integers(0, 20))
def test_which_events_are_late_does_not_depend_on_when_punctuations_advance_or_on_batches(times, cuts, latency):
    """One event a batch and never advanced, or batches cut anywhere with an advance after each: the same events
    are late, and the others are minted alike."""
    never, sometimes = Punctuations(["a"], reorder_latency=latency), Punctuations(["a"], reorder_latency=latency)
    minted_never = [one(never, "a", ts, ts, 0.0) for ts in times]
    minted_never = [item.meta for item in minted_never if item is not None]
    minted_sometimes = []
    for batch in batches(times, cuts):
        minted_sometimes += sometimes.admit("a", batch, batch, [0.0] * len(batch))[0].metas
        sometimes.advance()
    assert never.dead_letters == sometimes.dead_letters
    assert minted_never == minted_sometimes
    newest = [max(times[:i], default=None) for i in range(len(times))]  # the reference: each event's judge
    assert [d["ts"] for d in never.dead_letters] == [ts for ts, top in zip(times, newest)
                                                     if top is not None and ts < top - latency]


@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.integers(0, 60), max_size=30), cuts=st.lists(st.booleans(), max_size=30),
       latencies=st.lists(st.integers(0, 20), min_size=2, max_size=3, unique=True).map(sorted))
def test_each_events_first_level_is_judged_against_the_newest_event_before_it_in_any_batches(times, cuts,
                                                                                            latencies):
    punctuations = Punctuations(["a"], reorder_latency=tuple(latencies))
    levels = []
    for batch in batches(times, cuts):
        admitted, first = punctuations.admit("a", batch, batch, [0.0] * len(batch))
        levels += zip((meta.ts for meta in admitted.metas), first)
        punctuations.advance()
    newest = [max(times[:i], default=ts) for i, ts in enumerate(times)]  # the reference: each event's judge
    # The first level k at which it is at most Dk behind; later than the last latency, it is late (dropped).
    expected = [(ts, next(k for k, latency in enumerate(latencies, 1) if ts >= top - latency))
                for ts, top in zip(times, newest) if ts >= top - latencies[-1]]
    assert levels == expected


def test_adjust_moves_a_late_event_just_after_its_sources_punctuation():
    punctuations = Punctuations(["a"], reorder_latency=2, late="adjust")
    feed(punctuations, "a", 21)
    punctuations.advance()
    assert feed(punctuations, "a", 6, 19) == [19, 19]
    assert punctuations.dead_letters == []
    assert punctuations.counts("a") == {"events": 3, "late_dropped": 0, "late_adjusted": 1}


def test_fail_raises_naming_the_event():
    punctuations = Punctuations(["a"], reorder_latency=2, late="fail")
    feed(punctuations, "a", 21)
    punctuations.advance()
    with pytest.raises(fs.LateEventError, match=r"event ts=6 of source 'a' \(position 1 in its arrival order\) "
                                                r"arrived after punctuation 18 \(payload 6\)"):
        feed(punctuations, "a", 6)


def test_a_source_ends_after_its_expected_count_late_events_included():
    punctuations = Punctuations(["a", "b"], expected={"a": 3})
    feed(punctuations, "a", 10)
    feed(punctuations, "b", 1)
    punctuations.advance()
    feed(punctuations, "a", 4, 12)
    assert punctuations.advance() == {"a": math.inf}
    assert punctuations.time() == 0


def test_tiebreak_is_the_payload_encodings_crc32_then_its_adler32_as_checkpoints_keep_it():
    # The published check values of both checksums on the nine digits: CRC-32 CBF43926, Adler-32 091E01DE.
    assert event_tiebreak(b"123456789") == 0xCBF43926_091E01DE
    assert event_tiebreak(b"") == 1  # the CRC-32 of nothing is 0, its Adler-32 is 1
    # A value as minted: a checkpoint's metas hold it, so a restart must mint the same.
    data = pack({"ts": 5, "word": "late"})
    assert event_tiebreak(data) == 0xD8843B3F_36E106BB
    batch, _ = Punctuations(["a"]).admit("a", [5], [{"ts": 5, "word": "late"}], [0.0])
    assert (batch.datas, batch.metas[0].tiebreak) == ([data], 0xD8843B3F_36E106BB)


def test_identical_events_are_told_apart_by_their_positions_in_their_source():
    punctuations = Punctuations(["a", "b"], reorder_latency=0)
    first, second = punctuations.admit("a", [5, 5], [{"v": 1}, {"v": 1}], [1.5, 2.5])[0].items()
    one(punctuations, "b", 5, {"v": 1}, 3.0)
    other = one(punctuations, "a", 5, {"v": 2}, 3.5)
    given = one(punctuations, "a", 6, {"v": 1}, 4.0, position=17)
    assert (first.meta.path, second.meta.path, other.meta.path, given.meta.path) == ((0,), (1,), (2,), (17,))
    assert first.meta.tiebreak == second.meta.tiebreak != other.meta.tiebreak
    assert (first.meta.ts, first.meta.source, first.arrival) == (5, "a", 1.5)
    punctuations.advance()
    assert one(punctuations, "a", 5, {"v": 1}, 5.0) is None  # late ones count too: the next position is 5
    assert one(punctuations, "a", 7, {"v": 1}, 6.0).meta.path == (5,)


def test_a_resumed_source_judges_as_the_punctuations_that_saw_the_events_before():
    events = [(10, 0), (4, 1), (30, 2), (12, 3), (29, 4), (40, 5)]
    seen = Punctuations(["a"], reorder_latency=5)
    times, values = map(list, zip(*events[:3]))
    seen.admit("a", times, values, [0.0] * 3)
    seen.advance()
    resumed = Punctuations(["a"], reorder_latency=5)
    resumed.resume("a", 3, max(ts for ts, _ in events[:3]))
    assert resumed.time() == seen.time() == 24
    times, values = map(list, zip(*events[3:]))
    expected, _ = seen.admit("a", times, values, [0.0] * 3)
    got, _ = resumed.admit("a", times, values, [0.0] * 3)
    assert (got.metas, got.datas) == (expected.metas, expected.datas)
    assert [meta.ts for meta in got.metas] == [29, 40]  # 12 is late: it is no more than 24
    assert resumed.dead_letters == seen.dead_letters[-1:] and resumed.counts() == {
        "events": 2, "late_dropped": 1, "late_adjusted": 0}
    assert resumed.advance() == seen.advance() == {"a": 34}


class FakeClock:
    def __init__(self):
        self.ms = 1_000

    def __call__(self):
        return self.ms


def test_an_idle_source_is_raised_to_the_lowest_active_punctuation():
    clock = FakeClock()
    punctuations = Punctuations(["a", "b", "c"], idle_timeout=2, clock_ms=clock)
    feed(punctuations, "a", 100)
    feed(punctuations, "b", 10)
    feed(punctuations, "c", 70)
    punctuations.advance()
    clock.ms += 1_999
    feed(punctuations, "a", 120)
    feed(punctuations, "c", 80)
    assert punctuations.advance() == {"a": 119, "c": 79}  # b is silent for just under the timeout
    clock.ms += 1
    feed(punctuations, "a", 130)
    assert punctuations.advance() == {"a": 129, "b": 79}  # b passed: raised to c's, the lowest active one's
    assert punctuations.time() == 79
    assert feed(punctuations, "b", 79, 80) == [80]  # b's events at or below what it was given are late
    assert punctuations.dead_letters[0]["punctuation"] == 79


def test_ended_sources_are_never_idle_and_with_none_active_nothing_is_passed():
    clock = FakeClock()
    punctuations = Punctuations(["a", "b"], idle_timeout=1, clock_ms=clock)
    punctuations.advance()  # silence counts from here for sources not yet heard of
    clock.ms += 5_000
    assert punctuations.advance() == {}  # both idle: no active source to raise them to
    feed(punctuations, "a", 50)
    assert punctuations.advance() == {"a": 49, "b": 49}
    punctuations.end("a")
    clock.ms += 5_000
    assert punctuations.advance() == {"a": math.inf, "b": math.inf}  # a ended: b idle, raised to a's +inf


def test_snapshot_round_trips_through_msgpack_and_the_run_goes_on_the_same():
    def run(events, split):
        punctuations, minted = Punctuations(["a", "b"], reorder_latency=3, late="drop"), []
        for index, (source, ts, payload) in enumerate(events):
            if index == split:
                snapshot = msgpack.unpackb(msgpack.packb(punctuations.snapshot()), strict_map_key=False)
                punctuations = Punctuations(["a", "b"], reorder_latency=3, late="drop")
                punctuations.restore(snapshot)
            item = one(punctuations, source, ts, payload, 0.0)
            minted.append(None if item is None else item.meta)
            punctuations.advance()
        return minted, punctuations.snapshot(), punctuations.time()

    events = [("a", 10, "x"), ("b", 4, "y"), ("a", 10, "x"), ("a", 5, "z"), ("a", 10, "x"), ("b", 9, "y"),
              ("b", 2, "w"), ("a", 20, "x")]
    whole = run(events, None)
    for split in range(1, len(events)):
        assert run(events, split) == whole
    assert whole[1]["sources"]["a"]["late_dropped"] == 1 and whole[1]["sources"]["b"]["late_dropped"] == 1


def test_dead_letters_are_not_part_of_a_snapshot():
    punctuations = Punctuations(["a"])
    feed(punctuations, "a", 10)
    punctuations.advance()
    feed(punctuations, "a", 3)
    restored = Punctuations(["a"])
    restored.restore(punctuations.snapshot())
    assert len(punctuations.dead_letters) == 1 and restored.dead_letters == []
    assert restored.counts()["late_dropped"] == 1
