"""Tests for flamespark.tools.wikipedia (MediaWiki dump -> JSONL events)."""

from __future__ import annotations

import bz2
import collections
import gzip
import io
import json
import re
import sys
from pathlib import Path

import pytest

from flamespark.tools import wikipedia as we
from tests import processes
from tests.samples import WIKI_SAMPLE as SAMPLE

COMMAND = [sys.executable, "-m", "flamespark.tools.wikipedia"]
SAMPLE_PAGES = 206

needs_sample = pytest.mark.skipif(
    not SAMPLE.exists(), reason=f"sample dump not found at {SAMPLE}")


def read_events(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def dump_xml(pages: str, *, ns: str | None = "http://www.mediawiki.org/xml/export-0.10/",
             encoding: str | None = None) -> str:
    decl = f'<?xml version="1.0" encoding="{encoding}"?>\n' if encoding else ""
    xmlns = f' xmlns="{ns}"' if ns else ""
    return (f"{decl}<mediawiki{xmlns} version=\"0.10\" xml:lang=\"en\">\n"
            "  <siteinfo><sitename>Testwiki</sitename></siteinfo>\n"
            f"{pages}</mediawiki>\n")


def page(page_id: int | str, title: str, *revisions: tuple[str | None, str | None]) -> str:
    revs = []
    for n, (stamp, text) in enumerate(revisions):
        parts = [f"<id>{1000 + n}</id>"]
        if stamp is not None:
            parts.append(f"<timestamp>{stamp}</timestamp>")
        parts.append("<contributor><username>X</username><id>77</id></contributor>")
        if text is not None:
            parts.append(f'<text xml:space="preserve">{text}</text>')
        revs.append("<revision>" + "".join(parts) + "</revision>")
    return (f"  <page><title>{title}</title><ns>0</ns><id>{page_id}</id>"
            + "".join(revs) + "</page>\n")


UNICODE_PAGES = (
    page(5, "Zürich", ("2020-01-01T00:00:00Z", "Zürich liegt am Zürichsee. ß → ∞")),
    page(7, "日本語", ("2020-01-01T00:00:00Z", "日本語のテキスト 🙂 &amp; &lt;tag&gt;")),
)


def titles_and_texts(docs):
    return [(d["doc_id"], d["title"], d["text"]) for d in docs]


EXPECTED_UNICODE = [
    (5, "Zürich", "Zürich liegt am Zürichsee. ß → ∞"),
    (7, "日本語", "日本語のテキスト 🙂 & <tag>"),
]


# ---------------------------------------------------------------- real dump

@pytest.fixture(scope="module")
def sample_events(tmp_path_factory):
    """The real sample dump converted once with default settings."""
    if not SAMPLE.exists():
        pytest.skip(f"sample dump not found at {SAMPLE}")
    out = tmp_path_factory.mktemp("sample") / "wiki.jsonl"
    assert we.main([str(SAMPLE), "--out", str(out)]) == 0
    return read_events(out)


def test_sample_dump_gives_206_events(sample_events):
    events = sample_events
    assert len(events) == SAMPLE_PAGES
    assert [e["ts"] for e in events] == [i * 50 for i in range(SAMPLE_PAGES)]
    assert all(set(e) == {"ts", "doc_id", "title", "text"} for e in events)
    assert all(type(e["doc_id"]) is int for e in events)
    assert len({e["doc_id"] for e in events}) == SAMPLE_PAGES
    assert all(isinstance(e["title"], str) and e["title"] for e in events)


def test_sample_dump_content(sample_events):
    events = sample_events
    non_empty = sum(1 for e in events if e["text"].strip())
    assert non_empty >= 0.9 * SAMPLE_PAGES
    assert events[0]["doc_id"] == 10 and events[0]["title"] == "AccessibleComputing"
    assert events[0]["text"].startswith("#REDIRECT [[Computer accessibility]]")
    assert events[1]["title"] == "Anarchism" and len(events[1]["text"]) > 10_000
    assert events[-1]["title"] and events[-1]["text"]


def test_cli_subprocess_summary_and_help(tmp_path):
    dump = tmp_path / "tiny.xml.bz2"
    dump.write_bytes(bz2.compress(dump_xml("".join(UNICODE_PAGES)).encode("utf-8")))
    out = tmp_path / "tiny.jsonl"
    proc = processes.run([*COMMAND, str(dump), "--out", str(out),
                          "--interval-ms", "7"],
                         capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    summary = proc.stderr.strip().splitlines()
    assert len(summary) == 1  # not a TTY: no progress lines
    assert "wrote 2 events" in summary[0] and str(out) in summary[0]
    assert [e["ts"] for e in read_events(out)] == [0, 7]

    helptext = processes.run([*COMMAND, "--help"],
                             capture_output=True, text=True, timeout=60)
    assert helptext.returncode == 0
    for option in ("--out", "--interval-ms", "--rate", "--synthetic", "--seed", "DUMP"):
        assert option in helptext.stdout

    failing = processes.run([*COMMAND, str(tmp_path / "nope.xml"),
                             "--out", str(tmp_path / "x.jsonl")],
                            capture_output=True, text=True, timeout=60)
    assert failing.returncode == 1
    assert "nope.xml" in failing.stderr and not (tmp_path / "x.jsonl").exists()


# ------------------------------------------------------ hand-written dumps

def test_utf16_dump(tmp_path):
    path = tmp_path / "utf16.xml"
    path.write_text(dump_xml("".join(UNICODE_PAGES), encoding="UTF-16"),
                    encoding="utf-16")
    assert path.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    assert titles_and_texts(we.iter_pages(path)) == EXPECTED_UNICODE

    out = tmp_path / "out.jsonl"
    assert we.main([str(path), "--out", str(out)]) == 0
    events = read_events(out)
    assert [(e["doc_id"], e["title"], e["text"]) for e in events] == EXPECTED_UNICODE
    assert "Zürich" in out.read_text(encoding="utf-8")  # UTF-8, not \u escapes


def test_latin1_declared_encoding(tmp_path):
    path = tmp_path / "latin1.xml"
    path.write_bytes(dump_xml(page(1, "Café", (None, "crème brûlée")),
                              encoding="ISO-8859-1").encode("latin-1"))
    assert titles_and_texts(we.iter_pages(path)) == [(1, "Café", "crème brûlée")]


@pytest.mark.parametrize("compress,suffix", [(bz2.compress, ".xml.bz2"),
                                             (gzip.compress, ".xml.gz")])
def test_compressed_dump(tmp_path, compress, suffix):
    path = tmp_path / f"dump{suffix}"
    path.write_bytes(compress(dump_xml("".join(UNICODE_PAGES)).encode("utf-8")))
    assert titles_and_texts(we.iter_pages(path)) == EXPECTED_UNICODE


def test_compression_detected_by_content_not_name(tmp_path):
    path = tmp_path / "actually-bz2.xml"
    path.write_bytes(bz2.compress(dump_xml("".join(UNICODE_PAGES)).encode("utf-16")))
    assert titles_and_texts(we.iter_pages(path)) == EXPECTED_UNICODE


@pytest.mark.parametrize("ns", [
    None,
    "http://www.mediawiki.org/xml/export-0.3/",
    "http://www.mediawiki.org/xml/export-0.11/",
])
def test_any_export_namespace(tmp_path, ns):
    path = tmp_path / "dump.xml"
    path.write_text(dump_xml("".join(UNICODE_PAGES), ns=ns), encoding="utf-8")
    assert titles_and_texts(we.iter_pages(path)) == EXPECTED_UNICODE


def test_latest_revision_wins(tmp_path):
    pages = (
        # greatest timestamp is in the middle
        page(1, "Middle", ("2010-01-01T00:00:00Z", "old"),
             ("2015-06-01T12:00:00Z", "newest"),
             ("2012-01-01T00:00:00Z", "older")),
        # no timestamps at all: the last revision
        page(2, "NoStamps", (None, "first"), (None, "second"), (None, "last")),
        # equal timestamps: the later one in the file
        page(3, "Tie", ("2011-01-01T00:00:00Z", "a"), ("2011-01-01T00:00:00Z", "b")),
        # a revision without timestamp does not beat a dated one
        page(4, "Mixed", ("2011-01-01T00:00:00Z", "dated"), (None, "undated")),
        # no revisions / deleted text
        page(5, "Empty"),
        page(6, "Deleted", ("2011-01-01T00:00:00Z", None)),
    )
    path = tmp_path / "revs.xml"
    path.write_text(dump_xml("".join(pages)), encoding="utf-8")
    assert titles_and_texts(we.iter_pages(path)) == [
        (1, "Middle", "newest"),
        (2, "NoStamps", "last"),
        (3, "Tie", "b"),
        (4, "Mixed", "dated"),
        (5, "Empty", ""),
        (6, "Deleted", ""),
    ]


def test_page_ids_are_page_not_revision_ids(tmp_path):
    path = tmp_path / "ids.xml"
    path.write_text(dump_xml(page(" 42 ", "Spaced", ("2011-01-01T00:00:00Z", "x"))),
                    encoding="utf-8")
    (doc,) = we.iter_pages(path)
    assert doc["doc_id"] == 42 and type(doc["doc_id"]) is int


def test_stdin_dash(tmp_path, monkeypatch):
    data = bz2.compress(dump_xml("".join(UNICODE_PAGES)).encode("utf-8"))
    fake_stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)))
    monkeypatch.setattr(sys, "stdin", fake_stdin)
    out = tmp_path / "out.jsonl"
    assert we.main(["-", "--out", str(out)]) == 0
    assert [(e["doc_id"], e["title"], e["text"]) for e in read_events(out)] == EXPECTED_UNICODE


