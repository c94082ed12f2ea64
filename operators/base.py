"""What every operator shares: its name and guarded calls into user code."""
from collections import Counter

from flamespark.core.errors import FlameSparkError, UserFunctionError

_REPR_LIMIT = 200


def _short(payload) -> str:
    text = repr(payload)
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "..."


class Operator:
    """Base of all operators. Stateless by default: punctuations pass through."""

    kind = "operator"
    # Engines route items across a boundary operator by key; stateless ones run inline.
    boundary = False

    def __init__(self, name: str):
        self.name = name

    def process(self, item) -> list:
        raise NotImplementedError

    def punctuate(self, time) -> list:
        """React to punctuation `time`; returns items released by it (none by default)."""
        return []

    def call(self, role: str, fn, item, *args):
        """Call user function `fn`; an exception becomes a UserFunctionError naming operator and event."""
        try:
            return fn(*args)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise UserFunctionError(
                f"{role} function of {self.kind} operator {self.name!r} raised "
                f"{type(exc).__name__}: {exc} (on {item.meta.describe()}, payload {_short(item.payload)})"
            ) from exc


def cancel_pairs(items: list) -> list:
    """`items` without the tombstone-and-item pairs of one identity: together they change nothing.

    A replay often retracts an output and makes it again unchanged; dropping
    both keeps them from travelling to, and being counted at, the barrier.
    """
    tombstones = Counter(item.identity for item in items if item.tombstone)
    if not tombstones:
        return items
    regular = Counter(item.identity for item in items if not item.tombstone)
    pairs = {identity: min(count, regular[identity]) for identity, count in tombstones.items() if regular[identity]}
    if not pairs:
        return items
    skip_tombstones, skip_items = Counter(pairs), Counter(pairs)
    kept = []
    for item in items:
        skip = skip_tombstones if item.tombstone else skip_items
        if skip[item.identity] > 0:
            skip[item.identity] -= 1
        else:
            kept.append(item)
    return kept
