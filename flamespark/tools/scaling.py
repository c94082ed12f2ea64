"""How a Spark run scales with cores (`flamespark bench --scaling`).

The same unpaced `flamespark run` on each Spark master (say `local[1]` and
`local[2]`), each in a process of its own, since a JVM keeps the master it
started with. Every run has the same shards and ingest partitions (by
default this machine's core count), so only the cores Spark may use differ.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import flamespark
from flamespark.core.errors import FlameSparkError


def _directory_name(master: str) -> str:
    return re.sub(r"[^\w.-]+", "_", master).strip("_")


def run_command(pipeline: str, inputs: Mapping[str, str | Path], out: Path, master: str, mode: str,
                reorder_latency: int, late: str, max_rows_per_batch: int | None,
                ingest_partitions: int | None) -> list:
    """The `flamespark run` command line of one scaling run."""
    command = [sys.executable, "-m", "flamespark", "run", pipeline, "--out", str(out), "--engine", "spark",
               "--master", master, "--mode", mode, "--reorder-latency", str(reorder_latency), "--late", late]
    for name, path in inputs.items():
        command += ["--input", f"{name}={path}"]
    if max_rows_per_batch:
        command += ["--max-rows-per-batch", str(max_rows_per_batch)]
    if ingest_partitions:
        command += ["--ingest-partitions", str(ingest_partitions)]
    return command


def scaling_runs(pipeline: str, inputs: Mapping[str, str | Path], out: str | Path, masters: Sequence[str], *,
                 mode: str = "optimistic", reorder_latency: int = 0, late: str = "drop",
                 max_rows_per_batch: int | None = None, ingest_partitions: int | None = None) -> dict:
    """Run `pipeline` (`PATH.py:ATTR`) unpaced on each of `masters`; events/s of each and `speedup`, the last
    master's events/s over the first's. Each run's outputs go to `out/<master>/`."""
    out = Path(out)
    # The runs import the flamespark this process imported (and the operators beside it), installed or not.
    packages = Path(flamespark.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(packages), os.environ.get("PYTHONPATH")])))
    runs = []
    for master in masters:
        directory = out / _directory_name(master)
        shutil.rmtree(directory, ignore_errors=True)
        command = run_command(pipeline, inputs, directory, master, mode, reorder_latency, late, max_rows_per_batch,
                              ingest_partitions)
        done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise FlameSparkError(f"the scaling run on {master} failed: {last}")
        metrics = json.loads((directory / "metrics.json").read_text())
        runs.append({"master": master, "events": metrics["events"], "wall_s": metrics["wall_s"],
                     "events_per_s": metrics["events_per_s"], "batches": metrics["engine"]["batches"]})
    first, last = runs[0]["events_per_s"], runs[-1]["events_per_s"]
    return {"mode": mode, "runs": runs, "speedup": last / first if first else None}


def scaling_markdown(scaling: dict) -> list:
    """The report's section: events/s per master and the speedup."""
    lines = [
        "## Scaling with cores",
        "",
        f"The same unpaced run ({scaling['mode']} mode) on each Spark master, each in a process of its own.",
        "",
        "| master | events | wall time (s) | events/s | micro-batches |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in scaling["runs"]:
        lines.append(f"| `{run['master']}` | {run['events']:,} | {run['wall_s']:.2f} | {run['events_per_s']:.2f} "
                     f"| {run['batches']} |")
    speedup = scaling["speedup"]
    masters = [run["master"] for run in scaling["runs"]]
    lines += ["", f"Speedup `{masters[-1]}` over `{masters[0]}`: "
                  f"**{'-' if speedup is None else f'{speedup:.2f}x'}** (events/s).", ""]
    return lines
