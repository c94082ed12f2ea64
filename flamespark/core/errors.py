"""Exceptions raised by FlameSpark, each naming what went wrong and where."""


class FlameSparkError(Exception):
    """Base class of every error FlameSpark raises on purpose."""


class GraphError(FlameSparkError):
    """The pipeline graph is malformed (names, cycles, dangling operators, parameters)."""


class PayloadError(FlameSparkError):
    """A payload cannot be encoded with msgpack."""


class UserFunctionError(FlameSparkError):
    """A user function (map, key, update, ...) raised; the cause is chained."""


class LateEventError(FlameSparkError):
    """An event arrived after a punctuation covering its time, under `late="fail"`."""


class OptionError(FlameSparkError):
    """A run option (engine, mode, reorder latency, late policy, ...) is invalid or unknown."""


class InternalError(FlameSparkError):
    """An internal invariant broke (e.g. a tombstone never met its item): a bug in FlameSpark, please report it."""


class InputError(FlameSparkError):
    """An input (file, line, event) is malformed or unknown."""
