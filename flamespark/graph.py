"""The pipeline DSL: a Graph of Streams, built by chaining operators.

Every operator's docstring shows it at work on a few events; the examples
run as tests (tests/unit/test_docs.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flamespark.core.errors import GraphError
from flamespark.windows import Window, described, duration_ms, optional_callable
from operators.interval_join import JoinSpec
from operators.windows import Hopping, Sessions, Tumbling

if TYPE_CHECKING:
    import networkx as nx


@dataclass
class Node:
    """One logical operator: its name, kind, inputs and parameters."""

    name: str
    kind: str
    inputs: list = field(default_factory=list)
    fn: object = None
    key: object = None
    window: int | None = None
    shard: object = None
    side: bool | None = None  # a branch's port: the payloads for which the branch's predicate is this
    spec: object = None  # a window's kind and durations (operators.windows), or an interval join's JoinSpec


class Graph:
    """A named pipeline: sources, operators and sinks.

    Build it by chaining operators from a source to a sink, then run it over
    events `(ts, payload)` in arrival order. Events may arrive up to
    `reorder_latency` ms late; the outputs are those of an in-order run:

    >>> import flamespark as fs
    >>> def running_sum(total, n):
    ...     total = (total or 0) + n
    ...     return total, [total]
    >>> g = fs.Graph("sums")
    >>> g.source("numbers").stateful(key=lambda n: n % 2, update=running_sum).sink("out")
    >>> fs.run(g, {"numbers": [(1, 1), (3, 3), (2, 2), (4, 4)]}, reorder_latency=5).outputs
    {'out': [1, 2, 4, 6]}
    """

    def __init__(self, name: str):
        self.name = name
        self.nodes: dict[str, Node] = {}
        self._counter = 0

    def source(self, name: str) -> Stream:
        """A source of events; `run` takes its input by this name.

        >>> import flamespark as fs
        >>> g = fs.Graph("shouts")
        >>> g.source("words").map(str.upper).sink("loud")
        >>> g.sources, g.sinks
        (['words'], ['loud'])
        >>> fs.run(g, {"words": [(1, "hi"), (2, "there")]}).outputs
        {'loud': ['HI', 'THERE']}
        """
        return self._add(Node(name, "source"))

    @property
    def sources(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.kind == "source"]

    @property
    def sinks(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.kind == "sink"]

    def _add(self, node: Node) -> Stream:
        """Add a node. Sinks have a namespace of their own, so a sink may share its source's name."""
        if not isinstance(node.name, str) or not node.name:
            raise GraphError(f"operator names must be non-empty strings, got {node.name!r}")
        node_id = graph_node_id(node.kind, node.name)
        if node_id in self.nodes:
            what = "a sink" if node.kind == "sink" else "an operator"
            raise GraphError(f"graph {self.name!r} already has {what} named {node.name!r}")
        self.nodes[node_id] = node
        return Stream(self, node_id)

    def _auto_name(self, kind: str) -> str:
        while True:
            self._counter += 1
            name = f"{kind}_{self._counter}"
            if name not in self.nodes:
                return name

    def to_networkx(self) -> nx.DiGraph:
        """The logical graph; a stateful operator shows as grouping -> combine with a feedback edge.

        >>> graph = Graph("totals")
        >>> graph.source("readings").stateful(key=len, update=lambda total, r: (r, [r]), name="totals").sink("out")
        >>> logical = graph.to_networkx()
        >>> sorted(logical.nodes)
        ['out', 'readings', 'totals/combine', 'totals/group']
        >>> [(a, b) for a, b, feedback in logical.edges(data="feedback") if feedback]
        [('totals/combine', 'totals/group')]
        """
        # Imported here, for drawing only: networkx brings 285 modules and 18 MB to every process that imports it,
        # Spark's Python workers included, none of which runs a graph the better for it.
        import networkx as nx

        graph = nx.DiGraph(name=self.name)
        for node in self.nodes.values():
            if node.kind == "stateful":
                group, combine = f"{node.name}/group", f"{node.name}/combine"
                graph.add_node(group, kind="group_by", window=2, operator=node.name, sharded=node.shard is not None)
                graph.add_node(combine, kind="combine", operator=node.name)
                graph.add_edge(group, combine)
                graph.add_edge(combine, group, feedback=True)
            else:
                detail = node.spec.describe() if node.spec is not None else None
                if node.kind == "window":
                    detail = f"{detail}, {node.fn.kind}"
                graph.add_node(self._drawn(node), kind=node.kind, operator=node.name, window=node.window,
                               detail=detail)
        for node in self.nodes.values():
            for parent in node.inputs:
                graph.add_edge(self._drawn(self.nodes[parent], leaving=True), self._drawn(node))
        return graph

    def to_dot(self) -> str:
        """Graphviz DOT text of `to_networkx()`; feedback edges are dashed."""
        shapes = {"source": "invhouse", "sink": "house", "group_by": "box3d", "combine": "ellipse", "window": "box3d",
                  "interval_join": "box3d"}
        lines = [f"digraph {_quote(self.name)} {{", "  rankdir=LR;"]
        graph = self.to_networkx()
        for name, attrs in graph.nodes(data=True):
            label = f"{name}\\n{attrs['kind']}" + (f" w={attrs['window']}" if attrs.get("window") else "")
            label += " sharded" if attrs.get("sharded") else ""
            label += f"\\n{attrs['detail']}" if attrs.get("detail") else ""
            lines.append(f"  {_quote(name)} [label={_quote(label)}, shape={shapes.get(attrs['kind'], 'box')}];")
        for a, b, attrs in graph.edges(data=True):
            style = ' [style=dashed, label="feedback"]' if attrs.get("feedback") else ""
            lines.append(f"  {_quote(a)} -> {_quote(b)}{style};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def validate(self):
        """Raise GraphError if the graph cannot run.

        >>> graph = Graph("open")
        >>> _ = graph.source("lines").map(str.upper)
        >>> graph.validate()
        Traceback (most recent call last):
        ...
        flamespark.core.errors.GraphError: graph 'open' has no sink
        """
        if not self.sources:
            raise GraphError(f"graph {self.name!r} has no source")
        if not self.sinks:
            raise GraphError(f"graph {self.name!r} has no sink")
        dangling = ", ".join(sorted(self._reaching_no_sink()))
        if dangling:
            raise GraphError(f"no path to a sink from: {dangling} (end every branch with .sink(name))")

    def _reaching_no_sink(self) -> set:
        """The names of the nodes from which no path leads to a sink. A node's inputs are made before it, so the
        only cycles are the stateful operators' own feedback edges, which pass through their groupings as the
        paper's construction requires: the graph needs no check for others."""
        reaching = set()
        ahead = [node_id for node_id, node in self.nodes.items() if node.kind == "sink"]
        while ahead:
            node_id = ahead.pop()
            if node_id not in reaching:
                reaching.add(node_id)
                ahead.extend(self.nodes[node_id].inputs)
        return {node.name for node_id, node in self.nodes.items() if node_id not in reaching}

    def _drawn(self, node: Node, leaving=False) -> str:
        """The node's name in the drawn graph: a stateful operator enters at its grouping and leaves
        from its combine map; a sink named like a source is told apart."""
        if node.kind == "stateful":
            return f"{node.name}/combine" if leaving else f"{node.name}/group"
        if node.kind == "sink" and node.name in self.nodes:
            return f"{node.name} (sink)"
        return node.name


def graph_node_id(kind: str, name: str) -> str:
    """The id of a node in `Graph.nodes`: its name, or `sink:NAME` for a sink, whose names are apart."""
    return f"sink:{name}" if kind == "sink" else name


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\\\\n", "\\n") + '"'


class Stream:
    """The output of a source or operator; chain operators on it."""

    def __init__(self, graph: Graph, name: str):
        self.graph = graph
        self.name = name

    def _then(self, kind, name=None, **params) -> Stream:
        node = Node(name or self.graph._auto_name(kind), kind, [self.name], **params)
        return self.graph._add(node)

    def map(self, fn, name: str | None = None) -> Stream:
        """One output payload per payload: `fn(payload) -> payload`.

        >>> import flamespark as fs
        >>> g = fs.Graph("celsius")
        >>> g.source("fahrenheit").map(lambda f: round((f - 32) * 5 / 9, 1)).sink("celsius")
        >>> fs.run(g, {"fahrenheit": [(1, 212), (2, 32), (3, 98.6)]}).outputs["celsius"]
        [100.0, 0.0, 37.0]
        """
        return self._then("map", name, fn=_callable(fn, "map", name))

    def flat_map(self, fn, name: str | None = None) -> Stream:
        """Any number of outputs per payload: `fn(payload) -> iterable of payloads`.

        >>> import flamespark as fs
        >>> g = fs.Graph("words")
        >>> g.source("lines").flat_map(str.split).sink("words")
        >>> fs.run(g, {"lines": [(1, "to be"), (2, ""), (3, "or not")]}).outputs["words"]
        ['to', 'be', 'or', 'not']
        """
        return self._then("flat_map", name, fn=_callable(fn, "flat_map", name))

    def filter(self, predicate, name: str | None = None) -> Stream:
        """Keep the payloads for which `predicate(payload)` is true.

        >>> import flamespark as fs
        >>> g = fs.Graph("evens")
        >>> g.source("numbers").filter(lambda n: n % 2 == 0).sink("evens")
        >>> fs.run(g, {"numbers": [(t, t) for t in range(6)]}).outputs["evens"]
        [0, 2, 4]
        """
        return self._then("filter", name, fn=_callable(predicate, "filter", name))

    def branch(self, predicate, name: str | None = None) -> tuple[Stream, Stream]:
        """Two streams: the payloads for which `predicate(payload)` is true, and the others.

        Where two filters would test each payload twice, a branch tests it
        once. Its streams are named `NAME/true` and `NAME/false`.

        >>> import flamespark as fs
        >>> g = fs.Graph("parity")
        >>> evens, odds = g.source("numbers").branch(lambda n: n % 2 == 0, name="parity")
        >>> evens.sink("evens")
        >>> odds.map(lambda n: -n).sink("odds")
        >>> fs.run(g, {"numbers": [(t, t) for t in range(5)]}).outputs
        {'evens': [0, 2, 4], 'odds': [-1, -3]}
        """
        predicate = _callable(predicate, "branch", name)
        node = self._then("branch", name, fn=predicate).name
        trues = self.graph._add(Node(f"{node}/true", "port", [node], side=True))
        falses = self.graph._add(Node(f"{node}/false", "port", [node], side=False))
        return trues, falses

    def group_by(self, key, window: int, name: str | None = None) -> Stream:
        """Per `key(payload)`, emit the tuple of the last `window` payloads on each arrival.

        The windows are those of an in-order run: here 2 arrives after 3,
        within the reorder latency, and still lands between 1 and 3.

        >>> import flamespark as fs
        >>> g = fs.Graph("pairs")
        >>> g.source("numbers").group_by(key=lambda n: n % 2, window=2).sink("pairs")
        >>> events = [(1, 1), (3, 3), (2, 2), (5, 5), (4, 4)]
        >>> fs.run(g, {"numbers": events}, reorder_latency=5).outputs["pairs"]
        [(1,), (2,), (1, 3), (2, 4), (3, 5)]
        """
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            where = f" {name!r}" if name else ""
            raise GraphError(f"group_by{where} window must be an integer >= 1, got {window!r}")
        return self._then("group_by", name, key=_callable(key, "group_by key", name), window=window)

    def stateful(self, key, update, name: str | None = None, shard=None) -> Stream:
        """Per `key(payload)`, run `update(state, payload) -> (new_state, outputs)` in event-time order.

        `state` is None for a key's first payload; `outputs` is an iterable of
        payloads. `update` must be deterministic and must not mutate its payload;
        it may change its state in place and return it, even one it emits.
        A late-arriving payload is applied in its place: here 2 arrives last
        and the later running sums of its key are corrected.

        `shard(key)`, if given, says where Spark keeps the key's state: keys
        with equal shard values share a shard. A sharded operator whose input
        all comes from sharded ones of one Spark stage runs in that stage, one
        stateful operator less per micro-batch, provided that what they make
        for it has the shard value of what they made it from (the Spark engine
        checks, and stops with an error naming both if not). The local engine
        keeps every key in one process and has no use for it.

        >>> import flamespark as fs
        >>> def running_sum(total, reading):
        ...     total = (total or 0) + reading["value"]
        ...     return total, [{"sensor": reading["sensor"], "total": total}]
        >>> g = fs.Graph("totals")
        >>> g.source("readings").stateful(key=lambda r: r["sensor"], update=running_sum).sink("totals")
        >>> events = [(1, {"sensor": "a", "value": 1}), (3, {"sensor": "a", "value": 3}),
        ...           (2, {"sensor": "a", "value": 2})]
        >>> for total in fs.run(g, {"readings": events}, reorder_latency=5).outputs["totals"]:
        ...     print(total)
        {'sensor': 'a', 'total': 1}
        {'sensor': 'a', 'total': 3}
        {'sensor': 'a', 'total': 6}

        A state kept in a dict, changed in place and emitted as it is, gives
        the same corrected outputs:

        >>> def tally(state, reading):
        ...     state = state or {"sensor": reading["sensor"], "total": 0}
        ...     state["total"] += reading["value"]
        ...     return state, [state]
        >>> g = fs.Graph("tallies")
        >>> g.source("readings").stateful(key=lambda r: r["sensor"], update=tally).sink("totals")
        >>> fs.run(g, {"readings": events}, reorder_latency=5).outputs["totals"] == [
        ...     {"sensor": "a", "total": 1}, {"sensor": "a", "total": 3}, {"sensor": "a", "total": 6}]
        True
        """
        return self._then(
            "stateful", name, key=_callable(key, "stateful key", name), fn=_callable(update, "stateful update", name),
            shard=None if shard is None else _callable(shard, "stateful shard", name),
        )

    def tumbling_window(self, key, size, name: str | None = None) -> Window:
        """Per `key(payload)`, windows `[k * size, (k + 1) * size)` of event time; aggregate them with the
        `Window` it gives (`count()`, `sum(value)`, ...): one result per key and window holding an event,
        `{"key", "start", "end", "value"}` at event time `end - 1`, released once the punctuation passes the
        window. With `changes=True`, its value so far is in the changelog at the end of each batch that changes it.

        >>> import flamespark as fs
        >>> g = fs.Graph("per_minute")
        >>> g.source("clicks").tumbling_window(key=lambda c: c["ad"], size=60_000).count().sink("counts")
        >>> clicks = [(1_000, {"ad": "x"}), (61_000, {"ad": "x"}), (59_000, {"ad": "x"})]
        >>> [(r["start"], r["value"]) for r in fs.run(g, {"clicks": clicks}, reorder_latency=5_000).outputs["counts"]]
        [(0, 2), (60000, 1)]
        """
        where = described("tumbling_window", name)
        return Window(self, "tumbling_window", _key(key, where), Tumbling(duration_ms(size, "size", where)), name)

    def hopping_window(self, key, size, slide, name: str | None = None) -> Window:
        """Per `key(payload)`, windows `[k * slide, k * slide + size)`: an event is in every one holding its
        time (`size` need not be a multiple of `slide`). Aggregate them as `tumbling_window`'s.

        >>> import flamespark as fs
        >>> g = fs.Graph("sliding")
        >>> g.source("numbers").hopping_window(key=lambda n: 0, size=10, slide=5).sum().sink("sums")
        >>> [(r["start"], r["end"], r["value"]) for r in fs.run(g, {"numbers": [(2, 1), (7, 2), (12, 4)]}).outputs["sums"]]
        [(-5, 5, 1), (0, 10, 3), (5, 15, 6), (10, 20, 4)]
        """
        where = described("hopping_window", name)
        size, slide = duration_ms(size, "size", where), duration_ms(slide, "slide", where)
        return Window(self, "hopping_window", _key(key, where), Hopping(size, slide), name)

    def session_window(self, key, gap, name: str | None = None) -> Window:
        """Per `key(payload)`, sessions: events less than `gap` apart share one, `[first ts, last ts + gap)`.
        A late event that bridges two sessions merges them (both results retracted, one made). Aggregate them
        as `tumbling_window`'s.

        >>> import flamespark as fs
        >>> g = fs.Graph("sessions")
        >>> g.source("visits").session_window(key=lambda v: v, gap=10).count().sink("sessions")
        >>> visits = [(0, "u"), (25, "u"), (8, "u"), (16, "u")]
        >>> fs.run(g, {"visits": visits}, reorder_latency=20).outputs["sessions"]
        [{'key': 'u', 'start': 0, 'end': 35, 'value': 4}]
        """
        where = described("session_window", name)
        return Window(self, "session_window", _key(key, where), Sessions(duration_ms(gap, "gap", where)), name)

    def interval_join(self, right: Stream, key, right_key=None, within=None, how: str = "inner",
                      name: str | None = None) -> Stream:
        """Pair this stream's payloads `l` with `right`'s `r` where `key(l) == right_key(r)` (`right_key`
        defaults to `key`) and `lower <= ts(r) - ts(l) <= upper`, `within=(lower, upper)` in milliseconds.

        `how="inner"`: `{"left": l, "right": r}` at event time `max(ts(l), ts(r))`;
        `how="left"`: those, and `{"left": l, "right": None}` at `ts(l) + max(upper, 0)`
        for an `l` that found none; `how="left_anti"`: `l` itself at that time,
        when it found none. An `l` is forgotten once the punctuation passes
        `ts(l) + upper`, an `r` once it passes `ts(r) - lower`.

        >>> import flamespark as fs
        >>> g = fs.Graph("no_click")
        >>> shown, clicked = g.source("impressions"), g.source("clicks")
        >>> shown.interval_join(clicked, key=lambda e: e["ad"], within=(0, 60), how="left_anti").sink("ignored")
        >>> impressions = [(0, {"ad": "x"}), (10, {"ad": "y"})]
        >>> clicks = [(30, {"ad": "x"})]
        >>> fs.run(g, {"impressions": impressions, "clicks": clicks}).outputs["ignored"]
        [{'ad': 'y'}]
        """
        where = described("interval_join", name)
        if not isinstance(right, Stream) or right.graph is not self.graph:
            raise GraphError(f"{where} takes a stream of the same graph as its right input")
        key = _key(key, where)
        right_key = optional_callable(right_key, "right key", where) or key
        if not isinstance(within, (tuple, list)) or len(within) != 2:
            raise GraphError(f"{where} needs within=(lower, upper), the bounds of ts(right) - ts(left), "
                             f"got {within!r}")
        lower = duration_ms(within[0], "lower bound", where, positive=False)
        upper = duration_ms(within[1], "upper bound", where, positive=False)
        if lower > upper:
            raise GraphError(f"{where} within=(lower, upper) needs lower <= upper, got ({lower}, {upper})")
        if how not in JoinSpec.HOWS:
            raise GraphError(f"{where} how must be one of {', '.join(map(repr, JoinSpec.HOWS))}, got {how!r}")
        node = Node(name or self.graph._auto_name("interval_join"), "interval_join", [self.name, right.name],
                    key=key, spec=JoinSpec(right_key, lower, upper, how))
        return self.graph._add(node)

    def union(self, *others: Stream, name: str | None = None) -> Stream:
        """Merge this stream with others of the same graph, in event-time order.

        >>> import flamespark as fs
        >>> g = fs.Graph("merged")
        >>> left, right = g.source("left"), g.source("right")
        >>> left.union(right).sink("both")
        >>> fs.run(g, {"left": [(1, "a"), (3, "c")], "right": [(2, "b")]}).outputs["both"]
        ['a', 'b', 'c']
        """
        for other in others:
            if not isinstance(other, Stream) or other.graph is not self.graph:
                raise GraphError("union takes streams of the same graph")
        node = Node(name or self.graph._auto_name("union"), "union", [self.name] + [o.name for o in others])
        return self.graph._add(node)

    def sink(self, name: str) -> None:
        """End the stream in a sink; released outputs appear under this name, in event-time order.

        >>> import flamespark as fs
        >>> g = fs.Graph("copy")
        >>> g.source("events").sink("copy")
        >>> fs.run(g, {"events": [(2, "y"), (1, "x")]}, reorder_latency=5).outputs
        {'copy': ['x', 'y']}
        """
        self._then("sink", name)


def _key(key, where: str):
    if not callable(key):
        raise GraphError(f"key function of {where} must be callable, got {type(key).__name__}")
    return key


def _callable(fn, role, name):
    if not callable(fn):
        where = f" of {name!r}" if name else ""
        raise GraphError(f"{role} function{where} must be callable, got {type(fn).__name__}")
    return fn
