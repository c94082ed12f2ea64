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
    """Base of all operators. A stateless one is a function of a batch, `apply(batch)`: one batch out, or with
    ports one per port."""

    kind = "operator"
    # Engines route batches across a boundary operator by key; stateless ones are applied on the way.
    boundary = False
    # How many output streams a stateless operator's `apply` gives, if it has ports (a tuple of batches).
    ports = 0

    def __init__(self, name: str):
        self.name = name

    def apply(self, batch):
        """This stateless operator's output for `batch` (with ports, one batch per port): how an engine runs it,
        and how to run one on its own.

        >>> from flamespark.core.batch import Batch
        >>> from flamespark.core.items import Meta
        >>> from operators import BranchOperator
        >>> odd = BranchOperator("odd", lambda n: n % 2 == 1)
        >>> numbers = Batch([Meta(0, "s", 0, (0,)), Meta(1, "s", 0, (1,))], [3, 4], [b"\\x03", b"\\x04"], [1, 1],
        ...                 [0.0, 0.0])
        >>> [port.payloads for port in odd.apply(numbers)]
        [[3], [4]]
        """
        raise NotImplementedError

    def failure(self, role: str, exc: Exception, item) -> UserFunctionError:
        """The error to raise when the `role` function raised `exc` on `item` (anything with a `meta` and a
        `payload`). It says where, as a command line shows only the message."""
        return UserFunctionError(
            f"{role} function of {self.kind} operator {self.name!r} raised "
            f"{type(exc).__name__}: {exc} (on {item.meta.describe()}, payload {_short(item.payload)})"
            f"{_raised_at(exc)}"
        )

    def called(self, role: str, fn, batch) -> list:
        """`fn(payload)` of each row of `batch`, in one loop; an exception it raises becomes the
        UserFunctionError that names this operator, the `role` function and the row's event."""
        results = []
        append = results.append
        try:
            for payload in batch.payloads:
                append(fn(payload))
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure(role, exc, batch.item(len(results))) from exc
        return results


class BoundaryOperator(Operator):
    """An operator with state, which its engine keeps and hands it on every call.

    The operator object itself holds only its parameters, so one plan serves
    any number of states (one per run, or one per shard and batch). An
    engine hands it each batch (`take`) and each punctuation
    (`punctuate`); both return the batch of what they make.
    """

    boundary = True

    def new_state(self):
        """An empty in-memory state for this operator."""
        raise NotImplementedError

    def take(self, batch, state):
        """Apply `batch` to `state`; returns the batch of items and tombstones it makes."""
        raise NotImplementedError

    def punctuate(self, time, state):
        """Apply punctuation `time`; returns the batch of what it releases (None if nothing)."""
        raise NotImplementedError
