"""Exceptions raised by FlameSpark, each naming what went wrong and where."""
import re


class FlameSparkError(Exception):
    """Base class of every error FlameSpark raises on purpose."""


class GraphError(FlameSparkError):
    """The pipeline graph is malformed (names, cycles, dangling operators, parameters)."""


class PayloadError(FlameSparkError):
    """A payload cannot be encoded with msgpack."""


class UserFunctionError(FlameSparkError):
    """A user function (map, key, update, ...) raised; the cause is chained."""


class LateEventError(FlameSparkError):
    """An event arrived after a punctuation covering its time, under `late="fail"`.

    >>> error = LateEventError.of("a", 6, 1, 18, 6)
    >>> print(error)
    event ts=6 of source 'a' (position 1 in its arrival order) arrived after punctuation 18 (payload 6); raise ...
    >>> error.event
    ('a', 1)
    """

    _EVENT = re.compile(r"of source '([^']*)' \(position (\d+) in its arrival order\)")

    @classmethod
    def of(cls, source: str, ts: int, position: int, punctuation, payload) -> "LateEventError":
        """The error for the event of `source` at `position` (from 0) in its arrival order."""
        return cls(f"event ts={ts} of source {source!r} (position {position} in its arrival order) arrived after "
                   f"punctuation {punctuation} (payload {payload!r}); raise the reorder latency or use the late "
                   f"policy drop or adjust")

    @property
    def event(self):
        """`(source, position)` of the late event, read from the message (a Spark worker's error crosses to the
        driver as text), or None if the message names none."""
        match = self._EVENT.search(str(self))
        return None if match is None else (match.group(1), int(match.group(2)))


class OptionError(FlameSparkError):
    """A run option (engine, mode, reorder latency, late policy, ...) is invalid or unknown."""


class InternalError(FlameSparkError):
    """An internal invariant broke (e.g. a tombstone never met its item): a bug in FlameSpark, please report it."""


class InputError(FlameSparkError):
    """An input (file, line, event) is malformed or unknown."""


class BrokerError(FlameSparkError):
    """A Kafka broker cannot be reached, or refused what a run asked of it."""
