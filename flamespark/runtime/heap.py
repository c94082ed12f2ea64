"""Garbage collection while a run holds many objects."""
import gc
from contextlib import contextmanager

# Whether `freeze_what_lives` has run in this process.
_frozen_for_good = False
# While collections are paused, the youngest generation is collected once it holds more objects than this.
YOUNG_LIMIT = 5_000_000


@contextmanager
def collections_paused():
    """Run the block with CPython's automatic collections off, then hand what it made to the oldest generation.

    A run keeps many small objects for a while (items in flight, each key's
    recent steps), and automatic collections scan the ones still alive again
    and again as they age. The engine makes no reference cycles per item, so
    reference counting frees what it drops as it goes; a cycle that a user
    function makes waits for `collect_if_crowded`, or for the interpreter's
    next full collection. What survives the block (a run's outputs, its
    changelog) moves to the oldest generation unscanned: a collection of the
    youngest one at the end would scan every object the run made and keeps.

    >>> with collections_paused():
    ...     gc.isenabled()
    False
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not _frozen_for_good:  # else unfreezing would put back in every scan what `freeze_what_lives` took out
            gc.freeze()  # every tracked object moves to the permanent generation, and back to the oldest below
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def collect_if_crowded():
    """Collect the youngest generation if it holds more than `YOUNG_LIMIT` objects.

    Called now and then while collections are paused, it bounds what cycles
    made by user functions can pile up, at the cost of one scan of each
    object that is still alive then.
    """
    if gc.get_count()[0] > YOUNG_LIMIT:
        gc.collect(0)


def freeze_what_lives():
    """Once per process: collect, then move every object alive to the permanent generation, which no collection
    scans.

    For Spark's Python workers, which run task after task with a full
    collection after each: without this, each one scans PySpark's, pandas'
    and pyarrow's objects again (45 ms a task at the median in our workers
    here, 0.5 ms with them frozen). What the process makes afterwards is
    collected as ever; a frozen object is still freed when nothing refers to
    it, but a cycle among frozen objects never is. `collections_paused` then
    leaves what its block made in the young generations.
    """
    global _frozen_for_good
    if not _frozen_for_good:
        _frozen_for_good = True
        gc.collect()
        gc.freeze()
