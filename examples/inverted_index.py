"""An inverted index over a stream of documents, as in the FlameStream paper.

Source `docs` takes `{"ts", "doc_id", "title", "text"}` events (`python -m
flamespark.tools.wikipedia` makes them from a Wikipedia dump). Two sinks:

- `index`: per document and distinct word, `{"word", "doc_id", "positions",
  "df"}`, where `df` counts the documents containing the word up to and
  including this one in event-time order;
- `docs`: per document, `{"doc_id", "ts", "words", "new_words"}`: its number
  of distinct words and how many of them no earlier document contains.

Both depend on the order of the documents: one that arrives late changes
`df` in every later document that shares a word with it, and may take a new
word away from one of them. FlameSpark works on documents as they come and,
when one arrives late, retracts the outputs it changes and makes them anew;
what the sinks end with is what a run over the documents in event-time
order gives.

    flamespark run examples/inverted_index.py --input docs=events.jsonl --out out/ --engine local
"""
import re

import flamespark as fs

WORD = re.compile(r"[^\W\d_]+")


def word_occurrences(doc) -> list:
    """One record per distinct word of a document, in the order of their first occurrence: where the word occurs,
    and how many distinct words the document has (which its counter below needs to know when it is done).

    >>> for occurrence in word_occurrences({"ts": 5, "doc_id": 7, "text": "To be, or not to be"}):
    ...     print(occurrence)
    {'word': 'to', 'doc_id': 7, 'ts': 5, 'positions': [0, 4], 'words': 4}
    {'word': 'be', 'doc_id': 7, 'ts': 5, 'positions': [1, 5], 'words': 4}
    {'word': 'or', 'doc_id': 7, 'ts': 5, 'positions': [2], 'words': 4}
    {'word': 'not', 'doc_id': 7, 'ts': 5, 'positions': [3], 'words': 4}
    """
    positions = {}
    for at, word in enumerate(WORD.findall(doc["text"].lower())):
        positions.setdefault(word, []).append(at)
    return [{"word": word, "doc_id": doc["doc_id"], "ts": doc["ts"], "positions": where, "words": len(positions)}
            for word, where in positions.items()]


def count_documents(df, occurrence):
    """Per word, the state is how many documents contain it so far (in event-time order, whatever order they
    came in). An occurrence makes the word's posting for the index, and a tally for its document's counter
    that says whether the word is new.

    >>> count_documents(None, {"word": "be", "doc_id": 7, "ts": 5, "positions": [1, 5], "words": 4})
    (1, [{'word': 'be', 'doc_id': 7, 'positions': [1, 5], 'df': 1}, {'doc_id': 7, 'ts': 5, 'words': 4, 'new': 1}])
    >>> count_documents(1, {"word": "be", "doc_id": 8, "ts": 6, "positions": [0], "words": 2})
    (2, [{'word': 'be', 'doc_id': 8, 'positions': [0], 'df': 2}, {'doc_id': 8, 'ts': 6, 'words': 2, 'new': 0}])
    """
    df = (df or 0) + 1
    posting = {"word": occurrence["word"], "doc_id": occurrence["doc_id"], "positions": occurrence["positions"],
               "df": df}
    tally = {"doc_id": occurrence["doc_id"], "ts": occurrence["ts"], "words": occurrence["words"],
             "new": 1 if df == 1 else 0}
    return df, [posting, tally]


def is_posting(record) -> bool:
    return "df" in record


def count_new_words(counted, tally):
    """Per document, the state is how many of its words have been tallied and how many of them are new; once all
    are, the document's record goes out and its state is dropped (None).

    >>> counted, out = count_new_words(None, {"doc_id": 7, "ts": 5, "words": 2, "new": 1})
    >>> counted, out
    ({'tallied': 1, 'new': 1}, [])
    >>> count_new_words(counted, {"doc_id": 7, "ts": 5, "words": 2, "new": 0})
    (None, [{'doc_id': 7, 'ts': 5, 'words': 2, 'new_words': 1}])
    """
    counted = counted or {"tallied": 0, "new": 0}
    counted = {"tallied": counted["tallied"] + 1, "new": counted["new"] + tally["new"]}
    if counted["tallied"] < tally["words"]:
        return counted, []
    return None, [{"doc_id": tally["doc_id"], "ts": tally["ts"], "words": tally["words"], "new_words": counted["new"]}]


def has_no_words(doc) -> bool:
    return WORD.search(doc["text"]) is None


def empty_document(doc) -> dict:
    """The record of a document without words: no tally ever reaches its counter, so it goes to the sink
    directly."""
    return {"doc_id": doc["doc_id"], "ts": doc["ts"], "words": 0, "new_words": 0}


def build() -> fs.Graph:
    g = fs.Graph("inverted_index")
    docs = g.source("docs")
    counted = (docs.flat_map(word_occurrences, name="split")
               .stateful(key=lambda occurrence: occurrence["word"], update=count_documents, name="postings"))
    postings, tallies = counted.branch(is_posting, name="postings_or_tallies")
    postings.sink("index")
    empty = docs.filter(has_no_words, name="no_words").map(empty_document, name="empty_document")
    (
        tallies.stateful(key=lambda tally: tally["doc_id"], update=count_new_words, name="new_words")
        .union(empty, name="document_records")
        .sink("docs")
    )
    return g


graph = build()
