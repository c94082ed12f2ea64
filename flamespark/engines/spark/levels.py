"""Several reorder latencies on Spark: one copy of the graph per level, in one query.

Level k computes over the events on time at its latency Dk, as a run with
that latency alone would, and releases at its own punctuation. The query
runs the copies side by side in its stages: ingest sends an event to the
copies of the levels it is on time at (its first and every later one), and
the driver compares each level's releases with the level before it
(`spark.batch_corrections`).

Every level's punctuation follows from one: a source's punctuation at
latency Dk is its newest event's time minus Dk (minus 1), so level k's is
level n's plus `Dn - Dk`, wherever a punctuation is finite. The stages
therefore carry the last level's punctuation alone, as a single-latency run
does, and each level's operators and part of the barrier take it shifted
(`Levels.times`).
"""
from __future__ import annotations

import dataclasses
import math

from flamespark.graph import Graph, graph_node_id


class Levels:
    """The levels of a run with reorder latencies `latencies` (one or more, increasing) of a graph with `sinks`.

    >>> levels = Levels((1_000, 60_000), ["out"])
    >>> levels.times(5_000), levels.times(math.inf)
    ((64000, 5000), (inf, inf))
    >>> levels.copy("out", 2), levels.sink_of("out@2"), levels.level_of("count@2/buffer")
    ('out@2', 'out', 2)
    >>> levels.released_at(3_000, 1)
    -56000
    """

    def __init__(self, latencies: tuple, sinks):
        self.latencies = tuple(latencies)
        self.count = len(self.latencies)
        self.sinks = list(sinks)
        self._shifts = tuple(self.latencies[-1] - latency for latency in self.latencies)
        # Each copy's sink name: its user's sink and its level.
        self._sink_names = {self.copy(sink, level): sink for sink in self.sinks for level in self.levels}
        self.sink_levels = {self.copy(sink, level): level for sink in self.sinks for level in self.levels}

    @property
    def levels(self) -> range:
        return range(1, self.count + 1)

    def times(self, time) -> tuple:
        """Each level's punctuation, given the last level's `time`."""
        if math.isinf(time):
            return (time,) * self.count
        return tuple(time + shift for shift in self._shifts)

    def copy(self, name: str, level: int) -> str:
        """The name of operator, source or sink `name` in the copy of `level` (itself, with one level)."""
        return name if self.count == 1 else f"{name}@{level}"

    def released_at(self, time, level: int):
        """The last level's punctuation at which `level`'s punctuation reaches `time`."""
        return time - self._shifts[level - 1]

    def level_of(self, name: str) -> int:
        """The level of a copy's operator or sink `name` (1 for a name of a run with one level). A plan's
        operator may add `/part` to its node's name (a buffer, a join's side), and a part has no `@`."""
        if self.count == 1:
            return 1
        return int(name.rsplit("@", 1)[1].split("/", 1)[0])

    def sink_of(self, name: str) -> str:
        """The user's sink of a copy's sink `name`."""
        return self._sink_names.get(name, name)

    def copied(self, graph: Graph) -> Graph:
        """`graph` with one copy of every node per level (the graph itself for one level)."""
        if self.count == 1:
            return graph
        copies = Graph(graph.name)
        for level in self.levels:
            for node in graph.nodes.values():
                renamed = dataclasses.replace(node, name=self.copy(node.name, level),
                                              inputs=[self.copy(parent, level) for parent in node.inputs])
                copies.nodes[graph_node_id(renamed.kind, renamed.name)] = renamed
        return copies
