"""What every operator shares: its name and guarded calls into user code."""
import os
import traceback
from pathlib import Path

from flamespark.core.errors import FlameSparkError, UserFunctionError

_REPR_LIMIT = 200


def _short(payload) -> str:
    text = repr(payload)
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "..."


# FlameSpark's own code, whose frames a traceback passes through on its way to the user's function.
_OWN_CODE = tuple(f"{directory}{os.sep}"
                  for directory in (Path(__file__).parent, Path(__file__).parents[1] / "flamespark"))


def _raised_at(exc: Exception) -> str:
    """`, at FILE:LINE in FUNCTION` of the innermost frame of `exc`'s traceback outside FlameSpark's own code (the
    user's function, or what it called), or nothing if there is none."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if not frame.filename.startswith(_OWN_CODE)]
    if not frames:
        return ""
    frame = frames[-1]
    return f", at {frame.filename}:{frame.lineno} in {frame.name}"


class Operator:
    """Base of all operators; a stateless one runs inline, as `inline(send)` makes it."""

    kind = "operator"
    # Engines route items across a boundary operator by key; stateless ones run inline.
    boundary = False
    # A stateless operator's `inline` takes one function for all its targets, or one per target if it has ports.
    ports = 0

    def __init__(self, name: str):
        self.name = name

    def inline(self, send):
        """The function that runs this stateless operator on one item, handing each output to `send` in order."""
        raise NotImplementedError

    def process(self, item) -> list:
        """One item's outputs as a list, for running an operator on its own; with ports, one list per port.

        >>> from flamespark.core.items import Item, Meta
        >>> from operators import BranchOperator
        >>> odd = BranchOperator("odd", lambda n: n % 2 == 1)
        >>> [[item.payload for item in port] for port in odd.process(Item(Meta(0, "s", 0), 3, b"\\x03"))]
        [[3], []]
        """
        if not self.ports:
            outputs = []
            self.inline(outputs.append)(item)
            return outputs
        ports = [[] for _ in range(self.ports)]
        self.inline(*(port.append for port in ports))(item)
        return ports

    def guarded(self, role: str, fn):
        """`fn` as a function of an item, called on its payload; an exception it raises becomes the
        UserFunctionError that names this operator, the `role` function and the event."""
        failure = self.failure

        def call(item):
            try:
                return fn(item.payload)
            except FlameSparkError:
                raise
            except Exception as exc:
                raise failure(role, exc, item) from exc

        return call

    def failure(self, role: str, exc: Exception, item) -> UserFunctionError:
        """The error to raise when the `role` function raised `exc` on `item`. It says where, as a command line
        shows only the message."""
        return UserFunctionError(
            f"{role} function of {self.kind} operator {self.name!r} raised "
            f"{type(exc).__name__}: {exc} (on {item.meta.describe()}, payload {_short(item.payload)})"
            f"{_raised_at(exc)}"
        )


class BoundaryOperator(Operator):
    """An operator with state, which its engine keeps and hands it on every call.

    The operator object itself holds only its parameters, so one plan serves
    any number of states (one per run, or one per shard and batch).
    """

    boundary = True

    def new_state(self):
        """An empty in-memory state for this operator."""
        raise NotImplementedError

    def process(self, item, state) -> list:
        raise NotImplementedError

    def punctuate(self, time, state) -> list:
        """Apply punctuation `time`; returns the items it releases."""
        raise NotImplementedError

    def add(self, item, state) -> list:
        """`process`, except that work may wait for the next `flush`."""
        return self.process(item, state)

    def take(self, items, state, send):
        """`add` each of `items` in turn, handing the items each makes to `send` (as engines run a boundary
        operator: all that reached it in a step at once)."""
        for item in items:
            for made in self.add(item, state):
                send(made)

    def flush(self, state) -> list:
        """Do the work `add` calls left waiting since the last flush (engines flush at the end of each step,
        and so before a punctuation); returns the items it makes."""
        return []

