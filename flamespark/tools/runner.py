"""Running a pipeline from files to an output directory (what `flamespark run` does)."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from flamespark.api import run_with_options
from flamespark.core.errors import InputError, PayloadError
from flamespark.io.atomic import write_atomic
from flamespark.io.checkpoint import claim, committed_a_batch, file_digest
from flamespark.io.inputs import check_input_files, is_kafka
from flamespark.io.kafka_sink import kafka_sinks
from flamespark.io.jsonl import write_jsonl
from flamespark.io.sinks import SINK_FORMATS, check_sink_names, write_sink
from flamespark.result import Result
from flamespark.runtime.options import RunOptions
from flamespark.tools.loader import load_graph


def check_inputs(graph, inputs: Mapping[str, str | Path]) -> dict[str, Path | str]:
    """Map source name to input path (a file or a directory) or Kafka address, checking names and that the
    paths exist."""
    for name, path in inputs.items():
        if name not in graph.sources:
            raise InputError(f"input {name}={path}: the graph has no source {name!r} "
                             f"(its sources: {', '.join(graph.sources)})")
        if not is_kafka(path) and not Path(path).exists():
            raise InputError(f"input {name}={path}: no such file or directory")
    missing = [s for s in graph.sources if s not in inputs]
    if missing:
        raise InputError(f"no input for source(s) {', '.join(missing)}")
    check_sink_names(graph.sinks)
    return {name: path if is_kafka(path) else Path(path) for name, path in inputs.items()}


def check_output_directory(out: Path, inputs: dict[str, Path]):
    """InputError unless `out` is a directory or can be made one (no part of its path is a file, and the nearest
    that exists is writable), and is no input directory, which its outputs would join."""
    for name, path in inputs.items():
        if not is_kafka(path) and path.is_dir() and path.resolve() == out.resolve():
            raise InputError(f"input {name}={path}: the output directory is the input's: give another --out")
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                raise InputError(f"output directory {out}: {path} is not a directory")
            if not os.access(path, os.W_OK | os.X_OK):
                raise InputError(f"output directory {out}: {path} is not writable")
            return


def _clear_outputs(out: Path, sinks):
    """Make `out` if need be and remove what marks it complete (`metrics.json`), and the sinks' files in every
    format, their changelogs and corrections, which a run rewrites: none is left from an earlier run beside a complete one."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").unlink(missing_ok=True)
    for sink in sinks:
        changelog_path(out, sink).unlink(missing_ok=True)
        corrections_path(out, sink).unlink(missing_ok=True)
        for fmt in SINK_FORMATS:
            (out / f"{sink}.{fmt}").unlink(missing_ok=True)


def checkpoint_directory(out: str | Path, checkpoint: str | Path | None = None) -> Path:
    """Where a Spark run writing to `out` keeps its checkpoint: `checkpoint`, or `out/_checkpoint`."""
    return Path(checkpoint) if checkpoint else Path(out) / "_checkpoint"


def changelog_path(out: Path, sink: str) -> Path:
    return out / f"{sink}.changes.jsonl"


def corrections_path(out: Path, sink: str) -> Path:
    return out / f"{sink}.corrections.jsonl"


def spark_options_given(**options) -> dict:
    """The Spark engine's options a caller set (those not None): on the local engine `RunOptions` refuses them,
    by name, rather than have them ignored."""
    return {name: value for name, value in options.items() if value is not None}


def claim_pipeline(checkpoint: Path, pipeline: str):
    """Refuse to resume a checkpoint made with a different pipeline file (the engine checks the rest)."""
    pipeline_path, _, attr = pipeline.rpartition(":") if ":" in pipeline else (pipeline, "", "graph")
    claim(checkpoint, "pipeline.json", {"pipeline": [file_digest(pipeline_path), attr]},
          started=committed_a_batch(checkpoint / "checkpoint"))


def run_to_directory(pipeline: str, inputs: Mapping[str, str | Path], out: str | Path, *, engine: str = "spark",
                     mode: str = "optimistic", reorder_latency: int | tuple = 0, late: str = "drop",
                     rate: float | None = None, batch_size: int | None = None, master: str | None = None,
                     checkpoint: str | Path | None = None, max_rows_per_batch: int | None = None,
                     sink_format: str = "jsonl", follow: bool = False,
                     idle_timeout: float | None = None, changes: bool = False,
                     ingest_partitions: int | None = None, sinks: Mapping[str, str] | None = None) -> Result:
    """Run the Graph of `pipeline` (`PATH.py:ATTR`) over `inputs` (source name to a JSONL file or a directory)
    and write its sinks, dead letters and metrics under `out`.

    The inputs and `out` are checked first: bad input fails the run before
    it touches `out` or does any work. Once the run has finished (a `follow`
    run: before it starts) `metrics.json` is removed, and it is written
    last, so its presence marks a complete output directory; a run that
    fails leaves `out` as it was, but for a Spark run's checkpoint. A
    `follow` run (Spark) writes each micro-batch's releases as it completes,
    to `out/<sink>/` and `out/late/`, and ends when interrupted. A Spark run
    keeps its checkpoint in `checkpoint` (default `out/_checkpoint`); rerun
    with the same one to resume. With `changes`, each sink's changelog goes
    to `out/<sink>.changes.jsonl` (a `follow` run's to `out/<sink>.changes/`,
    batch by batch). With several reorder latencies, each sink's corrections
    go to `out/<sink>.corrections.jsonl`. A sink whose outputs Parquet cannot hold is written as
    JSONL, and the run then raises the PayloadError saying so. An input may
    be a Kafka topic, `kafka://HOST:PORT/TOPIC`, and `sinks` maps sinks to
    topics that take their outputs instead of files (see `flamespark.run`).
    The other options are `flamespark.run`'s.
    """
    graph = load_graph(pipeline)
    paths = check_inputs(graph, inputs)
    topics = kafka_sinks(sinks, graph.sinks)
    out = Path(out)
    given = spark_options_given(master=master, checkpoint=checkpoint, max_rows_per_batch=max_rows_per_batch,
                                ingest_partitions=ingest_partitions, follow=follow or None)
    if engine != "local":
        given.update(checkpoint=checkpoint_directory(out, checkpoint), output=out if follow else None,
                     output_format=sink_format)
    options = RunOptions.of(engine, mode, reorder_latency, late, batch_size, idle_timeout=idle_timeout, rate=rate,
                            changes=changes, **given)
    check_output_directory(out, paths)
    check_input_files(paths, follow)
    if engine != "local":
        claim_pipeline(given["checkpoint"], pipeline)
    if follow:
        from flamespark.engines.spark.query import check_inputs_allow  # what the engine would refuse, before
        check_inputs_allow(paths, rate, follow)  # `out` loses its mark of a complete output
        _clear_outputs(out, graph.sinks)
    result = run_with_options(graph, paths, options, topics)
    fallbacks = []
    if not follow:
        _clear_outputs(out, graph.sinks)
        for sink, values in result.outputs.items():
            if sink not in topics:
                fallbacks.append(write_sink(out / sink, values, sink_format))
        write_jsonl(out / "late.jsonl", result.late)
        for sink, records in result.changes.items():
            if sink not in topics:
                write_jsonl(changelog_path(out, sink), records)
        for sink, records in result.corrections.items():
            write_jsonl(corrections_path(out, sink), records)
    write_atomic(out / "metrics.json", json.dumps(result.metrics, indent=2) + "\n")
    fallbacks = [problem for problem in fallbacks if problem]
    if fallbacks:
        raise PayloadError("; ".join(fallbacks))  # after everything is written: the run's outputs are all kept
    return result
