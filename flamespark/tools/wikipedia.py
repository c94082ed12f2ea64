"""Turn a MediaWiki XML export dump (a Wikipedia dump) into a JSONL stream of document events.

    python -m flamespark.tools.wikipedia enwiki-latest-pages-articles1.xml.bz2 --out wiki.jsonl
    python -m flamespark.tools.wikipedia --synthetic 10000 --out synth.jsonl

Each ``<page>`` of the dump becomes one line of JSON, in file order::

    {"ts": i * interval_ms, "doc_id": <page id>, "title": ..., "text": ...}

where ``text`` is the wikitext of the page's latest revision.  The events are
in timestamp order; feed them through ``flamespark disorder`` to get an
out-of-order stream.  A paced run offers its events at a rate whatever their
event time, so for one at R documents a second, ``--rate R`` spaces them
1000 / R ms apart: their event time then keeps up with the clock, as a live
stream's does (see ``flamespark.tools.pace``).

With ``--synthetic N`` no dump is needed: N made-up documents whose word
frequencies follow Zipf's law are generated instead (seeded, reproducible).

Besides the standard library it needs numpy (only for ``--synthetic``) and
flamespark's option types, pacing and atomic file writer.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import io
import json
import os
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from typing import IO, Callable, Iterable, Iterator

from flamespark.io.atomic import replacing
from flamespark.tools.arguments import non_negative_int, positive_float, positive_int
from flamespark.tools.pace import real_time_interval_ms

__all__ = [
    "DumpError",
    "NoDocumentsError",
    "iter_pages",
    "synthetic_documents",
    "write_events",
    "main",
]

DEFAULT_INTERVAL_MS = 50
DEFAULT_SEED = 0
PROGRESS_EVERY = 1000
STDIN_NAME = "-"

_BZ2_MAGIC = b"BZh"
_GZIP_MAGIC = b"\x1f\x8b"


class DumpError(Exception):
    """A dump could not be read; the message is one sentence naming the file."""


class NoDocumentsError(ValueError):
    """:func:`write_events` was given an empty sequence of documents."""


# --------------------------------------------------------------------------
# Reading MediaWiki dumps
# --------------------------------------------------------------------------

def _local(tag: object) -> str:
    """``{http://www.mediawiki.org/xml/export-0.10/}page`` -> ``page``."""
    if not isinstance(tag, str):  # comments / processing instructions
        return ""
    return tag.rpartition("}")[2]


def _open_binary(path: str | os.PathLike[str],
                 stack: contextlib.ExitStack) -> tuple[IO[bytes], str]:
    """Open *path* (or ``-`` for stdin) as a decompressed binary stream.

    Compression is detected from the first bytes, not the file name, so a
    bz2 file named ``.xml`` still works.  Everything opened is registered
    with *stack* for closing.  Returns the stream and a display name for
    error messages.
    """
    if str(path) == STDIN_NAME:
        name = "<stdin>"
        raw = sys.stdin.buffer
        if not hasattr(raw, "peek"):
            raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    else:
        name = str(path)
        try:
            raw = stack.enter_context(open(path, "rb"))
        except FileNotFoundError:
            raise DumpError(f"{name}: no such file.") from None
        except IsADirectoryError:
            raise DumpError(f"{name} is a directory, not a dump file.") from None
        except OSError as exc:
            raise DumpError(
                f"{name} cannot be opened: {exc.strerror or exc}.") from None
    try:
        head = raw.peek(3)[:3]
    except OSError as exc:
        raise DumpError(f"{name} cannot be read: {exc.strerror or exc}.") from None
    if head.startswith(_BZ2_MAGIC):
        return stack.enter_context(bz2.BZ2File(raw)), name
    if head.startswith(_GZIP_MAGIC):
        return stack.enter_context(gzip.GzipFile(fileobj=raw)), name
    return raw, name


def _parse_timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value


_NO_TIMESTAMP = datetime.min.replace(tzinfo=timezone.utc)


def iter_pages(path: str | os.PathLike[str]) -> Iterator[dict]:
    """Yield ``{"doc_id", "title", "text"}`` for every ``<page>`` in a dump.

    *path* may be plain XML, bz2 or gzip, or ``-`` for stdin.  The XML is
    streamed with :func:`xml.etree.ElementTree.iterparse` over the binary
    stream, so expat honours whatever encoding the XML declaration names
    (UTF-8, UTF-16, ISO-8859-1, ...).  Elements are cleared as soon as they
    are used, so memory stays flat however large the dump is; even a page with
    thousands of revisions only keeps the best revision's text.

    Tag names are matched on their local part, so any export schema version
    (``export-0.3`` ... ``export-0.11``) or none at all is accepted.

    ``text`` is the text of the revision with the greatest ``<timestamp>``
    (ties and timestamp-less revisions: the later one in the file wins); a
    page without revisions or with deleted text gets ``""``.

    Raises :class:`DumpError` for unreadable, non-XML, truncated or corrupt
    input, or a page without an integer ``<id>``.  Pages already yielded
    before such an error stay yielded; callers that need all-or-nothing
    output (like :func:`write_events`) must handle that.
    """
    with contextlib.ExitStack() as stack:
        stream, name = _open_binary(path, stack)
        yield from _parse_pages(stream, name)


def _parse_pages(stream: IO[bytes], name: str) -> Iterator[dict]:
    """Translate low-level read/parse failures into :class:`DumpError`."""
    try:
        yield from _iter_pages_from(stream, name)
    except ET.ParseError as exc:
        raise DumpError(
            f"{name} is not a well-formed XML dump ({exc}).") from None
    except EOFError:
        raise DumpError(
            f"{name} is truncated (the compressed stream ends early).") from None
    except OSError as exc:  # bz2/gzip "Invalid data stream", bad CRC, I/O
        raise DumpError(f"{name} cannot be read ({exc}).") from None
    except UnicodeError as exc:
        raise DumpError(f"{name} has an undecodable encoding ({exc}).") from None


def _iter_pages_from(stream: IO[bytes], name: str) -> Iterator[dict]:
    depth = 0
    root: ET.Element | None = None
    page_depth = -1
    # Best revision seen so far in the current page: (key, text).
    best_key: tuple[int, datetime] | None = None
    best_text = ""
    pages = 0

    for event, elem in ET.iterparse(stream, events=("start", "end")):
        if event == "start":
            depth += 1
            if root is None:
                root = elem
            elif page_depth < 0 and depth == 2 and _local(elem.tag) == "page":
                page_depth = depth
                best_key, best_text = None, ""
            continue

        # event == "end"
        tag = _local(elem.tag)
        if page_depth > 0 and depth == page_depth + 1 and tag == "revision":
            ts_text = None
            text = None
            for child in elem:
                ctag = _local(child.tag)
                if ctag == "timestamp":
                    ts_text = child.text
                elif ctag == "text":
                    text = child.text
            stamp = _parse_timestamp(ts_text)
            key = (1, stamp) if stamp is not None else (0, _NO_TIMESTAMP)
            if best_key is None or key >= best_key:
                best_key, best_text = key, text or ""
            elem.clear()  # drop the (possibly huge) text right away
        elif depth == page_depth and tag == "page":
            pages += 1
            yield _page_record(elem, best_text, name, pages)
            page_depth = -1
            best_key, best_text = None, ""
            if root is not None:
                root.clear()  # forget finished pages entirely
        depth -= 1


def _page_record(page: ET.Element, text: str, name: str, number: int) -> dict:
    title = None
    raw_id = None
    for child in page:
        ctag = _local(child.tag)
        if ctag == "title" and title is None:
            title = child.text or ""
        elif ctag == "id" and raw_id is None:
            raw_id = child.text
    label = f"page {number}" + (f" ({title!r})" if title else "")
    if raw_id is None:
        raise DumpError(f"{name}: {label} has no <id> element.")
    try:
        doc_id = int(raw_id.strip())
    except ValueError:
        raise DumpError(
            f"{name}: {label} has a non-integer <id> {raw_id!r}.") from None
    return {"doc_id": doc_id, "title": title or "", "text": text}


# --------------------------------------------------------------------------
# Synthetic documents
# --------------------------------------------------------------------------

_ONSETS = ["b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t",
           "v", "z", "br", "dr", "fl", "gr", "kl", "pr", "sk", "st", "tr", "sh",
           "ch", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "oo", "ou"]
_CODAS = ["", "", "", "n", "r", "l", "s", "m", "k", "nd", "st"]

DEFAULT_VOCABULARY = 5000
DEFAULT_ZIPF_EXPONENT = 1.1


def _make_vocabulary(rng, size: int) -> list[str]:
    """*size* distinct pronounceable words of 1-4 consonant-vowel syllables.

    Sorted shortest first, so that (as in real languages) the most frequent
    ranks get the shortest words.
    """
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        batch = size - len(words) + 16
        syllables = rng.integers(1, 5, batch)
        onsets = rng.integers(0, len(_ONSETS), (batch, 4))
        vowels = rng.integers(0, len(_VOWELS), (batch, 4))
        codas = rng.integers(0, len(_CODAS), batch)
        for j in range(batch):
            word = "".join(_ONSETS[onsets[j, k]] + _VOWELS[vowels[j, k]]
                           for k in range(syllables[j])) + _CODAS[codas[j]]
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == size:
                    break
    words.sort(key=len)
    return words


def synthetic_documents(
    n: int,
    seed: int = DEFAULT_SEED,
    *,
    vocabulary_size: int = DEFAULT_VOCABULARY,
    exponent: float = DEFAULT_ZIPF_EXPONENT,
    mean_words: int = 200,
) -> Iterator[dict]:
    """Yield *n* made-up documents ``{"doc_id", "title", "text"}``.

    Words come from a seeded vocabulary of pronounceable nonsense words; the
    word of frequency rank *r* is drawn with probability proportional to
    ``1 / r**exponent`` (Zipf's law over a finite vocabulary).  Document
    lengths are log-normal around *mean_words* (at least 5 words).  The same
    ``(n, seed, ...)`` always gives the same documents, and documents are
    generated lazily, so large *n* costs no memory.
    """
    import numpy as np  # only the synthetic mode needs numpy

    if n < 0:
        raise ValueError(f"number of documents must be >= 0, not {n}")
    if vocabulary_size < 10:
        raise ValueError("vocabulary_size must be at least 10")
    rng = np.random.default_rng(seed)
    vocab = np.array(_make_vocabulary(rng, vocabulary_size), dtype=object)
    weights = 1.0 / np.arange(1, vocabulary_size + 1, dtype=float) ** exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    sigma = 0.6
    mu = np.log(mean_words) - sigma * sigma / 2  # so that E[length] ~ mean
    for i in range(n):
        length = max(5, int(rng.lognormal(mu, sigma)))
        ranks = np.searchsorted(cdf, rng.random(length), side="right")
        ranks = np.minimum(ranks, vocabulary_size - 1)  # guard rounding
        text = " ".join(vocab[ranks])
        title_words = vocab[rng.integers(0, vocabulary_size,
                                         int(rng.integers(1, 4)))]
        title = " ".join(w.capitalize() for w in title_words)
        yield {"doc_id": i + 1, "title": title, "text": text}


# --------------------------------------------------------------------------
# Writing events
# --------------------------------------------------------------------------

def write_events(
    documents: Iterable[dict],
    out_path: str | os.PathLike[str],
    interval_ms: int = DEFAULT_INTERVAL_MS,
    *,
    progress: Callable[[int], None] | None = None,
    progress_every: int = PROGRESS_EVERY,
) -> int:
    """Write ``{"ts", "doc_id", "title", "text"}`` JSON lines; return the count.

    The i-th document (from 0) gets ``ts = i * interval_ms``.  Output goes to
    a temporary file in the same directory that is renamed over *out_path*
    only after the last document was written, so a failure (including an
    exception raised while *documents* is being iterated) never leaves a
    partial file behind.  Zero documents is an error
    (:class:`NoDocumentsError`, a ``ValueError``), also
    with nothing written.  ``progress(count)`` is called every
    *progress_every* documents.
    """
    if interval_ms < 0:
        raise ValueError(f"interval_ms must be >= 0, not {interval_ms}")
    count = 0
    with replacing(out_path) as temporary, open(temporary, "w", encoding="utf-8", newline="\n") as fh:
        for doc in documents:
            event = {
                "ts": count * interval_ms,
                "doc_id": doc["doc_id"],
                "title": doc["title"],
                "text": doc["text"],
            }
            fh.write(json.dumps(event, ensure_ascii=False))
            fh.write("\n")
            count += 1
            if progress is not None and count % progress_every == 0:
                progress(count)
        if count == 0:
            raise NoDocumentsError("no documents to write")
    return count


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m flamespark.tools.wikipedia",
        description=(
            "Convert a MediaWiki XML export dump (plain, .bz2 or .gz; in any\n"
            "encoding its XML declaration names, e.g. UTF-8 or UTF-16) into a\n"
            "JSONL event stream with one line per <page>, in file order:\n\n"
            '  {"ts": i * MS, "doc_id": <page id>, "title": ..., '
            '"text": <latest revision>}\n\n'
            "With --synthetic N, generate N made-up documents whose word\n"
            "frequencies follow Zipf's law instead (no download needed)."),
        epilog=(
            "examples:\n"
            "  %(prog)s enwiki-latest-pages-articles1.xml.bz2 --out wiki.jsonl\n"
            "  %(prog)s --synthetic 10000 --seed 7 --out synth.jsonl\n"
            "  %(prog)s --synthetic 200 --rate 10 --out synth-10.jsonl\n"
            "  bzcat dump.xml.bz2 | %(prog)s - --out wiki.jsonl\n\n"
            "The output is written atomically (temp file + rename): on error\n"
            "nothing is written and the exit status is 1.\n"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dump", nargs="?", metavar="DUMP",
        help="MediaWiki XML dump (.xml, .xml.bz2 or .xml.gz; '-' = stdin). "
             "Omit when using --synthetic.")
    parser.add_argument(
        "--out", "-o", required=True, metavar="EVENTS.jsonl",
        help="output JSONL file (replaced atomically)")
    spacing = parser.add_mutually_exclusive_group()
    spacing.add_argument(
        "--interval-ms", type=non_negative_int, default=DEFAULT_INTERVAL_MS,
        metavar="MS",
        help="event-time spacing between consecutive pages "
             "(default: %(default)s)")
    spacing.add_argument(
        "--rate", type=positive_float, metavar="DOCS_PER_S",
        help="space the pages 1000 / DOCS_PER_S ms apart, so that offered "
             "at DOCS_PER_S a second (flamespark bench --rate) their event "
             "time keeps up with the clock")
    parser.add_argument(
        "--synthetic", type=positive_int, metavar="N",
        help="generate N synthetic documents with Zipf word frequencies "
             "instead of reading a dump")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, metavar="S",
        help="random seed for --synthetic (default: %(default)s)")
    return parser


