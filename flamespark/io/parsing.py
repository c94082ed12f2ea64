"""One event of any input, checked: its event time, the pair or the object it came as, the JSONL line it was.

The file reader (`flamespark.io.inputs`), the Kafka reader (`flamespark.io.kafka`) and the tools that rewrite
event files all take an event through these, so that an event is refused alike, with the same words, wherever it
came from. Each raises InputError naming `where` the event was: a file and line, a Parquet row, a topic's
partition and offset, or a source and position.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from flamespark.core.errors import InputError

# Event times travel as signed 64-bit integers (msgpack, Spark's LongType): any other int is refused on reading.
EARLIEST_TIME, LATEST_TIME = -(1 << 63), (1 << 63) - 1


def _time_problem(ts, field: str, shown: str) -> str | None:
    """What makes `ts` no event time, said of `field`, or None."""
    if isinstance(ts, bool) or not isinstance(ts, int):
        return f"{field} must be an integer (ms), got {shown}"
    if not EARLIEST_TIME <= ts <= LATEST_TIME:
        return f"{field} is out of range: event times are signed 64-bit integers (ms), got {shown}"
    return None


def check_event_time(ts, where: str) -> int:
    """The event time as an int, or InputError naming `where`."""
    problem = _time_problem(ts, "event time", f"{type(ts).__name__} {ts!r}")
    if problem:
        raise InputError(f"{where}: {problem}")
    return ts


def check_pair(event, where: str) -> tuple:
    """`(ts, payload)` from an event given as a pair, or InputError naming `where`."""
    try:
        ts, payload = event
    except (TypeError, ValueError):
        raise InputError(f"{where}: expected a (ts, payload) pair, got {event!r}") from None
    return check_event_time(ts, where), payload


def check_record(record, where: str) -> tuple:
    """`(ts, record)` from an event given as an object (a JSON line, a Parquet row) with an integer field `ts`."""
    if not isinstance(record, Mapping):
        raise InputError(f"{where}: expected a JSON object with an integer 'ts', got {type(record).__name__}")
    if "ts" not in record:
        raise InputError(f"{where}: missing event time field 'ts'")
    ts = record["ts"]
    problem = _time_problem(ts, "'ts'", _shown(ts))
    if problem:
        raise InputError(f"{where}: {problem}")
    return ts, record


def _shown(value) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def parse_event_line(text: str, where: str) -> tuple:
    """`(ts, payload)` from one JSONL line; the payload is the whole object."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    return check_record(record, where)
