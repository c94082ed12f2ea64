"""The `flamespark` command on the local engine: outputs, help and errors; the tools as functions."""
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from flamespark.cli import COMMANDS, main
from flamespark.tools.runner import run_to_directory

from tests import processes

PIPELINE = str(Path(__file__).resolve().parents[2] / "examples" / "running_sum.py") + ":graph"


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def readings(*pairs):
    return [json.dumps({"ts": ts, "sensor": sensor, "value": value}) for ts, sensor, value in pairs]


def run_cli(tmp_path, lines, *extra):
    tmp_path.mkdir(exist_ok=True)
    events = write_lines(tmp_path / "events.jsonl", lines)
    out = tmp_path / "out"
    code = main(["run", PIPELINE, "--input", f"readings={events}", "--out", str(out), "--engine", "local", *extra])
    return code, out


def test_run_writes_sinks_late_and_metrics(tmp_path, capsys):
    code, out = run_cli(tmp_path, readings((10, "a", 1), (30, "a", 2), (20, "b", 5), (5, "a", 7)), "--reorder-latency", "15")
    assert code == 0
    assert "released 3 record(s) from 3 event(s) applied (1 late one(s) dropped" in capsys.readouterr().err
    totals = [json.loads(line) for line in (out / "totals.jsonl").read_text().splitlines()]
    assert totals == [{"sensor": "a", "ts": 10, "total": 1}, {"sensor": "b", "ts": 20, "total": 5},
                      {"sensor": "a", "ts": 30, "total": 3}]
    late = [json.loads(line) for line in (out / "late.jsonl").read_text().splitlines()]
    assert [(d["ts"], d["payload"]["value"]) for d in late] == [(5, 7)]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["released"] == 3 and metrics["late_dropped"] == 1
    assert set(metrics["latency_ms"]) >= {"p50", "p75", "p95", "p99", "events", "wall_s", "batches"}


def test_several_latencies_write_each_sinks_corrections(tmp_path, capsys):
    lines = readings((10, "a", 1), (30, "a", 2), (5, "a", 4), (100, "a", 8), (40, "a", 16))  # 5 is 25 behind 30
    code, out = run_cli(tmp_path, lines, "--reorder-latency", "15,50")
    assert code == 0
    assert "; 7 correction(s) at later latencies" in capsys.readouterr().err
    totals = [json.loads(line)["total"] for line in (out / "totals.jsonl").read_text().splitlines()]
    assert totals == [1, 3, 11]  # 40 is 60 behind 100: late at both latencies
    corrections = [json.loads(line) for line in (out / "totals.corrections.jsonl").read_text().splitlines()]
    assert [(c["op"], c["ts"], c["payload"]["total"], c["level"]) for c in corrections] == [
        ("+", 5, 4, 2), ("-", 10, 1, 2), ("+", 10, 5, 2), ("-", 30, 3, 2), ("+", 30, 7, 2), ("-", 100, 11, 2),
        ("+", 100, 15, 2)]
    metrics = json.loads((out / "metrics.json").read_text())
    assert [(level["reorder_latency"], level["events"]) for level in metrics["levels"]] == [(15, 3), (50, 1)]
    code, _ = run_cli(tmp_path, lines, "--reorder-latency", "15")
    assert code == 0 and not (out / "totals.corrections.jsonl").exists()  # a run with one latency leaves none
    with pytest.raises(SystemExit):
        run_cli(tmp_path, lines, "--reorder-latency", "50,15")
    assert "several latencies must increase, not 50,15" in capsys.readouterr().err


def test_late_fail_names_the_late_events_file_and_line(tmp_path, capsys):
    lines = readings((10, "a", 1), (30, "a", 2)) + [""] + readings((6, "a", 7))
    code, out = run_cli(tmp_path, lines, "--reorder-latency", "15", "--late", "fail")
    assert code == 1 and not (out / "metrics.json").exists()
    assert capsys.readouterr().err.rstrip().endswith(
        f"(position 2 in its arrival order) arrived after punctuation 14 (payload {{'ts': 6, 'sensor': 'a', "
        f"'value': 7}}); raise the reorder latency or use the late policy drop or adjust (the event is line 4 of "
        f"{tmp_path / 'events.jsonl'})")
    # In a directory, files are read in name order: position 3 is the second line of the second file.
    directory = tmp_path / "events"
    directory.mkdir()
    write_lines(directory / "1.jsonl", readings((10, "a", 1), (30, "a", 2)))
    write_lines(directory / "2.jsonl", readings((31, "b", 1), (6, "a", 7)))
    code = main(["run", PIPELINE, "--input", f"readings={directory}", "--out", str(tmp_path / "out2"),
                 "--engine", "local", "--reorder-latency", "15", "--late", "fail"])
    error = capsys.readouterr().err
    assert code == 1 and "(position 3 in its arrival order)" in error
    assert f"(the event is line 2 of {directory / '2.jsonl'})" in error