def _progress_printer(stream: IO[str]) -> Callable[[int], None] | None:
    if not stream.isatty():
        return None

    def show(count: int) -> None:
        stream.write(f"\r{count:,} pages ...")
        stream.flush()

    return show


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.synthetic is None and args.dump is None:
        parser.error("give a DUMP file or --synthetic N")
    if args.synthetic is not None and args.dump is not None:
        parser.error("give either a DUMP file or --synthetic N, not both")

    if args.synthetic is not None:
        documents: Iterable[dict] = synthetic_documents(args.synthetic, args.seed)
        source = f"synthetic (seed {args.seed})"
    else:
        documents = iter_pages(args.dump)
        source = "<stdin>" if args.dump == STDIN_NAME else args.dump

    progress = _progress_printer(sys.stderr)
    try:
        interval_ms = args.interval_ms if args.rate is None else real_time_interval_ms(args.rate)
        count = write_events(documents, args.out, interval_ms,
                             progress=progress)
    except DumpError as exc:
        _end_progress(progress, sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except NoDocumentsError:
        _end_progress(progress, sys.stderr)
        print(f"error: {source} contains no <page> elements; "
              f"{args.out} was not written.", file=sys.stderr)
        return 1
    except OSError as exc:  # output side: missing directory, disk full, ...
        _end_progress(progress, sys.stderr)
        print(f"error: cannot write {args.out}: {exc.strerror or exc}.",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _end_progress(progress, sys.stderr)
        print(f"interrupted; {args.out} was not written.", file=sys.stderr)
        return 130
    _end_progress(progress, sys.stderr)
    noun = "document" if args.synthetic is not None else "page"
    print(f"wrote {count} events ({noun}s from {source}) to {args.out}",
          file=sys.stderr)
    return 0


def _end_progress(progress: Callable[[int], None] | None, stream: IO[str]) -> None:
    if progress is not None:
        stream.write("\r\033[K")
        stream.flush()


if __name__ == "__main__":
    sys.exit(main())
