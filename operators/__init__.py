"""Engine-agnostic operators: items in, items and tombstones out.

Every operator has `process(item) -> list[Item]` and `punctuate(T) -> list[Item]`.
Engines only move items between operators; none re-implements their logic.
"""
from operators.buffer_sort import BufferSort
from operators.grouping import Bucket, WindowedGrouping
from operators.stateful import StatefulLoop
from operators.stateless import BranchOperator, FilterOperator, FlatMapOperator, MapOperator

__all__ = [
    "BranchOperator",
    "Bucket",
    "BufferSort",
    "FilterOperator",
    "FlatMapOperator",
    "MapOperator",
    "StatefulLoop",
    "WindowedGrouping",
]