def test_both_modes_write_the_same_outputs(tmp_path):
    lines = readings(*[(t, "ab"[t % 2], t) for t in (5, 1, 9, 3, 7, 2, 8)])
    _, optimistic = run_cli(tmp_path / "o", lines, "--reorder-latency", "10")
    _, buffered = run_cli(tmp_path / "b", lines, "--reorder-latency", "10", "--mode", "buffered")
    assert (optimistic / "totals.jsonl").read_text() == (buffered / "totals.jsonl").read_text()


def test_changes_writes_each_sinks_changelog_and_a_run_without_removes_it(tmp_path, capsys):
    lines = readings((3, "a", 3), (6, "a", 6), (1, "a", 10))
    code, out = run_cli(tmp_path, lines, "--reorder-latency", "10", "--changes", "--batch-size", "1")
    assert code == 0 and "2 retracted" in capsys.readouterr().err
    changes = [json.loads(line) for line in (out / "totals.changes.jsonl").read_text().splitlines()]
    assert [(c["op"], c["payload"]["total"]) for c in changes] == [
        ("+", 3), ("+", 9), ("+", 10), ("+", 13), ("+", 19), ("-", 3), ("-", 9)]
    assert changes[5]["cause"] == changes[6]["cause"] == {"source": "readings", "ts": 1, "position": 2}
    assert json.loads((out / "metrics.json").read_text())["changes"]["retracted"] == 2
    run_cli(tmp_path, lines, "--reorder-latency", "10")
    assert not (out / "totals.changes.jsonl").exists()
    # The buffered mode's changelog adds each result as it is released: the summary says so.
    code, out = run_cli(tmp_path, lines, "--reorder-latency", "10", "--changes", "--mode", "buffered")
    assert code == 0 and "3 result(s) added as released (the buffered mode has none early)" in capsys.readouterr().err
    changes = [json.loads(line) for line in (out / "totals.changes.jsonl").read_text().splitlines()]
    assert [(c["op"], c["payload"]["total"]) for c in changes] == [("+", 10), ("+", 13), ("+", 19)]


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"ts": 1, "sensor": "a", "value": 1', "events.jsonl:2: malformed JSON"),
        ('{"sensor": "a", "value": 1}', "events.jsonl:2: missing event time field 'ts'"),
        ('{"ts": "soon", "sensor": "a", "value": 1}', "events.jsonl:2: 'ts' must be an integer \\(ms\\), got \"soon\""),
        ('[1, 2]', "events.jsonl:2: expected a JSON object"),
    ],
)
def test_bad_lines_are_named_and_nothing_looks_complete(tmp_path, capsys, line, message):
    code, out = run_cli(tmp_path, readings((1, "a", 1)) + [line])
    assert code == 1
    assert re.search(message, capsys.readouterr().err)
    assert not (out / "metrics.json").exists() and not (out / "totals.jsonl").exists()


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_bad_input_leaves_the_last_complete_output_as_it_was(tmp_path, capsys, engine):
    """The input is read through before any work: a bad last line fails the run on either engine before the
    checkpoint is claimed (so before Spark starts), and a complete output already in `out` stays complete."""
    bad = write_lines(tmp_path / "bad.jsonl", readings((1, "a", 1), (2, "a", 2)) + ['{"ts": "late"}'])
    fresh = tmp_path / "fresh"
    assert main(["run", PIPELINE, "--input", f"readings={bad}", "--out", str(fresh), "--engine", engine]) == 1
    assert "bad.jsonl:3: 'ts' must be an integer" in capsys.readouterr().err
    assert not fresh.exists()  # nor its default checkpoint, which a Spark run claims before it starts Spark
    code, out = run_cli(tmp_path, readings((1, "a", 1), (2, "a", 2)), "--changes")
    assert code == 0
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    assert {"metrics.json", "totals.jsonl", "totals.changes.jsonl"} <= set(before)
    assert main(["run", PIPELINE, "--input", f"readings={bad}", "--out", str(out), "--engine", engine]) == 1
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_a_run_that_fails_leaves_the_output_directory_as_it_was(tmp_path, capsys):
    """A failure during the run (here the key function, on a reading with no sensor) writes nothing: no
    directory for a new output, no change to a complete one."""
    code, out = run_cli(tmp_path, readings((1, "a", 1), (2, "a", 2)), "--changes")
    assert code == 0
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    failing = write_lines(tmp_path / "failing.jsonl", readings((1, "a", 1)) + ['{"ts": 2, "value": 5}'])
    for target in (out, tmp_path / "fresh"):
        argv = ["run", PIPELINE, "--input", f"readings={failing}", "--out", str(target), "--engine", "local"]
        assert main(argv + ["--changes"]) == 1
        assert "key function of stateful operator 'totals_by_sensor' raised KeyError" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    assert not (tmp_path / "fresh").exists()


