"""Tests for flamespark.tools.disorder (the Impatience paper's disorder generator)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamespark import InputError
from flamespark.cli import build_parser, main
from flamespark.tools.disorder import (
    count_inversions,
    count_runs,
    disorder_events,
    disorder_file,
)


def make_events(ts_values):
    return [{"ts": t, "i": i} for i, t in enumerate(ts_values)]


sorted_ts = st.lists(st.integers(-10**12, 10**12), max_size=60).map(sorted)
percents = st.floats(0, 100)
stddevs = st.floats(0, 1e4)
seeds = st.integers(0, 2**32)


def write_jsonl(path: Path, objects) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def brute_inversions(ts):
    return sum(1 for i in range(len(ts)) for j in range(i + 1, len(ts)) if ts[i] > ts[j])


# --------------------------------------------------------------- properties

@settings(max_examples=60, deadline=None)
@given(sorted_ts, stddevs, seeds)
def test_zero_percent_is_identity(ts, stddev, seed):
    events = make_events(ts)
    out = disorder_events(events, 0, stddev, seed)
    assert [e["i"] for e in out] == list(range(len(events)))


@settings(max_examples=60, deadline=None)
@given(sorted_ts, percents, seeds)
def test_zero_stddev_is_identity(ts, percent, seed):
    events = make_events(ts)
    assert disorder_events(events, percent, 0, seed) == events


@settings(max_examples=100, deadline=None)
@given(sorted_ts, percents, stddevs, seeds)
def test_events_preserved_and_ts_unchanged(ts, percent, stddev, seed):
    events = make_events(ts)
    snapshot = [dict(e) for e in events]
    out = disorder_events(events, percent, stddev, seed)
    assert len(out) == len(events)
    assert sorted(e["i"] for e in out) == list(range(len(events)))
    assert all(e["ts"] == ts[e["i"]] for e in out)
    assert events == snapshot               # input not mutated
    assert out == disorder_events(events, percent, stddev, seed)  # reproducible


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=40).map(sorted), percents,
       st.floats(0, 200), seeds)
def test_events_only_arrive_late_and_by_at_most_max_delay(tmp_path_factory, ts, percent,
                                                           stddev, seed):
    tmp = tmp_path_factory.mktemp("prop")
    src = write_jsonl(tmp / "in.jsonl", make_events(ts))
    summary = disorder_file(src, tmp / "out.jsonl", percent, stddev, seed)
    out = [json.loads(line) for line in (tmp / "out.jsonl").read_text().splitlines()]
    # An event b overtaken by an earlier-arriving a with a larger ts must have
    # been delayed by more than ts_a - ts_b.
    for x in range(len(out)):
        for y in range(x + 1, len(out)):
            if out[x]["ts"] > out[y]["ts"]:
                assert out[x]["ts"] - out[y]["ts"] <= summary["max_delay_ms"]
    assert summary["inversions"] == brute_inversions([e["ts"] for e in out])
    assert summary["events"] == len(ts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=50))
def test_count_inversions_matches_brute_force(ts):
    assert count_inversions(ts) == brute_inversions(ts)
    assert count_runs(ts) == (0 if not ts else
                              1 + sum(1 for a, b in zip(ts, ts[1:]) if b < a))


def test_measures_simple_cases():
    assert count_inversions([]) == 0 and count_runs([]) == 0
    assert count_inversions([1, 2, 2, 3]) == 0 and count_runs([1, 2, 2, 3]) == 1
    assert count_inversions([3, 2, 1]) == 3 and count_runs([3, 2, 1]) == 3
    assert count_inversions(list(range(1000, 0, -1))) == 1000 * 999 // 2


# ----------------------------------------------------------- paper settings

def test_thirty_percent_delayed_with_half_normal_delays(tmp_path):
    n = 10_000
    src = write_jsonl(tmp_path / "in.jsonl", make_events([t * 10 for t in range(n)]))
    summary = disorder_file(src, tmp_path / "out.jsonl", 30, 64, seed=42)
    assert summary["events"] == n
    assert summary["delayed"] == 3000
    # E|N(0, 64)| = 64 * sqrt(2 / pi) ~ 51.1; 3000 samples -> tight.
    assert 47 < summary["mean_delay_ms"] < 55
    assert 64 * 2.5 < summary["max_delay_ms"] < 64 * 6
    assert summary["inversions"] > 0 and 1 < summary["runs"] <= 3001

    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    moved = sum(1 for pos, e in enumerate(out) if e["i"] != pos)
    assert 0 < moved < n
    # Most delayed events still arrive within a few ms-spaced slots of home.
    assert max(pos - e["i"] for pos, e in enumerate(out)) < 64 * 6 / 10 + 1


def test_delayed_fraction_is_about_thirty_percent_in_memory():
    n = 2000
    events = make_events([t * 1000 for t in range(n)])  # gaps >> delays...
    out = disorder_events(events, 30, 64, seed=3)
    assert [e["i"] for e in out] == list(range(n))       # ...so nothing overtakes
    dense = make_events([0] * n)                          # all at the same time:
    out = disorder_events(dense, 30, 64, seed=3)          # delayed ones go last
    late = [e["i"] for e in out[n - 600:]]
    assert len(set(late)) == 600
    assert [e["i"] for e in out[: n - 600]] == sorted(set(range(n)) - set(late))


def test_seeded_reproducibility_and_seed_dependence(tmp_path):
    events = make_events(range(500))
    a = disorder_events(events, 30, 64, seed=7)
    b = disorder_events(events, 30, 64, seed=7)
    c = disorder_events(events, 30, 64, seed=8)
    assert a == b and a != c
    src = write_jsonl(tmp_path / "in.jsonl", events)
    disorder_file(src, tmp_path / "out.jsonl", 30, 64, seed=7)
    from_file = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert from_file == a


# --------------------------------------------------------------------- files

def test_lines_copied_verbatim_and_blank_lines_skipped(tmp_path):
    src = tmp_path / "in.jsonl"
    lines = ['{"ts": 0, "title": "Zürich"}', '{ "b":1,  "ts":1 }', "",
             '{"ts": 2, "x": [1, 2.50]}', "   "]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = disorder_file(src, tmp_path / "out.jsonl", 100, 0, seed=1)
    assert summary["events"] == 3 and summary["delayed"] == 3
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines() == \
        [line for line in lines if line.strip()]


def test_empty_input(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("")
    summary = disorder_file(src, tmp_path / "out.jsonl", 30, 64, seed=1)
    assert summary["events"] == 0 and summary["inversions"] == 0
    assert (tmp_path / "out.jsonl").read_text() == ""


BAD_LINES = [
    ("not json", "malformed JSON"),
    ('[1, 2]', "expected a JSON object"),
    ('{"t": 3}', "missing event time field 'ts'"),
    ('{"ts": 2.5}', "'ts' must be an integer"),
    ('{"ts": "5"}', "'ts' must be an integer"),
    ('{"ts": true}', "'ts' must be an integer"),
    ('{"ts": null}', "'ts' must be an integer"),
    ('{"ts": 0}', "must be sorted by ts"),
]


@pytest.mark.parametrize("bad,message", BAD_LINES)
def test_bad_line_rejected_with_file_and_line(tmp_path, bad, message):
    src = tmp_path / "events.jsonl"
    src.write_text('{"ts": 1}\n\n{"ts": 2}\n' + bad + '\n{"ts": 9}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError) as info:
        disorder_file(src, out, 30, 64, seed=1)
    assert f"{src}:4" in str(info.value)
    assert message in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl"]


def test_invalid_utf8_rejected(tmp_path):
    src = tmp_path / "events.jsonl"
    src.write_bytes(b'{"ts": 1}\n{"ts": 2, "x": "\xff"}\n')
    with pytest.raises(InputError, match=r"events\.jsonl:2: .*UTF-8"):
        disorder_file(src, tmp_path / "out.jsonl", 30, 64, seed=1)


def test_missing_input(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        disorder_file(tmp_path / "nope.jsonl", tmp_path / "out.jsonl", 30, 64, seed=1)


def test_in_memory_bad_events():
    with pytest.raises(InputError, match="event 1: 'ts' must be an integer"):
        disorder_events([{"ts": 1}, {"ts": 1.5}], 30, 64, seed=1)
    with pytest.raises(InputError, match="event 1: ts 1 is smaller than the previous event's ts 2; .* sorted"):
        disorder_events([{"ts": 2}, {"ts": 1}], 30, 64, seed=1)
    with pytest.raises(InputError, match="event 0: expected a JSON object with an integer 'ts', got int"):
        disorder_events([5], 30, 64, seed=1)


@pytest.mark.parametrize("percent,stddev,message", [
    (-1, 64, "percent must be between 0 and 100"),
    (100.5, 64, "percent must be between 0 and 100"),
    (math.nan, 64, "percent must be between 0 and 100"),
    (30, -0.1, "stddev_ms must be a finite number >= 0"),
    (30, math.inf, "stddev_ms must be a finite number >= 0"),
])
def test_parameter_validation(tmp_path, percent, stddev, message):
    with pytest.raises(ValueError, match=message):
        disorder_events(make_events([1, 2]), percent, stddev, seed=1)
    src = write_jsonl(tmp_path / "in.jsonl", make_events([1, 2]))
    with pytest.raises(ValueError, match=message):
        disorder_file(src, tmp_path / "out.jsonl", percent, stddev, seed=1)
    assert not (tmp_path / "out.jsonl").exists()


# ----------------------------------------------------------------------- CLI

def test_cli_wiring(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", make_events(range(0, 1000, 5)))
    out = tmp_path / "out.jsonl"
    argv = ["disorder", str(src), "--out", str(out), "--percent", "30", "--stddev-ms", "64", "--seed", "9"]
    args = build_parser().parse_args(argv)
    assert (args.percent, args.stddev_ms, args.seed) == (30.0, 64.0, 9)
    assert main(argv) == 0
    assert "200 events, 60 delayed" in capsys.readouterr().err
    assert [json.loads(x)["i"] for x in out.read_text().splitlines()] == \
        [e["i"] for e in disorder_events(make_events(range(0, 1000, 5)), 30, 64, seed=9)]


def test_cli_defaults_are_the_papers():
    args = build_parser().parse_args(["disorder", "in.jsonl", "--out", "o.jsonl"])
    assert (args.percent, args.stddev_ms) == (30.0, 64.0)


@pytest.mark.parametrize("flag,value", [("--percent", "101"), ("--percent", "-3"),
                                        ("--percent", "abc"), ("--stddev-ms", "-1"),
                                        ("--stddev-ms", "inf")])
def test_cli_rejects_bad_parameters(flag, value, capsys):
    with pytest.raises(SystemExit) as info:
        main(["disorder", "in.jsonl", "--out", "o.jsonl", flag, value])
    assert info.value.code == 2
    assert flag in capsys.readouterr().err


def test_cli_bad_input_exit_1(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"ts": 1}\n{"ts": "x"}\n')
    assert main(["disorder", str(src), "--out", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("flamespark: error: ") and f"{src}:2" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_refuses_to_write_over_its_input(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"ts": {ts}}}\n' for ts in range(20)))
    before = src.read_bytes()
    assert main(["disorder", str(src), "--out", str(tmp_path / "." / "in.jsonl"), "--percent", "100"]) == 1
    assert "is the input file: give --out another path" in capsys.readouterr().err
    assert src.read_bytes() == before