# -------------------------------------------------------------- synthetic

WORD = re.compile(r"^[a-z]+$")


def test_synthetic_reproducible_and_seed_dependent():
    a = list(we.synthetic_documents(40, seed=11))
    b = list(we.synthetic_documents(40, seed=11))
    c = list(we.synthetic_documents(40, seed=12))
    assert a == b
    assert a != c
    assert [d["doc_id"] for d in a] == list(range(1, 41))
    assert all(d["title"] and d["text"] for d in a)


def test_synthetic_is_zipf_like_with_varying_lengths():
    docs = list(we.synthetic_documents(300, seed=5))
    counts = collections.Counter(w for d in docs for w in d["text"].split())
    ranked = [c for _, c in counts.most_common()]
    assert ranked[0] >= 5 * ranked[9]        # Zipf: f(1)/f(10) ~ 10**1.1
    assert ranked[0] >= 1.5 * ranked[1]
    assert len(counts) > 1000                # a long tail of rare words
    assert all(WORD.match(w) and re.search("[aeiou]", w) for w in counts)
    lengths = [len(d["text"].split()) for d in docs]
    assert min(lengths) >= 5
    assert len(set(lengths)) > 100 and max(lengths) > 2 * min(lengths)


def test_synthetic_cli(tmp_path):
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert we.main(["--synthetic", "25", "--seed", "3", "--out", str(out1)]) == 0
    assert we.main(["--synthetic", "25", "--seed", "3", "--out", str(out2),
                    "--interval-ms", "10"]) == 0
    e1, e2 = read_events(out1), read_events(out2)
    assert len(e1) == 25
    assert [e["ts"] for e in e1] == [50 * i for i in range(25)]
    assert [e["ts"] for e in e2] == [10 * i for i in range(25)]
    assert [(e["doc_id"], e["title"], e["text"]) for e in e1] == \
        [(e["doc_id"], e["title"], e["text"]) for e in e2]


