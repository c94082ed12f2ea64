"""Operators and the barrier are handed their state: saving and restoring it between calls changes nothing."""
import math
from collections import Counter

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier.barrier import Barrier, BarrierState
from barrier.impatience import ImpatienceSorter
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.errors import UserFunctionError
from flamespark.core.items import Item, Meta
from operators import DictState, KeyedState, StatefulLoop, WindowedGrouping
from operators.statelog import UNDECODED
from tests.graphs import running_sum_update
from tests.strategies import disordered, in_order_events


class EncodedState(KeyedState):
    """Keeps no bucket decoded: each is msgpack bytes between calls, as in a per-key state store."""

    def __init__(self, operator):
        super().__init__()
        self.operator = operator
        self.blobs = {}

    def get(self, key):
        blob = self.blobs.get(key)
        return None if blob is None else self.operator.load_bucket(msgpack.unpackb(blob))

    def put(self, key, bucket):
        if bucket.empty:
            self.blobs.pop(key, None)
        else:
            self.blobs[key] = msgpack.packb(self.operator.dump_bucket(bucket))

    def collectable(self, time):
        return list(self.blobs)


def item(ts, payload, tiebreak=0, tombstone=False):
    return Item(Meta(ts, "s", tiebreak, (0,)), payload, pack(payload), tombstone, float(ts))


def tombstone_of(original):
    return Item(original.meta, original.payload, original.data, True, original.arrival)


def run(operator, state, steps) -> list:
    """Apply `steps`: an item is a batch of its own, a list of items one batch, an int a punctuation time.
    Returns everything emitted, in order."""
    out = []
    for step in steps:
        if isinstance(step, (Item, list)):
            out += operator.take(Batch.of_items(step if isinstance(step, list) else [step]), state).items()
        else:
            made = operator.punctuate(step, state)
            out += made.items() if made is not None else []
    return [(o.tombstone, o.meta, o.data, o.arrival) for o in out]


@st.composite
def keyed_steps(draw):
    """Items within a reorder latency, some cancelled right away (in the item's batch), mostly followed by the
    punctuation they allow; an item may join the batch before it if no punctuation came between.

    Returns the steps and the items that survive them.
    """
    latency = draw(st.integers(0, 6))
    events = draw(in_order_events(st.integers(0, 9), max_size=25))
    steps, survivors, newest, issued = [], [], -math.inf, -math.inf
    for position, (ts, value) in enumerate(draw(disordered(events, latency))):
        added = item(ts, value, tiebreak=position)
        batch = [added]
        if draw(st.booleans()) and draw(st.booleans()):
            batch.append(tombstone_of(added))
        else:
            survivors.append(added)
        if steps and isinstance(steps[-1], list) and draw(st.booleans()):
            steps[-1] += batch  # no punctuation passed since the batch before: one batch
        else:
            steps.append(batch)
        newest = max(newest, ts)
        if newest - latency - 1 > issued and draw(st.integers(0, 3)):
            issued = newest - latency - 1
            steps.append(issued)
    return steps + [math.inf], survivors


def windows(window):
    return lambda run: [(last.meta, pack(tuple(i.payload for i in run[max(0, k + 1 - window): k + 1])))
                        for k, last in enumerate(run)]


def running_sums(run):
    totals = [sum(i.payload for i in run[: k + 1]) for k in range(len(run))]
    return [(i.meta.child(0), pack(total)) for i, total in zip(run, totals)]


# Each operator (key: the payload mod 3), with its outputs for one key's items in meta order.
OPERATORS = [
    (lambda: WindowedGrouping("g", key=lambda v: v % 3, window=1), windows(1)),
    (lambda: WindowedGrouping("g", key=lambda v: v % 3, window=3), windows(3)),
    (lambda: StatefulLoop("sum", key=lambda v: v % 3, update=running_sum_update), running_sums),
]


def in_order(outputs_of, survivors) -> Counter:
    expected = Counter()
    for key in range(3):
        expected.update(outputs_of(sorted((i for i in survivors if i.payload % 3 == key), key=lambda i: i.identity)))
    return expected


@settings(max_examples=150, deadline=None)
@given(case=keyed_steps(), which=st.sampled_from(range(len(OPERATORS))))
def test_a_state_saved_and_restored_around_every_call_gives_the_same_outputs(case, which):
    """Every change reaches the state through put/delete, sweeping more often changes no output,
    and the operator object keeps nothing between runs."""
    steps, survivors = case
    build, outputs_of = OPERATORS[which]
    operator = build()
    in_memory = run(operator, operator.new_state(), steps)
    net = Counter()
    for tombstone, meta, data, _ in in_memory:
        net[(meta, data)] += -1 if tombstone else 1
    assert +net == in_order(outputs_of, survivors) and -net == Counter()
    assert run(operator, EncodedState(operator), steps) == in_memory
    assert run(operator, DictState(), steps) == in_memory


