"""`flamespark run` and `bench` refuse `--batch-size` where it is not taken (on the Spark engine, or paced) naming
their own flags, not the Python parameters of `flamespark.run` that the same mistake there is named by."""
from pathlib import Path

import pytest

from flamespark.cli import main

REPO = Path(__file__).resolve().parents[2]
PIPELINE = f"{REPO / 'examples' / 'running_sum.py'}:graph"


@pytest.mark.parametrize("command", ["run", "bench"])
@pytest.mark.parametrize("flags, message", [
    (["--engine", "spark", "--batch-size", "5"],
     "--batch-size: only with --engine local (on Spark a batch is a micro-batch, which --max-rows-per-batch makes "
     "smaller)"),
    (["--engine", "local", "--rate", "10", "--batch-size", "5"],
     "--batch-size: only without --rate (a paced run applies in one batch whatever has arrived while it worked)"),
])
def test_batch_size_where_it_is_not_taken_is_refused_by_its_flag(tmp_path, capsys, command, flags, message):
    events = tmp_path / "e.jsonl"
    events.write_text('{"ts": 1, "sensor": "a", "value": 1}\n')
    out = tmp_path / "out"
    assert main([command, PIPELINE, "--input", f"readings={events}", "--out", str(out), *flags]) == 1
    error = capsys.readouterr().err
    assert f"flamespark: error: {message}\n" in error and "batch_size" not in error
    assert not out.exists()  # refused before anything is written or started
