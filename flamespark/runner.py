"""Running a pipeline from files to an output directory (what `flamespark run` does)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from flamespark.api import run
from flamespark.errors import InputError
from flamespark.jsonl import read_events, write_atomic, write_jsonl
from flamespark.loader import load_graph

RESERVED_OUTPUTS = ("late", "metrics")


def check_inputs(graph, pairs) -> dict:
    """Map source name to input path, checking names and that the files exist."""
    inputs = {}
    for name, path in pairs:
        if name not in graph.sources:
            raise InputError(f"--input {name}=...: the graph has no source {name!r} (its sources: {', '.join(graph.sources)})")
        if name in inputs:
            raise InputError(f"--input {name}=... given twice")
        if not Path(path).is_file():
            raise InputError(f"--input {name}={path}: no such file")
        inputs[name] = Path(path)
    missing = [s for s in graph.sources if s not in inputs]
    if missing:
        raise InputError(f"no --input for source(s) {', '.join(missing)}")
    clashing = [s for s in graph.sinks if s in RESERVED_OUTPUTS]
    if clashing:
        raise InputError(f"sink name(s) {', '.join(clashing)} clash with the run's own output files")
    return inputs


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def claim_checkpoint(checkpoint: Path, args, mode: str, paths: dict):
    """Refuse to resume a checkpoint made by a different run: its state would silently mix with this one.

    A run records what its outputs depend on in `run.json`; once its query
    has started (the engine keeps the query's checkpoint in `checkpoint/`), a
    later run must match it: same pipeline file and inputs, byte for byte,
    and the same mode, reorder latency and late policy.
    """
    pipeline_path, _, attr = args.pipeline.rpartition(":") if ":" in args.pipeline else (args.pipeline, "", "graph")
    claim = {
        "pipeline": [_digest(pipeline_path), attr],
        "inputs": {name: _digest(path) for name, path in sorted(paths.items())},
        "mode": mode,
        "reorder_latency": args.reorder_latency,
        "late": args.late,
    }
    record = checkpoint / "run.json"
    if record.is_file() and (checkpoint / "checkpoint").exists():
        previous = json.loads(record.read_text())
        changed = [what for what in claim if previous.get(what) != claim[what]]
        if changed:
            raise InputError(
                f"checkpoint {checkpoint} belongs to a run with a different {', '.join(changed)}: "
                f"rerun that command to resume it, or use another --checkpoint (or delete it) to start afresh"
            )
        return
    write_atomic(record, json.dumps(claim) + "\n")


def run_to_directory(args, mode: str):
    """Run the pipeline of `args` and write sinks, dead letters and metrics under `args.out`.

    `metrics.json` is removed first and written last, so its presence marks a
    complete output directory.
    """
    graph = load_graph(args.pipeline)
    paths = check_inputs(graph, args.input)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").unlink(missing_ok=True)
    if args.engine == "local":
        inputs = {name: read_events(path) for name, path in paths.items()}
        result = run(graph, inputs, engine="local", mode=mode, reorder_latency=args.reorder_latency, late=args.late)
    else:
        checkpoint = Path(args.checkpoint or out / "_checkpoint")
        claim_checkpoint(checkpoint, args, mode, paths)
        result = run(
            graph, paths, engine="spark", mode=mode, reorder_latency=args.reorder_latency, late=args.late,
            rate=args.rate, master=args.master, checkpoint=checkpoint, max_rows_per_batch=args.max_rows_per_batch,
        )
    for sink, values in result.outputs.items():
        write_jsonl(out / f"{sink}.jsonl", values)
    write_jsonl(out / "late.jsonl", result.late)
    write_atomic(out / "metrics.json", json.dumps(result.metrics, indent=2) + "\n")
    return result
