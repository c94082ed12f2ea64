"""Writing JSONL files: one compact JSON value per line."""
from __future__ import annotations

import json

from flamespark.io.atomic import write_atomic


def dumps(value) -> str:
    """One compact JSON line; tuples become arrays, bytes become hex strings."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(value):
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def write_jsonl(path, values):
    """Write `values` to `path` as JSONL, atomically."""
    write_atomic(path, "".join(dumps(value) + "\n" for value in values))