def test_a_stored_step_keeps_its_count_of_identical_items():
    operator = StatefulLoop("sum", key=lambda v: 0, update=running_sum_update)
    state = EncodedState(operator)
    first = item(1, 5)
    run(operator, state, [first, item(2, 1)])
    assert run(operator, state, [first]) == []  # an identical copy: the stored step counts it
    assert run(operator, state, [tombstone_of(first)]) == []  # one copy is left: nothing changes downstream
    assert len(run(operator, state, [tombstone_of(first)])) == 3  # the last one goes: a total retracted, one remade


def test_a_stored_step_keeps_no_outputs_and_makes_them_again_to_retract_them():
    def update(total, v):
        total = (total or 0) + v
        return total, [{"total": total}]

    operator = StatefulLoop("totals", key=lambda v: 0, update=update)
    state = EncodedState(operator)
    made = run(operator, state, [item(2, 7)])
    (blob,) = state.blobs.values()
    assert b"total" not in blob  # the output's encoding is not stored
    late = run(operator, state, [item(1, 3)])
    assert [(tombstone, meta.ts, msgpack.unpackb(data)) for tombstone, meta, data, _ in late] == [
        (False, 1, {"total": 3}), (True, 2, {"total": 7}), (False, 2, {"total": 10})]
    assert late[1] == (True, *made[0][1:])  # the stored step's output, made again, with its arrival


def test_an_update_that_makes_other_outputs_when_run_again_is_named():
    calls = []

    def update(total, v):
        calls.append(v)
        return (total or 0) + v, [len(calls)]

    operator = StatefulLoop("counter", key=lambda v: 0, update=update)
    state = EncodedState(operator)
    run(operator, state, [item(2, 7)])
    with pytest.raises(UserFunctionError, match="update function of stateful operator 'counter' is not "
                                                "deterministic: .* event ts=2 of source 's'"):
        run(operator, state, [item(1, 3)])


def test_a_punctuation_deletes_the_buckets_it_empties():
    grouping = WindowedGrouping("g", key=lambda v: v, window=1)
    state = DictState(sweep_spacing=1)
    run(grouping, state, [item(1, "a"), item(2, "b")])
    assert state.get(pack("a")) is not None and state.get(pack("b")) is not None
    run(grouping, state, [5, 6])
    assert state.get(pack("a")) is None and state.get(pack("b")) is None


def test_a_bucket_a_tombstone_empties_serves_as_new_until_its_punctuation_drops_it():
    operator = StatefulLoop("echo", key=lambda v: 0, update=lambda state, v: (None, [v]))
    state = DictState(sweep_spacing=1)
    first = item(1, 5)
    assert [tombstone for tombstone, _, _, _ in run(operator, state, [first, tombstone_of(first)])] == [False, True]
    assert state.get(pack(0)).empty  # the key is queued for its punctuation, which drops it
    assert [data for _, _, data, _ in run(operator, state, [item(2, 7)])] == [pack(7)]
    run(operator, state, [3])
    assert state.get(pack(0)) is None
    assert run(operator, state, [tombstone_of(item(4, 1)), item(4, 1)]) == []  # they cancel where they meet
    assert state.get(pack(0)).empty
    run(operator, state, [5])
    assert state.get(pack(0)) is None


def test_a_punctuation_deletes_a_stateful_key_whose_state_is_back_to_none():
    def pairs(held, value):  # emits and forgets every second value, as a collector does
        return (None, [[held, value]]) if held is not None else (value, [])

    operator = StatefulLoop("pairs", key=lambda v: v % 2, update=pairs)
    state = DictState(sweep_spacing=1)
    run(operator, state, [item(1, 2), item(2, 4), item(3, 1), 5])
    assert state.get(pack(0)) is None  # emitted [2, 4]: nothing is left to keep
    assert state.get(pack(1)).base.state == 1  # still holds 1
    assert [data for _, _, data, _ in run(operator, state, [item(6, 6), item(7, 8), item(8, 3)])] == [
        pack([6, 8]), pack([1, 3])]


def test_a_frequent_key_is_collected_halfway_to_its_latest_item_and_a_rare_one_at_its_item():
    operator = StatefulLoop("count", key=lambda v: v, update=lambda n, v: ((n or 0) + 1, []))
    state = DictState(sweep_spacing=1)
    run(operator, state, [0, *[item(ts, "often") for ts in range(1, 101)], item(90, "once"), 50])
    assert [len(state.get(pack(key)).steps) for key in ("often", "once")] == [50, 1]
    run(operator, state, [74])  # "often" is due halfway from 50 to 100, "once" at 90
    assert [len(state.get(pack(key)).steps) for key in ("often", "once")] == [50, 1]
    run(operator, state, [75])
    assert [len(state.get(pack(key)).steps) for key in ("often", "once")] == [25, 1]
    run(operator, state, [90])  # "often" was due at 87, halfway from 75
    assert len(state.get(pack("often")).steps) == 10 and not state.get(pack("once")).steps


