"""The inverted index of examples/inverted_index.py, tuned: the workload of the core benchmark.

It computes what the example computes (tests/engine/test_inverted_index.py checks
both give the same outputs), with less work per document. Source `docs`
takes `{"ts", "doc_id", "title", "text"}` events (see
`flamespark.tools.wikipedia`). Two sinks:

- `index`: per document and distinct word, `{"word", "doc_id", "positions",
  "df"}`, where `df` counts the documents containing the word up to and
  including this one in event-time order;
- `docs`: per document, `{"doc_id", "ts", "words", "new_words"}`: its
  number of distinct words and how many of them it is the first to contain.

Per word, one stateful operator counts documents for `df` and makes its
posting, for the `index` sink, and, where the collectors need it, a part
tagged `new` (first to contain the word) or not (a branch sends each on its
way). The collectors count a document's new words in a tree (`FAN_IN` parts
a node, `LEVELS` levels, then one collector per document). A stateful
operator applies its key's items in event-time order, and one document's
parts in the order of their index (their words' first occurrence), so a
node knows it is complete when its last part comes (the one whose index
ends its group): it needs only that part and those of new words, under a
third of all parts on the Wikipedia sample. A late
document changes `df` of every later document with its words, but `new` of
at most the next one; a replay retracts only the outputs that change, so
few changes reach the collectors, and each replays one node of at most
`FAN_IN` parts, even for documents of thousands of words. Every level is
sharded by document, so on Spark the whole tree runs in one stage.

Between operators a part is a list, not a dict: every item is encoded on its
way (and kept until a punctuation passes it), and a list of the same fields
encodes faster and holds less. The sinks' records are dicts.

`in_order_index` computes the same two sinks as a plain Python program over
documents given in event-time order: the yardstick of the core benchmark.

    flamespark run benchmarks/inverted_index_tuned.py --input docs=events.jsonl --out out/
"""
import re
from functools import partial

import flamespark as fs

WORD = re.compile(r"[^\W\d_]+")
FAN_IN = 32
LEVELS = 1


def tokens(text: str) -> list:
    return WORD.findall(text.lower())


def split_document(doc) -> list:
    """One part per distinct word, in order of first occurrence, numbered `index`, with the document's count of
    distinct words: `[word, doc_id, positions, ts, words, index]`.

    >>> split_document({"ts": 5, "doc_id": 7, "text": "To be, or not to be"})
    [['to', 7, [0, 4], 5, 4, 0], ['be', 7, [1, 5], 5, 4, 1], ['or', 7, [2], 5, 4, 2], ['not', 7, [3], 5, 4, 3]]
    """
    positions = {}
    for at, word in enumerate(tokens(doc["text"])):
        positions.setdefault(word, []).append(at)
    doc_id, ts, words = doc["doc_id"], doc["ts"], len(positions)
    return [[word, doc_id, where, ts, words, index] for index, (word, where) in enumerate(positions.items())]


def count_documents(df, part):
    """Per word, the state is the number of documents seen so far: the part's posting, then, if the word is new
    or the part is the last of its collector node (`ends_node`), the part for the collectors,
    `[doc_id, ts, words, index, new]` with `new` 1 if no earlier document has the word.

    >>> count_documents(None, ["be", 7, [1, 5], 5, 4, 1])
    (1, [{'word': 'be', 'doc_id': 7, 'positions': [1, 5], 'df': 1}, [7, 5, 4, 1, 1]])
    >>> count_documents(1, ["be", 8, [0], 6, 2, 0])
    (2, [{'word': 'be', 'doc_id': 8, 'positions': [0], 'df': 2}])
    """
    word, doc_id, positions, ts, words, index = part
    df = (df or 0) + 1
    posting = {"word": word, "doc_id": doc_id, "positions": positions, "df": df}
    if df == 1 or ends_node(index, words):
        return df, [posting, [doc_id, ts, words, index, 1 if df == 1 else 0]]
    return df, [posting]


def is_posting(record) -> bool:
    """A posting (a dict), for the index; else a part for the collectors."""
    return type(record) is dict


