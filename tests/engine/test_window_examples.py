"""The window examples (ad_clicks, smart_meters, sessions) against plain in-order programs written here.

Each example's input is made out of order as its `--disorder` option does
(flamespark's `disorder_pairs`) with a reorder latency that leaves no event
late, run in both modes on the local engine (one example also on Spark), and
compared with a program that reads the events sorted by time and computes the
same results with dicts and loops. Results of one event time may come in any
order (their order is the engine's tie-break), so they are compared sorted;
that the released sequence is the in-order run's is checked too.
"""
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.tools.loader import load_module
from tests.oracles.changelog_checks import replay
from tests.doctests import assert_runs, examples_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODES = ["optimistic", "buffered"]
MINUTE, HOUR = 60_000, 3_600_000

ad_clicks = load_module(EXAMPLES / "ad_clicks.py")
smart_meters = load_module(EXAMPLES / "smart_meters.py")
sessions = load_module(EXAMPLES / "sessions.py")
window_cli = load_module(EXAMPLES / "window_cli.py")


def canonical(payloads) -> list:
    return sorted(json.dumps(payload, sort_keys=True) for payload in payloads)


def lateness(pairs) -> int:
    """How far the latest-arriving event is behind the newest one before it: the least reorder latency that
    leaves none late."""
    newest, worst = None, 0
    for ts, _ in pairs:
        if newest is not None:
            worst = max(worst, newest - ts)
        newest = ts if newest is None else max(newest, ts)
    return worst


def run_disordered(graph, inputs, mode, percent, stddev_ms, seed, **options):
    """Run `graph` over `inputs` made out of order as the examples' command line does, with no event late; in
    the optimistic mode, with its changelog, which must replay to the released outputs."""
    arrival = window_cli.disordered(inputs, percent, stddev_ms, seed)
    latency = max(map(lateness, arrival.values()))
    changes = mode == "optimistic"
    result = fs.run(graph, arrival, mode=mode, reorder_latency=latency, changes=changes, **options)
    assert result.late == []
    for sink, outputs in result.outputs.items() if changes else ():
        assert Counter(payload for _, payload in replay(result.changes[sink]).elements()) == Counter(map(pack, outputs))
    return result


def in_order(graph, inputs) -> dict:
    return fs.run(graph, inputs).outputs


def window(key, start, end, value) -> dict:
    return {"key": key, "start": start, "end": end, "value": value}


# --- plain in-order programs -------------------------------------------------------------------------------

