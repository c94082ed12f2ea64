"""Operators on their own: the paper's grouping example and order independence."""
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from operators import (BranchOperator, BufferSort, DictState, FlatMapOperator, MapOperator, StatefulLoop,
                       WindowedGrouping)
from operators.bucket import Bucket


def item(ts, payload, tombstone=False, path=(0,)):
    return Item(Meta(ts, "s", 0, path), payload, pack(payload), tombstone)


def tombstone_of(original):
    return Item(original.meta, original.payload, original.data, True)


def taken(operator, added, state) -> list:
    """What a boundary operator makes of `added` alone, as a step of one item: the items of the batch it gives."""
    return operator.take(Batch.of_items([added]), state).items()


def applied(operator, added):
    """What a stateless operator makes of `added` alone: a list of items, or with ports one per port."""
    out = operator.apply(Batch.of_items([added]))
    return [port.items() for port in out] if operator.ports else out.items()


metas = st.tuples(st.integers(0, 3), st.sampled_from("ab"), st.integers(0, 2),
                  st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple))


@given(metas, metas)
def test_flat_metas_order_as_their_fields_would(one, two):
    flat_one, flat_two = Meta(*one), Meta(*two)
    assert (flat_one < flat_two, flat_one == flat_two) == (one < two, one == two)
    assert (flat_one.ts, flat_one.source, flat_one.tiebreak, flat_one.path) == one
    assert Meta.load(flat_one.dump()) == flat_one and type(Meta.load(flat_one.dump())) is Meta


def test_paper_grouping_example():
    """§V-B: parity keys, window 3."""
    grouping = WindowedGrouping("parity", key=lambda v: v % 2, window=3)
    state = grouping.new_state()
    out = [o.payload for v in range(1, 9) for o in taken(grouping, item(v, v), state)]
    assert out == [(1,), (2,), (1, 3), (2, 4), (1, 3, 5), (2, 4, 6), (3, 5, 7), (4, 6, 8)]


def test_out_of_order_insert_retracts_then_emits():
    """Algorithm 2: tombstones for invalidated windows first, then the new ones."""
    grouping = WindowedGrouping("g", key=lambda v: 0, window=2)
    state = grouping.new_state()
    for v in (1, 3, 4):
        taken(grouping, item(v, v), state)
    out = [(o.tombstone, o.payload) for o in taken(grouping, item(2, 2), state)]
    assert out == [(True, (1, 3)), (False, (1, 2)), (False, (2, 3))]


def test_tombstone_removes_and_collapses():
    grouping = WindowedGrouping("g", key=lambda v: 0, window=2)
    state = grouping.new_state()
    items = [item(v, v) for v in (1, 2, 3)]
    for i in items:
        taken(grouping, i, state)
    out = [(o.tombstone, o.payload) for o in taken(grouping, tombstone_of(items[1]), state)]
    assert out == [(True, (1, 2)), (True, (2, 3)), (False, (1, 3))]


def test_tombstone_before_its_item_cancels_silently():
    grouping = WindowedGrouping("g", key=lambda v: 0, window=2)
    state = grouping.new_state()
    late = item(5, 5)
    assert taken(grouping, tombstone_of(late), state) == []
    assert taken(grouping, late, state) == []
    assert [o.payload for o in taken(grouping, item(6, 6), state)] == [(6,)]


def window_changes(bucket, adds):
    net = Counter()
    for added in adds:
        for tombstone, window in bucket.changes(added):
            net[tuple(e.identity for e in window)] += -1 if tombstone else 1
    return +net, -net


@settings(max_examples=300, deadline=None)
@given(
    times=st.lists(st.integers(0, 10), min_size=1, max_size=15),  # ties: equal times, told apart by payload
    transient=st.lists(st.booleans(), min_size=15, max_size=15),
    window=st.integers(1, 4),
    order=st.randoms(use_true_random=False),
)
def test_bucket_result_does_not_depend_on_arrival_order(times, transient, window, order):
    """Items, and tombstones cancelling some of them, in any order: the net windows are the in-order ones."""
    items = [item(t, index) for index, t in enumerate(times)]
    cancelled = [i for i, gone in zip(items, transient) if gone]
    adds = items + [tombstone_of(i) for i in cancelled]
    order.shuffle(adds)
    positive, negative = window_changes(Bucket(window), adds)
    survivors = sorted((i for i in items if i not in cancelled), key=lambda i: i.identity)
    expected = Counter(
        tuple(e.identity for e in survivors[max(0, k + 1 - window): k + 1]) for k in range(len(survivors))
    )
    assert negative == Counter()
    assert positive == expected


