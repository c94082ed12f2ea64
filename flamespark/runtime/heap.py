"""Garbage collection while a run holds many objects."""
import gc
from contextlib import contextmanager


@contextmanager
def collections_paused():
    """Run the block with CPython's automatic collections off, then collect once.

    A run keeps many small objects for a while (items in flight, each key's
    recent steps), and every automatic collection scans the young ones that
    are still alive: on the inverted index that was about a quarter of the
    run's time. The engine makes no reference cycles per item, so reference
    counting frees what it drops as it goes; a cycle that a user function
    makes waits for the collection at the end of the block.

    >>> with collections_paused():
    ...     gc.isenabled()
    False
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()
