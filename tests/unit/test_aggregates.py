"""The incremental sums: exact in any order of items and tombstones, of any size, through a state store's dump."""
import math
from decimal import Decimal
from fractions import Fraction

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from operators.aggregates import Aggregate

NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-2**70, 2**70)


def rounded(exact: Fraction) -> float:
    """The float nearest `exact` (a Fraction's float is), or an infinity beyond the largest float."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def reference_sum(values) -> float | int:
    """The reference: the int sum, or with a float among the values the exact rational sum, rounded once."""
    if not any(type(value) is float for value in values):
        return sum(values)
    return rounded(sum(map(Fraction, values), Fraction(0)))


def stepped(aggregate, steps, dump_at=None):
    """The aggregate's value after `(value, weight)` steps, its accumulator dumped to msgpack and back before step
    `dump_at` (if any), as a Spark stage's state store would keep it between batches."""
    acc = aggregate.start()
    for index, (value, weight) in enumerate(steps):
        if index == dump_at:
            acc = aggregate.load_acc(msgpack.unpackb(msgpack.packb(aggregate.dump_acc(acc))))
        acc = aggregate.step(acc, value, weight)
    return aggregate.finish(acc)


@settings(max_examples=300, deadline=None)
@given(kept=st.lists(NUMBERS, min_size=1, max_size=12), removed=st.lists(NUMBERS, max_size=6), data=st.data())
def test_a_sum_is_the_exact_sum_rounded_once_whatever_the_order_of_items_and_tombstones(kept, removed, data):
    steps = [(value, 1) for value in kept + removed] + [(value, -1) for value in removed]
    steps = data.draw(st.permutations(steps))  # a tombstone may come before its item
    dump_at = data.draw(st.none() | st.integers(0, len(steps) - 1))
    assert stepped(Aggregate.sum(), steps, dump_at) == reference_sum(kept)
    assert stepped(Aggregate.mean(), steps, dump_at) == rounded(sum(map(Fraction, kept), Fraction(0)) / len(kept))


def test_sums_beyond_the_largest_float_and_back_are_exact():
    total = Aggregate.sum()
    assert stepped(total, [(1e308, 1), (1e308, 1), (-1e308, 1)]) == 1e308
    assert stepped(total, [(1e308, 1), (-1e308, 1), (1e308, 1)]) == 1e308
    assert stepped(total, [(1e308, 1), (1e308, 1)]) == math.inf
    assert stepped(total, [(0.5, 1), (2**53 + 1, 1)]) == 2**53 + 2  # one rounding, not two
    assert stepped(total, [(2**80, 1), (2**80, 1)]) == 2**81


def test_infinities_and_nans_count_while_they_are_live():
    total = Aggregate.sum()
    assert stepped(total, [(math.inf, 1), (1.0, 1)]) == math.inf
    assert math.isnan(stepped(total, [(math.inf, 1), (-math.inf, 1)]))
    assert math.isnan(stepped(total, [(math.nan, 1), (1.0, 1)]))
    assert stepped(total, [(math.inf, 1), (1.5, 1), (math.inf, -1)]) == 1.5


def test_numbers_of_other_kinds_count_as_the_int_or_float_they_stand_for():
    total = Aggregate.sum()
    assert stepped(total, [(np.int64(3), 1), (4, 1)]) == 7
    assert type(stepped(total, [(np.int64(3), 1)])) is int
    assert stepped(total, [(np.float64(0.25), 1), (Decimal("0.5"), 1), (Fraction(1, 4), 1)]) == 1.0


@pytest.mark.parametrize("value", ["3", b"3", None, [1]])
def test_a_value_that_is_no_number_is_refused(value):
    with pytest.raises(TypeError, match="a sum's values must be numbers"):
        stepped(Aggregate.sum(), [(value, 1)])
