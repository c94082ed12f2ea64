"""How a paced run's event time goes against the clock.

A paced run offers the k-th event of a source k / rate seconds after the
start, whatever its event time. Its event time keeps up with the clock,
as a live stream's does, when its events are 1000 / rate ms apart:
then a punctuation passes an event's time about the reorder latency after
the event arrived, and an output's final latency is the reorder latency,
the micro-batch that releases it and the processing. When the events are
closer together, event time runs slower than the clock, and the reorder
latency's D ms of event time take longer than D ms to pass: at half the
clock's pace, twice as long. So whatever makes documents for a paced run
spaces them by `real_time_interval_ms(rate)`, and `flamespark bench`
warns (`pace_warning`) when an input's event time runs slower than the
clock at the rate it is offered at.
"""
from __future__ import annotations

from collections.abc import Sequence

# An input whose event time goes at less than this share of the clock's pace is said to run slower than it: the
# share leaves room for spacings rounded to whole milliseconds and for a few events at the ends of the span.
SLOWER_THAN_THE_CLOCK = 0.95


def real_time_interval_ms(rate: float) -> int:
    """The spacing in event time (ms, at least 1) of events offered `rate` a second whose event time keeps up
    with the clock.

    >>> real_time_interval_ms(10), real_time_interval_ms(3), real_time_interval_ms(20), real_time_interval_ms(5000)
    (100, 333, 50, 1)
    """
    return max(1, round(1000 / rate))


def event_time_pace(stamps: Sequence[int], rate: float) -> float | None:
    """How fast the event time of events with times `stamps` goes against the clock when they are offered `rate`
    a second: the span of their times over the time between the first event's arrival and the last's. 1.0
    keeps up with the clock, 0.5 goes half as fast; None for fewer than two events.

    >>> event_time_pace([0, 100, 200, 300], rate=10), event_time_pace([0, 100, 50, 150], rate=10)
    (1.0, 0.5)
    """
    if len(stamps) < 2:
        return None
    return (max(stamps) - min(stamps)) / ((len(stamps) - 1) * 1000 / rate)


def pace_warning(source: str, stamps: Sequence[int], rate: float, reorder_latency: int,
                 sources: int = 1) -> str | None:
    """A warning that source `source`'s event time (its events' times `stamps`) runs slower than the clock
    offered at `rate` events a second over `sources` sources taken in turn (each at rate / sources), saying what a
    `reorder_latency` (ms) then waits and how to replay it in real time; None when it keeps up.

    >>> print(pace_warning("docs", [50 * k for k in range(200)], rate=10, reorder_latency=3000))
    at 10 events/s the event time of source 'docs' runs at 0.50x the clock (its 200 events span 9.95 s of event \
time, offered over 19.9 s), so a reorder latency of 3000 ms waits about 6 s: offer it at 20 events/s, or space \
its events 100 ms apart, to replay it in real time
    >>> pace_warning("docs", [100 * k for k in range(200)], rate=10, reorder_latency=3000) is None
    True
    >>> print(pace_warning("b", [100 * k for k in range(200)], rate=10, reorder_latency=3000, sources=4))
    at 10 events/s (2.5 for each of 4 sources) the event time of source 'b' runs at 0.25x the clock (its 200 events \
span 19.9 s of event time, offered over 79.6 s), so a reorder latency of 3000 ms waits about 12 s: offer it at 40 \
events/s, or space its events 400 ms apart, to replay it in real time
    """
    own_rate = rate / sources
    pace = event_time_pace(stamps, own_rate)
    if pace is None or pace >= SLOWER_THAN_THE_CLOCK:
        return None
    offered_s = (len(stamps) - 1) / own_rate
    spacing = f"space its events {real_time_interval_ms(own_rate)} ms apart"
    if pace > 0:
        waits = f"about {reorder_latency / pace / 1000:.3g} s"
        advice = f"offer it at {rate / pace:.3g} events/s, or {spacing},"
    else:  # one event time throughout: no punctuation passes it before the input ends
        waits, advice = "until the input ends", spacing
    share = f" ({own_rate:g} for each of {sources} sources)" if sources > 1 else ""
    return (f"at {rate:g} events/s{share} the event time of source {source!r} runs at {pace:.2f}x the clock (its "
            f"{len(stamps)} events span {pace * offered_s:.3g} s of event time, offered over {offered_s:.3g} s), so "
            f"a reorder latency of {reorder_latency} ms waits {waits}: {advice} to replay it in real time")
