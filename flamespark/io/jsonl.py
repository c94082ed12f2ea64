"""Event files (JSONL, one object per line with an integer `ts`) and atomic output files."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from flamespark.core.errors import InputError


def parse_event_line(line: str, where: str):
    """`(ts, payload)` from one JSONL line; the payload is the whole object."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(event, dict):
        raise InputError(f"{where}: expected a JSON object with an integer 'ts', got {type(event).__name__}")
    if "ts" not in event:
        raise InputError(f"{where}: missing event time field 'ts'")
    ts = event["ts"]
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise InputError(f"{where}: 'ts' must be an integer (ms), got {json.dumps(ts)}")
    return ts, event


def read_events(path) -> list:
    """All `(ts, payload)` events of a JSONL file in file (arrival) order; blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input file {str(path)!r} does not exist" if not path.exists() else f"{str(path)!r} is not a file")
    events = []
    with open(path, encoding="utf-8") as handle:
        try:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    events.append(parse_event_line(line, f"{path}:{number}"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return events


def dumps(value) -> str:
    """One compact JSON line; tuples become arrays, bytes become hex strings."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(value):
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


@contextmanager
def replacing(path):
    """A temporary path next to `path`, renamed over it when the block succeeds, else removed.

    Readers of `path` see the old file or the whole new one, never a part.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        yield Path(temporary)
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp's 0600 would hide the file from other users
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomic(path, text: str):
    """Write `text` to `path` atomically (see `replacing`)."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_jsonl(path, values):
    write_atomic(path, "".join(dumps(value) + "\n" for value in values))
