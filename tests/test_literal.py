"""The stateful operator agrees with the paper's literal construction on any sequence of items and tombstones."""
import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from operators import StatefulLoop
from tests.graphs import running_sum_update
from tests.literal_stateful import LiteralStatefulLoop


def _gaps(state, value):
    """An update whose outputs depend on the state in more than one way, and whose state often repeats."""
    previous = state if state is not None else value
    return value % 4, [[value - previous, value % 2]]


UPDATES = [running_sum_update, _gaps]


@st.composite
def item_sequences(draw):
    """Items with distinct metas, some retracted; tombstones may come before or after their item; and
    punctuations (numbers) below every later step's time."""
    values = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 9)), max_size=20))
    items = [Item(Meta(ts, "s", i, (0,)), value, pack(value), False, float(i)) for i, (ts, value) in enumerate(values)]
    steps = list(items)
    for original in items:
        if draw(st.integers(0, 3)) == 0:
            tombstone = Item(original.meta, original.payload, original.data, True, original.arrival)
            steps.insert(draw(st.integers(0, len(steps))), tombstone)
    order = draw(st.permutations(range(len(steps))))
    steps = [steps[i] for i in order]
    with_punctuations = []
    for position, step in enumerate(steps):
        with_punctuations.append(step)
        if draw(st.booleans()):
            later = [other.meta.ts for other in steps[position + 1:]]
            with_punctuations.append(min(later, default=math.inf) - 1)
    return with_punctuations


def net_outputs(operator, steps) -> Counter:
    state, net = operator.new_state(), Counter()
    for step in steps + [math.inf]:
        emitted = operator.process(step, state) if isinstance(step, Item) else operator.punctuate(step, state)
        for out in emitted:
            net[(out.meta, out.data)] += -1 if out.tombstone else 1
    return net


@settings(max_examples=300, deadline=None)
@given(steps=item_sequences(), update=st.sampled_from(UPDATES), keys=st.integers(1, 3))
def test_log_form_and_literal_form_emit_the_same_net_outputs(steps, update, keys):
    fast = StatefulLoop("op", key=lambda v: v % keys, update=update)
    literal = LiteralStatefulLoop("op", key=lambda v: v % keys, update=update)
    expected = net_outputs(literal, steps)
    assert net_outputs(fast, steps) == expected
    assert -expected == Counter()  # no output retracted more often than made