def nodes(words: int, level: int) -> int:
    """How many collector nodes a document of `words` words has at `level` (level 0: its postings): each level has
    one node per FAN_IN of the level below, and ceilings of ceilings are the ceiling of the whole division."""
    return -(-words // FAN_IN**level)


def ends_node(index: int, count: int) -> bool:
    """Whether part `index` of `count` at one level is the last its node gathers: the last of its FAN_IN, or of
    all of them."""
    return index % FAN_IN == FAN_IN - 1 or index == count - 1


def collect(level, new, part):
    """Sum a node's new words from its parts (`[doc_id, ts, words, index, new]`, as `count_documents` makes them);
    at its last part, emit the sum, a part of the level above, and forget it.

    Below the top (`level <= LEVELS`) a node gathers up to FAN_IN parts of the
    level under it; the top node gathers all of them for the document and
    emits its record for the `docs` sink. A document of 40 words, new ones
    at 3 and 31 (31 ends the first node), and its top node's two parts:

    >>> new, _ = collect(1, None, [7, 5, 40, 3, 1])
    >>> new, collect(1, new, [7, 5, 40, 31, 1])
    (1, (None, [[7, 5, 40, 0, 2]]))
    >>> new, _ = collect(LEVELS + 1, None, [7, 5, 40, 0, 2])
    >>> collect(LEVELS + 1, new, [7, 5, 40, 1, 0])
    (None, [{'doc_id': 7, 'ts': 5, 'words': 40, 'new_words': 2}])
    """
    doc_id, ts, words, index, part_new = part
    new = (new or 0) + part_new
    below = nodes(words, level - 1)
    if level > LEVELS:
        if index < below - 1:
            return new, []
        return None, [{"doc_id": doc_id, "ts": ts, "words": words, "new_words": new}]
    if not ends_node(index, below):
        return new, []
    return None, [[doc_id, ts, words, index // FAN_IN, new]]


def document_of(key):
    """A collector key's document (a node's key is `[doc_id, node]`, the top's is the doc_id): every level of a
    document's tree is kept in one shard, so on Spark the levels run in one stage."""
    return key[0] if isinstance(key, list) else key


def has_no_words(doc) -> bool:
    """Whether `tokens` finds nothing in the document. Lowercasing maps letters to letters and nothing else to a
    letter, so the text is searched as it is; the first match settles it, and no list is built."""
    return WORD.search(doc["text"]) is None


def empty_document(doc) -> dict:
    return {"doc_id": doc["doc_id"], "ts": doc["ts"], "words": 0, "new_words": 0}


def build() -> fs.Graph:
    g = fs.Graph("inverted_index")
    docs = g.source("docs")
    parts = docs.flat_map(split_document, name="split")
    counted = parts.stateful(key=lambda part: part[0], update=count_documents, name="postings")
    postings, parts = counted.branch(is_posting, name="postings_or_parts")
    postings.sink("index")
    for level in range(1, LEVELS + 1):
        parts = parts.stateful(key=lambda part: [part[0], part[3] // FAN_IN], update=partial(collect, level),
                               name=f"collect_{level}", shard=document_of)
    empty = docs.filter(has_no_words, name="no_words").map(empty_document, name="empty_document")
    (
        parts.stateful(key=lambda part: part[0], update=partial(collect, LEVELS + 1), name="collect",
                       shard=document_of)
        .union(empty, name="document_records")
        .sink("docs")
    )
    return g


graph = build()


def in_order_index(docs) -> dict:
    """Both sinks for `docs` in event-time order, with plain dicts and no framework.

    >>> in_order_index([{"ts": 0, "doc_id": 7, "text": "to be or not to be"}])["docs"]
    [{'doc_id': 7, 'ts': 0, 'words': 4, 'new_words': 4}]
    """
    df = {}
    index, documents = [], []
    for doc in docs:
        positions = {}
        for at, word in enumerate(tokens(doc["text"])):
            positions.setdefault(word, []).append(at)
        new_words = 0
        for word, where in positions.items():
            count = df.get(word, 0) + 1
            df[word] = count
            if count == 1:
                new_words += 1
            index.append({"word": word, "doc_id": doc["doc_id"], "positions": where, "df": count})
        documents.append({"doc_id": doc["doc_id"], "ts": doc["ts"], "words": len(positions), "new_words": new_words})
    return {"index": index, "docs": documents}
