"""Reading and checking event inputs: the one way every engine and tool takes events in.

A source's input is a JSONL file (one JSON object with an integer `ts` per
line), a directory of `.jsonl` or of `.parquet` event files (read in name
order), or an iterable of `(ts, payload)` pairs in arrival order. A file's
events are whole objects (or rows) as payloads. Whatever is wrong raises
InputError naming the file and line (or row), or the source and the event's
position in its iterable.
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path

from flamespark.core.errors import InputError
from flamespark.io.parsing import check_pair, check_record, parse_event_line

FORMATS = {".jsonl": "jsonl", ".parquet": "parquet"}


def check_input_names(sources: list, inputs) -> None:
    """Every source has an input and every input a source, or InputError."""
    unknown = sorted(set(inputs) - set(sources))
    if unknown:
        raise InputError(f"no source named {', '.join(map(repr, unknown))}; the graph's sources are {sources}")
    missing = sorted(set(sources) - set(inputs))
    if missing:
        raise InputError(f"no input given for source(s) {', '.join(map(repr, missing))}")


# ------------------------------------------------------------------ one file


def _blank(raw: bytes) -> bool:
    return not raw.strip()


def jsonl_lines(handle, name: str) -> Iterator[tuple[int, str]]:
    """`(line number, text)` of each non-blank line of an open binary JSONL file named `name`.

    Lines end at b"\\n" only (a trailing b"\\r" is dropped), and a UTF-8 byte
    order mark on the first line is dropped.
    """
    for number, raw in enumerate(handle, 1):
        if _blank(raw):
            continue
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start + 1})") from None
        yield number, text.rstrip("\r\n")


def jsonl_events(handle, name: str) -> Iterator[tuple[int, int, object]]:
    """`(line number, ts, payload)` of each event of an open binary JSONL file named `name`."""
    for number, text in jsonl_lines(handle, name):
        yield (number, *parse_event_line(text, f"{name}:{number}"))


def open_event_file(path):
    """`path` opened for binary reading, or InputError saying why it cannot be."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a JSONL file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None


def jsonl_file_events(path) -> Iterator[tuple[int, int, object]]:
    """`(line number, ts, payload)` of each event of the JSONL file `path`, read as needed."""
    with open_event_file(path) as handle:
        yield from jsonl_events(handle, str(path))


def check_parquet_schema(path, schema) -> None:
    """InputError unless the Arrow `schema` of Parquet file `path` has a column 'ts' of signed integers."""
    from pyarrow.types import is_signed_integer

    index = schema.get_field_index("ts")
    if index < 0 or not is_signed_integer(schema.field(index).type):
        found = "no column 'ts'" if index < 0 else f"column 'ts' of type {schema.field(index).type}"
        raise InputError(f"{path}: Parquet events need an integer column 'ts' (ms); found {found}")