def clicks_per_minute(clicks) -> list:
    counts = Counter()
    for ts, click in sorted(clicks, key=lambda pair: pair[0]):
        counts[click["ad"], ts // MINUTE] += 1
    return [window(ad, minute * MINUTE, (minute + 1) * MINUTE, n) for (ad, minute), n in counts.items()]


def clicks_by_impression(clicks) -> dict:
    times = defaultdict(list)
    for ts, click in clicks:
        times[click["impression"]].append(ts)
    return times


def unclicked(impressions, clicks) -> list:
    times = clicks_by_impression(clicks)
    return [impression for shown, impression in impressions
            if not any(0 <= clicked - shown <= HOUR for clicked in times[impression["impression"]])]


def ctr_per_hour(impressions, clicks) -> list:
    """Each impression counts in the hour its outcome is known: at its click within the hour (once per such
    click), or an hour after it was shown."""
    times = clicks_by_impression(clicks)
    tallies = defaultdict(lambda: [0, 0])
    for shown, impression in impressions:
        hits = [clicked for clicked in times[impression["impression"]] if 0 <= clicked - shown <= HOUR]
        for decided in hits or [shown + HOUR]:
            tally = tallies[impression["ad"], decided // HOUR]
            tally[0] += 1
            tally[1] += bool(hits)
    return [window(ad, hour * HOUR, (hour + 1) * HOUR, {"impressions": n, "clicks": c, "ctr": round(c / n, 4)})
            for (ad, hour), (n, c) in tallies.items()]


def hourly_consumption(readings) -> list:
    """(time, consumption): per meter, each two readings in consecutive hours give the later hour's consumption,
    at the last instant of the 2-hour window [earlier hour, later hour + 1 h)."""
    by_meter = defaultdict(dict)
    for ts, reading in readings:
        by_meter[reading["meter"]][ts // HOUR] = reading["kwh"]
    consumption = []
    for meter, hourly in by_meter.items():
        for hour, kwh in hourly.items():
            if hour + 1 in hourly:
                consumption.append(((hour + 2) * HOUR - 1,
                                    {"meter": meter, "hour": (hour + 1) * HOUR, "kwh": round(hourly[hour + 1] - kwh, 3)}))
    return consumption


def breakdown_alerts(consumption) -> list:
    """Every 4-hour window (sliding by 1 h) of a meter's consumptions in which one or more large ones come
    before a negative one; `large` counts those before the first such negative one."""
    by_meter = defaultdict(list)
    for ts, c in sorted(consumption, key=lambda pair: pair[0]):
        by_meter[c["meter"]].append((ts, c["kwh"]))
    alerts = []
    for meter, series in by_meter.items():
        # windows are aligned to time 0 and may start before it: [-2 h, 2 h) holds what the first hours hold
        starts = {ts // HOUR - back for ts, _ in series for back in range(4)}
        for first in sorted(starts):
            values = [kwh for ts, kwh in series if first * HOUR <= ts < (first + 4) * HOUR]
            large = 0
            for kwh in values:
                if kwh < 0 and large:
                    alerts.append({"meter": meter, "start": first * HOUR, "end": (first + 4) * HOUR, "large": large})
                    break
                large += kwh > smart_meters.LARGE_KWH
    return alerts


def user_sessions(views) -> list:
    times = defaultdict(list)
    for ts, view in views:
        times[view["user"]].append(ts)
    found = []
    for user, stamps in times.items():
        stamps.sort()
        first = previous = stamps[0]
        count = 0
        for ts in stamps:
            if ts - previous >= 30 * MINUTE:
                found.append({"user": user, "start": first, "events": count, "duration_ms": previous - first})
                first, count = ts, 0
            count += 1
            previous = ts
        found.append({"user": user, "start": first, "events": count, "duration_ms": previous - first})
    return found


# --- the references on hand-made input, so that they are known to be right -----------------------------------

def test_the_references_on_events_worked_out_by_hand():
    impressions = [(0, {"impression": 1, "ad": "a"}), (10, {"impression": 2, "ad": "a"}),
                   (HOUR + 5, {"impression": 3, "ad": "b"})]
    clicks = [(HOUR, {"impression": 1, "ad": "a"}), (HOUR + 11, {"impression": 2, "ad": "a"}),
              (HOUR + 6, {"impression": 3, "ad": "b"})]
    assert canonical(clicks_per_minute(clicks)) == canonical([window("a", 60 * MINUTE, 61 * MINUTE, 2),
                                                              window("b", 60 * MINUTE, 61 * MINUTE, 1)])
    assert unclicked(impressions, clicks) == [{"impression": 2, "ad": "a"}]  # its click came 1 ms too late
    # impression 1 clicked at 1 h, 2 decided unclicked at 1 h + 10, 3 clicked at 1 h + 6: all in hour 1
    assert ctr_per_hour(impressions, clicks) == [
        window("a", HOUR, 2 * HOUR, {"impressions": 2, "clicks": 1, "ctr": 0.5}),
        window("b", HOUR, 2 * HOUR, {"impressions": 1, "clicks": 1, "ctr": 1.0})]
    readings = [(h * HOUR + 7, {"meter": "m", "kwh": kwh}) for h, kwh in [(0, 1.0), (1, 2.0), (2, 12.0), (3, 5.0)]]
    consumption = hourly_consumption(readings)
    assert consumption == [(2 * HOUR - 1, {"meter": "m", "hour": HOUR, "kwh": 1.0}),
                           (3 * HOUR - 1, {"meter": "m", "hour": 2 * HOUR, "kwh": 10.0}),
                           (4 * HOUR - 1, {"meter": "m", "hour": 3 * HOUR, "kwh": -7.0})]
    # the negative consumption at 4 h - 1 follows the large one at 3 h - 1 in the windows starting at 0, 1 and 2 h
    assert breakdown_alerts(consumption) == [{"meter": "m", "start": start * HOUR, "end": (start + 4) * HOUR,
                                              "large": 1} for start in range(3)]
    views = [(0, {"user": "u"}), (29 * MINUTE, {"user": "u"}), (59 * MINUTE, {"user": "u"}),
             (59 * MINUTE + 1, {"user": "v"})]
    assert user_sessions(views) == [{"user": "u", "start": 0, "events": 2, "duration_ms": 29 * MINUTE},
                                    {"user": "u", "start": 59 * MINUTE, "events": 1, "duration_ms": 0},
                                    {"user": "v", "start": 59 * MINUTE + 1, "events": 1, "duration_ms": 0}]


# --- the examples under disorder against the references -------------------------------------------------------

DISORDER = dict(percent=st.floats(0, 100), seed=st.integers(0, 2 ** 16))
EXAMPLE_SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TRAFFIC = ad_clicks.traffic(minutes=150, ads=4, per_minute=3, seed=5)
READINGS = {"readings": smart_meters.readings(meters=6, days=4, seed=5)}
VIEWS = {"clicks": sessions.page_views(users=40, hours=8, seed=5)}


def test_the_inputs_hold_what_the_queries_look_for():
    """Else the comparisons below would pass on empty results."""
    assert len(unclicked(*TRAFFIC.values())) > 10
    assert any(c["clicks"] > 1 for c in (w["value"] for w in ctr_per_hour(*TRAFFIC.values())))
    assert any(w["value"] > 1 for w in clicks_per_minute(TRAFFIC["clicks"]))
    assert any(alert["large"] > 1 for alert in breakdown_alerts(hourly_consumption(READINGS["readings"])))
    assert any(s["events"] > 3 for s in user_sessions(VIEWS["clicks"]))


@pytest.mark.parametrize("mode", MODES)
@EXAMPLE_SETTINGS
@given(stddev_ms=st.sampled_from([10_000, 5 * MINUTE]), **DISORDER)
def test_ad_clicks_equal_the_plain_program(mode, stddev_ms, percent, seed):
    result = run_disordered(ad_clicks.graph(), TRAFFIC, mode, percent, stddev_ms, seed)
    impressions, clicks = TRAFFIC["impressions"], TRAFFIC["clicks"]
    assert canonical(result.outputs["clicks_per_minute"]) == canonical(clicks_per_minute(clicks))
    assert canonical(result.outputs["unclicked"]) == canonical(unclicked(impressions, clicks))
    assert canonical(result.outputs["ctr_per_hour"]) == canonical(ctr_per_hour(impressions, clicks))
    assert result.outputs == in_order(ad_clicks.graph(), TRAFFIC)


@pytest.mark.parametrize("mode", MODES)
@EXAMPLE_SETTINGS
@given(stddev_ms=st.sampled_from([10 * MINUTE, 2 * HOUR]), **DISORDER)
def test_smart_meter_alerts_equal_the_plain_program(mode, stddev_ms, percent, seed):
    result = run_disordered(smart_meters.graph(), READINGS, mode, percent, stddev_ms, seed)
    consumption = hourly_consumption(READINGS["readings"])
    assert canonical(result.outputs["consumption"]) == canonical(c for _, c in consumption)
    assert canonical(result.outputs["alerts"]) == canonical(breakdown_alerts(consumption))
    assert result.outputs == in_order(smart_meters.graph(), READINGS)


@pytest.mark.parametrize("mode", MODES)
@EXAMPLE_SETTINGS
@given(stddev_ms=st.sampled_from([MINUTE, 15 * MINUTE]), **DISORDER)
def test_sessions_equal_the_plain_program(mode, stddev_ms, percent, seed):
    result = run_disordered(sessions.graph(), VIEWS, mode, percent, stddev_ms, seed)
    assert canonical(result.outputs["sessions"]) == canonical(user_sessions(VIEWS["clicks"]))
    assert result.outputs == in_order(sessions.graph(), VIEWS)


@pytest.mark.spark
def test_smart_meters_on_spark_equal_the_plain_program(spark):
    small = {"readings": smart_meters.readings(meters=3, days=2, seed=5)}
    result = run_disordered(smart_meters.graph(), small, "optimistic", 30, HOUR, 2, engine="spark", spark=spark,
                            shards=2, max_rows_per_batch=40)
    consumption = hourly_consumption(small["readings"])
    assert canonical(result.outputs["consumption"]) == canonical(c for _, c in consumption)
    assert canonical(result.outputs["alerts"]) == canonical(breakdown_alerts(consumption))
    assert result.outputs == in_order(smart_meters.graph(), small)
    assert result.metrics["engine"]["batches"] > 3


@pytest.mark.spark
def test_ad_clicks_on_spark_buffered_equal_the_plain_program(spark):
    """A join, then a window, in the baseline's mode: a window's running values reach the buffer in front of
    the next operator there too (an early version on Spark counted them as impressions)."""
    small = ad_clicks.traffic(minutes=100, ads=3, per_minute=2, seed=9)
    result = run_disordered(ad_clicks.graph(), small, "buffered", 40, 5 * MINUTE, 3, engine="spark", spark=spark,
                            shards=2, max_rows_per_batch=50)
    impressions, clicks = small["impressions"], small["clicks"]
    assert canonical(result.outputs["ctr_per_hour"]) == canonical(ctr_per_hour(impressions, clicks))
    assert canonical(result.outputs["unclicked"]) == canonical(unclicked(impressions, clicks))
    assert result.outputs == in_order(ad_clicks.graph(), small)
    assert result.metrics["engine"]["batches"] > 3


# --- the command line ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("example, argv", [
    (ad_clicks, ["--minutes", "30", "--per-minute", "5"]),
    (smart_meters, ["--meters", "4", "--days", "2"]),
    (sessions, ["--users", "10", "--hours", "3"]),
])
def test_each_example_runs_from_its_command_line_and_prints_its_sinks(example, argv, capsys, tmp_path):
    example.main([*argv, "--show", "2", "--write-input", str(tmp_path)])
    printed = capsys.readouterr().out
    graph = example.graph()
    assert "0 later than the reorder latency" in printed
    for sink in graph.sinks:
        assert f"\n{sink}: " in printed
    written = {path.stem: path for path in tmp_path.glob("*.jsonl")}
    assert sorted(written) == sorted(graph.sources)
    # what it wrote is what it ran: `flamespark run` on the files releases the same
    rerun = fs.run(graph, {name: str(path) for name, path in written.items()}, reorder_latency=10 * HOUR)
    for sink, outputs in rerun.outputs.items():
        assert f"\n{sink}: {len(outputs)} results" in printed


def test_the_examples_in_their_docstrings():
    tests = [test for module in (ad_clicks, smart_meters, sessions, window_cli) for test in examples_of(module)]
    assert len(tests) >= 8
    for test in tests:
        assert_runs(test)


def test_a_bad_option_is_named(capsys):
    with pytest.raises(SystemExit):
        sessions.main(["--disorder", "120"])
    assert "--disorder: must be between 0 and 100, not 120" in capsys.readouterr().err
