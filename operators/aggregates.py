"""What a window makes of its payloads: `finish(fold(add, zero, payloads in event-time order))`.

An `Aggregate` folds a window's items from a fresh `zero` (a new copy of it,
if it can change), and carries on from where it stopped when items are
appended in order. The built-ins (`count`, `sum`, `min`, `max`, `mean`,
`collect`) are aggregates too; `sum` and `mean` add in event-time order, as
float addition is not associative.

>>> from flamespark.core.items import Item, Meta
>>> items = [Item(Meta(ts, "s", 0), {"v": ts}, b"") for ts in (1, 2, 4)]
>>> mean = Aggregate.mean(lambda p: p["v"])
>>> acc = mean.fold(mean.start(), items, 0, None)
>>> mean.finish(acc)
2.3333333333333335
"""
import copy

from flamespark.core.errors import FlameSparkError

# Values that no `add` can change in place: a fold may start from them as they are, and results holding only them
# need no copy of their own.
IMMUTABLE = frozenset({int, float, str, bytes, bool, type(None)})


def _identity(payload):
    return payload


class Aggregate:
    """`add(acc, payload) -> acc` from `zero`, then `finish(acc)`; `merge(a, b)` if the user promised one.

    `role` names the user function that an error in `add` comes from (`add`
    for a user's aggregate, `value` for a built-in reading its number with a
    user's function), and `kind` the aggregate as graphs draw it.
    """

    __slots__ = ("add", "zero", "merge", "_finish", "finishes", "role", "kind", "_fresh")

    def __init__(self, add, zero=None, merge=None, finish=None, role="add", kind="aggregate"):
        self.add = add
        self.zero = zero
        self.merge = merge
        self._finish = finish
        self.finishes = finish is not None  # whether a user's `finish` makes the value (its errors name it)
        self.role = role
        self.kind = kind
        self._fresh = type(zero) not in IMMUTABLE

    def start(self):
        """The accumulator a fold starts from: `zero`, or a deep copy of it if `add` could change it in place."""
        return copy.deepcopy(self.zero) if self._fresh else self.zero

    def fold(self, acc, items, start, failure):
        """`acc` after adding the payloads of `items[start:]` in order; `failure(role, exc, item)` makes the
        error to raise when the user's function raises on an item."""
        add = self.add
        item = None
        try:
            for index in range(start, len(items)):
                item = items[index]
                acc = add(acc, item.payload)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise failure(self.role, exc, item) from exc
        return acc

    def finish(self, acc):
        """The window's value from its accumulator."""
        return acc if self._finish is None else self._finish(acc)

    @classmethod
    def count(cls) -> "Aggregate":
        return _Count()

    @classmethod
    def sum(cls, value=None) -> "Aggregate":
        value = value or _identity
        return cls(lambda acc, payload: acc + value(payload), 0, role="value", kind="sum")

    @classmethod
    def min(cls, value=None) -> "Aggregate":
        value = value or _identity

        def smaller(acc, payload):
            number = value(payload)
            return number if acc is None or number < acc else acc

        return cls(smaller, None, role="value", kind="min")

    @classmethod
    def max(cls, value=None) -> "Aggregate":
        value = value or _identity

        def larger(acc, payload):
            number = value(payload)
            return number if acc is None or number > acc else acc

        return cls(larger, None, role="value", kind="max")

    @classmethod
    def mean(cls, value=None) -> "Aggregate":
        value = value or _identity
        return cls(lambda acc, payload: (acc[0] + 1, acc[1] + value(payload)), (0, 0), None, _mean, role="value",
                   kind="mean")

    @classmethod
    def collect(cls, value=None) -> "Aggregate":
        value = value or _identity

        def append(acc, payload):
            acc.append(value(payload))
            return acc

        return cls(append, [], role="value", kind="collect")


class _Count(Aggregate):
    """The number of items: a fold adds how many there are, with no call per item."""

    __slots__ = ()

    def __init__(self):
        super().__init__(None, 0, kind="count")

    def fold(self, acc, items, start, failure):
        return acc + len(items) - start


def _mean(acc):
    count, total = acc
    return total / count

