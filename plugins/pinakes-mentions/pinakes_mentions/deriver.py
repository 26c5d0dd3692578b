"""The ``mentions`` deriver: entity nodes, and the chunks that name them.

The *vocabulary* is every name some document contributes: its title, the
title without a trailing parenthetical, front-matter ``aliases`` (and, in the
``ner`` subclass, the names spaCy finds in its text). A chunk *mentions* a
name when its text (with its own heading) contains it, case-insensitively, on
word boundaries, whichever document the name came from; a name found only
inside a longer one ("Andy" in "Andy Summers") names someone else and does not
count. A document's chunks always mention its own title: once for being its
title, plus once per time their text names it. That turns Obsidian's "unlinked
mentions" into graph structure: the one free edge class that bridges documents
which share no folder, tag or link. On 2Wiki the two rules above
(longest match, title once plus mentions) were together worth ~2 points of
multi-hop R@2 and R@5 over the prototype's rules (docs/benchmarks.md).

Everything is incremental. The plugin keeps, in its own store tables, who
contributes which name (``entity_names``), which chunk names which key how
often (``entity_hits``), and each key's document frequency (``entity_keys``).
A sync re-matches only the changed documents plus, when the vocabulary
changed, the documents whose text names an added or removed name (found with
an FTS5 phrase query, not a scan), and hands those to core for re-derivation
through the ``affected`` hook.

**Hub cap.** A name mentioned by more documents than the cap (by default
0.2% of the documents, and never fewer than 12) gets no edges at all: the
reference prototype measured that without the cap entity edges *hurt*. The cap is re-checked every sync, so a name that
grows popular loses its edges and the documents naming it are re-derived.

**Weights.** ``count / mentions in the chunk`` (docs/design.md, "The graph"), times
``[graph] entity_weight`` (1): a chunk that names one entity three times and
another once gives them 0.75 and 0.25, so a list-like chunk naming forty
things spreads its weight thin. Entity nodes are not degree-damped by default:
the cap already removes the popular ones, and damping cost PPR 4–6 points on
2Wiki.

**Near-duplicates** ("Marie Curie", "Curie", "M. Curie"), when
``[graph] entity_alias_threshold`` is above 0: candidate pairs are names one
of whose words are all in the other (an initial written "M." matches a word:
cheap, indexed, and it keeps "John Smith" away from "John Brown"); a pair is kept
when the cosine of the two names' embeddings (the KB's embedder, cached by
content hash like chunk vectors) reaches the threshold. An alias is not a
merge, and not an entity ↔ entity edge: a chunk naming "Curie" gets an
``alias`` edge to the entity "Marie Curie" weighted by its mention weight ×
the similarity. Merging would be order-dependent and irreversible ("Curie"
is Pierre's name too); an entity ↔ entity edge would belong to no document,
so nothing would delete it when its reason goes away. An edge from the
mentioning chunk is owned by that chunk's document like every other edge, and
re-derived exactly when its document or one of the two names changes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinakes.dialects import doc_aliases
from pinakes.errors import ConfigError
from pinakes.graph import Changes, DocView, Edge, Node, chunk_node
from pinakes.sqlin import batches, marks
from pinakes.sqlin import rows as sqlrows
from pinakes.text import CJK_RE, STOPWORDS, fts_phrase

from .names import (
    Matcher,
    candidate_names,
    contains,
    fold,
    initials,
    mention_context,
    normalise,
    strip_qualifier,
    title_names,
    tokens,
    words,
)

__version__ = "0.1.0"

#: Bumped whenever the same input would derive different edges: part of the version, so
#: every store re-derives (a rebuild, free) instead of mixing old and new edges.
DERIVATION = 5
SCHEMA_NAME = "mentions"
SCHEMA_VERSION = "2"
SCHEMA = """
CREATE TABLE IF NOT EXISTS entity_names (     -- the vocabulary: who contributes which name
    key TEXT NOT NULL,
    doc INTEGER NOT NULL,
    source TEXT NOT NULL,                      -- 'title' | 'alias' | 'ner'
    label TEXT NOT NULL                        -- the surface form as written
);
CREATE INDEX IF NOT EXISTS entity_names_doc ON entity_names(doc);
CREATE INDEX IF NOT EXISTS entity_names_key ON entity_names(key);
CREATE TABLE IF NOT EXISTS entity_hits (      -- chunk `chunk` of `doc` names `key` `count` times
    doc INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    key TEXT NOT NULL,
    count INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_hits_doc ON entity_hits(doc);
CREATE INDEX IF NOT EXISTS entity_hits_key ON entity_hits(key);
CREATE TABLE IF NOT EXISTS entity_context (   -- the words next to `key`'s mentions in `chunk`
    doc INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    key TEXT NOT NULL,
    words TEXT NOT NULL                        -- space-separated content words (folded)
);
CREATE INDEX IF NOT EXISTS entity_context_doc ON entity_context(doc);
-- the bridges' read of the words next to given names in given documents (pinakes-ppr)
CREATE INDEX IF NOT EXISTS entity_context_doc_key ON entity_context(doc, key);
CREATE TABLE IF NOT EXISTS entity_keys (      -- one row per vocabulary key
    key TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    df INTEGER NOT NULL DEFAULT 0,             -- documents naming it
    capped INTEGER NOT NULL DEFAULT 0          -- 1: over the hub cap, no edges
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entity_tokens (    -- word -> key, for near-duplicate candidates
    token TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (token, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entity_aliases (   -- near-duplicate names, both directions
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    sim REAL NOT NULL,
    PRIMARY KEY (a, b)
) WITHOUT ROWID;
"""

#: Order of preference for the human-readable label of a key (PPR matches queries to it).
SOURCE_RANK = {"title": 0, "alias": 1, "ner": 2}
#: When a sync adds more names than this, scanning every chunk beats one FTS query per name.
FTS_LOOKUP_LIMIT = 200
#: Up to this much chunk text, names are looked up by substring instead of a full automaton.
SMALL_MATCH_CHARS = 20_000
#: Candidate blocks larger than this are skipped (a word shared by that many names says nothing).
MAX_BLOCK = 2000


@dataclass(frozen=True)
class Settings:
    """The ``[graph]`` keys that shape entity edges (shared by ``mentions`` and ``ner``).

    Every value is part of the deriver's version, so changing one rebuilds the
    (derived, free) graph rather than leaving it half old, half new.
    """

    hub_share: float = 0.002
    hub_min: int = 12
    alias_threshold: float = 0.0
    alias_max: int = 5
    damp: bool = False
    weight: float = 1.0

    @classmethod
    def from_config(cls, graph: dict[str, Any]) -> Settings:
        def num(key: str, default: float, kind: type) -> Any:
            value = graph.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(f"[graph] {key} should be a number >= 0, got {value!r}")
            if kind is int and value != int(value):
                raise ConfigError(f"[graph] {key} should be a whole number, got {value!r}")
            return kind(value)

        if num("entity_weight", cls.weight, float) <= 0:
            raise ConfigError("[graph] entity_weight should be above 0")
        damp = graph.get("entity_damp", cls.damp)
        if not isinstance(damp, bool):
            raise ConfigError(f"[graph] entity_damp should be true or false, got {damp!r}")
        return cls(
            hub_share=num("entity_hub_share", cls.hub_share, float),
            hub_min=num("entity_hub_min", cls.hub_min, int),
            alias_threshold=num("entity_alias_threshold", cls.alias_threshold, float),
            alias_max=num("entity_alias_max", cls.alias_max, int),
            damp=damp,
            weight=num("entity_weight", cls.weight, float),
        )

    def cap(self, n_docs: int) -> int:
        """Most documents a name may be mentioned by and still get edges."""
        return max(self.hub_min, math.floor(self.hub_share * n_docs))

    @property
    def fingerprint(self) -> str:
        return (f"cap={self.hub_share:g}/{self.hub_min},alias={self.alias_threshold:g}/"
                f"{self.alias_max},damp={int(self.damp)},weight={self.weight:g}")


def entity_node(key: str, label: str, damp: bool) -> Node:
    """The node of an entity: keyed by its normalised form, labelled as written."""
    return Node("entity", key, label or key, damp=damp)


class MentionsDeriver:
    """Derives ``mentions`` (and ``alias``) edges; see the module docstring.

    The instance registered by the plugin carries default settings; core asks
    it for a per-KB instance through :meth:`for_kb` (its ``[graph]`` settings
    and its embedder, for near-duplicates).
    """

    name = "mentions"
    #: On unless ``[graph] mentions = false``: with the ppr channel, title-mention entities
    #: pass the default-on gate on 2Wiki, docs-dev and the example KB (docs/benchmarks.md).
    default_enabled = True
    edge_kind = "mentions"

    def __init__(self, settings: Settings | None = None, kb: Any = None) -> None:
        self.settings = settings or Settings()
        self.kb = kb
        self.stats: dict[str, float] = {}

    @property
    def version(self) -> str:
        return f"{__version__}+d{DERIVATION}:{self.settings.fingerprint}"

    def for_kb(self, kb: Any) -> MentionsDeriver:
        """This deriver configured for ``kb`` (cheap: nothing is loaded here)."""
        return type(self)(Settings.from_config(kb.config.section("graph")), kb)

    # --- the vocabulary -------------------------------------------------------------

    def names(self, docs: Sequence[DocView], conn: sqlite3.Connection) -> list[tuple[str, int, str, str]]:
        """``(key, doc, source, label)`` of every name the given documents contribute.

        Subclasses add sources (the ``ner`` deriver adds spaCy's entities).
        """
        rows: list[tuple[str, int, str, str]] = []
        for doc in docs:
            seen: set[str] = set()
            for i, (key, label) in enumerate(title_names(doc.title)):
                if key not in seen:
                    seen.add(key)
                    rows.append((key, doc.key, "title" if i == 0 else "alias", label))
            # Front-matter ``aliases:``/``alias:`` (Obsidian), Logseq's ``alias::``: the
            # names the link resolver reads too (pinakes.dialects).
            for alias in doc_aliases(doc.front_matter):
                key = normalise(alias)
                if key and key not in seen:
                    seen.add(key)
                    rows.append((key, doc.key, "alias", " ".join(alias.split())))
        return rows

    # --- sync: which documents need re-deriving --------------------------------------

    def affected(self, changes: Changes, conn: sqlite3.Connection) -> set[int]:
        """Bring the entity tables up to date; return other documents to re-derive.

        Called by core once per sync, before any edge is forgotten or derived.
        """
        self.stats = {}
        changed = {d.key for d in changes.docs}
        removed = set(changes.removed)
        gone = changed | removed
        # 1. The vocabulary: replace the names of changed and removed documents.
        before_keys = _column(conn, "SELECT key FROM entity_names WHERE doc IN ({})", gone)
        _exec_in(conn, "DELETE FROM entity_names WHERE doc IN ({})", gone)
        new_names = self.names(changes.docs, conn)
        conn.executemany("INSERT INTO entity_names(key, doc, source, label) VALUES (?,?,?,?)",
                         new_names)
        touched_names = before_keys | {r[0] for r in new_names}
        present = _column(conn, "SELECT DISTINCT key FROM entity_names WHERE key IN ({})",
                          touched_names)
        known = _column(conn, "SELECT key FROM entity_keys WHERE key IN ({})", touched_names)
        added = present - known
        dropped = known - present
        labels = self._labels(conn, present)
        conn.executemany("INSERT INTO entity_keys(key, label) VALUES (?, ?)",
                         [(k, labels[k]) for k in sorted(added)])
        _exec_in(conn, "DELETE FROM entity_keys WHERE key IN ({})", dropped)
        relabel = [(labels[k], k) for k in sorted(present - added)]
        if relabel:
            # Labels are what PPR matches queries against: keep them current even for
            # documents that are not re-derived (a node's label is not an edge).
            conn.executemany("UPDATE entity_keys SET label = ? WHERE key = ? AND label != ?",
                             [(lab, k, lab) for lab, k in relabel])
            conn.executemany("UPDATE nodes SET label = ? WHERE kind = 'entity' AND key = ? "
                             "AND label != ?", [(lab, k, lab) for lab, k in relabel])
        # 2. Which documents to match again.
        n_docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        rematch = set(changed)
        rematch |= _column(conn, "SELECT DISTINCT doc FROM entity_hits WHERE key IN ({})", dropped)
        rematch |= self._naming(conn, added)
        rematch -= removed
        # 3. Hits.
        stale = rematch | removed
        touched = _column(conn, "SELECT DISTINCT key FROM entity_hits WHERE doc IN ({})", stale)
        _exec_in(conn, "DELETE FROM entity_hits WHERE doc IN ({})", stale)
        _exec_in(conn, "DELETE FROM entity_context WHERE doc IN ({})", stale)
        if rematch:
            hits, contexts = self._match_all(conn, rematch)
            conn.executemany("INSERT INTO entity_hits(doc, chunk, key, count) VALUES (?,?,?,?)", hits)
            conn.executemany("INSERT INTO entity_context(doc, chunk, key, words) VALUES (?,?,?,?)",
                             contexts)
            touched |= {h[2] for h in hits}
        # 4. Document frequency and the hub cap.
        touched &= _column(conn, "SELECT key FROM entity_keys WHERE key IN ({})", touched)
        df = dict.fromkeys(touched, 0)
        for part in batches(sorted(touched)):
            for key, n in conn.execute(
                f"SELECT key, count(DISTINCT doc) FROM entity_hits WHERE key IN ({marks(part)}) "
                "GROUP BY key", part,
            ):
                df[key] = n
        conn.executemany("UPDATE entity_keys SET df = ? WHERE key = ?",
                         [(n, k) for k, n in df.items()])
        cap = self.settings.cap(n_docs)
        flipped = {r[0] for r in conn.execute(
            "SELECT key FROM entity_keys WHERE capped != (df > ?)", (cap,))}
        _exec_in(conn, "UPDATE entity_keys SET capped = 1 - capped WHERE key IN ({})", flipped)
        # 5. Near-duplicates.
        alias_changed: set[str] = set()
        if self.settings.alias_threshold > 0:
            alias_changed = self._update_aliases(conn, added, dropped)
            flipped |= _column(conn, "SELECT a FROM entity_aliases WHERE b IN ({})", flipped)
        redo = rematch | _column(conn, "SELECT DISTINCT doc FROM entity_hits WHERE key IN ({})",
                                 flipped | alias_changed)
        self.stats.update(added=len(added), dropped=len(dropped), rematched=len(rematch),
                          flipped=len(flipped), cap=cap)
        return redo - changed - removed

    def _labels(self, conn: sqlite3.Connection, keys: set[str]) -> dict[str, str]:
        """The label of each key: a title's spelling first, else the most frequent one."""
        best: dict[str, tuple[int, int, str]] = {}
        for part in batches(sorted(keys)):
            for key, label, source, n in conn.execute(
                f"SELECT key, label, source, count(*) FROM entity_names WHERE key IN ({marks(part)}) "
                "GROUP BY key, label, source", part,
            ):
                rank = (SOURCE_RANK.get(source, 9), -n, label)
                if key not in best or rank < best[key]:
                    best[key] = rank
        return {k: v[2] for k, v in best.items()}

    def _naming(self, conn: sqlite3.Connection, keys: set[str]) -> set[int]:
        """Documents whose chunks may name one of ``keys`` (a superset; matching decides).

        A few names: one FTS5 phrase query each over heading and body. Many (a
        first sync, a bulk import): every document, since one scan is cheaper.
        """
        if not keys:
            return set()
        everything = {r[0] for r in conn.execute("SELECT doc FROM documents")}
        if len(keys) > FTS_LOOKUP_LIMIT or _tokenizer(conn) == "trigram":
            return everything
        out: set[int] = set()
        for key in sorted(keys):
            phrase = fts_phrase(key)
            if not phrase:
                return everything
            try:
                out.update(r[0] for r in conn.execute(
                    "SELECT DISTINCT c.doc FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                    "WHERE chunks_fts MATCH ?", ("{heading body} : " + phrase,)))
            except sqlite3.OperationalError:
                return everything
        return out

    def _match(self, conn: sqlite3.Connection, docs: set[int]) -> list[tuple[int, int, str, int]]:
        """``(doc, chunk, key, count)`` for every name in the chunks of ``docs``."""
        return self._match_all(conn, docs)[0]

    def _match_all(self, conn: sqlite3.Connection, docs: set[int],
                   ) -> tuple[list[tuple[int, int, str, int]], list[tuple[int, int, str, str]]]:
        """The hits of :meth:`_match`, and ``(doc, chunk, key, words)``: each mention's context.

        ``words`` are the content words next to the name's mentions in the chunk
        text (:func:`~pinakes_mentions.names.mention_context`, all its mentions
        together), what the ppr channel's relation weights compare with a query.
        A document's own title gets none: "X is a film directed by Y" says who
        directed X, not what X is to its own page.
        """
        own: dict[int, list[str]] = defaultdict(list)
        for part in batches(sorted(docs)):
            for key, doc in conn.execute(
                f"SELECT key, doc FROM entity_names WHERE doc IN ({marks(part)}) "
                "AND source IN ('title', 'alias')", part,
            ):
                own[doc].append(key)
        rows: list[tuple[int, int, str, str]] = []
        for part in batches(sorted(docs)):
            rows += [(cid, doc, fold(text), fold(_last_heading(heading))) for cid, doc, heading, text
                     in conn.execute("SELECT id, doc, heading_path, text FROM chunks "
                                     f"WHERE doc IN ({marks(part)})", part)]
        matcher = self._matcher(conn, rows)
        out: list[tuple[int, int, str, int]] = []
        contexts: list[tuple[int, int, str, str]] = []
        for cid, doc, text, heading in rows:
            spans = matcher.spans(text)
            found = Counter(key for _, _, key in spans)
            mine = own.get(doc, ())
            near: dict[str, dict[str, None]] = {}
            for i, (_, _, key) in enumerate(spans):
                if key not in mine:
                    near.setdefault(key, {}).update(dict.fromkeys(mention_context(text, spans, i)))
            contexts.extend((doc, cid, key, " ".join(ws)) for key, ws in near.items() if ws)
            for key in mine:
                # A document's own title is an entity every one of its chunks mentions:
                # once for being its title, plus every time its text names it.
                found[key] += 1
            for key, n in matcher.counts(heading).items():
                if key not in mine:
                    found[key] += n  # a section headed "Marie Curie" names her
            out.extend((doc, cid, key, n) for key, n in found.items())
        return out, contexts

    def _matcher(self, conn: sqlite3.Connection, rows: list[tuple[int, int, str, str]]) -> Matcher:
        """A matcher over the vocabulary, or over just the part of it these texts can contain.

        Building an automaton over every name costs ~25 ms per 7k names (0.1 s with
        NER's 34k): a one-document edit would pay that on every sync. For a few
        chunks, every substring that could be a name (it starts and ends on word
        boundaries, like a match) is looked up in the vocabulary's primary key
        instead, and the automaton is built over the names found: the same matches,
        in a few milliseconds.
        """
        chars = sum(len(t) + len(h) for _, _, t, h in rows)
        if chars <= SMALL_MATCH_CHARS and not any(CJK_RE.search(t + h) for _, _, t, h in rows):
            wanted: set[str] = set()
            for _, _, text, heading in rows:
                wanted |= candidate_names(text) | candidate_names(heading)
            return Matcher(_column(conn, "SELECT key FROM entity_keys WHERE key IN ({})", wanted))
        return Matcher(r[0] for r in conn.execute("SELECT key FROM entity_keys"))

    # --- near-duplicates -------------------------------------------------------------------

    def _update_aliases(self, conn: sqlite3.Connection, added: set[str], dropped: set[str]) -> set[str]:
        """Maintain ``entity_aliases``; return keys whose alias set changed."""
        changed = _column(conn, "SELECT a FROM entity_aliases WHERE b IN ({})", dropped)
        _exec_in(conn, "DELETE FROM entity_aliases WHERE a IN ({0}) OR b IN ({0})", dropped,
                 repeat=2)
        _exec_in(conn, "DELETE FROM entity_tokens WHERE key IN ({})", dropped)
        conn.executemany("INSERT OR IGNORE INTO entity_tokens(token, key) VALUES (?, ?)",
                         [(t, k) for k in sorted(added) for t in set(tokens(k))])
        pairs = self._candidate_pairs(conn, added)
        if not pairs:
            return changed
        sims = self._similarities(pairs)
        keep = [(a, b, round(float(s), 4)) for (a, b), s in zip(pairs, sims, strict=True)
                if s >= self.settings.alias_threshold]
        conn.executemany("INSERT OR REPLACE INTO entity_aliases(a, b, sim) VALUES (?,?,?)",
                         [r for a, b, s in keep for r in ((a, b, s), (b, a, s))])
        self.stats["alias_pairs_checked"] = len(pairs)
        self.stats["alias_pairs_kept"] = len(keep)
        for a, b, _ in keep:
            changed.update((a, b))
        return changed

    def _candidate_pairs(self, conn: sqlite3.Connection, added: set[str]) -> list[tuple[str, str]]:
        """Pairs (new name, any name) where one's words are all among the other's.

        Blocking is on content words (a shared "of" says nothing), containment on
        all words ("Robert More" is not contained in "Robert Enrico").
        """
        if not added:
            return []
        wanted = sorted({t for k in added for t in tokens(k)})
        block: dict[str, list[str]] = defaultdict(list)
        for part in batches(wanted):
            for token, key in conn.execute(
                f"SELECT token, key FROM entity_tokens WHERE token IN ({marks(part)})", part
            ):
                block[token].append(key)
        cache: dict[str, tuple[list[str], frozenset[str], frozenset[str]]] = {}

        def info(key: str) -> tuple[list[str], frozenset[str], frozenset[str]]:
            got = cache.get(key)
            if got is None:
                name = strip_qualifier(key) or key  # "(author)" is no part of a name
                got = cache[key] = (words(name), frozenset(words(name)), initials(name))
            return got

        def inside(x: str, y: str) -> bool:
            wx, sx, abbreviated = info(x)
            wy, sy, _ = info(y)
            if len(wx) > len(wy) or sx == sy:
                return False
            return sx <= sy or (bool(abbreviated) and contains(wx, wy, abbreviated))

        pairs: set[tuple[str, str]] = set()
        for a in sorted(added):
            for t in set(tokens(a)):
                members = block.get(t, ())
                if len(members) > MAX_BLOCK:
                    continue
                for b in members:
                    pair = (a, b) if a < b else (b, a)
                    if b == a or pair in pairs or strip_qualifier(pair[1]) == pair[0]:
                        continue  # "foo" / "foo (film)": a title and its own alias
                    if inside(a, b) or inside(b, a):
                        pairs.add(pair)
        return sorted(pairs)

    def _similarities(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Cosine of each pair's label embeddings (the KB's embedder, cached by content hash)."""
        keys = sorted({k for p in pairs for k in p})
        vecs = self._label_vectors(keys)
        index = {k: i for i, k in enumerate(keys)}
        a = vecs[[index[p[0]] for p in pairs]]
        b = vecs[[index[p[1]] for p in pairs]]
        return np.einsum("ij,ij->i", a, b)

    def _label_vectors(self, keys: list[str]) -> np.ndarray:
        embedder = self.kb.embedder if self.kb is not None else None
        if embedder is None:
            raise RuntimeError("near-duplicate linking needs the KB's embedder (for_kb(kb))")
        model = f"{embedder.id}#entity-label"
        hashes = [hashlib.sha1(k.encode("utf-8")).hexdigest() for k in keys]
        found: dict[str, np.ndarray] = {}
        cache = _label_cache(self.kb)
        try:
            for part in batches(hashes):
                for h, blob in cache.execute(
                    f"SELECT hash, vec FROM embeddings WHERE model = ? AND hash IN ({marks(part)})",
                    (model, *part),
                ):
                    found[h] = np.frombuffer(blob, dtype="<f4")
            todo = [(h, k) for h, k in zip(hashes, keys, strict=True) if h not in found]
            if todo:
                vecs = embedder.embed([k for _, k in todo], batch_size=128)
                now = time.time()
                cache.execute("BEGIN")
                cache.executemany(
                    "INSERT OR REPLACE INTO embeddings(model, hash, vec, updated) VALUES (?,?,?,?)",
                    [(model, h, np.asarray(v, "<f4").tobytes(), now)
                     for (h, _), v in zip(todo, vecs, strict=True)],
                )
                cache.execute("COMMIT")
                for (h, _), v in zip(todo, vecs, strict=True):
                    found[h] = np.asarray(v, dtype=np.float32)
                self.stats["labels_embedded"] = len(todo)
        finally:
            cache.close()
        return np.stack([found[h] for h in hashes]).astype(np.float32)

    # --- per document --------------------------------------------------------------------

    def derive(self, doc: DocView, conn: sqlite3.Connection) -> Iterator[Edge]:
        """Edges of one document's chunks to the entities they name (and their aliases)."""
        scale = self.settings.weight

        def weigh(found: list[tuple[str, int, str]]) -> list[float]:
            total = (sum(n for _, n, _ in found) or 1) / scale
            return [n / total for _, n, _ in found]

        yield from self._edges(conn, self._hit_rows(conn, doc.key), weigh, doc)

    @staticmethod
    def _hit_rows(conn: sqlite3.Connection, doc_key: int) -> list[tuple[int, str, int, str, int]]:
        """``(chunk, key, count, label, df)`` of every uncapped name the document's chunks name."""
        return conn.execute(
            "SELECT h.chunk, h.key, h.count, k.label, k.df FROM entity_hits h "
            "JOIN entity_keys k ON k.key = h.key WHERE h.doc = ? AND k.capped = 0 "
            "ORDER BY h.chunk, h.key", (doc_key,),
        ).fetchall()

    def _edges(self, conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]],
               weigh: Callable[[list[tuple[str, int, str]]], list[float]],
               doc: DocView | None = None) -> Iterator[Edge]:
        """Each chunk's mention edges, weighted by ``weigh`` (one weight per name it names).

        The one place the edge shape lives, for this deriver and its subclasses
        (``ner`` weighs title and text names apart): a chunk-to-entity edge per
        name with a positive weight, and an ``alias`` edge to each near-duplicate
        name the chunk does not name itself, at the weight times their similarity.
        ``doc``: the document the rows are of; with it, a name other than the
        document's own counts by its chunk's prose share (:func:`prose_shares`,
        :func:`prose_share`), counted for the chunks that name something only.
        """
        if not rows:
            return
        damp = self.settings.damp
        by_chunk: dict[int, list[tuple[str, int, str]]] = defaultdict(list)
        for cid, key, n, label, *_ in rows:
            by_chunk[cid].append((key, n, label))
        aliases = self._aliases(conn, {r[1] for r in rows}) if self.settings.alias_threshold > 0 else {}
        totals, own = prose_shares(doc, by_chunk) if doc is not None else ({}, frozenset())
        for cid, found in by_chunk.items():
            c = chunk_node(cid)
            direct = {key for key, _, _ in found}
            via: dict[str, tuple[float, str]] = {}
            share = prose_share(totals[cid], [f for f in found if f[0] not in own]) \
                if cid in totals else 1.0
            for (key, _n, label), w in zip(found, weigh(found), strict=True):
                if key not in own:
                    w *= share
                if w <= 0:
                    continue
                yield Edge(c, entity_node(key, label, damp), self.edge_kind, w)
                for other, sim, olabel in aliases.get(key, ()):
                    if other not in direct and w * sim > via.get(other, (0.0, ""))[0]:
                        via[other] = (w * sim, olabel)
            for other, (w, olabel) in sorted(via.items()):
                yield Edge(c, entity_node(other, olabel, damp), "alias", w)

    def _aliases(self, conn: sqlite3.Connection, keys: set[str]) -> dict[str, list[tuple[str, float, str]]]:
        out: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
        for part in batches(sorted(keys)):
            for a, b, sim, label in conn.execute(
                f"SELECT x.a, x.b, x.sim, k.label FROM entity_aliases x JOIN entity_keys k "
                f"ON k.key = x.b WHERE x.a IN ({marks(part)}) AND k.capped = 0 "
                "ORDER BY x.a, x.sim DESC, x.b", part,
            ):
                if len(out[a]) < self.settings.alias_max:
                    out[a].append((b, float(sim), label))
        return out


# --- small SQL helpers ------------------------------------------------------------------


_URL = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")


def _content_words(text: str) -> int:
    return sum(1 for w in words(fold(text)) if w not in STOPWORDS)


def prose_shares(doc: DocView, chunk_ids: Iterable[int] | None = None,
                 ) -> tuple[dict[int, int], frozenset[str]]:
    """Per chunk (of ``chunk_ids``; None: all), its content words (link targets left out); and
    the document's title keys.

    With the names a chunk names (:meth:`MentionsDeriver._edges`), this gives the
    share of its words that are *prose*: a chunk that is only a list of names or
    links (an index note's section, a table of contents, a "see also" list) names
    things without saying anything about them, and as mention edges at full
    weight it pulls the walk's mass from every name it lists (measured: a
    vault's home page outranked the note a question's subject links to). The
    document's own title always counts in full: that edge is how a named seed
    reaches its own page.
    """
    own = frozenset(key for key, _ in title_names(doc.title))
    wanted = None if chunk_ids is None else set(chunk_ids)
    return {c.id: _content_words(_URL.sub("] ", c.text)) for c in doc.chunks
            if wanted is None or c.id in wanted}, own


#: A chunk whose words are at least this share prose (not the names it names) keeps its
#: mention weights in full; below it they shrink in proportion, to 0 for a bare list.
PROSE_SHARE = 0.25


def prose_share(total: int, found: Sequence[tuple[str, int, str]]) -> float:
    """How much a chunk's mentions count: its share of prose words, over :data:`PROSE_SHARE`, at most 1.

    A sentence naming people ("Radium was isolated by Marie Curie in Paris": 3 of
    its 5 words are names) counts in full; "[[Lisbon]] · [[Kyoto]]" is all names
    and counts 0.
    """
    if total <= 0:
        return 1.0
    named = sum(n * max(1, _content_words(key)) for key, n, _ in found)
    return min(1.0, max(0.0, total - named) / total / PROSE_SHARE)


def _column(conn: sqlite3.Connection, sql: str, items: Iterable[Any]) -> set[Any]:
    """The first column of ``sql`` (with ``{}`` standing for the IN list) over ``items``."""
    return {r[0] for r in sqlrows(conn, sql, items)}


def _exec_in(conn: sqlite3.Connection, sql: str, items: Iterable[Any], repeat: int = 1) -> None:
    for part in batches(sorted(items)):
        conn.execute(sql.format(marks(part)), part * repeat)


def _tokenizer(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    return "trigram" if row and "trigram" in str(row[0]) else "words"


def _last_heading(heading_path_json: str) -> str:
    """The chunk's own heading: a section titled "Marie Curie" names her."""
    try:
        path = json.loads(heading_path_json)
    except ValueError:
        return ""
    return str(path[-1]) if path else ""


def _label_cache(kb: Any) -> sqlite3.Connection:
    """The KB's embedding cache (``.pinakes/cache.db``): it survives rebuilds."""
    from pinakes.store import CACHE_SCHEMA

    state = kb.config.state_dir
    state.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(state / "cache.db")
    conn.isolation_level = None
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.executescript(CACHE_SCHEMA)
    return conn



# --- query time ---------------------------------------------------------------------------

_NAMED: dict[tuple[str, str], tuple[Matcher, dict[str, tuple[str, int]]]] = {}


def named_entities(conn: sqlite3.Connection, text: str) -> list[tuple[str, str, int]]:
    """``(key, label, document frequency)`` of every entity ``text`` names, as sync matches.

    For query-time seeding (a PPR channel's entity seeds): the query is folded
    and matched exactly like chunk text, so "Who directed Polish Easter?"
    names the entity "Polish Easter" and not "Easter Parade". Only entities
    that have edges (under the hub cap) are returned. The matcher is built
    once per store generation and cached.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
    key = (str(path), str(row[0]) if row else "")
    cached = _NAMED.get(key)
    if cached is None:
        try:
            rows = conn.execute(
                "SELECT key, label, df FROM entity_keys WHERE capped = 0").fetchall()
        except sqlite3.OperationalError:
            rows = []  # a store without the plugin's tables
        info = {r[0]: (r[1], int(r[2])) for r in rows}
        cached = (Matcher(info), info)
        if len(_NAMED) > 8:
            _NAMED.clear()
        _NAMED[key] = cached
    matcher, info = cached
    return [(k, info[k][0], info[k][1]) for k in sorted(matcher.counts(fold(text)))]