@pytest.mark.parametrize("rate, interval_ms", [(10, 100), (3, 333), (20, 50)])
def test_a_rate_spaces_the_documents_for_event_time_to_keep_up_with_the_clock(tmp_path, rate, interval_ms):
    out = tmp_path / "docs.jsonl"
    assert we.main(["--synthetic", "4", "--rate", str(rate), "--out", str(out)]) == 0
    assert [e["ts"] for e in read_events(out)] == [interval_ms * i for i in range(4)]


@pytest.mark.parametrize("argv", [
    [],                                        # neither DUMP nor --synthetic
    ["x.xml", "--synthetic", "3"],             # both
    ["--synthetic", "0"],
    ["--synthetic", "3", "--interval-ms", "-1"],
    ["--synthetic", "3", "--rate", "0"],
    ["--synthetic", "3", "--rate", "10", "--interval-ms", "100"],  # one spacing or the other
])
def test_bad_arguments_exit_2(tmp_path, argv):
    with pytest.raises(SystemExit) as info:
        we.main(argv + ["--out", str(tmp_path / "o.jsonl")])
    assert info.value.code == 2
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------- errors

def run_failing(tmp_path, dump: Path, capsys) -> str:
    out = tmp_path / "out" / "events.jsonl"
    out.parent.mkdir()
    assert we.main([str(dump), "--out", str(out)]) == 1
    assert list(out.parent.iterdir()) == []   # no output, no temp leftovers
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert dump.name in err
    return err


