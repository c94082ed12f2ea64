"""Writing released payloads as JSONL or Parquet files, atomically, under sink names checked to stay inside the output
directory."""
from __future__ import annotations

from pathlib import Path

from flamespark.core.errors import InputError, PayloadError
from flamespark.io.atomic import replacing
from flamespark.io.jsonl import write_jsonl

SINK_FORMATS = ("jsonl", "parquet")
# What a run writes into its output directory beside the sinks' files.
RESERVED_OUTPUTS = ("late", "metrics", "_checkpoint")


def write_values(path, values: list, fmt: str):
    """Write `values` to `path` (whose suffix names no format: `fmt`'s is added); returns the file's path.

    Parquet keeps dict payloads as columns, one per key any of them has (null
    where a payload lacks it); any other payloads go in one column, `value`.
    Values Parquet cannot hold in one column raise a PayloadError naming it.
    """
    path = Path(f"{path}.{fmt}")
    if fmt == "jsonl":
        write_jsonl(path, values)
    elif fmt == "parquet":
        _write_parquet(path, values)
    else:
        raise ValueError(f"sink format must be one of {', '.join(SINK_FORMATS)}, got {fmt!r}")
    return path


def write_sink(path, values: list, fmt: str) -> str | None:
    """`write_values`, falling back to JSONL where Parquet cannot hold the values, so that no output is lost;
    returns what made it fall back (None if nothing did). A stale file in `fmt` at `path` is removed then."""
    try:
        write_values(path, values, fmt)
        return None
    except PayloadError as exc:
        written = write_values(path, values, "jsonl")
        Path(f"{path}.{fmt}").unlink(missing_ok=True)
        return f"{exc}; wrote {written.name} instead"


def _write_parquet(path: Path, values: list):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if values and all(isinstance(value, dict) for value in values):
        names = list(dict.fromkeys(name for value in values for name in value))  # in order of first appearance
        columns = {name: [value.get(name) for value in values] for name in names}
    else:
        columns = {"value": values} if values else {}
    arrays = {}
    for name, column in columns.items():
        try:
            arrays[name] = pa.array(column)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise PayloadError(f"cannot write {path.name} as Parquet: column {name!r} {_mixed(column)} ({exc})") \
                from None
    with replacing(path) as temporary:
        pq.write_table(pa.table(arrays), temporary)


def _mixed(column: list) -> str:
    """Where `column` first holds a value of another type than its first value's (None aside)."""
    rows = [(row, type(value)) for row, value in enumerate(column) if value is not None]
    for row, kind in rows:
        if kind is not rows[0][1]:
            return f"holds {kind.__name__} in row {row} where row {rows[0][0]} holds {rows[0][1].__name__}"
    return "holds values Arrow cannot put in one column"


def check_sink_names(sinks: list):
    """InputError unless every sink name makes files of its own inside the output directory: `<sink>.jsonl`,
    `<sink>.changes.jsonl`, and with `--follow` the directories `<sink>/` and `<sink>.changes/`.

    >>> check_sink_names(["index", "../index"])
    Traceback (most recent call last):
    ...
    flamespark.core.errors.InputError: sink '../index': a sink's name is a file name in the output directory, so it cannot contain '/', '\\' or NUL, nor be '.' or '..'
    """
    for sink in sinks:
        if sink in (".", "..") or any(character in sink for character in "/\\\0"):
            raise InputError(f"sink {sink!r}: a sink's name is a file name in the output directory, so it cannot "
                             f"contain '/', '\\' or NUL, nor be '.' or '..'")
        if sink in RESERVED_OUTPUTS:
            raise InputError(f"sink {sink!r}: the name clashes with the run's own output "
                             f"(reserved: {', '.join(RESERVED_OUTPUTS)})")
        if sink.endswith(".changes") and sink.removesuffix(".changes") in sinks:
            raise InputError(f"sink {sink!r}: the name clashes with the changelog of sink "
                             f"{sink.removesuffix('.changes')!r}")
