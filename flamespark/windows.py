"""The DSL's event-time windows: `Stream.tumbling_window`, `hopping_window` and `session_window` give a
`Window`, whose aggregates (`count`, `sum`, ..., `aggregate`) give the stream of its results.

A result is one payload per key and window holding an event,
`{"key": k, "start": s, "end": e, "value": v}`, at event time `e - 1`: the
barrier releases it once the punctuation passes the window, one final
result per window. Durations are milliseconds (an int, or a
`datetime.timedelta` of whole milliseconds); windows are aligned to event
time 0.
"""
from __future__ import annotations

from datetime import timedelta

from flamespark.core.errors import GraphError
from operators.aggregates import Aggregate

_MILLISECOND = timedelta(milliseconds=1)


def duration_ms(value, what: str, operator: str, positive: bool = True) -> int:
    """`value` (int milliseconds or a timedelta) as int milliseconds, or the GraphError naming the `operator`
    and `what` is wrong.

    >>> duration_ms(timedelta(minutes=1), "size", "tumbling_window")
    60000
    >>> duration_ms(0, "size", "tumbling_window 'clicks'")
    Traceback (most recent call last):
    ...
    flamespark.core.errors.GraphError: tumbling_window 'clicks' size must be a positive number of milliseconds (an int or a timedelta), got 0
    """
    if isinstance(value, timedelta):
        ms, rest = divmod(value, _MILLISECOND)
        if not rest:
            value = ms
    if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
        kind = "a positive" if positive else "a whole"
        raise GraphError(f"{operator} {what} must be {kind} number of milliseconds (an int or a timedelta), "
                         f"got {value!r}")
    return value


def described(kind: str, name: str | None) -> str:
    """How errors name an operator of `kind` that may have a `name`."""
    return f"{kind} {name!r}" if name else kind


def optional_callable(fn, role: str, operator: str):
    """`fn` if it is callable or None, else the GraphError naming its `role` and the `operator` it is given to.

    >>> optional_callable(None, "finish", "aggregate 'w'") is None
    True
    >>> optional_callable(3, "finish", "aggregate 'w'")
    Traceback (most recent call last):
    ...
    flamespark.core.errors.GraphError: finish function of aggregate 'w' must be callable or None, got int
    """
    if fn is not None and not callable(fn):
        raise GraphError(f"{role} function of {operator} must be callable or None, got {type(fn).__name__}")
    return fn


def required_callable(fn, role: str, operator: str):
    """`fn` if it is callable, else the GraphError naming its `role` and the `operator` it is given to.

    >>> required_callable(None, "add", "aggregate 'w'")
    Traceback (most recent call last):
    ...
    flamespark.core.errors.GraphError: add function of aggregate 'w' must be callable, got NoneType
    """
    if not callable(fn):
        raise GraphError(f"{role} function of {operator} must be callable, got {type(fn).__name__}")
    return fn


