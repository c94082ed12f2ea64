"""Run options: checked once, before any engine starts, with the same error on every engine."""
import inspect
import os
import sys
from pathlib import Path

import pytest

import flamespark as fs
from flamespark.cli import main
from flamespark.runtime.options import SPARK_OPTIONS, RunOptions
from tests import graphs, processes

REPO = Path(__file__).resolve().parents[2]
INPUTS = {"numbers": [(1, 1)]}

NOT_A_LATENCY = "reorder_latency must be a non-negative integer (ms) or an increasing sequence of them"

BAD_OPTIONS = [
    ({"mode": "eager"}, "mode must be one of optimistic, buffered, got 'eager'"),
    ({"reorder_latency": -1}, f"{NOT_A_LATENCY}, got -1"),
    ({"reorder_latency": 1.5}, f"{NOT_A_LATENCY}, got 1.5"),
    ({"reorder_latency": True}, f"{NOT_A_LATENCY}, got True"),
    ({"reorder_latency": (1000, 1000)}, "several reorder latencies must increase, got (1000, 1000)"),
    ({"reorder_latency": [1000, -5]}, f"{NOT_A_LATENCY}, got (1000, -5)"),
    ({"reorder_latency": ()}, f"{NOT_A_LATENCY}, got ()"),
    ({"late": "ignore"}, "late policy must be one of drop, adjust, fail, got 'ignore'"),
    ({"batch_size": 0}, "batch_size must be a positive integer, got 0"),
    ({"batch_size": True}, "batch_size must be a positive integer, got True"),
    ({"idle_timeout": 0}, "idle_timeout must be a positive number of seconds, got 0"),
    ({"idle_timeout": "5"}, "idle_timeout must be a positive number of seconds, got '5'"),
    ({"rate": 0}, "rate must be a positive number of events per second, got 0"),
    ({"rate": float("inf")}, "rate must be a positive number of events per second, got inf"),
    ({"progress": 1}, "progress must be True, False or None (if stderr is a terminal), got 1"),
    ({"reorder_latncy": 5, "sharts": 2}, "unknown option(s) reorder_latncy, sharts; flamespark.run takes engine, "
                                         "mode, reorder_latency, late, batch_size, idle_timeout, rate, changes, "
                                         "progress and, on engine='spark', " + ", ".join(SPARK_OPTIONS)),
]


@pytest.fixture
def no_spark_engine(monkeypatch):
    """Importing the Spark engine fails: an option error must come before it is needed."""
    monkeypatch.setitem(sys.modules, "flamespark.engines.spark", None)


def raised(engine, options) -> fs.OptionError:
    with pytest.raises(fs.OptionError) as error:
        fs.run(graphs.running_sum(), INPUTS, engine=engine, **options)
    return error.value


@pytest.mark.parametrize("options, message", BAD_OPTIONS)
def test_a_bad_option_is_the_same_error_on_every_engine_before_spark_is_imported(no_spark_engine, options, message):
    local = raised("local", options)
    spark = raised("spark", options)
    assert type(local) is type(spark) is fs.OptionError
    assert str(local) == str(spark) == message


def test_an_unknown_engine_is_named():
    with pytest.raises(fs.OptionError, match="engine must be one of local, spark, got 'flink'"):
        fs.run(graphs.running_sum(), INPUTS, engine="flink")


@pytest.mark.parametrize("engine, options, message", [
    ("local", {"rate": 10, "master": "local[1]"},
     "the local engine takes no engine options, got master (options of the Spark engine)"),
    ("local", {"rate": 10, "batch_size": 5},
     "batch_size is for unpaced runs: a paced run applies in one batch whatever has arrived while it worked"),
    ("local", {"idle_timeout": 5}, "idle_timeout needs engine='spark': the local engine reads its finite inputs in "
                                   "turn, waiting on each, so no source falls silent while the others go on"),
    ("spark", {"batch_size": 10}, "batch_size is taken by the local engine only: on Spark a batch is a "
                                  "micro-batch (max_rows_per_batch makes them smaller)"),
    ("spark", {"idle_timeout": 5, "mode": "buffered"}, "idle_timeout needs mode='optimistic': the buffered baseline "
                                                        "follows Spark's watermark, which waits for every input"),
])
def test_what_an_engine_does_not_take_is_refused_with_why(no_spark_engine, engine, options, message):
    assert str(raised(engine, options)) == message


def test_valid_options_are_kept_for_the_engine():
    options = RunOptions.of("spark", "buffered", 20, "adjust", shards=2, follow=True)
    assert (options.engine, options.mode, options.reorder_latency, options.late) == ("spark", "buffered", 20, "adjust")
    assert options.idle_timeout is None and options.engine_options == {"shards": 2, "follow": True}
    assert RunOptions.of(idle_timeout=0.5, engine="spark").idle_timeout == 0.5
    with pytest.raises(fs.OptionError):
        RunOptions(late="never")


def test_spark_options_are_run_sparks_keyword_arguments():
    from flamespark.engines.spark.query import run_spark

    parameters = list(inspect.signature(run_spark).parameters)
    assert parameters[:4] == ["graph", "inputs", "options", "sink_topics"]
    assert tuple(parameters[4:]) == SPARK_OPTIONS


def test_bad_options_on_spark_fail_as_on_the_local_engine_without_pyspark():
    script = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import flamespark as fs\n"
        "from tests import graphs\n"
        "for options in ({'late': 'ignore'}, {'reorder_latency': -1}):\n"
        "    messages = []\n"
        "    for engine in ('local', 'spark'):\n"
        "        try:\n"
        "            fs.run(graphs.running_sum(), {'numbers': [(1, 1)]}, engine=engine, **options)\n"
        "        except fs.OptionError as error:\n"
        "            messages.append(f'{type(error).__name__}: {error}')\n"
        "    assert messages[0] == messages[1], messages\n"
        "    print(messages[1])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = processes.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OptionError: late policy must be one of drop, adjust, fail, got 'ignore'",
        "OptionError: reorder_latency must be a non-negative integer (ms) or an increasing sequence of them, got -1",
    ]


def test_the_cli_refuses_follow_and_idle_timeout_on_the_local_engine_before_writing(tmp_path, capsys):
    events = tmp_path / "e.jsonl"
    events.write_text('{"ts": 1, "sensor": "a", "value": 1}\n')
    pipeline = f"{REPO / 'examples' / 'running_sum.py'}:graph"
    out = tmp_path / "out"
    code = main(["run", pipeline, "--input", f"readings={events}", "--out", str(out), "--engine", "local",
                 "--follow", "--idle-timeout", "2"])
    assert code == 1
    assert "--follow, --idle-timeout: only with --engine spark" in capsys.readouterr().err
    assert not out.exists()
