"""A naive in-order interpreter of the DSL: the oracle the engines are checked against.

It sorts all events by event time (ties broken as the ordering model says)
and walks each one through the graph, with plain lists and dicts as state.
"""
from collections import defaultdict

from flamespark.core.codec import pack, unpack
from flamespark.core.items import event_tiebreak


def sorted_events(inputs):
    """All events as (source, ts, payload) in event-time order."""
    events = [(source, ts, payload) for source, pairs in inputs.items() for ts, payload in pairs]
    return sorted(events, key=lambda e: (e[1], e[0], event_tiebreak(pack(e[2]))))


def reference_run(graph, inputs):
    children = defaultdict(list)
    for node in graph.nodes.values():
        for parent in node.inputs:
            children[parent].append(node)
    outputs = {name: [] for name in graph.sinks}
    buckets = defaultdict(list)
    states = {}

    def push(node, payload):
        kind = node.kind
        if kind == "sink":
            outputs[node.name].append(unpack(pack(payload)))
            return
        if kind == "map":
            results = [node.fn(payload)]
        elif kind == "flat_map":
            results = list(node.fn(payload))
        elif kind == "filter":
            results = [payload] if node.fn(payload) else []
        elif kind in ("union", "branch"):
            results = [payload]
        elif kind == "port":
            predicate = graph.nodes[node.inputs[0]].fn  # its branch's
            results = [payload] if bool(predicate(payload)) is node.side else []
        elif kind == "group_by":
            bucket = buckets[node.name, pack(node.key(payload))]
            bucket.append(payload)
            results = [tuple(bucket[-node.window:])]
        elif kind == "stateful":
            slot = (node.name, pack(node.key(payload)))
            state, results = node.fn(states.get(slot), payload)
            states[slot] = unpack(pack(state))
            results = list(results or [])
        for result in results:
            for child in children[node.name]:
                push(child, result)

    for source, _, payload in sorted_events(inputs):
        for child in children[source]:
            push(child, payload)
    return outputs
