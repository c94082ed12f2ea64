"""Running a pipeline from files to an output directory (what `flamespark run` does)."""
from __future__ import annotations

import json
from pathlib import Path

from flamespark.api import run_with_options
from flamespark.io.checkpoint import claim, file_digest
from flamespark.core.errors import InputError
from flamespark.io.inputs import read_input
from flamespark.io.atomic import write_atomic
from flamespark.io.jsonl import write_jsonl
from flamespark.tools.loader import load_graph
from flamespark.io.sinks import write_values
from flamespark.runtime.options import RunOptions

RESERVED_OUTPUTS = ("late", "metrics")


def check_inputs(graph, pairs) -> dict:
    """Map source name to input path (a file or a directory), checking names and that the paths exist."""
    inputs = {}
    for name, path in pairs:
        if name not in graph.sources:
            raise InputError(f"--input {name}=...: the graph has no source {name!r} (its sources: {', '.join(graph.sources)})")
        if name in inputs:
            raise InputError(f"--input {name}=... given twice")
        if not Path(path).exists():
            raise InputError(f"--input {name}={path}: no such file or directory")
        inputs[name] = Path(path)
    missing = [s for s in graph.sources if s not in inputs]
    if missing:
        raise InputError(f"no --input for source(s) {', '.join(missing)}")
    clashing = [s for s in graph.sinks if s in RESERVED_OUTPUTS]
    if clashing:
        raise InputError(f"sink name(s) {', '.join(clashing)} clash with the run's own output files")
    return inputs


def claim_pipeline(checkpoint: Path, pipeline: str):
    """Refuse to resume a checkpoint made with a different pipeline file (the engine checks the rest)."""
    pipeline_path, _, attr = pipeline.rpartition(":") if ":" in pipeline else (pipeline, "", "graph")
    claim(checkpoint, "pipeline.json", {"pipeline": [file_digest(pipeline_path), attr]},
          started=(checkpoint / "checkpoint").exists())


def _engine_options(args, out: Path) -> dict:
    """The engine options `args` ask for; on the local engine only --follow and --idle-timeout, if set (refused)."""
    if args.engine == "local":
        return {name: value for name, value in (("follow", args.follow), ("idle_timeout", args.idle_timeout)) if value}
    return {
        "rate": args.rate, "master": args.master, "checkpoint": Path(args.checkpoint or out / "_checkpoint"),
        "max_rows_per_batch": args.max_rows_per_batch, "follow": args.follow, "idle_timeout": args.idle_timeout,
        "output": out if args.follow else None, "output_format": args.sink_format,
    }


def run_to_directory(args, mode: str):
    """Run the pipeline of `args` and write sinks, dead letters and metrics under `args.out`.

    `metrics.json` is removed first and written last, so its presence marks a
    complete output directory. A `--follow` run writes each micro-batch's
    releases as it completes, to `DIR/<sink>/` and `DIR/late/`.
    """
    graph = load_graph(args.pipeline)
    paths = check_inputs(graph, args.input)
    out = Path(args.out)
    options = RunOptions.of(args.engine, mode, args.reorder_latency, args.late, **_engine_options(args, out))
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").unlink(missing_ok=True)
    if options.engine == "local":
        inputs = {name: read_input(name, path) for name, path in paths.items()}
    else:
        claim_pipeline(options.engine_options["checkpoint"], args.pipeline)
        inputs = paths
    result = run_with_options(graph, inputs, options)
    if not args.follow:
        for sink, values in result.outputs.items():
            write_values(out / sink, values, args.sink_format)
        write_jsonl(out / "late.jsonl", result.late)
    write_atomic(out / "metrics.json", json.dumps(result.metrics, indent=2) + "\n")
    return result
