"""Writing released payloads as JSONL or Parquet files, atomically."""
from __future__ import annotations

from pathlib import Path

from flamespark.core.errors import PayloadError
from flamespark.io.atomic import replacing
from flamespark.io.jsonl import write_jsonl

SINK_FORMATS = ("jsonl", "parquet")


def write_values(path, values: list, fmt: str):
    """Write `values` to `path` (whose suffix names no format: `fmt`'s is added); returns the file's path.

    Parquet keeps dict payloads as columns; any other payloads go in one column, `value`.
    """
    path = Path(f"{path}.{fmt}")
    if fmt == "jsonl":
        write_jsonl(path, values)
    elif fmt == "parquet":
        _write_parquet(path, values)
    else:
        raise ValueError(f"sink format must be one of {', '.join(SINK_FORMATS)}, got {fmt!r}")
    return path


def _write_parquet(path: Path, values: list):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if values and all(isinstance(value, dict) for value in values):
            table = pa.Table.from_pylist(values)
        else:
            table = pa.table({"value": pa.array(values)}) if values else pa.table({})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise PayloadError(f"cannot write {path.name} as Parquet (payloads need one type per column): {exc}") from None
    with replacing(path) as temporary:
        pq.write_table(table, temporary)
