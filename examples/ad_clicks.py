"""Ad clicks: the Azure Stream Analytics blog's three queries, exact however late the events come.

    python examples/ad_clicks.py                     # 3 hours of made-up traffic, 30 % of it late
    python examples/ad_clicks.py --disorder 0        # the same, in event-time order: the same results
    python examples/ad_clicks.py --write-input input/     # also writes its events as JSONL, then:
    flamespark run examples/ad_clicks.py:graph --input impressions=input/impressions.jsonl \\
        --input clicks=input/clicks.jsonl --reorder-latency 120000 --out out/

Two sources: `impressions` (an ad was shown: `{"impression", "ad", "ts"}`)
and `clicks` (a shown ad was clicked: `{"impression", "ad", "ts"}`, naming the
impression it came from). Three sinks:

- `clicks_per_minute`: per ad and minute, how many clicks (a tumbling window).
- `unclicked`: every impression that got no click within 60 minutes (a
  left-anti interval join: absence detection). It comes out once the hour has
  passed, at event time `shown + 60 min`: not before, since a click may still
  come, and not later, since none can count any more.
- `ctr_per_hour`: per ad and hour, the click-through rate (a left interval
  join that decides, for every impression, whether it was clicked, then a
  tumbling window over those decisions). A decision is an event of its own
  time: a click's, or for an impression without one, an hour after it was
  shown. So an hour counts the impressions decided in it, and the first hour
  only those clicked (no "no click" is decided before an hour has passed):
  read the rates from the second hour on.

Every result is what an in-order run would give: a click that arrives late
is still counted in its own minute, and an impression's "no click" is never
released while a late click could still turn up.
"""
import random

from window_cli import parser, run_and_show

import flamespark as fs
from flamespark.tools.arguments import positive_int

MINUTE = 60_000  # ms: durations are integer milliseconds
HOUR = 60 * MINUTE


def graph() -> fs.Graph:
    """The three queries over one graph with two sources."""
    g = fs.Graph("ad_clicks")
    impressions, clicks = g.source("impressions"), g.source("clicks")

    # 1. A tumbling window: one result per ad and minute holding a click, {"key": ad, "start", "end", "value": n},
    #    released once no event of that minute can still come.
    clicks.tumbling_window(key=by_ad, size=MINUTE, name="clicks_per_minute").count().sink("clicks_per_minute")

    # 2. Absence: an impression is joined to the clicks on it that come 0 to 60 minutes later; "left_anti" keeps
    #    the impressions that found none, each at event time shown + 60 min.
    impressions.interval_join(clicks, key=by_impression, within=(0, HOUR), how="left_anti",
                              name="no_click_within_an_hour").sink("unclicked")

    # 3. Join, then window. "left" gives {"left": impression, "right": click} for a clicked impression (at the
    #    click's time) and {"left": impression, "right": None} for one that was not (at shown + 60 min), so an
    #    impression is counted in the hour in which its outcome was decided.
    outcomes = impressions.interval_join(clicks, key=by_impression, within=(0, HOUR), how="left", name="outcomes")
    outcomes.tumbling_window(key=lambda outcome: outcome["left"]["ad"], size=HOUR, name="ctr_per_hour").aggregate(
        add=tally, zero={"impressions": 0, "clicks": 0}, merge=add_tallies, finish=click_through_rate,
    ).sink("ctr_per_hour")
    return g


def by_ad(event: dict) -> str:
    return event["ad"]


def by_impression(event: dict) -> int:
    """Both sides of the join carry the impression's id: a click names the impression it came from."""
    return event["impression"]


def tally(counts: dict, outcome: dict) -> dict:
    """Count one impression and whether it was clicked (a new dict: an aggregate must not change its input)."""
    return {"impressions": counts["impressions"] + 1, "clicks": counts["clicks"] + (outcome["right"] is not None)}


def add_tallies(first: dict, second: dict) -> dict:
    """Two tallies as one: tallies add up whatever their order, so the engine may combine partial ones."""
    return {name: first[name] + second[name] for name in first}


def click_through_rate(counts: dict) -> dict:
    """The window's value: its tally and the share of its impressions that were clicked.

    >>> click_through_rate({"impressions": 8, "clicks": 2})
    {'impressions': 8, 'clicks': 2, 'ctr': 0.25}
    """
    return {**counts, "ctr": round(counts["clicks"] / counts["impressions"], 4)}


def traffic(minutes: int = 180, ads: int = 10, per_minute: int = 30, seed: int = 1) -> dict:
    """Made-up traffic in event-time order: `{"impressions": [(ts, impression)], "clicks": [(ts, click)]}`.

    About `per_minute` impressions a minute over `minutes`, of `ads` ads, each
    ad with a click-through rate of its own (2-20 %); a click comes an
    exponentially distributed time after its impression (mean 10 minutes,
    so about 2 % of the clicks come more than an hour later and do not count).

    >>> events = traffic(minutes=2, ads=2, per_minute=2)
    >>> events["impressions"][0]
    (8271, {'impression': 0, 'ad': 'ad-1', 'ts': 8271})
    >>> all(click["impression"] < len(events["impressions"]) for _, click in events["clicks"])
    True
    """
    rng = random.Random(seed)
    rates = [rng.uniform(0.02, 0.2) for _ in range(ads)]
    shown = sorted(rng.randrange(minutes * MINUTE) for _ in range(minutes * per_minute))
    impressions, clicks = [], []
    for impression, ts in enumerate(shown):
        ad = rng.randrange(ads)
        impressions.append((ts, {"impression": impression, "ad": f"ad-{ad}", "ts": ts}))
        if rng.random() < rates[ad]:
            clicked = ts + int(rng.expovariate(1 / (10 * MINUTE)))
            clicks.append((clicked, {"impression": impression, "ad": f"ad-{ad}", "ts": clicked}))
    clicks.sort(key=lambda pair: pair[0])  # stable: equal times keep the order of their impressions
    return {"impressions": impressions, "clicks": clicks}


def main(argv=None):
    """Generate the traffic, make it late as the options say, run the three queries and print a few results."""
    options = parser(__doc__.split("\n\n")[0], stddev_ms=20_000, reorder_latency=120_000)
    options.add_argument("--minutes", type=positive_int, default=180, help="minutes of traffic")
    options.add_argument("--ads", type=positive_int, default=10, help="how many ads")
    options.add_argument("--per-minute", type=positive_int, default=30, help="impressions a minute")
    args = options.parse_args(argv)
    run_and_show(graph(), traffic(args.minutes, args.ads, args.per_minute, args.seed), args)


if __name__ == "__main__":
    main()