def running_sum(state, value):
    total = (state or 0) + value
    return total, [total]


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.integers(0, 30), unique=True, max_size=12),
    transient=st.lists(st.booleans(), min_size=12, max_size=12),
    order=st.randoms(use_true_random=False),
    cuts=st.lists(st.booleans(), min_size=24, max_size=24),
)
def test_stateful_loop_result_does_not_depend_on_arrival_order_or_batches(times, transient, order, cuts):
    """Items, and tombstones cancelling some, in any order and cut into batches anywhere (`cuts[i]`: a batch ends
    after the i-th): the net outputs are the in-order ones."""
    inputs = [item(t, t + 1) for t in times]
    cancelled = [i for i, gone in zip(inputs, transient) if gone]
    adds = inputs + [tombstone_of(i) for i in cancelled]
    order.shuffle(adds)
    batches, batch = [], []
    for added, cut in zip(adds, cuts):
        batch.append(added)
        if cut:
            batches.append(batch)
            batch = []
    batches.append(batch)
    loop = StatefulLoop("sum", key=lambda v: 0, update=running_sum)
    state = loop.new_state()
    net = Counter()
    for batch in batches:
        for out in loop.take(Batch.of_items(batch), state).items():
            net[out.identity] += -1 if out.tombstone else 1
    survivors = sorted((i for i in inputs if i not in cancelled), key=lambda i: i.identity)
    total, expected = 0, Counter()
    for survivor in survivors:
        total += survivor.payload
        expected[(survivor.meta.child(0), pack(total))] += 1
    assert +net == expected and -net == Counter()


def test_a_replay_retracts_only_the_outputs_that_change():
    def total_and_value(total, value):
        total = (total or 0) + value
        return total, [{"total": total}, {"value": value}, *([{"big": total}] if total > 6 else [])]

    loop = StatefulLoop("sum", key=lambda v: 0, update=total_and_value)
    state = loop.new_state()
    taken(loop, item(2, 5), state)
    kept = state.get(pack(0)).steps[0].outputs[1]  # the step's {"value": 5}
    late = taken(loop, item(1, 3), state)
    assert [(o.tombstone, o.meta.ts, o.payload) for o in late] == [
        (False, 1, {"total": 3}), (False, 1, {"value": 3}),
        (True, 2, {"total": 5}), (False, 2, {"total": 8}), (False, 2, {"big": 8}),
    ]
    # The re-run keeps the unchanged output as the same item as before, and a retraction of the late item
    # retracts the new ones.
    assert state.get(pack(0)).steps[1].outputs[1] is kept
    gone = taken(loop, tombstone_of(item(1, 3)), state)
    assert [(o.tombstone, o.meta.ts, o.payload) for o in gone] == [
        (True, 1, {"total": 3}), (True, 1, {"value": 3}),
        (True, 2, {"total": 8}), (True, 2, {"big": 8}), (False, 2, {"total": 5}),
    ]


def test_a_stateful_key_forgets_what_punctuation_settles_but_the_state_it_left():
    def running_total(total, value):
        total = (total or 0) + value
        return total, [total]

    loop = StatefulLoop("sum", key=lambda v: 0, update=running_total)
    state = DictState(sweep_spacing=1)
    for v in (1, 2, 3, 4):
        taken(loop, item(v, v), state)
    assert loop.punctuate(2, state) is None  # it forgets; it releases nothing
    log = state.get(pack(0))
    assert [step.meta.ts for step in log.steps] == [3, 4]
    # What is left of the step at 2 is its state and arrival: its item and outputs are freed.
    assert (log.base.state_data, log.base.item, log.base.outputs) == (pack(3), None, ())
    # An item after the punctuation, before the step at 3, starts from that state.
    late = taken(loop, item(3, 10, path=(-1,)), state)
    assert [(o.tombstone, o.meta.ts, o.payload) for o in late] == [
        (False, 3, 13), (True, 3, 6), (False, 3, 16), (True, 4, 10), (False, 4, 20)]
    loop.punctuate(4, state)
    assert [o.payload for o in taken(loop, item(5, 5), state)] == [25]


def test_grouping_forgets_what_punctuation_settles():
    grouping = WindowedGrouping("g", key=lambda v: 0, window=3)
    state = DictState(sweep_spacing=1)
    for v in range(10):
        taken(grouping, item(v, v), state)
    grouping.punctuate(6, state)
    taken(grouping, item(20, 20), state)
    assert [i.payload for i in state.get(pack(0)).items()] == [5, 6, 7, 8, 9, 20]


