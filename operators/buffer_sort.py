"""Buffer-and-sort: the baseline's reorder buffer in front of an order-sensitive operator."""
from barrier.impatience import ImpatienceSorter
from operators.base import Operator


class BufferSort(Operator):
    """Holds items until a punctuation covers them, then releases them in meta order."""

    kind = "buffer"
    boundary = True

    def __init__(self, name):
        super().__init__(name)
        self._sorter = ImpatienceSorter()

    def __len__(self):
        return len(self._sorter)

    def process(self, item):
        self._sorter.push(item.meta.ts, item)
        return []

    def punctuate(self, time):
        released = self._sorter.flush(time)
        released.sort(key=_identity)
        return released


def _identity(item):
    return item.identity
