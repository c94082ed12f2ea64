"""The stateful operator agrees with the paper's literal construction on any sequence of items and tombstones."""
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from operators import StatefulLoop
from tests.graphs import running_sum_update
from tests.oracles.literal_stateful import LiteralStatefulLoop


def _gaps(state, value):
    """An update whose outputs depend on the state in more than one way, and whose state often repeats."""
    previous = state if state is not None else value
    return value % 4, [[value - previous, value % 2]]


UPDATES = [running_sum_update, _gaps]


@st.composite
def item_sequences(draw):
    """Items with distinct metas, some retracted, some of those with a replacement (the same meta, another
    payload, as a re-run upstream sends); tombstones may come before or after their item; and punctuations
    (numbers) below every later step's time."""
    values = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 9)), max_size=20))
    items = [Item(Meta(ts, "s", i, (0,)), value, pack(value), False, float(i)) for i, (ts, value) in enumerate(values)]
    steps = list(items)
    for original in items:
        if draw(st.integers(0, 3)) == 0:
            tombstone = Item(original.meta, original.payload, original.data, True, original.arrival)
            steps.insert(draw(st.integers(0, len(steps))), tombstone)
            if draw(st.booleans()):
                replacement = original.payload + 10
                steps.append(Item(original.meta, replacement, pack(replacement), False, original.arrival))
    order = draw(st.permutations(range(len(steps))))
    steps = [steps[i] for i in order]
    with_punctuations = []
    for position, step in enumerate(steps):
        with_punctuations.append(step)
        if draw(st.booleans()):
            later = [other.meta.ts for other in steps[position + 1:]]
            with_punctuations.append(min(later, default=math.inf) - 1)
    return with_punctuations


def netted(net: Counter, outputs):
    for out in outputs:
        net[(out.meta, out.data)] += -1 if out.tombstone else 1


def net_outputs(operator, steps, flushes=None) -> Counter:
    """What `steps` make, netted: each item taken as a batch of its own, or with `flushes` (a flag per step) the
    items taken in batches that end after the flagged ones and before each punctuation (an operator leaves work
    waiting within a batch, and does it at the batch's end)."""
    state, net, batch = operator.new_state(), Counter(), []
    for index, step in enumerate(steps + [math.inf]):
        if isinstance(step, Item):
            batch.append(step)
            if flushes is not None and not flushes[index]:
                continue
        if batch:
            netted(net, operator.take(Batch.of_items(batch), state).items())
            batch = []
        if not isinstance(step, Item):
            assert operator.punctuate(step, state) is None  # a keyed operator releases nothing on a punctuation
    return net


def log_net_outputs(loop, steps, flushes) -> Counter:
    """What `steps` make through the keys' logs on their own, each item added in arrival order (`StateLog.add`),
    the work they leave waiting done only after the flagged steps and before each punctuation (`flush`), and every
    log collected at each punctuation. A batch reaches a log in meta order; the log itself must take any order."""
    logs, net = {}, Counter()
    for index, step in enumerate(steps + [math.inf]):
        if isinstance(step, Item):
            log = logs.setdefault(loop.key_of(step), loop.new_bucket())
            netted(net, log.add(step, loop.combine))
            if not flushes[index]:
                continue
        for log in logs.values():
            netted(net, log.flush(loop.combine))
        if not isinstance(step, Item):
            for log in logs.values():
                assert log.collect(step) == 0  # no tombstone is left without its item below a punctuation
    return net


@pytest.mark.slow  # 300 examples
@settings(max_examples=300, deadline=None)
@given(steps=item_sequences(), update=st.sampled_from(UPDATES), keys=st.integers(1, 3))
def test_log_form_and_literal_form_emit_the_same_net_outputs(steps, update, keys):
    fast = StatefulLoop("op", key=lambda v: v % keys, update=update)
    literal = LiteralStatefulLoop("op", key=lambda v: v % keys, update=update)
    expected = net_outputs(literal, steps)
    assert net_outputs(fast, steps) == expected
    assert -expected == Counter()  # no output retracted more often than made


@pytest.mark.slow  # 300 examples
@settings(max_examples=300, deadline=None)
@given(steps=item_sequences(), update=st.sampled_from(UPDATES), keys=st.integers(1, 3), data=st.data())
def test_work_left_waiting_in_a_batch_or_between_flushes_gives_the_literal_net_outputs(steps, update, keys, data):
    flushes = data.draw(st.lists(st.booleans(), min_size=len(steps), max_size=len(steps)))
    fast = StatefulLoop("op", key=lambda v: v % keys, update=update)
    literal = LiteralStatefulLoop("op", key=lambda v: v % keys, update=update)
    expected = net_outputs(literal, steps)
    assert net_outputs(fast, steps, flushes) == expected
    assert log_net_outputs(fast, steps, flushes) == expected


def test_a_tombstone_and_its_replacement_re_run_the_later_steps_once():
    calls = []

    def counted(state, value):
        calls.append(value)
        return running_sum_update(state, value)

    loop = StatefulLoop("sum", key=lambda v: 0, update=counted)
    state = loop.new_state()
    items = [Item(Meta(ts, "s", 0, (0,)), ts, pack(ts), False, 0.0) for ts in range(1, 6)]
    loop.take(Batch.of_items(items), state)
    replaced = Item(items[1].meta, 20, pack(20), False, 0.0)
    calls.clear()
    # One batch: the tombstone's re-run waits for the batch's end, after the replacement.
    changed = loop.take(Batch.of_items([Item(items[1].meta, 2, pack(2), True, 0.0), replaced]), state)
    assert calls == [20, 3, 4, 5]  # the replacement, then each later step once
    net = Counter()
    for out in changed.items():
        net[out.payload] += -1 if out.tombstone else 1
    assert +net == Counter({21: 1, 24: 1, 28: 1, 33: 1})  # running sums 1, 21, 24, 28, 33
    assert -net == Counter({3: 1, 6: 1, 10: 1, 15: 1})  # instead of 1, 3, 6, 10, 15


def test_an_insert_before_a_waiting_re_run_still_re_runs_the_step_after_the_removal():
    """The insert's own re-run may stop early (a 0 leaves the sum as it was); the step after the removed one
    must be re-run all the same. A batch reaches a key's log in meta order, where the insert would come first:
    the log is driven on its own, in the order that makes the insert meet the waiting re-run."""
    loop = StatefulLoop("sum", key=lambda v: 0, update=running_sum_update)
    log = loop.new_bucket()
    items = {ts: Item(Meta(ts, "s", 0, (0,)), ts // 10, pack(ts // 10), False, 0.0) for ts in (10, 20, 30, 40, 50)}
    net = Counter()
    steps = [*items.values(), Item(items[40].meta, 4, pack(4), True, 0.0), Item(Meta(15, "s", 0, (0,)), 0, pack(0))]
    for step in steps:
        for out in log.add(step, loop.combine):
            net[(out.meta.ts, out.payload)] += -1 if out.tombstone else 1
    for out in log.flush(loop.combine):
        net[(out.meta.ts, out.payload)] += -1 if out.tombstone else 1
    assert +net == Counter({(10, 1): 1, (15, 1): 1, (20, 3): 1, (30, 6): 1, (50, 11): 1})
    assert -net == Counter()
