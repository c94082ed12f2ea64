"""Sink files: Parquet keeps every key of dict payloads as a column, and a sink Parquet cannot hold loses nothing."""
import json

import pyarrow.parquet as pq

from flamespark.cli import main
from flamespark.io.sinks import write_values
from tests.engine.test_cli import write_lines


def test_parquet_has_a_column_for_every_key_any_payload_has(tmp_path):
    values = [{"other": [1, 2]}, {"ts": 1, "sensor": "a"}, {"ts": 2, "other": [3]}]
    written = write_values(tmp_path / "out", values, "parquet")
    assert written.name == "out.parquet"
    assert pq.read_table(written).to_pylist() == [
        {"other": [1, 2], "ts": None, "sensor": None}, {"other": None, "ts": 1, "sensor": "a"},
        {"other": [3], "ts": 2, "sensor": None}]


def test_parquet_puts_other_payloads_in_one_column(tmp_path):
    assert pq.read_table(write_values(tmp_path / "out", [3, 1], "parquet")).to_pylist() == [{"value": 3},
                                                                                            {"value": 1}]


def test_a_sink_parquet_cannot_hold_is_written_as_jsonl_with_the_rest_and_the_run_says_so(tmp_path, capsys):
    pipeline = tmp_path / "pipe.py"
    pipeline.write_text(
        "import flamespark as fs\n"
        "graph = fs.Graph('g')\n"
        "events = graph.source('events')\n"
        "events.map(lambda e: {'v': e['v']}, name='v').sink('mixed')\n"
        "events.map(lambda e: {'ts': e['ts']}, name='ts').sink('plain')\n"
    )
    events = write_lines(tmp_path / "e.jsonl", [json.dumps({"ts": 1, "v": 1}), json.dumps({"ts": 2, "v": "two"}),
                                                json.dumps({"ts": 3, "v": 3})])
    out = tmp_path / "out"
    out.mkdir()
    (out / "mixed.parquet").write_bytes(b"an earlier run's file")
    code = main(["run", f"{pipeline}:graph", "--input", f"events={events}", "--out", str(out), "--engine", "local",
                 "--sink-format", "parquet"])
    assert code == 1
    assert ("cannot write mixed.parquet as Parquet: column 'v' holds str in row 1 where row 0 holds int"
            in capsys.readouterr().err)
    assert [json.loads(line) for line in (out / "mixed.jsonl").read_text().splitlines()] == [
        {"v": 1}, {"v": "two"}, {"v": 3}]
    assert not (out / "mixed.parquet").exists()
    assert pq.read_table(out / "plain.parquet").to_pylist() == [{"ts": 1}, {"ts": 2}, {"ts": 3}]
    assert (out / "late.jsonl").exists() and json.loads((out / "metrics.json").read_text())["released"] == 6


def test_a_follow_batch_parquet_cannot_hold_is_written_as_jsonl_and_said_on_stderr(tmp_path, capsys):
    """The Spark collector's writer on a batch as its `foreachBatch` hands it over (no Spark needed to write it)."""
    from flamespark.core.codec import pack
    from flamespark.engines.spark.collector import BatchCollector

    collector = BatchCollector(tmp_path / "parts", ["mixed", "plain"], output=tmp_path / "out",
                               output_format="parquet")
    outputs = [["mixed", pack({"v": 1}), 0.0], ["mixed", pack({"v": "two"}), 0.0], ["plain", pack({"v": 3}), 0.0]]
    collector._write_output({"batch": 7, "outputs": outputs, "late": [], "changes": []})
    assert (tmp_path / "out" / "mixed" / "batch-00000007.jsonl").read_text() == '{"v":1}\n{"v":"two"}\n'
    assert pq.read_table(tmp_path / "out" / "plain" / "batch-00000007.parquet").to_pylist() == [{"v": 3}]
    assert ("flamespark: batch 7 of sink 'mixed': cannot write batch-00000007.parquet as Parquet: column 'v' holds "
            "str in row 1 where row 0 holds int" in capsys.readouterr().err)
