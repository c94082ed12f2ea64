"""From the logical graph to the physical operators an engine runs."""
from __future__ import annotations

from dataclasses import dataclass, field

from flamespark.core.errors import GraphError
from flamespark.graph import Graph, graph_node_id
from operators import (
    BranchOperator,
    BufferSort,
    FilterOperator,
    FlatMapOperator,
    JoinOperator,
    MapOperator,
    PortOperator,
    StatefulLoop,
    UnionInputOperator,
    WindowedGrouping,
    WindowOperator,
)

# The kinds of node whose operator depends on the order of its input: the buffered mode sorts what reaches them.
ORDER_SENSITIVE = ("group_by", "stateful", "window", "interval_join")

@dataclass
class PhysicalPlan:
    """Operators by name, in topological order, and where each one's output goes.

    `downstream` maps a source or operator name to the operator or sink names
    that receive its output; the targets in `sinks` (each a sink's node id,
    apart from operator names) are served by the barrier, and map to the sink's name.
    """

    operators: dict = field(default_factory=dict)  # in topological order
    downstream: dict = field(default_factory=dict)
    sinks: dict = field(default_factory=dict)

    def add(self, operator):
        self.operators[operator.name] = operator
        self.downstream[operator.name] = []
        return operator.name

    def buffers(self) -> list:
        return [op for op in self.operators.values() if isinstance(op, BufferSort)]

    def route(self, origin: str, batch, reached):
        """Hand `batch`, made by the source or operator `origin`, through the stateless operators after it, in
        the order of their targets; `reached(target, batch)` takes what reaches a sink's target or a boundary
        operator."""
        for target in self.downstream[origin]:
            self._enter(target, batch, reached)

    def _enter(self, target: str, batch, reached):
        if not len(batch):
            return
        operator = self.operators.get(target)
        if operator is None or operator.boundary:
            reached(target, batch)
        elif operator.ports:
            for port, part in zip(self.downstream[target], operator.apply(batch)):
                self._enter(port, part, reached)
        else:
            self.route(target, operator.apply(batch), reached)

    def routed(self, origin: str, batch) -> list:
        """`(target, batch)` for every sink's target and boundary operator that `batch`, made by `origin`, or
        what the stateless operators make of it, reaches, in order."""
        reached = []
        self.route(origin, batch, lambda target, part: reached.append((target, part)))
        return reached


def build_plan(graph: Graph, mode: str = "optimistic", early: bool = False) -> PhysicalPlan:
    """Physical operators for `graph` in `mode` ("optimistic" or "buffered", checked by RunOptions); `buffered`
    puts a BufferSort before every grouping, window and join. With `early` (a run that keeps a changelog),
    windows also send their values so far."""
    graph.validate()
    plan = PhysicalPlan()
    exits = {}
    for node in graph.nodes.values():
        entries = _entries(plan, node, mode, early)
        for index, parent in enumerate(node.inputs):
            entry = entries[index] if len(entries) > 1 else entries[0]
            for exit_name in exits[parent]:
                plan.downstream[exit_name].append(entry)
        if node.kind == "source":
            plan.downstream[node.name] = []
        if node.kind == "sink":
            plan.sinks[entries[0]] = node.name
        else:
            exits[node.name] = entries if node.kind == "union" else [node.name]
    return plan


def _entries(plan, node, mode, early) -> list:
    """The operator names that receive the node's input(s)."""
    kind = node.kind
    if kind in ("source", "sink"):
        return [graph_node_id(kind, node.name)]
    if kind == "union":
        return [plan.add(UnionInputOperator(f"{node.name}/in{i}", i)) for i in range(len(node.inputs))]
    sides = []
    if kind == "interval_join":  # each input tags its items with their side, as a union's inputs do
        sides = [plan.add(UnionInputOperator(f"{node.name}/{side}", i)) for i, side in enumerate(("left", "right"))]
    buffer = None
    if mode == "buffered" and kind in ORDER_SENSITIVE:
        buffer = plan.add(BufferSort(f"{node.name}/buffer"))
    if kind == "map":
        op = MapOperator(node.name, node.fn)
    elif kind == "flat_map":
        op = FlatMapOperator(node.name, node.fn)
    elif kind == "filter":
        op = FilterOperator(node.name, node.fn)
    elif kind == "branch":
        op = BranchOperator(node.name, node.fn)
    elif kind == "port":
        op = PortOperator(node.name)
    elif kind == "group_by":
        op = WindowedGrouping(node.name, node.key, node.window)
    elif kind == "stateful":
        op = StatefulLoop(node.name, node.key, node.fn, node.shard)
    elif kind == "window":
        op = WindowOperator(node.name, node.key, node.spec, node.fn, early)
    elif kind == "interval_join":
        op = JoinOperator(node.name, node.key, node.spec)
    else:
        raise GraphError(f"unknown operator kind {kind!r} for {node.name!r}")
    plan.add(op)
    entry = op.name
    if buffer:
        plan.downstream[buffer].append(op.name)
        entry = buffer
    for side in sides:
        plan.downstream[side].append(entry)
    return sides or [entry]
