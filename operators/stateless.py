"""Stateless per-item operators: map, flat_map, filter, union.

A tombstone goes through the same function as the item it cancels, so it
yields tombstones for exactly the derivatives that item produced.
"""
from flamespark.core.items import Item, derive
from operators.base import Operator


class MapOperator(Operator):
    """One output per item; the output keeps the item's meta."""

    kind = "map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def process(self, item):
        payload = self.call("map", self.fn, item, item.payload)
        return [derive(item, item.meta, payload, self.name)]


class FlatMapOperator(Operator):
    """Any number of outputs per item, ordered by emission."""

    kind = "flat_map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def process(self, item):
        outputs = self.call("flat_map", lambda p: list(self.fn(p)), item, item.payload)
        return [derive(item, item.meta.child(i), out, self.name) for i, out in enumerate(outputs)]


class FilterOperator(Operator):
    """Keeps the items for which the predicate is true."""

    kind = "filter"

    def __init__(self, name, predicate):
        super().__init__(name)
        self.predicate = predicate

    def process(self, item):
        return [item] if self.call("filter", self.predicate, item, item.payload) else []


class BranchOperator(Operator):
    """One input of a union: extends the path by the input's index so branches never collide."""

    kind = "union"

    def __init__(self, name, index: int):
        super().__init__(name)
        self.index = index

    def process(self, item):
        return [Item(item.meta.child(self.index), item.payload, item.data, item.tombstone, item.arrival)]
