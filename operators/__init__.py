"""Engine-agnostic operators: items in, items and tombstones out.

A stateless operator runs inline (`inline(send)`). A boundary operator
(keyed, or the baseline's buffer) is handed its state on every call:
`process(item, state)` and `punctuate(T, state)`, or, as engines run it, the
items of a step at once (`take(items, state, send)`) and then `flush(state)`;
the engine keeps the state (`new_state()`, or its own implementation of
`operators.store.KeyedState`).
Engines only move items between operators; none re-implements their logic.
"""
from operators.buffer_sort import BufferSort
from operators.grouping import Bucket, WindowedGrouping
from operators.interval_join import JoinOperator
from operators.stateful import StatefulLoop
from operators.stateless import (
    BranchOperator,
    FilterOperator,
    FlatMapOperator,
    MapOperator,
    PortOperator,
    UnionInputOperator,
)
from operators.store import DictState, KeyedState
from operators.windows import WindowOperator

__all__ = [
    "BranchOperator",
    "Bucket",
    "BufferSort",
    "DictState",
    "FilterOperator",
    "FlatMapOperator",
    "JoinOperator",
    "KeyedState",
    "MapOperator",
    "PortOperator",
    "StatefulLoop",
    "UnionInputOperator",
    "WindowedGrouping",
    "WindowOperator",
]
