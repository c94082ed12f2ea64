"""What a window makes of its payloads: an `Aggregate`.

Two kinds:

- *Incremental* aggregates (`count`, `sum`, `mean`) keep only an
  accumulator per window, and take each item (weight +1) and tombstone
  (weight -1) into it as it comes, in any order (`step`): their value does
  not depend on the order of the payloads. Sums are exact: integers add as
  Python's ints do, floats as an exact multi-part sum rounded once at the
  end, so a float sum is the correctly rounded sum of the window's values
  (what `math.fsum` gives), whatever the arrival order.
- *Folding* aggregates (`min`, `max`, `collect`, `aggregate(add, ...)`) fold
  the window's payloads in event-time order, `finish(fold(add, zero,
  payloads))`: a window keeps its items and folds them when its result is
  due, carrying on from where it stopped when items were appended in order.

>>> from flamespark.core.items import Item, Meta
>>> items = [Item(Meta(ts, "s", 0), {"v": ts}, b"") for ts in (1, 2, 4)]
>>> mean = Aggregate.mean(lambda p: p["v"])
>>> acc = mean.start()
>>> for item in items:
...     acc = mean.step(acc, item.payload, 1)
>>> mean.finish(mean.step(acc, {"v": 4}, -1))
1.5
"""
import copy
import math

from flamespark.core.errors import FlameSparkError

# Values that no `add` can change in place: a fold may start from them as they are, and results holding only them
# need no copy of their own.
IMMUTABLE = frozenset({int, float, str, bytes, bool, type(None)})


def _same(payload):
    return payload


class Aggregate:
    """A folding aggregate: `add(acc, payload) -> acc` from `zero`, then `finish(acc)`; `merge(a, b)` if the user
    promised one (see `Window.aggregate`).

    `role` names the user function that an error in `add` comes from (`add`
    for a user's aggregate, `value` for a built-in reading its number with a
    user's function), and `kind` the aggregate as graphs draw it.
    """

    incremental = False

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
        return Count()

    @classmethod
    def sum(cls, value=None) -> "Aggregate":
        return Sum(value or _same)

    @classmethod
    def mean(cls, value=None) -> "Aggregate":
        return Mean(value or _same)

    @classmethod
    def min(cls, value=None) -> "Aggregate":
        value = value or _same

        def smaller(acc, payload):
            number = value(payload)
            return number if acc is None or number < acc else acc

        return cls(smaller, None, role="value", kind="min")

    @classmethod
    def max(cls, value=None) -> "Aggregate":
        value = value or _same

        def larger(acc, payload):
            number = value(payload)
            return number if acc is None or number > acc else acc

        return cls(larger, None, role="value", kind="max")

    @classmethod
    def collect(cls, value=None) -> "Aggregate":
        value = value or _same

        def append(acc, payload):
            acc.append(value(payload))
            return acc

        return cls(append, [], role="value", kind="collect")


class Incremental(Aggregate):
    """An aggregate whose accumulator takes items and tombstones in any order: `step(acc, payload, weight)`.
    Its accumulators are msgpack-able, so that a state store keeps them as they are."""

    incremental = True

    def __init__(self, kind: str):
        super().__init__(None, None, role="value", kind=kind)
        self.add = self._fold_step

    def _fold_step(self, acc, payload):
        return self.step(acc, payload, 1)

    def step(self, acc, payload, weight: int):
        raise NotImplementedError


class Count(Incremental):
    """The number of items."""

    def __init__(self):
        super().__init__("count")
        self.zero = 0

    def start(self):
        return 0

    def step(self, acc, payload, weight):
        return acc + weight

    def finish(self, acc):
        return acc


class Sum(Incremental):
    """The exact sum of `value(payload)`: ints as ints; with floats among the values, the correctly rounded sum.

    Its accumulator is `[int total, float parts, live floats, infinities and NaNs]`: the float parts are
    non-overlapping floats whose sum is exactly that of the finite floats taken (Shewchuk's algorithm, as
    `math.fsum` keeps them), `live floats` the net number of float values, and the last three counts of +inf,
    -inf and NaN values, which no part can hold.
    """

    def __init__(self, value, kind: str = "sum"):
        super().__init__(kind)
        self.value = value

    def start(self):
        return [0, [], 0, [0, 0, 0]]

    def step(self, acc, payload, weight):
        number = self.value(payload)
        kind = type(number)
        if kind is int or kind is bool:
            acc[0] += number * weight
        elif kind is float:
            acc[2] += weight
            if math.isfinite(number):
                _add_exactly(acc[1], number if weight > 0 else -number)
            else:
                acc[3][2 if number != number else 0 if number > 0 else 1] += weight
        else:
            raise TypeError(f"a sum's values must be ints or floats, got {kind.__name__}: {number!r}")
        return acc

    def finish(self, acc):
        return _total(acc)


class Mean(Sum):
    """The exact sum of `value(payload)` (see `Sum`) over the number of items; its accumulator is a `Sum`'s with
    that number appended."""

    def __init__(self, value):
        super().__init__(value, "mean")

    def start(self):
        return [*super().start(), 0]

    def step(self, acc, payload, weight):
        super().step(acc, payload, weight)
        acc[4] += weight
        return acc

    def finish(self, acc):
        return _total(acc) / acc[4]


def _add_exactly(parts: list, number: float):
    """Add `number` to `parts`, keeping their sum exact (Shewchuk's algorithm, as `math.fsum` runs it)."""
    kept = 0
    for part in parts:
        if abs(number) < abs(part):
            number, part = part, number
        high = number + part
        low = part - (high - number)
        if low:
            parts[kept] = low
            kept += 1
        number = high
    parts[kept:] = [number]


def _total(acc):
    """A `Sum` accumulator's value: its int total, or with floats live the correctly rounded sum of everything."""
    total, parts, floats, (positive, negative, nan) = acc[:4]
    if not floats:
        return total
    if nan or (positive and negative):
        return math.nan
    if positive or negative:
        return math.inf if positive else -math.inf
    return math.fsum([*parts, total])
