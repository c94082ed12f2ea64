"""examples/demo.py, the quick start: documents made or read, disordered, benched; the headline it ends with."""
import json
import os
import re
import sys
from pathlib import Path

from tests import processes

REPO = Path(__file__).resolve().parents[2]


def demo(tmp_path, *args):
    """`python examples/demo.py ARGS` typed at the root of this checkout (its packages on the path, as an
    editable install of it puts them), writing under `tmp_path`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return processes.run([sys.executable, "examples/demo.py", "--out", str(tmp_path / "demo"), *args], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=600)


def test_without_a_dump_it_generates_documents_and_prints_the_three_latencies(tmp_path):
    done = demo(tmp_path, "--engine", "local", "--docs", "30", "--rate", "200")
    assert done.returncode == 0, done.stderr
    assert "demo: 30 documents from the generator, 5 ms apart in event time to be offered 200 a second" in done.stderr
    report = json.loads((tmp_path / "demo" / "report" / "report.json").read_text())
    assert report["outputs_equal"] and report["input"]["events"] == 30 and report["rate"] == 200
    # offered 200 a second, 5 ms apart: their event time keeps up with the clock
    assert [json.loads(line)["ts"] for line in (tmp_path / "demo" / "docs.jsonl").open()] == [5 * i for i in range(30)]
    assert report["pace_warnings"] == [] and "warning" not in done.stderr
    assert re.fullmatch(rf"demo: report in {re.escape(str(tmp_path / 'demo' / 'report' / 'report.md'))}; outputs "
                        r"equal in both modes; latency p50 speculative [0-9.]+ m?s, optimistic final [0-9.]+ m?s, "
                        r"buffered final [0-9.]+ m?s\n", done.stdout)


def test_a_dump_that_is_not_there_is_named_before_any_work(tmp_path):
    done = demo(tmp_path, str(tmp_path / "missing.xml.bz2"))
    assert done.returncode == 1
    assert done.stderr.strip() == f"demo: error: {tmp_path / 'missing.xml.bz2'}: no such file."
    assert not (tmp_path / "demo" / "report").exists()


def test_docs_takes_the_first_pages_of_a_dump(tmp_path):
    pages = "".join(f"<page><title>Page {n}</title><id>{n}</id><revision><timestamp>2020-01-0{n}T00:00:00Z"
                    f"</timestamp><text>word{n} and some text</text></revision></page>" for n in range(1, 5))
    dump = tmp_path / "dump.xml"
    dump.write_text(f"<mediawiki>{pages}</mediawiki>")
    done = demo(tmp_path, str(dump), "--engine", "local", "--docs", "2", "--rate", "200")
    assert done.returncode == 0, done.stderr
    assert f"demo: 2 documents from {dump}" in done.stderr
    assert len((tmp_path / "demo" / "docs.jsonl").read_text().splitlines()) == 2