def test_flat_map_orders_outputs_by_emission():
    out = applied(FlatMapOperator("split", lambda s: s.split()), item(1, "b a c"))
    assert [o.payload for o in out] == ["b", "a", "c"]
    assert sorted(out, key=lambda o: o.meta) == out


def test_a_branch_on_its_own_gives_each_port_its_items():
    branch = BranchOperator("small_or_large", lambda v: v < 10)
    assert [[o.payload for o in port] for port in applied(branch, item(1, 3))] == [[3], []]
    assert [[o.payload for o in port] for port in applied(branch, item(2, 30))] == [[], [30]]


def test_buffer_sort_releases_in_meta_order_on_punctuation():
    buffer = BufferSort("b")
    state = buffer.new_state()
    for t in (5, 1, 3, 9):
        assert buffer.take(Batch.of_items([item(t, t)]), state) is None  # it holds what it takes
    assert buffer.punctuate(5, state).payloads == [1, 3, 5]
    assert len(state) == 1


def test_user_function_error_names_operator_and_event():
    op = MapOperator("explode", lambda v: 1 / v)
    with pytest.raises(fs.UserFunctionError, match=r"map function of map operator 'explode' raised ZeroDivisionError.*ts=7 of source 's'.*payload 0"):
        applied(op, item(7, 0))


def _reciprocal_of_a_field(payload):
    return 1 / payload["n"]


def test_user_function_error_says_where_it_was_raised_in_user_code():
    """The innermost frame outside FlameSpark's code: the line of the user's function that raised."""
    graph = fs.Graph("where")
    graph.source("s").map(_reciprocal_of_a_field, name="reciprocal").sink("out")
    line = _reciprocal_of_a_field.__code__.co_firstlineno + 1
    with pytest.raises(fs.UserFunctionError) as raised:
        fs.run(graph, {"s": [(1, {"n": 2}), (2, {"m": 0})]})
    assert str(raised.value).endswith(f"payload {{'m': 0}}), at {__file__}:{line} in _reciprocal_of_a_field")


@pytest.mark.parametrize("op", [MapOperator("to_set", lambda v: {v}), FlatMapOperator("to_set", lambda v: [v, {v}])])
def test_unencodable_output_names_operator_and_event(op):
    with pytest.raises(fs.PayloadError, match=r"operator 'to_set' produced a payload msgpack cannot encode for event ts=3"):
        applied(op, item(3, 1))


@pytest.mark.parametrize("graph_of, what", [
    (lambda numbers: numbers.stateful(key=lambda v: 0, update=lambda s, v: ({v}, [v]), name="to_set"), "a state"),
    (lambda numbers: numbers.stateful(key=lambda v: {v}, update=lambda s, v: (v, [v]), name="to_set"), "a key"),
    (lambda numbers: numbers.group_by(key=lambda v: {v}, window=2, name="to_set"), "a key"),
])
def test_an_unencodable_state_or_key_is_named_as_such(graph_of, what):
    graph = fs.Graph("sets")
    graph_of(graph.source("numbers")).sink("out")
    with pytest.raises(fs.PayloadError, match=rf"operator 'to_set' produced {what} msgpack cannot encode for event ts=3"):
        fs.run(graph, {"numbers": [(3, 1)]})


@pytest.mark.parametrize(
    "update, message",
    [
        (lambda s, v: v, "must return \\(new_state, outputs\\), got int"),
        (lambda s, v: (v, {"a": 1}), "outputs as an iterable of payloads .* got dict"),
        (lambda s, v: (v, 5), "got int"),
    ],
)
def test_bad_update_results_are_explained(update, message):
    with pytest.raises(fs.UserFunctionError, match=message):
        loop = StatefulLoop("st", key=lambda v: 0, update=update)
        taken(loop, item(1, 1), loop.new_state())


def test_cancel_pairs_drops_a_retraction_and_its_identical_remake():
    from tests.oracles.literal_stateful import cancel_pairs

    old, new = item(1, "x"), item(2, "y")
    kept = cancel_pairs([tombstone_of(old), tombstone_of(new), new, old, item(3, "z")])
    assert [(i.tombstone, i.payload) for i in kept] == [(False, "z")]
    lone = cancel_pairs([tombstone_of(old), item(1, "other")])
    assert [(i.tombstone, i.payload) for i in lone] == [(True, "x"), (False, "other")]
