"""Pipelines the tests run on every engine, with input generators for them."""
import flamespark as fs


def running_sum_update(state, value):
    total = (state or 0) + value
    return total, [total]


def running_sum():
    g = fs.Graph("running_sum")
    g.source("numbers").stateful(key=lambda v: v % 3, update=running_sum_update, name="sum").sink("sums")
    return g


def window3():
    g = fs.Graph("window3")
    g.source("numbers").group_by(key=lambda v: v % 2, window=3, name="parity").sink("windows")
    return g


def _count_update(state, value):
    count = (state or 0) + 1
    return count, [[value, count]]


def _max_gap_update(state, pair):
    value, count = pair
    previous = state[0] if state else None
    gap = None if previous is None else value - previous
    best = gap if state is None or state[1] is None or (gap is not None and gap > state[1]) else state[1]
    return [value, best], [[value, count, best]]


def chained_stateful():
    """Two stateful operators, with a branch between them that sends the odd counts to a sink of their own."""
    g = fs.Graph("chained")
    counted = g.source("numbers").stateful(key=lambda v: v % 2, update=_count_update, name="count")
    evens, odds = counted.branch(lambda pair: pair[1] % 2 == 0, name="even_count")
    evens.stateful(key=lambda pair: pair[1] % 3, update=_max_gap_update, name="gaps").sink("gap_records")
    odds.sink("odd_counts")
    return g


def _tally_in_place(state, value):
    """Counts and sums a key's values in a dict it changes in place, and emits that dict: `update` must not
    change what it is given, but natural Python does, and the outputs must be those of an in-order run all the
    same."""
    if state is None:
        state = {"count": 0, "total": 0}
    state["count"] += 1
    state["total"] += value
    return state, [state]


def tally_in_place():
    g = fs.Graph("tally_in_place")
    g.source("numbers").stateful(key=lambda v: v % 2, update=_tally_in_place, name="tally").sink("tallies")
    return g


def _split_document(doc):
    words = doc["words"]
    return [{"doc": doc["id"], "word": w, "parts": len(words)} for w in words]


def _posting_update(state, part):
    df = (state or 0) + 1
    return df, [{"doc": part["doc"], "word": part["word"], "df": df, "parts": part["parts"]}]


def _collect_update(state, part):
    seen = (state or []) + [[part["word"], part["df"]]]
    if len(seen) < part["parts"]:
        return seen, []
    return None, [{"doc": part["doc"], "words": sorted(seen)}]


def fanout_collector():
    """flat_map into per-word postings, then a per-document collector that needs every part."""
    g = fs.Graph("fanout")
    (
        g.source("docs")
        .flat_map(_split_document, name="split")
        .stateful(key=lambda part: part["word"], update=_posting_update, name="postings")
        .stateful(key=lambda posting: posting["doc"], update=_collect_update, name="collect")
        .sink("documents")
    )
    return g


def two_sources():
    g = fs.Graph("two_sources")
    left = g.source("left").map(lambda v: ["L", v], name="tag_left")
    right = g.source("right").map(lambda v: ["R", v], name="tag_right")
    (
        left.union(right, name="both")
        .stateful(key=lambda p: p[1] % 2, update=lambda s, p: ((s or 0) + p[1], [[p[0], (s or 0) + p[1]]]), name="mix")
        .sink("mixed")
    )
    return g


CHUNK = 2


def _count_chunk_update(state, posting):
    """Count a document's postings by chunk of CHUNK; the chunk's last posting emits the chunk's dfs."""
    dfs = (state or []) + [posting["df"]]
    chunk = posting["index"] // CHUNK
    if len(dfs) < min(CHUNK, posting["parts"] - chunk * CHUNK):
        return dfs, []
    return None, [{"doc": posting["doc"], "chunk": chunk, "dfs": sorted(dfs), "parts": posting["parts"]}]


def _collect_chunks_update(state, chunk):
    chunks = (state or []) + [[chunk["chunk"], chunk["dfs"]]]
    if len(chunks) < -(-chunk["parts"] // CHUNK):
        return chunks, []
    return None, [{"doc": chunk["doc"], "chunks": sorted(chunks)}]


def _split_numbered(doc):
    return [dict(part, index=i) for i, part in enumerate(_split_document(doc))]


def _posting_update_numbered(state, part):
    df, outputs = _posting_update(state, part)
    return df, [dict(output, index=part["index"]) for output in outputs]


def sharded_collectors():
    """As `fanout_collector`, collecting in two levels, by chunk then by document, both sharded by document: on
    Spark the two levels run in one stage."""
    g = fs.Graph("sharded")
    (
        g.source("docs")
        .flat_map(_split_numbered, name="numbered_split")
        .stateful(key=lambda part: part["word"], update=_posting_update_numbered, name="numbered_postings")
        .stateful(key=lambda p: [p["doc"], p["index"] // CHUNK], update=_count_chunk_update, name="chunks",
                  shard=lambda key: key[0])
        .stateful(key=lambda chunk: chunk["doc"], update=_collect_chunks_update, name="collect_chunks",
                  shard=lambda key: key)
        .sink("chunked_documents")
    )
    return g
