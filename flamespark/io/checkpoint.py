"""Claims on a checkpoint directory, so that a resume never mixes the state of two different runs."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from flamespark.core.errors import InputError
from flamespark.io.atomic import write_atomic


def file_digest(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def committed_a_batch(location: Path) -> bool:
    """Whether the Spark streaming query checkpointed at `location` committed a micro-batch (its `commits/` log
    has an entry): until then it left no state or output that a rerun could resume."""
    commits = Path(location) / "commits"
    return commits.is_dir() and any(not entry.name.startswith(".") for entry in commits.iterdir())


def claim(checkpoint: Path, record: str, what: dict, started: bool):
    """Record `what` a run's outputs depend on in `checkpoint/record`, or refuse if it differs.

    Only a run that has `started` (committed a micro-batch) is binding; a
    claim on a checkpoint nothing has started from is simply rewritten.
    """
    path = Path(checkpoint) / record
    what = json.loads(json.dumps(what))  # as it reads back: a tuple (several reorder latencies) is a list
    if started and path.is_file():
        previous = json.loads(path.read_text())
        changed = [_change(key, previous.get(key), what[key]) for key in what if previous.get(key) != what[key]]
        if changed:
            raise InputError(
                f"checkpoint {checkpoint} belongs to a run with a different {', '.join(changed)}: "
                f"rerun that run to resume it, or use another checkpoint directory (or delete it) to start afresh"
            )
        return
    write_atomic(path, json.dumps(what, sort_keys=True) + "\n")


def _change(key: str, before, now) -> str:
    """A claimed value that differs, with both values when they are short enough to show."""
    if all(isinstance(value, (int, float, str, type(None))) and len(repr(value)) <= 40 for value in (before, now)):
        return f"{key} ({before!r} then, {now!r} now)"
    return key
