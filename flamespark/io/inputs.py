"""Inputs given as paths: one JSONL file, or a directory of JSONL or Parquet event files."""
from __future__ import annotations

from pathlib import Path

from flamespark.core.errors import InputError
from flamespark.io.events import check_event_time
from flamespark.io.jsonl import read_events

FORMATS = {".jsonl": "jsonl", ".parquet": "parquet"}


def event_files(directory) -> list:
    """The event files of `directory`, in name order."""
    return sorted(p for p in Path(directory).iterdir() if p.is_file() and p.suffix in FORMATS)


def directory_format(source: str, directory) -> str:
    """"jsonl" or "parquet": the kind of event files in `directory`, which must not mix them."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"input {source!r}: {directory} is not a directory")
    kinds = {FORMATS[p.suffix] for p in event_files(directory)}
    if len(kinds) > 1:
        raise InputError(f"input {source!r}: {directory} mixes .jsonl and .parquet files; use one format per source")
    return kinds.pop() if kinds else "jsonl"


def count_events(directory, fmt: str) -> int:
    """How many events the files in `directory` hold now."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(path).metadata.num_rows for path in event_files(directory))
    count = 0
    for path in event_files(directory):
        with open(path, "rb") as handle:
            count += sum(1 for line in handle if line.strip())
    return count


def read_parquet_events(path) -> list:
    """All `(ts, payload)` events of a Parquet file, in row order; each row is a payload."""
    import pyarrow.parquet as pq

    events = []
    for row, payload in enumerate(pq.read_table(path).to_pylist()):
        events.append((check_event_time(payload.get("ts"), f"{path}, row {row}"), payload))
    return events


def read_input(source: str, path) -> list:
    """All events of a JSONL file, or of a directory's event files in name order."""
    path = Path(path)
    if not path.is_dir():
        return read_events(path)
    fmt = directory_format(source, path)
    reader = read_parquet_events if fmt == "parquet" else read_events
    return [event for file in event_files(path) for event in reader(file)]