def test_a_grouping_bucket_can_first_forget_once_a_window_follows_its_first_item():
    grouping = WindowedGrouping("g", key=lambda v: 0, window=3)
    state = DictState(sweep_spacing=1)
    run(grouping, state, [item(10, "a"), item(20, "b")])
    assert state.get(pack(0)).forgets_from is None  # both stay for the window the next item makes
    run(grouping, state, [item(30, "c"), 5])
    assert state.get(pack(0)).forgets_from == 30  # "a" can go once "c" is in
    run(grouping, state, [29])  # halfway from 5 to 30 is 17, but the key is due at 30
    assert len(state.get(pack(0)).items()) == 3
    run(grouping, state, [30])
    assert [i.payload for i in state.get(pack(0)).items()] == ["b", "c"]


def test_a_tombstone_waiting_for_its_item_survives_a_sweep():
    grouping = WindowedGrouping("g", key=lambda v: 0, window=1)
    state = DictState(sweep_spacing=1)
    late = item(9, "x")
    assert run(grouping, state, [tombstone_of(late), 3, 4]) == []
    assert state.get(pack(0)) is not None
    assert run(grouping, state, [late]) == []


def barrier_steps():
    """Pushes `(sink, ts, payload, tombstone)` and punctuations; `drive` skips entries a punctuation covered."""
    entry = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 12), st.integers(0, 3), st.booleans())
    return st.lists(st.one_of(entry, st.integers(0, 12)), max_size=30)


def drive(barrier, steps) -> list:
    out = []
    for step in steps:
        if not isinstance(step, tuple):
            out += [(i.sink, i.meta, i.data, i.arrival) for i in barrier.punctuate(step)]
            continue
        sink, ts, payload, tombstone = step
        if ts > barrier.horizon:
            barrier.push(sink, Batch.of_items([item(ts, payload)]))
            if tombstone:
                barrier.push(sink, Batch.of_items([item(ts, payload, tombstone=True)]))
    return out


@settings(max_examples=150, deadline=None)
@given(steps=barrier_steps(), cut=st.integers(0, 30))
def test_a_barrier_dumped_and_restored_releases_as_the_one_dumped(steps, cut):
    whole = Barrier()
    expected = drive(whole, steps + [math.inf])
    dumped_one = Barrier()
    released = drive(dumped_one, steps[:cut])
    held = len(dumped_one)
    dumped = dumped_one.state.dump()
    assert len(dumped_one) == held and dumped_one.state.dump() == dumped
    restored = Barrier(BarrierState.load(msgpack.unpackb(msgpack.packb(dumped))))
    assert len(restored) == held
    assert released + drive(restored, steps[cut:] + [math.inf]) == expected
    assert released + drive(dumped_one, steps[cut:] + [math.inf]) == expected
    assert (restored.arrived, restored.tombstones, restored.released) == (
        whole.arrived, whole.tombstones, whole.released)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.integers(0, 20), max_size=40),
    cut=st.integers(-1, 20),
    huffman=st.booleans(),
)
def test_sorter_snapshot_is_the_drain_order_and_removes_nothing(keys, cut, huffman):
    sorter, twin = ImpatienceSorter(huffman), ImpatienceSorter(huffman)
    for position, key in enumerate(keys):
        sorter.push(key, position)
        twin.push(key, position)
    assert sorter.flush(cut) == twin.flush(cut)
    snapshot = sorter.snapshot()
    assert len(sorter) == len(snapshot) == len(twin)
    assert [value for _, value in snapshot] == twin.flush(math.inf)
    assert [keys[value] for _, value in snapshot] == [key for key, _ in snapshot]
    assert [value for _, value in snapshot] == sorter.flush(math.inf)


def test_an_item_appended_in_order_drops_the_decoded_state_before_it_and_a_rerun_decodes_it():
    def collect(held, value):  # a list state, as the inverted index's collectors keep
        return (held or []) + [value], [sum((held or []) + [value])]

    operator = StatefulLoop("sums", key=lambda v: 0, update=collect)
    log = operator.new_bucket()
    for ts in (1, 3, 5):
        log.add(item(ts, ts), operator.combine)
    assert [step.state is UNDECODED for step in log.steps] == [True, True, False]
    removed = log.add(tombstone_of(log.steps[-1].item), operator.combine) + log.flush(operator.combine)
    assert [(output.tombstone, output.payload) for output in removed] == [(True, 9)]
    assert [step.state is UNDECODED for step in log.steps] == [True, True]  # the step at 3 is last, encoded
    assert [output.payload for output in log.add(item(6, 6), operator.combine)] == [10]
    made = log.add(item(4, 4), operator.combine)  # re-runs from the step at 3, whose state it decodes
    assert [(output.tombstone, output.payload) for output in made] == [(False, 8), (True, 10), (False, 14)]
    assert log.steps[-1].state == [1, 3, 4, 6]
