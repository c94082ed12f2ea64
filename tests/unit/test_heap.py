"""Automatic collections pause while a run holds its items, and come back after, even on an error."""
import gc
import sys
import weakref

import pytest

import flamespark as fs
from flamespark.engines.local_pipeline import Pipeline
from flamespark.runtime import heap
from flamespark.runtime.heap import collections_paused
from flamespark.runtime.plan import build_plan
from flamespark.runtime.punctuations import mint

from tests import processes


def test_collections_pause_for_the_block_and_come_back():
    assert gc.isenabled()
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_collections_come_back_when_the_block_raises():
    with pytest.raises(ZeroDivisionError):
        with collections_paused():
            1 / 0
    assert gc.isenabled()


def test_what_the_block_made_moves_to_the_oldest_generation_where_a_full_collection_takes_its_cycles():
    class Node:
        pass

    with collections_paused():
        node = Node()
        node.itself = node
        kept = [Node()]
        del node
    assert gc.get_freeze_count() == 0
    assert [o for o in gc.get_objects(generation=2) if type(o) is Node] != []
    assert not [o for o in gc.get_objects(generation=0) if type(o) is Node]
    gc.collect()
    assert [o for o in gc.get_objects() if type(o) is Node] == kept


def test_a_local_run_runs_with_collections_paused():
    seen = []
    graph = fs.Graph("g")
    graph.source("s").map(lambda v: seen.append(gc.isenabled()) or v).sink("out")
    assert fs.run(graph, {"s": [(1, 1), (2, 2)]}).outputs == {"out": [1, 2]}
    assert seen == [False, False] and gc.isenabled()


def test_cycles_user_functions_make_are_collected_during_a_run_once_the_young_objects_crowd(monkeypatch):
    monkeypatch.setattr(heap, "YOUNG_LIMIT", 1_000)

    class Node:
        pass

    made, alive_at_last = [], []

    def make_a_cycle(v):
        node = Node()
        node.itself = node
        made.append(weakref.ref(node))
        if v == 2_999:
            alive_at_last.append(sum(ref() is not None for ref in made))
        return v

    graph = fs.Graph("g")
    graph.source("s").map(make_a_cycle).sink("out")
    # The engine looks at the young objects once a step: steps of 100 events, so that several come before the last.
    fs.run(graph, {"s": [(t, t) for t in range(3_000)]}, batch_size=100)
    assert alive_at_last and alive_at_last[0] < 1_000  # without the limit, all 3,000 would wait for the end


def test_a_pipeline_frees_what_it_holds_without_a_collection():
    graph = fs.Graph("g")
    values = graph.source("s").stateful(key=lambda v: v % 3, update=lambda total, v: (v, [v]), name="keep")
    values.map(lambda v: v + 1).sink("out")
    values.sink("raw")
    gc.disable()
    try:
        pipeline = Pipeline(build_plan(graph))
        pipeline.apply({"s": mint("s", [1, 2, 3], [1, 2, 3], [0.0] * 3, [0, 1, 2])})
        held = weakref.ref(pipeline.states["keep"])
        assert len(pipeline.barrier) == 6  # the step went through the operators to both sinks
        del pipeline
        assert held() is None  # freed by reference counting: no cycle through the routing, the states or the barrier
    finally:
        gc.enable()


@pytest.mark.parametrize("changes", [False, True])
def test_a_run_leaves_nothing_for_a_collection_to_free(changes):
    graph = fs.Graph("g")
    words = graph.source("s").flat_map(lambda text: text.split(), name="split")
    counted = words.stateful(key=lambda word: word, update=lambda n, word: ((n or 0) + 1, [[word, (n or 0) + 1]]))
    firsts, others = counted.branch(lambda pair: pair[1] == 1)
    firsts.union(others.filter(lambda pair: pair[1] > 2).map(lambda pair: pair[0])).sink("out")
    events = [(3, "a b"), (1, "b c"), (2, "a a c"), (5, "c")]
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = fs.run(graph, {"s": events}, reorder_latency=5, changes=changes)
        assert result.outputs["out"]
        del result
        gc.collect()
        left = {type(o).__name__ for o in gc.garbage} & {"Item", "Meta", "Step", "StateLog", "LocalRun"}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == set()  # reference counting freed the run: none of it waited in a reference cycle


def test_freezing_what_lives_takes_it_out_of_the_scans_once_a_process_and_a_pause_leaves_it_out():
    # In a process of its own: a test process that froze what lives would keep it frozen.
    script = """
import gc, weakref
from flamespark.runtime.heap import collections_paused, freeze_what_lives

class Node:
    pass

before = [Node()]
freeze_what_lives()
frozen = gc.get_freeze_count()
assert frozen > 0 and not [o for o in gc.get_objects() if type(o) is Node], "what lived is in no generation"
with collections_paused():
    node = Node()
    node.itself = node
    made = weakref.ref(node)
    del node
assert gc.get_freeze_count() == frozen, "the pause put the frozen objects back"
freeze_what_lives()
assert gc.get_freeze_count() == frozen, "a second call froze again"
gc.collect()
assert made() is None, "a cycle made after the freeze was not collected"
print("ok")
"""
    run = processes.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.stdout == "ok\n", run.stderr
