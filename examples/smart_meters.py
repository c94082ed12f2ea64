"""Smart meters: TinTiN's validation of meter readings, two chained sliding windows, exact under disorder.

    python examples/smart_meters.py                   # 50 meters, 10 days of hourly readings, 30 % of them late
    python examples/smart_meters.py --disorder 0      # in event-time order: the same results
    python examples/smart_meters.py --write-input input/     # also writes its events as JSONL, then:
    flamespark run examples/smart_meters.py:graph --input readings=input/readings.jsonl \\
        --reorder-latency 21600000 --out out/

A smart meter reports its cumulative consumption about once an hour
(`{"meter", "kwh"}`, `kwh` the meter's total so far). A meter that starts to
break down shows a pattern (the TinTiN paper's running example): one or more
large hourly consumptions followed by a negative one within four hours. The
query finds it with two aggregates, the second over the results of the first:

- `consumption`: a hopping window of 2 hours sliding by 1 hour holds two
  consecutive readings of a meter; their difference is the hour's
  consumption, `{"meter", "hour", "kwh"}` (a window with only one reading, at
  either end of the data or next to a missing reading, gives none).
- `alerts`: a hopping window of 4 hours sliding by 1 hour over those
  consumptions; an alert `{"meter", "start", "end", "large"}` for every window
  in which large consumptions are followed by a negative one, `large` their
  number.

The window results of the first aggregate are events like any other, at
their window's last instant (`end - 1`), so the second one windows them by
that time. Readings can come hours late (TinTiN's meters report up to 40
days late): every alert is what an in-order run would give.
"""
import random

from window_cli import parser, run_and_show

import flamespark as fs
from flamespark.tools.arguments import positive_int

HOUR = 3_600_000  # ms
LARGE_KWH = 5.0  # an hour's consumption above this is large (the fuses allow no more in normal use)


def graph() -> fs.Graph:
    """Readings -> hourly consumption (2 h windows sliding 1 h) -> alerts (4 h windows sliding 1 h)."""
    g = fs.Graph("smart_meters")
    readings = g.source("readings")
    consumption = (readings.hopping_window(key=by_meter, size=2 * HOUR, slide=HOUR, name="consecutive_readings")
                   .collect(lambda reading: reading["kwh"])
                   .flat_map(hourly_consumption, name="hourly_consumption"))
    consumption.sink("consumption")
    # The second aggregate is order-sensitive (large values, *then* a negative one) and has no `merge`: the engine
    # folds each window's consumptions in event-time order, however they arrived.
    (consumption.hopping_window(key=by_meter, size=4 * HOUR, slide=HOUR, name="breakdown_pattern")
     .aggregate(add=match_pattern, zero={"large": 0, "matched": 0}, finish=lambda state: state["matched"])
     .flat_map(alert, name="alerts")
     .sink("alerts"))
    return g


def by_meter(event: dict) -> str:
    return event["meter"]


def hourly_consumption(window: dict) -> list:
    """The consumption between the two readings of a 2-hour window, or nothing if it holds only one.

    >>> hourly_consumption({"key": "m1", "start": 0, "end": 7_200_000, "value": [10.5, 11.75]})
    [{'meter': 'm1', 'hour': 3600000, 'kwh': 1.25}]
    >>> hourly_consumption({"key": "m1", "start": 3_600_000, "end": 10_800_000, "value": [11.75]})
    []
    """
    readings = window["value"]
    if len(readings) != 2:
        return []
    earlier, later = readings
    return [{"meter": window["key"], "hour": window["start"] + HOUR, "kwh": round(later - earlier, 3)}]


def match_pattern(state: dict, consumption: dict) -> dict:
    """Fold one consumption (in event-time order) into the search for large values followed by a negative one:
    `large` counts the large values so far, `matched` is their number once a negative one followed them.

    >>> state = {"large": 0, "matched": 0}
    >>> for kwh in [1.0, 9.0, 12.0, -30.0, 8.0]:
    ...     state = match_pattern(state, {"kwh": kwh})
    >>> state
    {'large': 2, 'matched': 2}
    """
    if state["matched"]:
        return state
    if consumption["kwh"] < 0:
        return {"large": state["large"], "matched": state["large"]}
    if consumption["kwh"] > LARGE_KWH:
        return {"large": state["large"] + 1, "matched": 0}
    return state


def alert(window: dict) -> list:
    """An alert for a window of consumptions in which the pattern matched."""
    if not window["value"]:
        return []
    return [{"meter": window["key"], "start": window["start"], "end": window["end"], "large": window["value"]}]


def readings(meters: int = 50, days: int = 10, seed: int = 1) -> list:
    """Hourly readings of `meters` meters over `days` days, in event-time order, as `(ts, {"meter", "kwh"})`.

    A reading comes in the first minute of its hour; about 1 % are missing.
    A meter uses 0.1-2 kWh an hour; about once in 200 hours it starts to break
    down: one to three hours of 6-15 kWh, then its total drops by 20-40 kWh.

    >>> readings(meters=2, days=1)[:2]
    [(4135, {'meter': 'm1', 'kwh': 0.0}), (55537, {'meter': 'm0', 'kwh': 0.0})]
    """
    rng = random.Random(seed)
    totals = [0.0] * meters
    breaking = [0] * meters  # hours of large consumption still to come, then the drop
    events = []
    for hour in range(days * 24):
        for meter in range(meters):
            if hour:
                totals[meter] += _usage(rng, breaking, meter)
            if rng.random() >= 0.01:
                ts = hour * HOUR + rng.randrange(60_000)
                events.append((ts, {"meter": f"m{meter}", "kwh": round(totals[meter], 3)}))
    events.sort(key=lambda event: event[0])
    return events


def _usage(rng: random.Random, breaking: list, meter: int) -> float:
    """One hour's change of a meter's total: normal use, a large one while it breaks down, then a drop."""
    if breaking[meter] == 0 and rng.random() < 1 / 200:
        breaking[meter] = rng.randint(1, 3) + 1  # the large hours, and the drop after them
    if breaking[meter] == 0:
        return rng.uniform(0.1, 2.0)
    breaking[meter] -= 1
    return -rng.uniform(20.0, 40.0) if breaking[meter] == 0 else rng.uniform(6.0, 15.0)


def main(argv=None):
    """Generate the readings, make them late as the options say, run the query and print a few results."""
    options = parser(__doc__.split("\n\n")[0], stddev_ms=HOUR, reorder_latency=6 * HOUR)
    options.add_argument("--meters", type=positive_int, default=50, help="how many meters")
    options.add_argument("--days", type=positive_int, default=10, help="days of hourly readings")
    args = options.parse_args(argv)
    run_and_show(graph(), {"readings": readings(args.meters, args.days, args.seed)}, args)


if __name__ == "__main__":
    main()
