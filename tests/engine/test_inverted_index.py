"""The inverted-index example and its tuned variant in benchmarks/: their docstrings' examples, exact records on
hand-made documents, the same outputs as the plain in-order program and as each other under any disorder, exactness
on the Wikipedia sample."""
import importlib.util
import itertools
import string
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.tools.disorder import disorder_events
from flamespark.tools.wikipedia import iter_pages
from tests.oracles.changelog_checks import check_changelog
from tests.doctests import assert_runs, examples_of
from tests.oracles.reference import reference_run
from tests.samples import WIKI_SAMPLE as SAMPLE
from tests.strategies import disordered

ROOT = Path(__file__).resolve().parents[2]
MODES = ["optimistic", "buffered"]


def load(path):
    spec = importlib.util.spec_from_file_location(f"pipeline_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = load(ROOT / "examples" / "inverted_index.py")
tuned = load(ROOT / "benchmarks" / "inverted_index_tuned.py")
PIPELINES = pytest.mark.parametrize("pipeline", [example, tuned], ids=["example", "tuned"])


@pytest.mark.parametrize("pipeline, documented", [
    (example, {"word_occurrences", "count_documents", "count_new_words"}),
    (tuned, {"split_document", "count_documents", "collect", "in_order_index"}),
], ids=["example", "tuned"])
def test_the_examples_in_their_docstrings(pipeline, documented):
    tests = examples_of(pipeline)
    assert {test.name.split(".")[-1] for test in tests} >= documented
    for test in tests:
        assert_runs(test)


def doc(ts, doc_id, text):
    return ts, {"ts": ts, "doc_id": doc_id, "title": f"T{doc_id}", "text": text}


DOCS = [
    doc(0, 1, "The cat sat on the mat."),
    doc(10, 2, "A cat, a dog; 2 dogs_and cats!"),
    doc(20, 3, "123 -- 456"),
    doc(30, 4, "Über the DOG"),
]

INDEX = [
    {"word": "the", "doc_id": 1, "positions": [0, 4], "df": 1},
    {"word": "cat", "doc_id": 1, "positions": [1], "df": 1},
    {"word": "sat", "doc_id": 1, "positions": [2], "df": 1},
    {"word": "on", "doc_id": 1, "positions": [3], "df": 1},
    {"word": "mat", "doc_id": 1, "positions": [5], "df": 1},
    {"word": "a", "doc_id": 2, "positions": [0, 2], "df": 1},
    {"word": "cat", "doc_id": 2, "positions": [1], "df": 2},
    {"word": "dog", "doc_id": 2, "positions": [3], "df": 1},
    {"word": "dogs", "doc_id": 2, "positions": [4], "df": 1},
    {"word": "and", "doc_id": 2, "positions": [5], "df": 1},
    {"word": "cats", "doc_id": 2, "positions": [6], "df": 1},
    {"word": "über", "doc_id": 4, "positions": [0], "df": 1},
    {"word": "the", "doc_id": 4, "positions": [1], "df": 2},
    {"word": "dog", "doc_id": 4, "positions": [2], "df": 2},
]

DOCUMENTS = [
    {"doc_id": 1, "ts": 0, "words": 5, "new_words": 5},
    {"doc_id": 2, "ts": 10, "words": 6, "new_words": 5},
    {"doc_id": 3, "ts": 20, "words": 0, "new_words": 0},
    {"doc_id": 4, "ts": 30, "words": 3, "new_words": 1},
]


@PIPELINES
def test_sources_and_sinks(pipeline):
    assert pipeline.graph.sources == ["docs"]
    assert sorted(pipeline.graph.sinks) == ["docs", "index"]


@PIPELINES
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("arrival", [DOCS, DOCS[::-1], [DOCS[2], DOCS[3], DOCS[0], DOCS[1]]],
                         ids=["in_order", "reversed", "shuffled"])
def test_hand_made_documents(pipeline, mode, arrival):
    result = fs.run(pipeline.graph, {"docs": arrival}, mode=mode, reorder_latency=30)
    assert result.outputs == {"index": INDEX, "docs": DOCUMENTS}
    assert result.late == []


def test_plain_program_gives_the_same_sinks():
    assert tuned.in_order_index([payload for _, payload in DOCS]) == {"index": INDEX, "docs": DOCUMENTS}


def words(count, offset=0):
    letters = ("".join(p) for p in itertools.product(string.ascii_lowercase, repeat=3))
    return list(itertools.islice(letters, offset, offset + count))


@PIPELINES
@pytest.mark.parametrize("mode", MODES)
def test_long_documents_span_every_collector_level(pipeline, mode):
    """More distinct words than the tuned variant's collector tree has leaves (FAN_IN ** LEVELS), with late shared
    words."""
    size = tuned.FAN_IN ** tuned.LEVELS + 3
    docs = [
        doc(0, 1, " ".join(words(size))),
        doc(5, 2, " ".join(words(40, offset=size - 20))),
        doc(9, 3, " ".join(words(size + 7, offset=30) * 2)),
    ]
    result = fs.run(pipeline.graph, {"docs": docs[::-1]}, mode=mode, reorder_latency=10)
    assert result.outputs == reference_run(pipeline.graph, {"docs": docs})
    assert result.outputs["docs"] == [
        {"doc_id": 1, "ts": 0, "words": size, "new_words": size},
        {"doc_id": 2, "ts": 5, "words": 40, "new_words": 20},
        {"doc_id": 3, "ts": 9, "words": size + 7, "new_words": 17},
    ]
    assert result.outputs["index"][-1]["positions"] == [size + 6, 2 * size + 13]
    assert result.outputs == tuned.in_order_index([payload for _, payload in docs])


VOCABULARY = words(3 * tuned.FAN_IN)


@st.composite
def document_text(draw) -> str:
    """Up to 2 * FAN_IN + 4 distinct words, so that a document can span several collector nodes, from a stretch
    of a small vocabulary that other documents overlap, in a drawn order, some repeated."""
    size = draw(st.integers(0, 2 * tuned.FAN_IN + 4))
    start = draw(st.integers(0, len(VOCABULARY) - size))
    distinct = VOCABULARY[start:start + size]
    turn = draw(st.integers(0, max(size - 1, 0)))
    distinct = distinct[turn:] + distinct[:turn]
    repeats = draw(st.lists(st.sampled_from(distinct), max_size=4)) if distinct else []
    return " ".join(distinct + repeats)


@st.composite
def documents_in_order(draw):
    """A few documents at strictly increasing times."""
    texts = draw(st.lists(document_text(), min_size=3, max_size=8))
    steps = draw(st.lists(st.integers(1, 3), min_size=len(texts), max_size=len(texts)))
    return [doc(sum(steps[:i + 1]), i, text) for i, text in enumerate(texts)]


@PIPELINES
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_disorder_gives_what_the_plain_program_gives_in_order(pipeline, mode, data):
    """The tuned variant's collector node needs only its new words' parts and its last one, which it knows by its
    index: this holds only if each node sees its parts in event-time order whatever the arrival order, as the
    engine promises."""
    docs = data.draw(documents_in_order())
    arrival = data.draw(disordered(docs, reorder_latency=12))
    assume(arrival != docs)
    result = fs.run(pipeline.graph, {"docs": arrival}, mode=mode, reorder_latency=12, changes=mode == "optimistic")
    assert result.outputs == tuned.in_order_index([payload for _, payload in docs])
    if mode == "optimistic":
        check_changelog(result, {"docs": arrival})


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_tuned_variant_gives_the_examples_outputs_even_with_late_documents(data):
    """Exactly the same records in the same order, on the same arrival, with a reorder latency that can make some
    documents late (both drop the same ones)."""
    docs = data.draw(documents_in_order())
    arrival = data.draw(disordered(docs, reorder_latency=20))
    reorder_latency = data.draw(st.integers(0, 12))
    plain, fast = (fs.run(pipeline.graph, {"docs": arrival}, reorder_latency=reorder_latency)
                   for pipeline in (example, tuned))
    assert fast.outputs == plain.outputs
    assert fast.late == plain.late


PAGES = 100
TEXT_CHARS = 5000  # long pages cut short to keep the test fast; the test above covers long documents
SEED = 26  # with these pages, one document arrives later than the reorder latency


@pytest.fixture(scope="module")
def wiki_documents():
    if not SAMPLE.exists():
        pytest.skip(f"sample dump not found at {SAMPLE}")
    pages = itertools.islice(iter_pages(SAMPLE), PAGES)
    return [{"ts": i * 50, **page, "text": page["text"][:TEXT_CHARS]} for i, page in enumerate(pages)]


@PIPELINES
@pytest.mark.parametrize("mode", MODES)
def test_wikipedia_sample_with_disorder_matches_in_order_run(wiki_documents, pipeline, mode):
    arrival = disorder_events(wiki_documents, percent=30, stddev_ms=1000, seed=SEED)
    # Five pages a batch: the disorder reaches across batches, so the optimistic mode has late pages to retract.
    result = fs.run(pipeline.graph, {"docs": [(e["ts"], e) for e in arrival]}, mode=mode, reorder_latency=3000,
                    batch_size=5)
    late = {letter["payload"]["doc_id"] for letter in result.late}
    assert len(late) == 1
    kept = [(e["ts"], e) for e in wiki_documents if e["doc_id"] not in late]
    assert result.outputs == reference_run(pipeline.graph, {"docs": kept})
    assert result.outputs == tuned.in_order_index([payload for _, payload in kept])
    assert len(result.outputs["docs"]) == PAGES - 1
    if mode == "optimistic":
        assert result.metrics["tombstones"] > 0