def _parquet_file(path):
    """The Parquet file `path`, opened and its schema checked (`check_parquet_schema`), or InputError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    check_parquet_schema(path, file.schema_arrow)
    return file


def check_parquet_file(path) -> None:
    """Raise the InputError that reading the Parquet file `path` row by row would, from its schema and its 'ts'
    column alone (a row's other columns are a payload whatever they hold), without making a row."""
    import pyarrow.compute as pc

    ts = _parquet_file(path).read(columns=["ts"]).column("ts")
    if ts.null_count:
        row = pc.index(pc.is_null(ts), True).as_py()
        check_record({"ts": None}, f"{path}, row {row}")  # the error the row's read gives


def parquet_file_events(path) -> Iterator[tuple[int, int, object]]:
    """`(row, ts, payload)` of each row of the Parquet file `path` (rows counted from 0), read as needed."""
    row = 0
    for batch in _parquet_file(path).iter_batches():
        for record in batch.to_pylist():
            yield (row, *check_record(record, f"{path}, row {row}"))
            row += 1


# ------------------------------------------------------------ directories


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
            count += sum(1 for raw in handle if not _blank(raw))
    return count


# ------------------------------------------------------------- any input


def is_kafka(given) -> bool:
    """Whether an input names a Kafka topic, `kafka://HOST:PORT/TOPIC` (see flamespark.io.kafka)."""
    return isinstance(given, str) and given.startswith("kafka://")


def is_path(given) -> bool:
    """Whether an input names a file or directory (rather than a Kafka topic or an iterable of events)."""
    return isinstance(given, (str, os.PathLike)) and not is_kafka(given)


def source_events(source: str, given) -> Iterator[tuple[int, object]]:
    """Source `source`'s checked `(ts, payload)` events from any input, in arrival order, read as needed (a
    Kafka topic's partitions interleaved as the broker sends them)."""
    if is_path(given):
        return _path_events(source, Path(given))
    if is_kafka(given):
        from flamespark.io.kafka import topic_events

        return (event for _, event in topic_events(source, given) if event is not None)
    return _checked_pairs(source, _iterated(source, given))


def _iterated(source: str, given) -> Iterator:
    try:
        return iter(given)
    except TypeError:
        raise InputError(f"input {source!r}: expected a file, a directory or an iterable of (ts, payload) pairs, "
                         f"got {type(given).__name__}") from None


def source_chunks(source: str, given, size: int) -> Iterator[tuple[list, list]]:
    """Source `source`'s checked events from any input, in arrival order, as chunks of at most `size`: each the
    list of their times and the list of their payloads. An iterable's chunk is checked whole, which costs far
    less per event than checking one at a time; a bad event raises the error that names it, as `source_events`
    would."""
    if is_path(given) or is_kafka(given):
        events = source_events(source, given)
        while chunk := list(islice(events, size)):
            yield [ts for ts, _ in chunk], [payload for _, payload in chunk]
        return
    events = _iterated(source, given)
    position = 0
    while chunk := list(islice(events, size)):
        try:
            times, payloads = [ts for ts, _ in chunk], [payload for _, payload in chunk]
            plain = set(map(type, times)) <= {int} and -(1 << 63) <= min(times, default=0) and max(times, default=0) < 1 << 63
        except (TypeError, ValueError):
            plain = False
        if not plain:  # the event-by-event checks name the first bad one
            times, payloads = map(list, zip(*_checked_pairs(source, chunk, position)))
        position += len(chunk)
        yield times, payloads


def _checked_pairs(source: str, events, first: int = 0):
    """`(ts, payload)` of each event, checked, the first at position `first` in its source."""
    for position, event in enumerate(events, first):
        try:
            ts, payload = event
        except (TypeError, ValueError):
            ts = payload = None
        # What is not plainly right gets its error, naming the event, from check_pair (which takes -2**63, whose
        # bit_length is 64); bit_length is cheaper here than two comparisons with numbers of 64 bits.
        if type(ts) is not int or ts.bit_length() > 63:
            ts, payload = check_pair(event, f"input {source!r}, event #{position}")
        yield ts, payload


def check_input_files(inputs: Mapping, follow: bool = False) -> None:
    """Read every event of the inputs that are files or directories (of Parquet files, their 'ts' columns),
    raising the InputError of the first bad one. Runs call it before their engine starts, so that bad input
    costs no work and leaves nothing half done; an iterable is checked as it is read, as it may be a stream,
    and so is a Kafka topic, once its broker is found to answer and to have it (else BrokerError, InputError).
    A directory with no event files is refused unless the run `follow`s it (waits for files to come).

    >>> check_input_files({"numbers": [(1, "an iterable: not read here")], "words": "no-such-file.jsonl"})
    Traceback (most recent call last):
    ...
    flamespark.core.errors.InputError: no-such-file.jsonl: no such file
    """
    for source, given in inputs.items():
        if is_kafka(given):
            from flamespark.io.kafka import check_topic

            check_topic(source, given)
        if not is_path(given):
            continue
        path = Path(given)
        files = event_files(path) if path.is_dir() else None
        if files == [] and not follow:
            raise InputError(f"input {source!r}: {path} holds no event files ({_not_event_files(path)}); "
                             f"give .jsonl files or .parquet files")
        if files and directory_format(source, path) == "parquet":
            for file in files:
                check_parquet_file(file)
        else:
            deque(_path_events(source, path), maxlen=0)


def _not_event_files(directory: Path) -> str:
    """What `directory` holds instead of event files, for an error."""
    names = sorted(p.name for p in directory.iterdir())
    if not names:
        return "it is empty"
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"it holds {shown}"


def _path_events(source: str, path: Path):
    read, files = _reader_and_files(source, path)
    for file in files:
        for _, ts, payload in read(file):
            yield ts, payload


def _reader_and_files(source: str, path: Path):
    """How to read the file or directory `path` (a function giving `(line or row, ts, payload)` per event of one
    file) and its files, in arrival order."""
    if path.is_dir():
        read = parquet_file_events if directory_format(source, path) == "parquet" else jsonl_file_events
        return read, event_files(path)
    if path.suffix == ".parquet":
        raise InputError(f"input {source!r}: {path} is a Parquet file; give the directory that holds it (Parquet "
                         f"input is a directory of .parquet files, as Spark's file source reads it)")
    return jsonl_file_events, [path]


def late_event_placed(error, inputs: Mapping):
    """`error` (a LateEventError) with, where its event's source is a file or a directory, the file and the line
    (or Parquet row) it is on; else `error` itself. Read only once a run has failed, so no run pays for it."""
    event = error.event
    if event is None or not is_path(inputs.get(event[0])):
        return error
    source, position = event
    read, files = _reader_and_files(source, Path(inputs[source]))
    events = ((file, number) for file in files for number, _, _ in read(file))
    found = next(islice(events, position, None), None)
    if found is None:
        return error
    file, number = found
    where = f"row {number}" if file.suffix == ".parquet" else f"line {number}"
    return type(error)(f"{error} (the event is {where} of {file})")


def read_input(source: str, path) -> list:
    """All `(ts, payload)` events of a JSONL file, or of a directory's event files in name order."""
    return list(source_events(source, Path(path)))
