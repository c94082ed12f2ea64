"""The one input reader: JSONL files, directories of JSONL or Parquet files, iterables; errors; atomic writes."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flamespark as fs
from examples.running_sum import graph as running_sum
from flamespark.io.atomic import replacing, write_atomic
from flamespark.io.inputs import check_input_files, count_events, read_input, source_events
from tests import graphs

READINGS = [{"ts": ts, "sensor": "ab"[ts % 2], "value": ts % 5} for ts in (10, 0, 30, 20, 50, 40)]


def write_lines(path, lines, end="\n"):
    path.write_bytes("".join(line + end for line in lines).encode("utf-8"))
    return path


def pairs(records):
    return [(record["ts"], record) for record in records]


# --------------------------------------------------------------- JSONL files


def test_a_jsonl_file_gives_its_objects_in_file_order(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in READINGS[:3]] + ["", "  "] +
                       [json.dumps(r) for r in READINGS[3:]])
    assert read_input("readings", path) == pairs(READINGS)


def test_line_ends_byte_order_mark_and_line_separators_in_strings(tmp_path):
    # Lines end at \n only: U+2028 inside a string is text, not a line end (str.splitlines would split there).
    records = [{"ts": 1, "title": "a\u2028b"}, {"ts": 2, "title": "Zürich"}]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records).encode())
    assert read_input("docs", path) == pairs(records)


BAD_LINES = [
    ('{"ts": 3, "sensor": ', "malformed JSON"),
    ("[1, 2]", "expected a JSON object with an integer 'ts', got list"),
    ('{"sensor": "a"}', "missing event time field 'ts'"),
    ('{"ts": "soon"}', "'ts' must be an integer \\(ms\\), got \"soon\""),
    ('{"ts": 2.5}', "'ts' must be an integer \\(ms\\), got 2.5"),
    ('{"ts": true}', "'ts' must be an integer \\(ms\\), got true"),
    ('{"ts": 9223372036854775808}', "'ts' is out of range: event times are signed 64-bit integers \\(ms\\), "
                                    "got 9223372036854775808"),
]


@pytest.mark.parametrize("bad,message", BAD_LINES)
def test_a_bad_jsonl_line_is_named_by_file_and_line(tmp_path, bad, message):
    path = write_lines(tmp_path / "in.jsonl", ['{"ts": 1}', "", bad, '{"ts": 9}'])
    with pytest.raises(fs.InputError, match=rf"^{path}:3: {message}"):
        read_input("readings", path)


def test_invalid_utf8_and_a_missing_file(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"ts": 1}\n{"ts": 2, "x": "\xff"}\n')
    with pytest.raises(fs.InputError, match=rf"^{path}:2: not UTF-8 text"):
        read_input("readings", path)
    with pytest.raises(fs.InputError, match=rf"^{tmp_path / 'nope.jsonl'}: no such file"):
        read_input("readings", tmp_path / "nope.jsonl")


# ------------------------------------------------------------ directories


def test_a_jsonl_directory_is_read_in_name_order_and_counted_like_it_is_read(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    write_lines(directory / "b.jsonl", [json.dumps(r) for r in READINGS[3:]], end="\r\n")
    write_lines(directory / "a.jsonl", [json.dumps(r) for r in READINGS[:3]] + [" \t", ""])
    (directory / "notes.txt").write_text("not an event file\n")
    assert read_input("readings", directory) == pairs(READINGS)
    assert count_events(directory, "jsonl") == len(READINGS)
    write_lines(directory / "c.jsonl", ['{"ts": 60}', '{"ts": null}'])
    with pytest.raises(fs.InputError, match=rf"^{directory / 'c.jsonl'}:2: 'ts' must be an integer"):
        read_input("readings", directory)


def test_a_parquet_directory_gives_rows_as_payloads(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    pq.write_table(pa.Table.from_pylist(READINGS[:4]), directory / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(READINGS[4:]), directory / "part-1.parquet")
    assert read_input("readings", directory) == pairs(READINGS)
    assert count_events(directory, "parquet") == len(READINGS)


def test_a_late_event_under_fail_is_named_by_its_parquet_file_and_row(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    pq.write_table(pa.Table.from_pylist(READINGS[:4]), directory / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(READINGS[4:] + [{"ts": 5, "sensor": "a", "value": 1}]),
                   directory / "part-1.parquet")
    with pytest.raises(fs.LateEventError, match=r"\(position 6 in its arrival order\) .* \(the event is row 2 of "
                                                + str(directory / "part-1.parquet") + r"\)$"):
        fs.run(running_sum, {"readings": directory}, reorder_latency=15, late="fail")


@pytest.mark.parametrize("write,message", [
    (lambda path: pq.write_table(pa.Table.from_pylist([{"ts": 1}, {"ts": None}]), path),
     "{path}, row 1: 'ts' must be an integer \\(ms\\), got null"),
    (lambda path: pq.write_table(pa.Table.from_pylist([{"time": 1}]), path),
     "{path}: Parquet events need an integer column 'ts' \\(ms\\); found no column 'ts'"),
    (lambda path: pq.write_table(pa.Table.from_pylist([{"ts": 1.5}]), path),
     "{path}: Parquet events need an integer column 'ts' \\(ms\\); found column 'ts' of type double"),
    (lambda path: path.write_text('{"ts": 1}\n'), "{path}: not a readable Parquet file"),
])
def test_a_bad_parquet_file_is_named_with_its_row_or_column(tmp_path, write, message):
    directory = tmp_path / "in"
    directory.mkdir()
    write(directory / "a.parquet")
    with pytest.raises(fs.InputError, match="^" + message.format(path=directory / "a.parquet")):
        read_input("readings", directory)
    # Checked before a run from the schema and the 'ts' column alone, with the error of the row's read.
    with pytest.raises(fs.InputError, match="^" + message.format(path=directory / "a.parquet")):
        check_input_files({"readings": directory})


def test_a_directory_must_not_mix_formats(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    write_lines(directory / "a.jsonl", ['{"ts": 1}'])
    pq.write_table(pa.Table.from_pylist([{"ts": 2}]), directory / "b.parquet")
    with pytest.raises(fs.InputError, match=r"input 'readings': .* mixes \.jsonl and \.parquet files"):
        read_input("readings", directory)


def test_a_directory_without_event_files_is_refused_before_a_run_unless_followed(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    with pytest.raises(fs.InputError, match=rf"^input 'readings': {directory} holds no event files \(it is empty\)"):
        fs.run(running_sum, {"readings": directory})
    for name in ("a.json", "b.csv", "c.txt", "d.ndjson"):
        (directory / name).write_text('{"ts": 1}\n')
    with pytest.raises(fs.InputError, match=r"\(it holds a.json, b.csv, c.txt and 1 more\); give .jsonl files"):
        check_input_files({"readings": directory})
    check_input_files({"readings": directory}, follow=True)  # a followed directory may get its files later


# --------------------------------------------------------------- iterables


def test_an_iterable_is_checked_one_event_at_a_time():
    def events():
        yield 5, {"n": 1}
        yield (6,)
        raise AssertionError("read past the bad event")

    checked = source_events("numbers", events())
    assert next(checked) == (5, {"n": 1})
    with pytest.raises(fs.InputError, match=r"^input 'numbers', event #1: expected a \(ts, payload\) pair, got \(6,\)"):
        next(checked)
    with pytest.raises(fs.InputError, match=r"^input 'numbers', event #0: event time must be an integer"):
        list(source_events("numbers", [(1.5, {})]))
    with pytest.raises(fs.InputError, match=r"^input 'numbers': expected a file, a directory or an iterable"):
        source_events("numbers", 42)


def test_event_times_span_signed_64_bits_and_no_more():
    edges = [(-(1 << 63), "first"), ((1 << 63) - 1, "last")]
    assert list(source_events("numbers", edges)) == edges
    for ts in (-(1 << 63) - 1, 1 << 63):
        with pytest.raises(fs.InputError, match=rf"^input 'numbers', event #0: event time is out of range: event "
                                                 rf"times are signed 64-bit integers \(ms\), got int {ts}$"):
            list(source_events("numbers", [(ts, "beyond")]))


# ----------------------------------------------------- run, on the local engine


def test_the_local_engine_takes_files_and_directories_like_spark(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in READINGS])
    directory = tmp_path / "in"
    directory.mkdir()
    pq.write_table(pa.Table.from_pylist(READINGS), directory / "part-0.parquet")
    expected = fs.run(running_sum, {"readings": pairs(READINGS)}, reorder_latency=20)
    for given in (path, str(path), directory):
        result = fs.run(running_sum, {"readings": given}, reorder_latency=20)
        assert (result.outputs, result.late) == (expected.outputs, expected.late)


def test_the_local_engine_names_a_bad_line_of_a_file(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", ['{"ts": 1, "sensor": "a", "value": 1}', '{"ts": "x"}'])
    with pytest.raises(fs.InputError, match=rf"^{path}:2: 'ts' must be an integer"):
        fs.run(running_sum, {"readings": path})
    with pytest.raises(fs.InputError, match=r"^input 'numbers', event #2: expected a \(ts, payload\) pair"):
        fs.run(graphs.running_sum(), {"numbers": iter([(1, 1), (2, 2), None])})


def test_a_file_is_read_through_before_the_engine_starts(tmp_path):
    applied = []
    graph = fs.Graph("applied")
    graph.source("readings").map(lambda reading: applied.append(reading["ts"]) or reading).sink("out")
    path = write_lines(tmp_path / "in.jsonl", ['{"ts": 1, "sensor": "a", "value": 1}', '{"ts": "x"}'])
    with pytest.raises(fs.InputError, match=rf"^{path}:2: 'ts' must be an integer"):
        fs.run(graph, {"readings": path})
    assert applied == []
    directory = tmp_path / "in"
    directory.mkdir()
    write_lines(directory / "a.jsonl", ['{"ts": 1, "sensor": "a", "value": 1}'])
    write_lines(directory / "b.jsonl", ['{"ts": 2, "sensor": "a", "value": 2}', "[2]"])
    with pytest.raises(fs.InputError, match=rf"^{directory / 'b.jsonl'}:2: expected a JSON object"):
        fs.run(graph, {"readings": directory}, mode="buffered")
    assert applied == []


# ------------------------------------------------------------ atomic writes


def test_write_atomic_replaces_whole_files_and_a_failed_write_leaves_the_old_one(tmp_path):
    path = tmp_path / "sub" / "out.bin"
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    write_atomic(path, "Zürich\n")
    assert path.read_text(encoding="utf-8") == "Zürich\n"
    with pytest.raises(RuntimeError), replacing(path) as temporary:
        temporary.write_text("half")
        raise RuntimeError("failed while writing")
    assert path.read_text(encoding="utf-8") == "Zürich\n"
    assert [p.name for p in path.parent.iterdir()] == ["out.bin"]
