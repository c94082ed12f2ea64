"""User sessions: a user's clicks less than 30 minutes apart make one session; its events and duration.

    python examples/sessions.py                       # 200 users over a day, 30 % of the clicks late
    python examples/sessions.py --disorder 0          # in event-time order: the same sessions
    python examples/sessions.py --write-input input/     # also writes its events as JSONL, then:
    flamespark run examples/sessions.py:graph --input clicks=input/clicks.jsonl \\
        --reorder-latency 1800000 --out out/

Each event is a page view `{"user", "page"}`. A session window per user
collects the views less than 30 minutes apart; the window is `[first view,
last view + 30 min)` and its result comes out once no view can extend it
any more. The sink `sessions` gets `{"user", "start", "events",
"duration_ms"}`, the duration from the first view to the last.

A late view is the interesting case: it may fall into a gap and bridge two
sessions that had looked apart. Optimistically, both are retracted and one
merged session replaces them; the released sessions are those of an
in-order run.
"""
import random

from window_cli import parser, run_and_show

import flamespark as fs
from flamespark.tools.arguments import positive_int

MINUTE = 60_000  # ms
GAP = 30 * MINUTE


def graph() -> fs.Graph:
    """Page views -> sessions per user (gap 30 min) -> their size and duration."""
    g = fs.Graph("sessions")
    (g.source("clicks")
     .session_window(key=lambda view: view["user"], gap=GAP, name="sessions")
     .count()
     .map(session_summary, name="summary")
     .sink("sessions"))
    return g


def session_summary(session: dict) -> dict:
    """A session's result in the user's terms: a session ends `GAP` after its last view.

    >>> session_summary({"key": "u7", "start": 60_000, "end": 60_000 + 5 * MINUTE + GAP, "value": 3})
    {'user': 'u7', 'start': 60000, 'events': 3, 'duration_ms': 300000}
    """
    return {"user": session["key"], "start": session["start"], "events": session["value"],
            "duration_ms": session["end"] - GAP - session["start"]}


def page_views(users: int = 200, hours: int = 24, seed: int = 1) -> list:
    """`(ts, {"user", "page"})` in event-time order: each user visits a few times, a visit being a few page
    views a few minutes apart (sometimes a pause of nearly half an hour, so that visits come close to
    merging).

    >>> page_views(users=1, hours=1)[:2]
    [(393675, {'user': 'u0', 'page': '/p/1'}), (482591, {'user': 'u0', 'page': '/p/38'})]
    """
    rng = random.Random(seed)
    views = []
    for user in range(users):
        for _ in range(rng.randint(1, 4)):  # visits
            ts = rng.randrange(hours * 60 * MINUTE)
            for _ in range(rng.randint(1, 12)):
                views.append((ts, {"user": f"u{user}", "page": f"/p/{rng.randrange(50)}"}))
                pause = rng.uniform(25, 35) if rng.random() < 0.1 else rng.expovariate(1 / 3)
                ts += int(pause * MINUTE)
    views.sort(key=lambda view: view[0])
    return views


def main(argv=None):
    """Generate the page views, make them late as the options say, run the sessions and print a few."""
    options = parser(__doc__.split("\n\n")[0], stddev_ms=5 * MINUTE, reorder_latency=30 * MINUTE)
    options.add_argument("--users", type=positive_int, default=200, help="how many users")
    options.add_argument("--hours", type=positive_int, default=24, help="hours of page views")
    args = options.parse_args(argv)
    run_and_show(graph(), {"clicks": page_views(args.users, args.hours, args.seed)}, args)


if __name__ == "__main__":
    main()