def test_a_refused_follow_run_leaves_a_complete_output_as_it_was(tmp_path, capsys):
    """`--follow` with no input directory is refused (before Spark starts) without touching the output."""
    code, out = run_cli(tmp_path, readings((1, "a", 1), (2, "a", 2)), "--changes")
    assert code == 0
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    argv = ["run", PIPELINE, "--input", f"readings={tmp_path / 'events.jsonl'}", "--out", str(out), "--engine",
            "spark", "--checkpoint", str(tmp_path / "checkpoint"), "--follow", "--changes"]
    assert main(argv) == 1
    assert "follow watches input directories for new files" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_a_rerun_in_another_sink_format_leaves_no_stale_sink_file(tmp_path):
    code, out = run_cli(tmp_path, readings((1, "a", 1)), "--sink-format", "parquet")
    assert code == 0 and (out / "totals.parquet").exists()
    code, out = run_cli(tmp_path, readings((1, "a", 1)))
    assert code == 0
    assert sorted(path.name for path in out.iterdir()) == ["late.jsonl", "metrics.json", "totals.jsonl"]


def test_an_input_directory_as_the_output_directory_is_refused(tmp_path, capsys):
    events = tmp_path / "events"
    write_lines(tmp_path / "events.jsonl", readings((1, "a", 1)))
    events.mkdir()
    (tmp_path / "events.jsonl").rename(events / "part.jsonl")
    argv = ["run", PIPELINE, "--input", f"readings={events}", "--out", str(events), "--engine", "local"]
    assert main(argv) == 1
    assert "the output directory is the input's" in capsys.readouterr().err
    assert [path.name for path in events.iterdir()] == ["part.jsonl"]


def test_python_dash_m_flamespark_is_the_command():
    done = processes.run([sys.executable, "-m", "flamespark", "graph", PIPELINE], capture_output=True, text=True,
                         timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("digraph")


@pytest.mark.parametrize("out", ["taken", "taken/sub"])
def test_an_output_directory_that_is_a_file_is_refused_before_the_run(tmp_path, capsys, out):
    taken = write_lines(tmp_path / "taken", ["keep me"])
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    argv = ["run", PIPELINE, "--input", f"readings={events}", "--out", str(tmp_path / out), "--engine", "local"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"output directory {tmp_path / out}: {taken} is not a directory" in err and "Traceback" not in err
    assert taken.read_text() == "keep me\n"


def test_an_output_directory_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    locked, access = tmp_path / "locked", os.access
    locked.mkdir()
    # Permission bits do not stop root, who runs CI: the check's answer for this one directory is made a "no".
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and access(path, mode))
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    argv = ["run", PIPELINE, "--input", f"readings={events}", "--out", str(locked / "out"), "--engine", "local"]
    assert main(argv) == 1
    assert f"output directory {locked / 'out'}: {locked} is not writable" in capsys.readouterr().err
    assert list(locked.iterdir()) == []


def test_unknown_source_and_missing_file_are_named(tmp_path, capsys):
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    assert main(["run", PIPELINE, "--input", f"sensors={events}", "--out", str(tmp_path / "o"), "--engine", "local"]) == 1
    assert "the graph has no source 'sensors' (its sources: readings)" in capsys.readouterr().err
    assert main(["run", PIPELINE, "--input", "readings=/no/such.jsonl", "--out", str(tmp_path / "o"), "--engine", "local"]) == 1
    assert "input readings=/no/such.jsonl: no such file" in capsys.readouterr().err
    assert main(["run", "/no/pipeline.py:graph", "--input", f"readings={events}", "--out", str(tmp_path / "o")]) == 1
    assert "pipeline file '/no/pipeline.py' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("sink, message", [
    ("../escaped", "sink '../escaped': a sink's name is a file name in the output directory"),
    ("metrics", "sink 'metrics': the name clashes with the run's own output"),
])
def test_a_sink_name_that_is_no_file_name_of_its_own_is_refused_before_anything_is_written(tmp_path, capsys, sink,
                                                                                           message):
    pipeline = tmp_path / "pipe.py"
    pipeline.write_text(f"import flamespark as fs\ngraph = fs.Graph('g')\ngraph.source('readings').sink({sink!r})\n")
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    out = tmp_path / "nest" / "out"
    assert main(["run", f"{pipeline}:graph", "--input", f"readings={events}", "--out", str(out), "--engine",
                 "local"]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "nest").exists()


