"""A stored key's log decodes only the steps a batch reaches, and gives what the log it was dumped from gives."""
import math

import msgpack

from operators import StatefulLoop
from operators.stored_log import StoredLog, dump_log
from tests.graphs import running_sum_update
from tests.unit.test_store import item, tombstone_of

OPERATOR = StatefulLoop("sum", key=lambda v: 0, update=running_sum_update)


def stored(log) -> StoredLog:
    """`log` through its dump, as a state store hands it back."""
    return StoredLog.load(msgpack.unpackb(msgpack.packb(dump_log(log))), OPERATOR.name)


def log_of(*items):
    log = OPERATOR.new_bucket()
    for added in items:
        log.add(added, OPERATOR.combine)
    return log


def outputs(made) -> list:
    return [(output.tombstone, output.meta, output.data) for output in made]


def test_an_item_after_every_step_decodes_only_the_last():
    kept = log_of(*(item(ts, 1) for ts in range(10)))
    log = stored(kept)
    made = log.add(item(10, 5), OPERATOR.combine)
    assert outputs(made) == outputs(kept.add(item(10, 5), OPERATOR.combine)) and len(made) == 1
    assert len(log.steps) == 1 and len(log.packed.times) == 10  # the tenth is also decoded on its own, as the base
    assert dump_log(log) == dump_log(kept)


def test_a_late_item_decodes_the_steps_from_its_event_time_on():
    kept = log_of(*(item(ts, 1) for ts in range(0, 20, 2)))
    log = stored(kept)
    late = item(13, 100)
    made = log.add(late, OPERATOR.combine)
    assert outputs(made) == outputs(kept.add(late, OPERATOR.combine))
    assert len(made) == 7  # its total, and for each of the three after it a retraction and the new total
    assert [step.meta.ts for step in log.steps] == [13, 14, 16, 18] and log.packed.times == [0, 2, 4, 6, 8, 10, 12]
    assert dump_log(log) == dump_log(kept)


def test_a_tombstone_of_a_packed_step_reruns_the_steps_after_it():
    first = item(1, 5)
    kept = log_of(first, item(2, 1), item(3, 1))
    log = stored(kept)
    made = log.add(tombstone_of(first), OPERATOR.combine) + log.flush(OPERATOR.combine)
    assert outputs(made) == outputs(kept.add(tombstone_of(first), OPERATOR.combine) + kept.flush(OPERATOR.combine))
    assert len(made) == 5  # three totals retracted, two made again


def test_a_punctuation_forgets_packed_steps_without_decoding_the_rest():
    kept = log_of(*(item(ts, 1) for ts in range(10)))
    log = stored(kept)
    log.collect(4)
    kept.collect(4)
    assert log.steps == [] and log.packed.times == [5, 6, 7, 8, 9]
    assert dump_log(log) == dump_log(kept)
    later = item(12, 2)
    assert outputs(stored(log).add(later, OPERATOR.combine)) == outputs(kept.add(later, OPERATOR.combine))


def test_a_log_whose_packed_steps_are_all_forgotten_is_empty_when_its_state_is_a_new_keys():
    def pairs(held, value):  # emits and forgets every second value, as a collector does
        return (None, [[held, value]]) if held is not None else (value, [])

    operator = StatefulLoop("pairs", key=lambda v: 0, update=pairs)
    log = operator.new_bucket()
    for ts in (1, 2):
        log.add(item(ts, ts), operator.combine)
    log = StoredLog.load(dump_log(log), operator.name)
    log.collect(math.inf)
    assert log.empty


def test_a_rerun_left_waiting_survives_the_store():
    first = item(1, 5)
    kept = log_of(first, item(2, 1), item(3, 1))
    kept.add(tombstone_of(first), OPERATOR.combine)
    log = stored(kept)
    assert log.dirty is not None
    assert outputs(log.flush(OPERATOR.combine)) == outputs(kept.flush(OPERATOR.combine))


def test_a_tombstone_waiting_for_its_item_survives_the_store_and_cancels_it():
    early = item(5, 3)
    kept = log_of(item(1, 1))
    kept.add(tombstone_of(early), OPERATOR.combine)
    log = stored(kept)
    assert log.latest == 5
    assert log.add(early, OPERATOR.combine) == [] and not log.pending


def test_the_latest_event_time_counts_the_packed_steps():
    log = stored(log_of(*(item(ts, 1) for ts in range(4))))
    assert log.steps == [] and log.latest == 3


def test_a_rerun_left_waiting_moves_along_when_earlier_steps_are_decoded():
    dropped = item(5, 1)
    kept = log_of(*(item(ts, 1) for ts in range(1, 5)), dropped, item(6, 1), item(7, 1))
    kept.add(tombstone_of(dropped), OPERATOR.combine)  # the re-run of 6 and 7 waits
    log = stored(kept)
    early = item(2, 0, tiebreak=1)  # adds nothing to the sums after it: only the waiting re-run changes them
    made = log.add(early, OPERATOR.combine) + log.flush(OPERATOR.combine)
    assert len(made) == 5  # its own total, then the totals of 6 and 7 retracted and made again
    assert outputs(made) == outputs(kept.add(early, OPERATOR.combine) + kept.flush(OPERATOR.combine))
    assert dump_log(log) == dump_log(kept)
