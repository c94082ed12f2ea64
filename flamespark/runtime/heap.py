"""Garbage collection while a run holds many objects."""
import gc
from contextlib import contextmanager


@contextmanager
def full_collections_deferred():
    """Run the block without CPython's full (oldest-generation) collections.

    A run holds many small objects for long (items in flight, each key's
    state), and a full collection scans every one of them: with the default
    thresholds, the inverted index spent most of its time there. Reference
    counting frees what the run drops, and the young collections still find
    cycles among new objects; anything older waits for the first full
    collection after the block.
    """
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, 2**31 - 1)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, full)