@pytest.mark.parametrize("source, spec, message", [
    ("import flamespark as fs\n\nraise ValueError('no config')\n", "pipe.py:graph",
     "pipe.py:3: loading the pipeline raised ValueError: no config"),
    ("import flamespark as fs\ngraph = fs.Graph(\n", "pipe.py:graph", "pipe.py:2: loading the pipeline raised SyntaxError"),
    ("def graph(name):\n    pass\n", "pipe.py:graph",
     "pipe.py:graph: calling it with no arguments to make the Graph raised TypeError"),
    ("import sys\nsys.exit(3)\n", "pipe.py:graph", "pipe.py:2: loading the pipeline raised SystemExit: 3"),
    ("import sys\ndef graph():\n    sys.exit('usage: ...')\n", "pipe.py:graph",
     "pipe.py:graph: calling it with no arguments to make the Graph raised SystemExit: usage: ..."),
    ("graph = 3\n", "pipe.py:graph", "pipe.py:graph is int, not a flamespark.Graph"),
    ("def graph():\n    return 3\n", "pipe.py:graph", "pipe.py:graph() returned int, not a flamespark.Graph"),
    ("other = 3\n", "pipe.py:graph", "pipe.py has no 'graph': name a flamespark.Graph, or a function of no"),
    ("", "pipe.txt:graph", "pipe.txt' is not a Python file (PATH.py)"),
    ("", "folder:graph", "pipeline file '{tmp_path}/folder' is not a file"),
])
def test_a_pipeline_that_does_not_load_is_named_with_its_line(tmp_path, capsys, source, spec, message):
    for name in ("pipe.py", "pipe.txt"):
        (tmp_path / name).write_text(source)
    (tmp_path / "folder").mkdir()
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    assert main(["run", str(tmp_path / spec), "--input", f"readings={events}", "--out", str(tmp_path / "out"),
                 "--engine", "local"]) == 1
    err = capsys.readouterr().err
    assert message.format(tmp_path=tmp_path) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_single_parquet_file_is_refused_with_what_to_give(tmp_path, capsys):
    (tmp_path / "events.parquet").write_bytes(b"PAR1")
    argv = ["run", PIPELINE, "--input", f"readings={tmp_path / 'events.parquet'}", "--out", str(tmp_path / "out"),
            "--engine", "local"]
    assert main(argv) == 1
    assert "events.parquet is a Parquet file; give the directory that holds it" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_pipeline_given_by_a_relative_path_is_named_with_its_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "pipe.py").write_text("import flamespark as fs\n\nraise ValueError('no config')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["graph", "pipe.py"]) == 1
    assert "pipe.py:3: loading the pipeline raised ValueError: no config" in capsys.readouterr().err


def test_attr_may_name_a_function_that_makes_the_graph(capsys):
    assert main(["graph", str(Path(PIPELINE.rpartition(":")[0]).with_name("inverted_index.py")) + ":build"]) == 0
    assert "digraph" in capsys.readouterr().out


def test_help_and_graph_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0
    assert "--reorder-latency MS" in capsys.readouterr().out
    assert main(["graph", PIPELINE]) == 0
    assert '"totals_by_sensor/combine" -> "totals_by_sensor/group" [style=dashed' in capsys.readouterr().out


def test_a_source_given_twice_and_follow_on_the_local_engine_are_refused(tmp_path, capsys):
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    argv = ["run", PIPELINE, "--input", f"readings={events}", "--out", str(tmp_path / "o"), "--engine", "local"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv + ["--input", f"readings={events}"])
    assert exit_info.value.code == 2
    assert "argument --input: source 'readings' given twice" in capsys.readouterr().err
    assert main(argv + ["--follow"]) == 1
    assert "flamespark: error: --follow: only with --engine spark" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_rate_paces_the_local_engine(tmp_path):
    """20 readings offered at 50 a second: the last is due 0.38 s after the first, and with no reorder latency
    each total but the last waits for the next reading, due 20 ms after its own."""
    started = time.perf_counter()
    code, out = run_cli(tmp_path, readings(*[(ts, "a", 1) for ts in range(20)]), "--rate", "50")
    assert code == 0
    assert time.perf_counter() - started >= 19 / 50
    assert json.loads((out / "metrics.json").read_text())["latency_ms"]["p50"] >= 15


@pytest.mark.parametrize("command", ["run", "bench"])
@pytest.mark.parametrize("option, value", [
    ("--master", "local[2]"), ("--checkpoint", "ck"), ("--max-rows-per-batch", "3"), ("--ingest-partitions", "2"),
])
def test_spark_options_on_the_local_engine_are_refused_not_ignored(tmp_path, capsys, command, option, value):
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    argv = [command, PIPELINE, "--input", f"readings={events}", "--out", str(tmp_path / "o"), "--engine", "local"]
    assert main(argv + [option, value]) == 1
    assert f"flamespark: error: {option}: only with --engine spark" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything is written


@pytest.mark.parametrize("argv", [
    ["run", PIPELINE, "--input", "readings=e.jsonl", "--out", "o", "--master", "lokal[2]"],
    ["bench", PIPELINE, "--input", "readings=e.jsonl", "--out", "o", "--scaling", "local[1],bogus"],
])
def test_a_wrong_spark_master_is_refused_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "not a Spark master URL" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["disorder", "in.jsonl", "--out", "out.jsonl", "--seed", "-1"], "argument --seed: must be >= 0, not -1"),
])
def test_a_disorder_that_means_nothing_is_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command, option", [
    ("run", "--follow"), ("run", "--changes"), ("disorder", "--stddev-ms D"), ("graph", "PATH.py:ATTR"), ("bench", "--sweep"),
])
def test_every_command_has_help(command, option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "-h"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: flamespark {command} ") and option in text
    assert "(default: None)" not in text and "(default: False)" not in text  # an option with no default shows none


def test_the_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["-h"])
    text = capsys.readouterr().out
    assert len(COMMANDS) == 4
    for command in ("run", "disorder", "graph", "bench"):
        assert re.search(rf"^    {command}\b", text, re.MULTILINE)
    assert "bench-" not in text  # the engine's internal benchmarks are scripts in benchmarks/, not commands


def test_bench_without_matplotlib_says_how_to_install_it_before_any_run(tmp_path):
    events = write_lines(tmp_path / "e.jsonl", readings((1, "a", 1)))
    code = ("import sys; sys.modules['matplotlib'] = None; from flamespark.cli import main; "
            f"sys.exit(main(['bench', {PIPELINE!r}, '--input', 'readings={events}', '--out', 'o', '--engine', 'local']))")
    done = processes.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == ("flamespark: error: bench draws its plots with matplotlib, which is not installed: "
                           "pip install 'flamespark[bench]'\n")
    assert not (tmp_path / "o").exists()


def test_run_to_directory_is_a_function_of_typed_arguments(tmp_path):
    events = write_lines(tmp_path / "e.jsonl", readings((10, "a", 1), (30, "a", 2), (20, "b", 5)))
    result = run_to_directory(PIPELINE, {"readings": events}, tmp_path / "out", engine="local", reorder_latency=15)
    assert result.outputs["totals"] == [json.loads(line) for line in (tmp_path / "out" / "totals.jsonl").open()]
    assert [total["total"] for total in result.outputs["totals"]] == [1, 5, 3]
