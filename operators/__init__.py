"""Engine-agnostic operators: batches of items and tombstones in, batches out (see `flamespark.core.batch`).

A stateless operator is a function of a batch (`apply(batch)`). A boundary
operator (keyed, a window, or the baseline's buffer) is handed its state on
every call: a batch (`take(batch, state)`) and each punctuation
(`punctuate(T, state)`), each returning the batch of what it makes; the
engine keeps the state (`new_state()`, or its own implementation over a
state store). Engines only move batches between operators; none
re-implements their logic.
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
