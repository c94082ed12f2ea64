"""The DSL: building, validating and drawing graphs."""
import networkx as nx
import pytest

import flamespark as fs
from tests import graphs


def test_stateful_shows_its_feedback_cycle():
    g = graphs.running_sum().to_networkx()
    assert isinstance(g, nx.DiGraph)
    assert g.has_edge("sum/group", "sum/combine")
    assert g.edges["sum/combine", "sum/group"]["feedback"] is True
    assert g.nodes["sum/group"]["window"] == 2
    assert list(nx.simple_cycles(g)) == [["sum/group", "sum/combine"]] or list(nx.simple_cycles(g)) == [["sum/combine", "sum/group"]]
    assert g.has_edge("numbers", "sum/group") and g.has_edge("sum/combine", "sums")


def test_to_dot_lists_every_node_and_the_dashed_feedback_edge():
    dot = graphs.chained_stateful().to_dot()
    assert dot.startswith('digraph "chained" {')
    for name in ("numbers", "count/group", "count/combine", "gaps/group", "gaps/combine", "gap_records"):
        assert f'"{name}"' in dot
    assert '"count/combine" -> "count/group" [style=dashed, label="feedback"];' in dot


def test_union_merges_branches():
    g = graphs.two_sources().to_networkx()
    assert set(g.predecessors("both")) == {"tag_left", "tag_right"}


def test_duplicate_names_are_rejected():
    g = fs.Graph("g")
    s = g.source("a")
    with pytest.raises(fs.GraphError, match="already has an operator named 'a'"):
        s.map(abs, name="a")


@pytest.mark.parametrize("window", [0, -1, 1.5, "3", True])
def test_bad_windows_are_rejected(window):
    with pytest.raises(fs.GraphError, match="window must be an integer >= 1"):
        fs.Graph("g").source("a").group_by(abs, window)


@pytest.mark.parametrize("method", ["map", "flat_map", "filter", "branch"])
def test_non_callable_functions_are_rejected(method):
    with pytest.raises(fs.GraphError, match="must be callable, got int"):
        getattr(fs.Graph("g").source("a"), method)(42)


def test_non_callable_key_and_update_are_rejected():
    s = fs.Graph("g").source("a")
    with pytest.raises(fs.GraphError, match="stateful update function .* must be callable"):
        s.stateful(abs, None, name="st")
    with pytest.raises(fs.GraphError, match="group_by key function must be callable"):
        s.group_by("word", 2)
    with pytest.raises(fs.GraphError, match="stateful shard function of 'st' must be callable, got str"):
        s.stateful(abs, abs, name="st", shard="doc")


def test_operator_without_path_to_a_sink_is_rejected():
    g = fs.Graph("g")
    s = g.source("a")
    s.map(abs, name="lost")
    s.sink("out")
    with pytest.raises(fs.GraphError, match="no path to a sink from: lost"):
        fs.run(g, {"a": []})


def test_source_without_path_to_a_sink_is_rejected():
    g = fs.Graph("g")
    g.source("a").sink("out")
    g.source("idle")
    with pytest.raises(fs.GraphError, match="no path to a sink from: idle"):
        g.validate()


def test_graph_without_sink_or_source_is_rejected():
    with pytest.raises(fs.GraphError, match="has no source"):
        fs.Graph("empty").validate()
    g = fs.Graph("g")
    g.source("a").map(abs)
    with pytest.raises(fs.GraphError, match="has no sink"):
        g.validate()


@pytest.mark.parametrize("build", [graphs.running_sum, graphs.chained_stateful, graphs.fanout_collector,
                                   graphs.two_sources, graphs.sharded_collectors])
def test_the_only_cycles_are_the_stateful_feedback_through_a_grouping(build):
    logical = build().to_networkx()
    cycles = list(nx.simple_cycles(logical))
    assert cycles  # each of these graphs has a stateful operator
    for cycle in cycles:
        assert len(cycle) == 2 and any(logical.nodes[name]["kind"] == "group_by" for name in cycle)


def test_union_rejects_foreign_streams():
    a = fs.Graph("a").source("x")
    b = fs.Graph("b").source("y")
    with pytest.raises(fs.GraphError, match="same graph"):
        a.union(b)


def test_a_sink_may_share_its_sources_name():
    g = fs.Graph("g")
    g.source("docs").map(lambda d: d * 2).sink("docs")
    assert g.sources == ["docs"] and g.sinks == ["docs"]
    assert g.to_networkx().has_edge("map_1", "docs (sink)")
    assert fs.run(g, {"docs": [(1, 2), (2, 3)]}).outputs == {"docs": [4, 6]}
    with pytest.raises(fs.GraphError, match="already has a sink named 'docs'"):
        g.source("other").sink("docs")


def test_a_sink_may_share_its_operators_name():
    g = fs.Graph("g")
    g.source("n").stateful(key=lambda v: v % 2, update=lambda s, v: ((s or 0) + v, [(s or 0) + v]),
                           name="totals").sink("totals")
    assert fs.run(g, {"n": [(3, 3), (1, 1), (2, 2)]}, reorder_latency=5).outputs == {"totals": [1, 2, 4]}


def test_a_branch_tests_each_payload_once_and_sends_its_retractions_the_same_way():
    tested = []

    def is_even(pair):
        tested.append(pair)
        return pair[1] % 2 == 0

    def count(seen, value):
        seen = (seen or 0) + 1
        return seen, [[value, seen]]

    g = fs.Graph("g")
    evens, odds = g.source("n").stateful(key=lambda v: 0, update=count, name="count").branch(is_even, name="even")
    evens.sink("even_counts")
    odds.sink("odd_counts")
    # 3 arrives after 5: [5, 2] is retracted for [5, 3], and [3, 2] takes its place.
    result = fs.run(g, {"n": [(1, 1), (5, 5), (3, 3)]}, reorder_latency=10)
    assert result.outputs == {"even_counts": [[3, 2]], "odd_counts": [[1, 1], [5, 3]]}
    assert len(tested) == result.metrics["arrived_at_barrier"]  # items and the tombstone, each tested once


def test_a_branch_whose_stream_reaches_no_sink_is_named():
    trues, _ = fs.Graph("g").source("a").branch(bool, name="split")
    trues.sink("kept")
    with pytest.raises(fs.GraphError, match="no path to a sink from: split/false"):
        trues.graph.validate()


def test_a_failing_branch_predicate_names_the_branch_and_the_event():
    g = fs.Graph("g")
    trues, falses = g.source("a").branch(lambda v: 1 / v, name="split")
    trues.sink("t")
    falses.sink("f")
    with pytest.raises(fs.UserFunctionError, match=r"branch function of branch operator 'split' raised "
                                                  r"ZeroDivisionError.*ts=2 of source 'a'"):
        fs.run(g, {"a": [(1, 1), (2, 0)]})