def test_missing_file(tmp_path, capsys):
    err = run_failing(tmp_path, tmp_path / "missing.xml", capsys)
    assert "no such file" in err


def test_garbage_file(tmp_path, capsys):
    path = tmp_path / "garbage.xml"
    path.write_bytes(bytes(range(256)) * 10)
    assert "not a well-formed XML" in run_failing(tmp_path, path, capsys)


def test_plain_text_and_empty_files(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("just some words\n")
    run_failing(tmp_path, text, capsys)
    empty = tmp_path / "empty.xml"
    empty.write_bytes(b"")
    (tmp_path / "out").rmdir()
    run_failing(tmp_path, empty, capsys)


@needs_sample
def test_truncated_bz2(tmp_path, capsys):
    path = tmp_path / "truncated.xml.bz2"
    path.write_bytes(SAMPLE.read_bytes()[:200_000])
    assert "truncated" in run_failing(tmp_path, path, capsys)


def test_corrupt_bz2(tmp_path, capsys):
    path = tmp_path / "corrupt.xml.bz2"
    path.write_bytes(b"BZh9" + b"\x00garbage" * 50)
    run_failing(tmp_path, path, capsys)


def test_no_pages(tmp_path, capsys):
    path = tmp_path / "nopages.xml"
    path.write_text(dump_xml(""), encoding="utf-8")
    assert "no <page>" in run_failing(tmp_path, path, capsys)


def test_error_after_some_pages_leaves_no_output(tmp_path, capsys):
    path = tmp_path / "broken.xml"
    # Enough good pages that the parser yields some before hitting the
    # broken tail (it reads in chunks), then a page that is never closed.
    good = "".join(page(i, f"P{i}", (None, "word " * 200)) for i in range(1, 201))
    path.write_text(dump_xml(good + "  <page><title>Cut off</title><id>999"),
                    encoding="utf-8")
    yielded = []
    with pytest.raises(we.DumpError, match="not a well-formed XML dump"):
        for doc in we.iter_pages(path):
            yielded.append(doc["doc_id"])
    assert yielded[:2] == [1, 2]  # streaming: pages came out before the error
    run_failing(tmp_path, path, capsys)


def test_bad_page_id(tmp_path, capsys):
    path = tmp_path / "badid.xml"
    path.write_text(dump_xml(page("abc", "Bad", (None, "x"))), encoding="utf-8")
    assert "non-integer <id>" in run_failing(tmp_path, path, capsys)


def test_failure_keeps_previous_output(tmp_path, capsys):
    out = tmp_path / "events.jsonl"
    out.write_text("previous complete run\n")
    garbage = tmp_path / "garbage.xml"
    garbage.write_text("<<<")
    assert we.main([str(garbage), "--out", str(out)]) == 1
    assert out.read_text() == "previous complete run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl", "garbage.xml"]


# ------------------------------------------------------------ write_events

def test_write_events_progress_and_empty(tmp_path):
    seen = []
    out = tmp_path / "e.jsonl"
    docs = ({"doc_id": i, "title": f"T{i}", "text": "x"} for i in range(5))
    assert we.write_events(docs, out, 3, progress=seen.append, progress_every=2) == 5
    assert seen == [2, 4]
    assert [e["ts"] for e in read_events(out)] == [0, 3, 6, 9, 12]
    with pytest.raises(ValueError):
        we.write_events([], tmp_path / "none.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl"]


def test_progress_only_on_tty():
    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    assert we._progress_printer(Stream(False)) is None
    tty = Stream(True)
    show = we._progress_printer(tty)
    show(1000)
    assert "1,000" in tty.getvalue()
