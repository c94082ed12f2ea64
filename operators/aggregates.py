"""What a window makes of its payloads: an `Aggregate`.

Two kinds:

- *Incremental* aggregates (`count`, `sum`, `mean`) keep only an
  accumulator per window, and take each item (weight +1) and tombstone
  (weight -1) into it as it comes, in any order (`step`): their value does
  not depend on the order of the payloads. Sums are exact: integers add as
  Python's ints do, floats as a whole number of units of 2**-1074 (an int
  too), rounded once at the end, so a float sum is the float nearest the
  exact sum of the window's values, whatever the arrival order.
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
import operator

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

    def dump_acc(self, acc):
        """The accumulator as plain msgpack can hold it, for engines that keep windows in a state store."""
        return acc

    def load_acc(self, dumped):
        """The accumulator from its `dump_acc`."""
        return dumped


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

    Every finite float is a whole multiple of 2**-1074, the smallest subnormal, so the accumulator keeps the
    floats' sum exactly as a Python int in those units. It is `[int total, float total in units of 2**-1074,
    live floats, [+inf, -inf, NaN]]`: `live floats` the net number of float values, and the last three counts of
    the values no unit holds. Sums of any size, in any order, come to one value, rounded once at the end: the
    float nearest the exact sum (an infinity beyond the largest float). Other numbers count as the int their
    `__index__` gives (numpy's ints) or else as the float `float()` makes of them (numpy's floats, Decimal,
    Fraction).

    >>> total = Aggregate.sum()
    >>> acc = total.start()
    >>> for number in (1e308, 1e308, 0.1, -1e308):
    ...     acc = total.step(acc, number, 1)
    >>> total.finish(acc), total.finish(total.step(acc, 0.1, -1))
    (1e+308, 1e+308)
    >>> total.finish(total.step(total.step(total.start(), 2 ** 53 + 1, 1), 0.5, 1)) == 2 ** 53 + 2
    True
    """

    def __init__(self, value, kind: str = "sum"):
        super().__init__(kind)
        self.value = value

    def start(self):
        return [0, 0, 0, [0, 0, 0]]

    def step(self, acc, payload, weight):
        number = self.value(payload)
        kind = type(number)
        if kind is int or kind is bool:
            acc[0] += number * weight
            return acc
        if kind is not float:
            number = _as_int_or_float(number)
            if type(number) is int:
                acc[0] += number * weight
                return acc
        acc[2] += weight
        if number - number == 0.0:  # finite: inf - inf and NaN - NaN are NaN
            numerator, denominator = number.as_integer_ratio()
            acc[1] += (numerator << (_UNIT_BITS + 1 - denominator.bit_length())) * weight
        else:
            acc[3][2 if number != number else 0 if number > 0 else 1] += weight
        return acc

    def finish(self, acc):
        return _total(acc)

    def dump_acc(self, acc) -> list:
        return [_int_bytes(acc[0]), _int_bytes(acc[1]), *acc[2:]]

    def load_acc(self, dumped) -> list:
        return [_bytes_int(dumped[0]), _bytes_int(dumped[1]), *dumped[2:]]


class Mean(Sum):
    """The exact sum of `value(payload)` (see `Sum`) over the number of items, rounded once; its accumulator is a
    `Sum`'s with that number appended.

    >>> mean = Aggregate.mean()
    >>> mean.finish(mean.step(mean.step(mean.start(), 1, 1), 2, 1))
    1.5
    """

    def __init__(self, value):
        super().__init__(value, "mean")

    def start(self):
        return [*super().start(), 0]

    def step(self, acc, payload, weight):
        super().step(acc, payload, weight)
        acc[4] += weight
        return acc

    def finish(self, acc):
        return _total(acc, acc[4])


_UNIT_BITS = 1074  # a finite float is a whole number of units of 2**-1074


def _as_int_or_float(number):
    """A number a sum takes that is neither an int nor a float, as the int or float it stands for."""
    if hasattr(type(number), "__index__"):
        return operator.index(number)
    if isinstance(number, (str, bytes, bytearray)) or not hasattr(type(number), "__float__"):
        raise TypeError(f"a sum's values must be numbers, got {type(number).__name__}: {number!r}")
    return float(number)


def _total(acc, count: int | None = None):
    """A `Sum` accumulator's value, or its mean over `count`: with no float live, its int total (over `count`);
    else the float nearest the exact sum (or quotient)."""
    total, units, floats, (positive, negative, nan) = acc[:4]
    if not floats:
        return total if count is None else total / count
    if nan or (positive and negative):
        return math.nan
    if positive or negative:
        return math.inf if positive else -math.inf
    exact = (total << _UNIT_BITS) + units
    try:
        return exact / ((1 if count is None else count) << _UNIT_BITS)  # an int over an int is correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _int_bytes(number: int) -> bytes:
    """An int of any size as bytes msgpack keeps (its ints stop at 64 bits)."""
    return number.to_bytes(number.bit_length() // 8 + 1, "big", signed=True)


def _bytes_int(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)
