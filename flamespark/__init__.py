"""FlameSpark: exact, low-latency processing of out-of-order event streams.

Write order-sensitive logic as if events came in order; FlameSpark runs it
optimistically, retracts what late events invalidate, and releases exactly what
an in-order run would give.
"""
from flamespark.api import run
from flamespark.core.errors import (
    BrokerError,
    FlameSparkError,
    GraphError,
    InputError,
    InternalError,
    LateEventError,
    OptionError,
    PayloadError,
    UserFunctionError,
)
from flamespark.graph import Graph, Stream
from flamespark.result import Result

__all__ = [
    "BrokerError",
    "FlameSparkError",
    "Graph",
    "GraphError",
    "InputError",
    "InternalError",
    "LateEventError",
    "OptionError",
    "PayloadError",
    "Result",
    "Stream",
    "UserFunctionError",
    "run",
]
__version__ = "0.1.0"
