"""The Impatience sorter and the barrier that releases sink items through it in meta order."""
from barrier.barrier import Barrier
from barrier.impatience import ImpatienceSorter

__all__ = ["Barrier", "ImpatienceSorter"]