class Window:
    """Events of a stream placed in event-time windows per key; one of its aggregates makes the results.

    Each aggregate adds an operator (named as the window, or `NAME/KIND`
    for a second aggregate of one window). `value` reads the number from a
    payload (the payload itself if None).

    >>> import flamespark as fs
    >>> g = fs.Graph("clicks")
    >>> per_ad = g.source("clicks").tumbling_window(key=lambda c: c["ad"], size=10, name="per_ad")
    >>> per_ad.count().sink("counts")
    >>> events = [(1, {"ad": "x"}), (12, {"ad": "x"}), (4, {"ad": "x"}), (15, {"ad": "y"})]
    >>> for result in fs.run(g, {"clicks": events}, reorder_latency=10).outputs["counts"]:
    ...     print(result)
    {'key': 'x', 'start': 0, 'end': 10, 'value': 2}
    {'key': 'x', 'start': 10, 'end': 20, 'value': 1}
    {'key': 'y', 'start': 10, 'end': 20, 'value': 1}

    Results of equal event time (here the second and third) come in an order
    of their own, fixed by their keys and windows.
    """

    def __init__(self, stream, kind: str, key, windows, name: str | None):
        self._stream = stream
        self._kind = kind
        self._key = key
        self._windows = windows
        self._name = name
        self._aggregates = 0

    def _described(self) -> str:
        return described(self._kind, self._name)

    def count(self):
        """The number of events in each window.

        >>> import flamespark as fs
        >>> g = fs.Graph("counts")
        >>> g.source("words").tumbling_window(key=len, size=5).count().sink("counts")
        >>> [(r["key"], r["start"], r["value"]) for r in fs.run(g, {"words": [(1, "ab"), (2, "cd"), (7, "e")]}).outputs["counts"]]
        [(2, 0, 2), (1, 5, 1)]
        """
        return self._aggregated(Aggregate.count())

    def sum(self, value=None):
        """The sum of `value(payload)` over each window: ints as ints; with floats, the float nearest the exact
        sum, rounded once, whatever the order (other numbers count as the int or float they stand for).

        >>> import flamespark as fs
        >>> g = fs.Graph("energy")
        >>> g.source("readings").hopping_window(key=lambda r: "all", size=4, slide=2).sum(lambda r: r["kwh"]).sink("sums")
        >>> events = [(1, {"kwh": 1.5}), (3, {"kwh": 2.0}), (5, {"kwh": 0.5})]
        >>> [(r["start"], r["value"]) for r in fs.run(g, {"readings": events}).outputs["sums"]]
        [(-2, 1.5), (0, 3.5), (2, 2.5), (4, 0.5)]
        """
        return self._aggregated(Aggregate.sum(self._value(value, "sum")))

    def min(self, value=None):
        """The least `value(payload)` of each window (the first of equal ones).

        >>> import flamespark as fs
        >>> g = fs.Graph("lows")
        >>> g.source("temps").tumbling_window(key=lambda t: "room", size=10).min().sink("lows")
        >>> [r["value"] for r in fs.run(g, {"temps": [(1, 21), (2, 19), (11, 23)]}).outputs["lows"]]
        [19, 23]
        """
        return self._aggregated(Aggregate.min(self._value(value, "min")))

    def max(self, value=None):
        """The greatest `value(payload)` of each window (the first of equal ones).

        >>> import flamespark as fs
        >>> g = fs.Graph("highs")
        >>> g.source("temps").tumbling_window(key=lambda t: "room", size=10).max().sink("highs")
        >>> [r["value"] for r in fs.run(g, {"temps": [(1, 21), (2, 19), (11, 23)]}).outputs["highs"]]
        [21, 23]
        """
        return self._aggregated(Aggregate.max(self._value(value, "max")))

    def mean(self, value=None):
        """The mean of `value(payload)` over each window: a float, the one nearest the exact mean.

        >>> import flamespark as fs
        >>> g = fs.Graph("means")
        >>> g.source("temps").tumbling_window(key=lambda t: "room", size=10).mean().sink("means")
        >>> [r["value"] for r in fs.run(g, {"temps": [(1, 21), (2, 18), (11, 23)]}).outputs["means"]]
        [19.5, 23.0]
        """
        return self._aggregated(Aggregate.mean(self._value(value, "mean")))

    def collect(self, value=None):
        """The list of `value(payload)` (the payloads if None) of each window, in event-time order.

        >>> import flamespark as fs
        >>> g = fs.Graph("visits")
        >>> g.source("pages").session_window(key=lambda p: p["user"], gap=30).collect(lambda p: p["page"]).sink("sessions")
        >>> events = [(0, {"user": "u", "page": "home"}), (45, {"user": "u", "page": "cart"}),
        ...           (20, {"user": "u", "page": "shop"})]
        >>> for session in fs.run(g, {"pages": events}, reorder_latency=50).outputs["sessions"]:
        ...     print(session)
        {'key': 'u', 'start': 0, 'end': 75, 'value': ['home', 'shop', 'cart']}
        """
        return self._aggregated(Aggregate.collect(self._value(value, "collect")))

    def aggregate(self, add, zero=None, merge=None, finish=None):
        """`finish(fold(add, zero, payloads))` over each window's payloads in event-time order.

        `add(acc, payload) -> acc` may change `acc` in place (each fold starts
        from a fresh copy of `zero`); `finish(acc)`, if given, makes the value.
        `merge(a, b)`, if given, promises `merge(fold(A), fold(B)) == fold(A + B)`
        for A before B; this engine folds again instead, so results are
        exact without it.

        >>> import flamespark as fs
        >>> g = fs.Graph("words")
        >>> g.source("letters").tumbling_window(key=lambda c: "all", size=10).aggregate(
        ...     lambda text, c: text + c, zero="", finish=str.upper).sink("words")
        >>> events = [(1, "c"), (3, "t"), (2, "a")]
        >>> [r["value"] for r in fs.run(g, {"letters": events}, reorder_latency=5).outputs["words"]]
        ['CAT']
        """
        where = self._described()
        required_callable(add, "add", where)
        optional_callable(merge, "merge", where)
        optional_callable(finish, "finish", where)
        return self._aggregated(Aggregate(add, zero, merge, finish))

    def _value(self, value, aggregate: str):
        return optional_callable(value, f"{aggregate} value", self._described())

    def _aggregated(self, aggregate: Aggregate):
        self._aggregates += 1
        graph = self._stream.graph
        name = self._name or graph._auto_name(self._kind)
        if self._aggregates > 1:
            name = f"{name}/{aggregate.kind}"
        elif self._name is None:
            self._name = name
        return self._stream._then("window", name, key=self._key, fn=aggregate, spec=self._windows)
