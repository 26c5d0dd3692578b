"""The ``ppr`` graph channel: Personalized PageRank over the free graph (Stage B).

HippoRAG 2's recipe on Pinakes' own graph (docs/design.md, "The graph"), with the
knobs set by ``pnk eval`` (``docs/benchmarks.md``, "PPR channel"):

* the graph is every node and edge of the store's :class:`~pinakes.graph.GraphIndex`,
  undirected and weighted, with hub damping already applied (a spoke of a
  popular tag counts 1/degree);
* damping 0.5 (``ppr_damping``), not the folklore 0.85: half of the mass
  returns to the reset vector at every step, so evidence two or three hops
  away still counts but the walk never forgets the query;
* the reset vector. **Seeds**: up to ``ppr_seeds`` (5) tag, heading and
  entity nodes whose labels the query *names* (below), each weighted by its
  match score and damped by 1/(chunks it connects to), so a label on half
  the KB seeds almost nothing. **Chunks**: every chunk, weighted by its
  cosine to the query times ``ppr_chunk_weight``, clamped at zero (a
  negative cosine is no evidence; a reset vector must not carry negative
  mass). Seeding *all* chunks, not only the top hits, is HippoRAG 2's guard
  against simple-lookup regressions. The issue's 0.05 measured worse than
  0.005 on both golden sets (the prototype's best was 0.01): the smaller the
  weight, the more a named seed outweighs the cosine background.
  **Roots**: the fused top hits get ``ppr_root_weight`` / rank, so the
  ranking keeps the hybrid's lexical evidence; it must stay small (0.02
  cost 2Wiki 6 points of multi-hop R@5; 0 cost the example KB 4);
* no seed, no list (``ppr_require_seeds``): without a named seed the walk
  only smooths cosines over the graph, which ranked worse than the hybrid,
  so the channel answers nothing and the hybrid ranking stands;
* the list is the **final** ranking (``fusion = "final"``, what
  ``graph_fusion = "auto"`` picks): as a third RRF list the same walk lost
  ~20 points of multi-hop R@5 on 2Wiki, as the prototype measured;
* sparse power iteration to ``ppr_tolerance`` (L1) or ``ppr_max_iterations``;
  never a dense adjacency matrix (50k² floats would be ~20 GB).

The transition operator is built once per graph generation and cached by the
:class:`GraphIndex` object itself (a weak key), so every query of a generation
reuses it, and a sync, after which ``kb.graph_index`` loads a new index, gets
a new one. Its matvec uses ``scipy.sparse`` (a CSR product measured 4-10x
faster than a NumPy gather/scatter, ``docs/performance.md``); without scipy
it falls back to ``np.bincount``.

Seed matching is lexical and strict by default: a label seeds when the query
contains it as a whole, its words in order ("Lothair II" in "When did Lothair
II's mother die?"), scored by how rare its words are among all labels. Labels
sharing their words (the per-document heading "How it works" in many
documents) are one *phrase*: one seed whose specificity counts all their
chunks. ``ppr_seed_partial`` > 0 also admits labels whose words the query
covers only partly or out of order; on 2Wiki that admitted "Do or Die" for
"...mother die?" and cost 11 points.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinakes import hookimpl
from pinakes.config import DEFAULTS as _CONFIG_DEFAULTS
from pinakes.errors import ConfigError
from pinakes.graph import GraphIndex
from pinakes.text import (
    CJK_RE,
    MAX_NAME_TOKENS,
    NAME_TOKEN_RE,
    STOPWORDS,
    crude_stem,
    name_spans,
    name_tokens,
    query_terms,
)

from .bridges import BridgeSettings, ChunkCosines, Lift, bridge_lift, doc_graph
from .relations import relation_index, relation_walk

__version__ = "0.1.0"

#: The channel's settings and their defaults; ``[retrieval]`` keys of the same name win.
# One source of truth: core's config table holds the ppr_* defaults (documented there).
DEFAULTS: dict[str, Any] = {
    key: value for key, value in _CONFIG_DEFAULTS["retrieval"].items() if key.startswith("ppr_")
}

BACKENDS = ("scipy", "numpy")
PRECISIONS = ("float32", "float64")
SEED_MATCHES = ("exact", "label")


def _scipy_sparse() -> Any:
    """``scipy.sparse``, imported on first use, or None when scipy is missing.

    Not at module import: every ``pnk`` command loads the plugins, and
    importing SciPy costs 0.3-0.4 s that only a PPR search needs.
    """
    try:
        import scipy.sparse
    except ImportError:  # the NumPy matvec keeps the channel working without it
        return None
    return scipy.sparse


def _scipy_installed() -> bool:
    """Whether scipy can be imported, found without importing it (a path lookup)."""
    import importlib.util

    try:
        return importlib.util.find_spec("scipy") is not None
    except (ImportError, ValueError):
        return False


_KERNEL: list[Any] = []  # [SciPy's csr_matvec or None], found once per process


def _csr_matvec() -> Any:
    """SciPy's compiled ``y += A @ x`` CSR kernel, or None without SciPy.

    Only the kernel's own extension module is loaded (``scipy/sparse/
    _sparsetools*.so``, ~1 ms) unless ``scipy.sparse`` is already imported:
    importing the package costs 0.13 s of CPU and 0.4 s of wall time on this
    machine, which the first walking ``pnk search`` would pay for one function.
    ``csr_matvec`` is private API (unchanged since SciPy 0.x); if it is
    missing, :meth:`Operator.damped_step` uses the public product instead.
    """
    if not _KERNEL:
        _KERNEL.append(_load_kernel())
    return _KERNEL[0]


def _load_kernel() -> Any:
    import sys

    if "scipy.sparse" not in sys.modules:
        try:
            import importlib.machinery
            import importlib.util
            import os

            spec = importlib.util.find_spec("scipy")
            if spec is None or spec.origin is None:
                return None
            folder = os.path.join(os.path.dirname(spec.origin), "sparse")
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_sparsetools" + suffix)
                if os.path.exists(path):
                    ext = importlib.util.spec_from_file_location("scipy.sparse._sparsetools", path)
                    if ext is not None and ext.loader is not None:
                        module = importlib.util.module_from_spec(ext)
                        ext.loader.exec_module(module)
                        return module.csr_matvec
        except Exception:  # noqa: BLE001, S110 - any surprise: the ordinary import below
            pass
    try:
        from scipy.sparse._sparsetools import csr_matvec
    except ImportError:
        return None
    return csr_matvec


@dataclass(frozen=True)
class Settings:
    """The channel's knobs, read from ``[retrieval]`` (see :data:`DEFAULTS`)."""

    damping: float = 0.5
    chunk_weight: float = 0.005
    seed_weight: float = 1.0
    seeds: int = 5
    seed_kinds: tuple[str, ...] = ("entity",)
    seed_match: str = "exact"  # "exact": whole names, longest first; "label": IDF-scored labels
    seed_partial: float = 0.0  # label matching only; 0: only labels named in full seed
    root_weight: float = 0.005
    require_seeds: bool = True  # no seed: no list (the hybrid ranking stands)
    tolerance: float = 3e-3  # L1; 1e-3 and 1e-4 ranked every dev set identically, slower
    max_iterations: int = 50
    final: bool = True  # the list is the final ranking ("final", or "auto"): roots get mass
    centrality_power: float = 0.25  # divide by the query-independent walk's score ** this
    hybrid_weight: float = 0.03  # blend: graph evidence + this x the hybrid's normalised score
    blend: bool = True  # "auto" or "blend": the channel returns the blended final ranking
    precision: str = "float32"  # the walk's dtype (ppr_precision)
    walk_threads: int = 2  # threads of a walk step on a large graph (ppr_walk_threads)
    relation_weight: float = 20.0  # > 0: weigh mention edges by the query's relation (relations.py)
    relation_hops: int = 1  # ...only the mention edges of chunks this many hops from the seeds
    lowercase_seed_weight: float = 0.1  # a name used as a common noun (NameIndex.match)
    bridges: BridgeSettings = field(default_factory=BridgeSettings)  # bridges.py

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        def get(key: str) -> Any:
            return config.get(key, DEFAULTS[key])

        damping = float(get("ppr_damping"))
        if not 0.0 <= damping < 1.0:
            raise ConfigError(f"[retrieval] ppr_damping must be in [0, 1), got {damping}")
        kinds = get("ppr_seed_kinds")
        if isinstance(kinds, str):
            # Space, "|" or ";" separated: a comma would split a `pnk eval --matrix` entry.
            kinds = [k for k in re.split(r"[\s,;|]+", kinds) if k]
        match = str(get("ppr_seed_match"))
        if match not in SEED_MATCHES:
            raise ConfigError(f"[retrieval] ppr_seed_match must be one of {', '.join(SEED_MATCHES)}"
                              f", got {match!r}")
        fusion = str(config.get("graph_fusion", "auto"))
        precision = str(get("ppr_precision"))
        if precision not in PRECISIONS:
            raise ConfigError(f"[retrieval] ppr_precision must be one of {', '.join(PRECISIONS)}"
                              f", got {precision!r}")
        return cls(
            damping=damping,
            chunk_weight=max(0.0, float(get("ppr_chunk_weight"))),
            seed_weight=max(0.0, float(get("ppr_seed_weight"))),
            seeds=max(0, int(get("ppr_seeds"))),
            seed_kinds=tuple(sorted({str(k) for k in kinds})),
            seed_match=match,
            seed_partial=max(0.0, float(get("ppr_seed_partial"))),
            root_weight=max(0.0, float(get("ppr_root_weight"))),
            require_seeds=bool(get("ppr_require_seeds")),
            tolerance=max(1e-15, float(get("ppr_tolerance"))),
            max_iterations=max(1, int(get("ppr_max_iterations"))),
            final=fusion in ("auto", "final", "blend"),
            centrality_power=max(0.0, float(get("ppr_centrality_power"))),
            hybrid_weight=max(0.0, float(get("ppr_hybrid_weight"))),
            blend=fusion in ("auto", "blend"),
            precision=precision,
            walk_threads=max(1, int(get("ppr_walk_threads"))),
            relation_weight=max(0.0, float(get("ppr_relation_weight"))),
            relation_hops=max(0, int(get("ppr_relation_hops"))),
            lowercase_seed_weight=max(0.0, float(get("ppr_lowercase_seed_weight"))),
            bridges=BridgeSettings(
                weight=max(0.0, float(get("ppr_bridge_weight"))),
                roots=max(0, int(get("ppr_bridge_roots"))),
                temperature=max(0.0, float(get("ppr_bridge_temperature"))),
                degree_power=max(0.0, float(get("ppr_bridge_degree_power"))),
                context_floor=min(1.0, max(0.0, float(get("ppr_bridge_context_floor")))),
                cap=min(1.0, max(0.0, float(get("ppr_bridge_cap")))),
                link_trust=min(1.0, max(0.0, float(get("ppr_bridge_link_trust")))),

            ),
        )


# --- the operator ------------------------------------------------------------------

#: A walk over at least this many half-edges runs each step's rows in two threads: SciPy's
#: CSR kernel releases the GIL and a step is memory-bound, so two cores finish it in about
#: 60 % of the wall time (50k chunks: 0.92 -> 0.58 ms a step, ~20 % more CPU). Every row
#: is summed by the same code in the same order: the scores are bit-identical. Smaller
#: graphs stay on one thread, where handing work over would cost what it saves.
PARALLEL_EDGES = 200_000
_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _forget_helper() -> None:
    """In a forked child the helper thread does not exist: make a new one on first use."""
    global _helper, _helper_lock
    _helper, _helper_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper)


def _step_helper() -> ThreadPoolExecutor | None:
    """The one extra thread that walks run half of their rows on (None on a single core)."""
    global _helper
    if _helper is None and (os.cpu_count() or 1) > 1:
        with _helper_lock:
            if _helper is None:
                _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pinakes-ppr-walk")
    return _helper



@dataclass(eq=False)
class Operator:
    """The column-stochastic transition of one graph generation, ready for matvecs.

    ``matvec(x)[v] = sum over edges (u, v) of w(u, v) / strength(u) * x[u]``:
    the mass each node sends along its (hub-damped) edges in proportion to
    their weight. Stored as CSR rows of the graph index (its half-edges are
    already grouped by node), so building it is a few vector operations.

    ``dtype`` is the precision of the weights and of every walk over them:
    float32 by default (the graph's own weights are float32, a walk stops at
    an L1 tolerance of 3e-3, and half the bytes make each step cheaper);
    float64 for the closed-form checks that want 1e-9.
    A walk calls SciPy's CSR kernel on these arrays (:meth:`damped_step`);
    the ``scipy.sparse`` matrix is made only if something asks for
    :attr:`matrix`. Building the operator touches no SciPy, so a query that
    seeds nothing (most, on a KB without entity names) never loads it.
    """

    generation: int
    n: int
    backend: str
    indptr: np.ndarray  # int32/int64 CSR row pointers (n + 1)
    cols: np.ndarray  # int32 source node per half-edge
    coef: np.ndarray  # transition weight per half-edge, in ``dtype``
    rows: np.ndarray | None  # int32 target node per half-edge (NumPy backend only)
    dangling: np.ndarray  # int64 indices of nodes with no outgoing weight
    chunk_nodes: np.ndarray  # int64 node index of every chunk node
    chunk_ids: np.ndarray  # int64 chunk id of each of those
    chunk_count: np.ndarray  # float64 chunks each node connects to (>= 1): seed specificity
    dtype: np.dtype = field(default_factory=lambda: np.dtype(np.float32))
    build_ms: float = 0.0
    _matrix: Any = None  # scipy.sparse.csr_matrix (scipy backend), made on first use
    _scaled: dict[float, np.ndarray] = field(default_factory=dict)  # damping -> d x coef
    _dense: tuple[np.ndarray, np.ndarray] | None = None  # (the dense ids it maps, rows)
    _seeds: dict[tuple[str, ...], SeedIndex] = field(default_factory=dict)
    _names: dict[tuple[str, ...], NameIndex] = field(default_factory=dict)
    _baseline: dict[float, np.ndarray] = field(default_factory=dict)
    _divisors: dict[tuple[float, float], np.ndarray] = field(default_factory=dict)
    _halves: tuple[int, np.ndarray, np.ndarray] | None = None  # (split row, row pointers of each half)

    @property
    def matrix(self) -> Any:
        """The ``scipy.sparse`` CSR matrix over the operator's own arrays (None for NumPy)."""
        if self._matrix is None and self.backend == "scipy":
            sparse = _scipy_sparse()
            if sparse is None:  # uninstalled since the operator was built
                raise ValueError("the scipy PPR backend needs scipy installed")
            m = sparse.csr_matrix((self.coef, self.cols, self.indptr), shape=(self.n, self.n),
                                  copy=False)
            self.coef, self.cols, self.indptr = m.data, m.indices, m.indptr  # share, don't copy
            self._matrix = m
        return self._matrix

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """One step of the walk: where the mass ``x`` flows along the edges (in ``dtype``)."""
        kernel = _csr_matvec() if self.backend == "scipy" else None
        if kernel is not None:
            out = np.zeros(self.n, dtype=self.dtype)
            kernel(self.n, self.n, self.indptr, self.cols, self.coef,
                   np.ascontiguousarray(x, dtype=self.dtype), out)
            return out
        if self.backend == "scipy":
            return self.matrix @ np.asarray(x, dtype=self.dtype)
        assert self.rows is not None
        return np.bincount(self.rows, weights=self.coef * x[self.cols],
                           minlength=self.n).astype(self.dtype, copy=False)

    def damped_step(self, damping: float, threads: int = 1) -> Any:
        """``out += damping * M @ x`` as ``step(x, out)``: one pass, no temporary vectors.

        SciPy's compiled CSR kernel accumulates into ``out``; with the weights
        pre-multiplied by the damping (one copy per damping, cached) a walk
        step is that one call. Without it (NumPy backend, or a SciPy that moved
        the kernel), the same sum through :meth:`matvec`.
        """
        kernel = _csr_matvec() if self.backend == "scipy" else None
        if kernel is None:
            def step(x: np.ndarray, out: np.ndarray) -> None:
                y = self.matvec(x)
                y *= damping
                out += y
            return step
        data = self._scaled.get(damping)
        if data is None:
            data = self._scaled[damping] = (self.coef * self.dtype.type(damping)).astype(
                self.dtype, copy=False)
        n, indptr, cols = self.n, self.indptr, self.cols
        helper = _step_helper() if threads > 1 and len(cols) >= PARALLEL_EDGES else None
        if helper is not None:
            mid, first, second = self._split()
            at = int(indptr[mid])
            head = (mid, n, first, cols[:at], data[:at])
            tail = (n - mid, n, second, cols[at:], data[at:])

            def split_step(x: np.ndarray, out: np.ndarray) -> None:
                assert out.dtype == data.dtype and out.flags.c_contiguous and len(out) == n
                # Rows [mid, n) on the helper thread, rows [0, mid) here; each into its own
                # slice of ``out`` (a contiguous view: the kernel accumulates into it).
                pending = helper.submit(kernel, *tail, x, out[mid:])
                kernel(*head, x, out[:mid])
                pending.result()
            return split_step

        def fast(x: np.ndarray, out: np.ndarray) -> None:
            # The kernel writes into ``out`` only if it needs no conversion.
            assert out.dtype == data.dtype and out.flags.c_contiguous and len(out) == n
            kernel(n, n, indptr, cols, data, x, out)
        return fast

    def _split(self) -> tuple[int, np.ndarray, np.ndarray]:
        """The row that halves the half-edges, and each half's own row pointers (cached)."""
        if self._halves is None:
            mid = int(np.searchsorted(self.indptr, self.indptr[-1] // 2))
            first = self.indptr[: mid + 1]
            second = (self.indptr[mid:] - self.indptr[mid]).astype(self.indptr.dtype)
            self._halves = (mid, first, second)
        return self._halves

    @property
    def nbytes(self) -> int:
        """Memory held by the operator's arrays (the cached seed index excluded)."""
        parts = [self.indptr, self.cols, self.coef, self.dangling, self.chunk_nodes,
                 self.chunk_ids, self.chunk_count, *self._scaled.values(),
                 *(self._halves[2:] if self._halves is not None else ())]
        if self.rows is not None:
            parts.append(self.rows)
        if self._matrix is not None:
            parts += [self._matrix.data, self._matrix.indices, self._matrix.indptr]
        seen: dict[int, int] = {}
        for a in parts:  # the CSR shares its buffers with cols/coef/indptr: count once
            base = a.base if isinstance(a.base, np.ndarray) else a
            seen[id(base)] = int(base.nbytes)
        return sum(seen.values())

    def chunk_cosines(self, dense_ids: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        """The query cosine of every chunk node (0 for a chunk without a vector).

        The chunk-node → dense-row map is cached for the dense index it was
        computed against (same generation, same array), so a query pays one
        gather (a ``take`` when every chunk has a vector, the usual case).
        """
        if self._dense is None or self._dense[0] is not dense_ids:
            rows = np.full(len(self.chunk_ids), -1, dtype=np.int64)
            if len(dense_ids) and len(self.chunk_ids):
                pos = np.clip(np.searchsorted(dense_ids, self.chunk_ids), 0, len(dense_ids) - 1)
                ok = dense_ids[pos] == self.chunk_ids
                rows[ok] = pos[ok]
            self._dense = (dense_ids, rows)
        rows = self._dense[1]
        if not len(cosines):
            return np.zeros(len(rows), dtype=self.dtype)
        if len(rows) and rows.min() >= 0:
            return cosines.take(rows).astype(self.dtype, copy=False)
        out = np.zeros(len(rows), dtype=self.dtype)
        ok = rows >= 0
        out[ok] = cosines[rows[ok]]
        return out

    def baseline(self, damping: float) -> np.ndarray:
        """Each node's score in the query-independent walk (reset: every chunk alike).

        What a node gets for being central, whatever is asked: dividing a query's
        walk by a power of it keeps a hub (an index page linking everything, a
        README, a big directory) from ranking first on centrality alone. One walk
        per generation and damping, cached.
        """
        found = self._baseline.get(damping)
        if found is None:
            r = np.zeros(self.n, dtype=self.dtype)
            r[self.chunk_nodes] = 1.0
            found, _ = personalized_pagerank(self, r, damping, 1e-6, 100)
            self._baseline[damping] = found
        return found

    def centrality_divisor(self, damping: float, power: float) -> np.ndarray:
        """``1 / baseline ** power`` per node (1 where the baseline is 0), cached per setting.

        A multiplication per query instead of a power over every node.
        """
        found = self._divisors.get((damping, power))
        if found is None:
            base = self.baseline(damping)
            found = np.ones(self.n, dtype=self.dtype)
            ok = base > 0
            found[ok] = base[ok] ** -power
            self._divisors[(damping, power)] = found
        return found

    def name_index(self, conn: sqlite3.Connection, graph: GraphIndex,
                   kinds: tuple[str, ...]) -> NameIndex:
        """The exact-name index of the seed-kind nodes, built on first use per generation."""
        return self._cached(self._names, NameIndex, conn, graph, kinds)

    def seed_index(self, conn: sqlite3.Connection, graph: GraphIndex,
                   kinds: tuple[str, ...]) -> SeedIndex:
        """The label index of the seed-kind nodes, built on first use per generation."""
        return self._cached(self._seeds, SeedIndex, conn, graph, kinds)

    def _cached(self, table: dict[tuple[str, ...], Any], cls: Any, conn: sqlite3.Connection,
                graph: GraphIndex, kinds: tuple[str, ...]) -> Any:
        found = table.get(kinds)
        if found is None:
            found = table[kinds] = cls.build(conn, graph, kinds, self.chunk_count)
        return found


def build_operator(graph: GraphIndex, backend: str | None = None,
                   dtype: Any = np.float32) -> Operator:
    """Build the transition operator of ``graph`` (see :class:`Operator`).

    ``backend`` is ``"scipy"`` (default when scipy is installed) or ``"numpy"``.
    ``dtype``: the walk's precision, float32 (default) or float64.
    """
    started = time.perf_counter()
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"PPR operator dtype must be float32 or float64, got {dtype}")
    if backend is None:
        backend = "scipy" if _scipy_installed() else "numpy"
    if backend not in BACKENDS:
        raise ValueError(f"unknown PPR backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if backend == "scipy" and not _scipy_installed():
        raise ValueError("the scipy PPR backend needs scipy installed")
    n = graph.n
    counts = np.diff(graph.indptr)
    rows64 = np.repeat(np.arange(n, dtype=np.int64), counts)
    cols64 = graph.nbr.astype(np.int64)
    weight = graph.weight.astype(np.float64)
    strength = np.bincount(rows64, weights=weight, minlength=n) if len(weight) else np.zeros(n)
    inv = np.zeros(n, dtype=np.float64)
    np.divide(1.0, strength, out=inv, where=strength > 0)
    # The undirected edge (u, v) carries x[u] * w / strength(u) into v: row v, column u.
    coef = (weight * inv[cols64] if len(weight) else np.zeros(0)).astype(dtype, copy=False)
    small = n < np.iinfo(np.int32).max and len(cols64) < np.iinfo(np.int32).max
    itype = np.int32 if small else np.int64
    cols = cols64.astype(itype)
    indptr = graph.indptr.astype(itype)
    rows = rows64.astype(itype) if backend == "numpy" else None
    chunk_nodes = np.nonzero(graph.chunk_of >= 0)[0].astype(np.int64)
    return Operator(
        generation=graph.generation, n=n, backend=backend, indptr=indptr, cols=cols, coef=coef,
        rows=rows, dangling=np.nonzero(strength <= 0)[0].astype(np.int64),
        chunk_nodes=chunk_nodes, chunk_ids=graph.chunk_of[chunk_nodes].astype(np.int64),
        chunk_count=connected_chunks(graph, rows64, cols64), dtype=dtype,
        build_ms=(time.perf_counter() - started) * 1000,
    )


def connected_chunks(graph: GraphIndex, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """How many chunks each node connects to, at least 1 (a seed's specificity).

    A chunk's own neighbours count directly (a heading's section, an entity's
    mentions); a document neighbour counts with all of its chunks (a tag or a
    directory reaches chunks through the documents it tags or holds).
    """
    n = graph.n
    is_chunk = graph.chunk_of >= 0
    direct = np.bincount(rows, weights=is_chunk[cols].astype(np.float64), minlength=n)
    doc_code = graph.code("doc")
    if doc_code >= 0 and len(rows):
        is_doc = graph.kind_code == doc_code
        per_doc = np.where(is_doc, direct, 0.0)
        direct = direct + np.bincount(rows, weights=per_doc[cols], minlength=n)
    return np.maximum(direct, 1.0)


_OPERATORS: weakref.WeakKeyDictionary[GraphIndex, dict[Any, Operator]] = (
    weakref.WeakKeyDictionary())


def operator_for(graph: GraphIndex, backend: str | None = None,
                 dtype: Any = np.float32) -> Operator:
    """The cached operator of ``graph``: built once per graph index, i.e. per generation.

    Keyed weakly by the index object, so the operator lives exactly as long
    as the KB keeps that generation's index, and a sync (a new index) builds
    a new one instead of reusing stale edges. One per precision (``dtype``),
    so an eval alternating ``ppr_precision`` does not rebuild it every query.
    """
    table = _OPERATORS.get(graph)
    if table is None:
        table = _OPERATORS[graph] = {}
    key = np.dtype(dtype)
    op = table.get(key)
    if op is None or (backend is not None and op.backend != backend):
        op = table[key] = build_operator(graph, backend, key)
    return op


# --- seeds --------------------------------------------------------------------------


def _stem(term: str) -> str:
    """The crude stem ``pinakes.text.term_pattern`` starts from: "ranking" ~ "ranked"."""
    term = term.removesuffix("'s")
    return term if CJK_RE.match(term) else crude_stem(term)


def label_stems(text: str) -> list[str]:
    """The distinct content stems of a label or query (stop words never match)."""
    out: dict[str, None] = {}
    for t in query_terms(text, keep_stopwords=True):
        if t not in STOPWORDS:
            s = _stem(t)
            if s and s not in STOPWORDS:
                out.setdefault(s, None)
    return list(out)


_TOKEN_RE = NAME_TOKEN_RE  # names are tokenised as core's subject/asked split does
tokens = name_tokens


def _ngrams(toks: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {toks[i:j] for i in range(len(toks))
            for j in range(i + 1, min(len(toks), i + MAX_NAME_TOKENS) + 1)}


def seed_kind_labels(conn: sqlite3.Connection, graph: GraphIndex,
                     kinds: Sequence[str]) -> Iterable[tuple[int, str]]:
    """``(graph node index, label)`` of every node of the seed ``kinds`` in this graph.

    Nodes written after the graph index loaded (a sync racing the query) are
    skipped. Heading keys are ``"<doc>:<json path>"``, never a name; other
    kinds' keys are, so an unlabelled node falls back to its key.
    """
    present = [k for k in kinds if graph.code(k) >= 0]
    if not present or not graph.n:
        return
    marks = ",".join("?" * len(present))
    rows = conn.execute(
        f"SELECT id, kind, key, label FROM nodes WHERE kind IN ({marks}) ORDER BY id", present,
    ).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    pos = np.clip(np.searchsorted(graph.node_ids, ids), 0, graph.n - 1)
    held = graph.node_ids[pos] == ids
    for r, p, ok in zip(rows, pos, held, strict=True):
        if ok:
            yield int(p), r[3] or ("" if r[1] == "heading" else r[2])


@dataclass
class SeedIndex:
    """Seed-kind nodes grouped into *phrases* (distinct label stem sets), with an inverted index.

    A phrase is HippoRAG's phrase node: heading nodes are per document (so a
    common heading does not weld documents together), but as a seed "How it
    works" is one phrase present in many sections, and its specificity is
    1/(all the chunks it connects to), not 1/(one section's chunks).
    """

    postings: dict[str, np.ndarray]  # stem -> phrase ids
    idf: dict[str, float]  # over nodes: a stem in many labels is generic
    mass: np.ndarray  # per phrase: sum of the IDF of its stems
    chunks: np.ndarray  # per phrase: chunks its nodes connect to (>= 1)
    indptr: np.ndarray  # phrase -> its nodes, CSR
    nodes: np.ndarray  # node index, grouped by phrase
    node_chunks: np.ndarray  # chunk count of each of those nodes
    names: list[set[tuple[str, ...]]]  # per phrase: its labels' token sequences
    max_idf: float

    @classmethod
    def build(cls, conn: sqlite3.Connection, graph: GraphIndex, kinds: Sequence[str],
              chunk_count: np.ndarray) -> SeedIndex:
        groups: dict[tuple[str, ...], list[int]] = {}
        names: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        df: dict[str, int] = {}
        seen: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        for p, text in seed_kind_labels(conn, graph, kinds):
            parsed = seen.get(text)
            if parsed is None:  # labels repeat ("Introduction" in every document)
                parsed = (tuple(sorted(label_stems(text))), tokens(text)[:MAX_NAME_TOKENS + 1])
                seen[text] = parsed
            stems, toks = parsed
            if stems:
                groups.setdefault(stems, []).append(int(p))
                names.setdefault(stems, set()).add(toks)
                for s in stems:
                    df[s] = df.get(s, 0) + 1
        total = sum(len(v) for v in groups.values())
        idf = {s: math.log(1.0 + (total - d + 0.5) / (d + 0.5)) for s, d in df.items()}
        phrases = list(groups)
        postings: dict[str, list[int]] = {}
        for i, stems in enumerate(phrases):
            for s in stems:
                postings.setdefault(s, []).append(i)
        nodes = np.array([n for ph in phrases for n in groups[ph]], dtype=np.int64)
        sizes = np.array([len(groups[ph]) for ph in phrases], dtype=np.int64)
        indptr = np.zeros(len(phrases) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        node_chunks = chunk_count[nodes] if len(nodes) else np.zeros(0)
        chunks = (np.add.reduceat(node_chunks, indptr[:-1]) if len(phrases)
                  else np.zeros(0))
        return cls(
            postings={s: np.array(p, dtype=np.int64) for s, p in postings.items()}, idf=idf,
            mass=np.array([sum(idf[s] for s in ph) for ph in phrases], dtype=np.float64),
            chunks=np.maximum(chunks, 1.0), indptr=indptr, nodes=nodes, node_chunks=node_chunks,
            names=[names[ph] for ph in phrases],
            max_idf=math.log(1.0 + (total - 0.5) / 1.5) if total else 1.0,
        )

    def match(self, query: str, limit: int, partial: float = 0.0) -> list[tuple[int, float]]:
        """``(phrase id, match score)`` of the best ``limit`` phrases the query names.

        A phrase is **named** when one of its labels occurs in the query as a
        whole (its words in order, case-insensitive: "Lothair II" in "When did
        Lothair II's mother die?"), the prototype's "entity named in the
        query"; its score is the rarity of its words among all labels (their
        IDF over the IDF of a word unique to one label, capped at 1), so a
        generic "Place of birth" counts less than "Lothair II". A phrase
        whose stems cover at least ``partial`` (> 0) of its IDF mass without
        being named (reordered, inflected, partial) is a **partial** match,
        scored by that share times half the share of the query's IDF it
        accounts for (below any full name); ``partial = 0`` (the default)
        seeds named phrases only: on 2Wiki, partial matches ("Do or Die" for
        "...mother die?") cost 11 points of multi-hop R@5. Ties go to the
        more specific phrase (fewer chunks), then the lower id.
        """
        if limit <= 0 or not len(self.mass):
            return []
        stems = [s for s in label_stems(query) if s in self.postings]
        if not stems:
            return []
        covered = np.zeros(len(self.mass), dtype=np.float64)
        for s in stems:
            covered[self.postings[s]] += self.idf[s]
        q_mass = sum(self.idf[s] for s in stems)
        cand = np.nonzero(covered > 0)[0]
        share = covered[cand] / self.mass[cand]
        grams = _ngrams(tokens(query))
        named = np.array([share[i] >= 1.0 - 1e-9 and not grams.isdisjoint(self.names[c])
                          for i, c in enumerate(cand)], dtype=bool)
        score = np.where(
            named, np.minimum(1.0, covered[cand] / self.max_idf),
            np.where((partial > 0) & (share >= partial), share * covered[cand] / q_mass * 0.5, 0.0))
        keep = score > 0
        cand, score = cand[keep], score[keep]
        order = np.lexsort((cand, self.chunks[cand], -score))[:limit]
        return [(int(cand[i]), float(score[i])) for i in order]

    def seed_mass(self, phrase: int, score: float) -> list[tuple[int, float]]:
        """Reset mass of a matched phrase's nodes: ``score`` / its chunks, spread evenly per chunk.

        The phrase's total is score/C (C: all the chunks it connects to, the
        1/connected-chunk-count damping), shared among its nodes in proportion
        to their own chunks, so each chunk behind the phrase receives the same.
        """
        lo, hi = int(self.indptr[phrase]), int(self.indptr[phrase + 1])
        c = float(self.chunks[phrase])
        return [(int(n), score * float(k) / (c * c))
                for n, k in zip(self.nodes[lo:hi], self.node_chunks[lo:hi], strict=True)]


@dataclass
class NameIndex:
    """Seed-kind nodes by the exact token sequence of their names (``ppr_seed_match = "exact"``).

    A node seeds when the query contains its whole name, its words in order,
    case-insensitively ("Lothair II" in "When did Lothair II's mother die?").
    A name inside a longer name the query also contains does not seed on its
    own: "Lothair" names someone else than "Lothair II". Names made only of
    stop words never seed. Each seed's reset mass is ``1 / chunks it connects
    to`` (HippoRAG's node specificity), and the most specific ``limit`` seeds
    are kept; a name the query uses as a common noun weighs less (:meth:`match`).
    On 2Wiki this seeding reached multi-hop R@2/R@5 76.3/93.8 where
    IDF-scored label matching reached 74.8/92.2 (docs/benchmarks.md).
    """

    names: dict[tuple[str, ...], list[int]]  # token sequence -> node indices
    chunk_count: np.ndarray  # per node: chunks it connects to (>= 1)
    cased: frozenset[tuple[str, ...]] = frozenset()  # names some label writes with a capital

    @classmethod
    def build(cls, conn: sqlite3.Connection, graph: GraphIndex, kinds: Sequence[str],
              chunk_count: np.ndarray) -> NameIndex:
        names: dict[tuple[str, ...], list[int]] = {}
        cased: set[tuple[str, ...]] = set()
        for p, text in seed_kind_labels(conn, graph, kinds):
            toks = tokens(text)
            if toks and len(toks) <= MAX_NAME_TOKENS and not all(t in STOPWORDS for t in toks):
                names.setdefault(toks, []).append(p)
                if text != text.lower():
                    cased.add(toks)
        return cls(names=names, chunk_count=chunk_count, cased=frozenset(cased))

    def match(self, query: str, limit: int,
              lowercase_weight: float = 1.0) -> list[tuple[int, float]]:
        """``(node, reset mass)`` of the at most ``limit`` most specific nodes the query names.

        ``lowercase_weight`` scales the mass of a name the query writes in lower case
        although its label has capitals, when the query capitalises some other word
        (past its first): it uses the name as a common noun ("the place of birth of"),
        not the page's proper name. 0 drops such a seed. A query in lower case
        throughout says nothing either way and is left alone.
        """
        if limit <= 0 or not self.names:
            return []
        raw = _TOKEN_RE.findall(query.replace("’", "'"))  # as written: casing is read below
        toks = tuple(t.lower() for t in raw)  # what tokens(query) gives
        kept = name_spans(toks, self.names, MAX_NAME_TOKENS)  # longest names only
        scale: dict[int, float] = {}
        for i, j in kept:
            w = 1.0
            if lowercase_weight != 1.0 and toks[i:j] in self.cased and \
                    all(t == t.lower() for t in raw[i:j]) and \
                    any(len(t) > 1 and t[0].isupper() for k, t in enumerate(raw)
                        if k > 0 and not i <= k < j):
                w = lowercase_weight
            for n in self.names[toks[i:j]]:
                scale[n] = max(scale.get(n, 0.0), w)
        nodes = sorted((n for n, w in scale.items() if w > 0),
                       key=lambda n: (float(self.chunk_count[n]), n))[:limit]
        return [(n, scale[n] / float(self.chunk_count[n])) for n in nodes]


# --- the walk -----------------------------------------------------------------------


def personalized_pagerank(op: Operator, reset: np.ndarray, damping: float = 0.5,
                          tolerance: float = 1e-4, max_iterations: int = 50, threads: int = 1,
                          ) -> tuple[np.ndarray, int]:
    """Power iteration of ``p = (1 - d) r + d (M p + dangling mass × r)``; ``(p, iterations)``.

    ``r`` is ``reset`` normalised to sum 1 (a zero reset gives a zero
    vector). Mass reaching a node without edges returns to the reset vector,
    as in networkx's and igraph's PPR. Stops when an iteration changes ``p``
    by less than ``tolerance`` in L1 norm. Computed in the operator's
    ``dtype``, in three preallocated vectors: a step is one fill, one CSR pass
    accumulating into it (:meth:`Operator.damped_step`) and the L1 check;
    ``threads`` > 1 lets a step over a large graph run its rows in two
    threads (:data:`PARALLEL_EDGES`), with the same result.
    """
    total = float(reset.sum())
    if total <= 0.0 or op.n == 0:
        return np.zeros(op.n, dtype=op.dtype), 0
    r = reset.astype(op.dtype)
    r /= op.dtype.type(total)
    p = r.copy()
    nxt = np.empty_like(r)
    diff = np.empty_like(r)
    step = op.damped_step(damping, threads)
    keep = 1.0 - damping
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 - reported after the loop
        lost = float(p[op.dangling].sum()) if len(op.dangling) else 0.0
        np.multiply(r, op.dtype.type(keep + damping * lost), out=nxt)
        step(p, nxt)
        np.subtract(nxt, p, out=diff)
        np.abs(diff, out=diff)
        err = float(diff.sum())
        p, nxt = nxt, p
        if err < tolerance:
            break
    return p, iterations


def reset_vector(op: Operator, chunk_cos: np.ndarray, chunk_weight: float,
                 seeds: Iterable[tuple[int, float]] = (),
                 roots: Iterable[tuple[int, float]] = ()) -> np.ndarray:
    """The unnormalised reset vector: chunk cosines × weight (clamped at 0) plus seed/root mass."""
    r = np.zeros(op.n, dtype=op.dtype)
    if chunk_weight > 0 and len(op.chunk_nodes):
        r[op.chunk_nodes] = chunk_weight * np.maximum(chunk_cos, 0.0)
    for node, w in seeds:
        r[node] += max(0.0, w)
    for node, w in roots:
        r[node] += max(0.0, w)
    return r


def top_chunks(op: Operator, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best chunks by PPR score, ties broken by chunk id (deterministic)."""
    if limit <= 0 or not len(op.chunk_nodes):
        return []
    s = scores[op.chunk_nodes]
    pos = np.nonzero(s > 0)[0]
    if len(pos) > limit:
        kth = np.partition(s[pos], len(pos) - limit)[len(pos) - limit]
        pos = pos[s[pos] >= kth]
    pos = pos[np.lexsort((op.chunk_ids[pos], -s[pos]))][:limit]
    return [(int(op.chunk_ids[i]), float(s[i])) for i in pos]


@dataclass
class Trace:
    """What the last search did (for benchmarks, tests and debugging)."""

    iterations: int = 0
    seeds: list[tuple[int, float]] = field(default_factory=list)
    roots: int = 0
    ms: float = 0.0
    relation_edges: int = 0  # mention edges the query's relation reweighted
    lifts: list[Lift] = field(default_factory=list)  # documents the bridges lifted, and why
    #: An explained search (``pnk search --explain``) keeps what :mod:`.explain` reads:
    keep: bool = False
    walk: Any = None  # the operator the walk ran on (relation weights included)
    reset: np.ndarray | None = None  # the reset vector, normalised
    p: np.ndarray | None = None  # the walk's scores
    scores: np.ndarray | None = None  # ... divided by centrality
    blend: dict[str, Any] = field(default_factory=dict)  # blend_ranking's floor, top, parts


def lifted_scores(op: Operator, p: np.ndarray, settings: Settings) -> np.ndarray:
    """The walk's scores with centrality divided out: ``p / baseline ** centrality_power``.

    A query's walk piles mass on whatever is well connected (an index page
    linking every page, a README, a hub directory) whatever was asked: on a
    real documentation KB the raw walk ranked such pages above direct matches.
    Dividing by the query-independent walk's score leaves what *this* query
    concentrates on; the power (0.25) keeps some of the walk's own order.
    """
    if settings.centrality_power <= 0:
        return p
    return p * op.centrality_divisor(settings.damping, settings.centrality_power)


def blend_ranking(op: Operator, scores: np.ndarray, fused: Sequence[tuple[int, float]],
                  hybrid_weight: float, limit: int,
                  record: dict[str, Any] | None = None) -> list[tuple[int, float]]:
    """The final ranking: graph evidence on a log scale (0..1) plus the hybrid's own score.

    The walk's scores fall geometrically with every hop, so their raw ratios
    mean little; on a log scale between the median chunk (0: nothing beyond
    the background) and the best (1), a hop costs a roughly constant amount.
    ``hybrid_weight`` times each fused hit's share of the top fused score is
    added, so among chunks the graph cannot tell apart the hybrid's evidence
    decides, and a strong direct match keeps its place. ``record`` (an explained
    search) receives the floor, the top, and each chunk's evidence and hybrid part.
    """
    s = scores[op.chunk_nodes] if len(op.chunk_nodes) else np.zeros(0)
    out: dict[int, float] = {}
    if len(s):
        smax = float(s.max())
        if smax > 0:
            mid = len(s) // 2
            floor = max(float(np.partition(s, mid)[mid]), smax * 1e-9)  # the median chunk
            pos = np.nonzero(s > floor)[0] if smax > floor else np.nonzero(s > 0)[0]
            if len(pos) > limit:
                pos = pos[np.argpartition(-s[pos], limit - 1)[:limit]]
            # The log only for the chunks kept: at 50k chunks that is 100 logs, not 50,000.
            g = (np.clip(np.log(s[pos] / floor) / math.log(smax / floor), 0.0, 1.0)
                 if smax > floor else np.ones(len(pos)))
            out = {int(op.chunk_ids[i]): float(x) for i, x in zip(pos, g, strict=True)}
            if record is not None:
                record.update(floor=floor, top=smax, evidence=dict(out))
    top = float(fused[0][1]) if fused else 0.0
    hybrid = record.setdefault("hybrid", {}) if record is not None else None
    if top > 0 and hybrid_weight > 0:
        for cid, sc in fused:
            part = hybrid_weight * float(sc) / top
            out[int(cid)] = out.get(int(cid), 0.0) + part
            if hybrid is not None:
                hybrid[int(cid)] = part
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def run_ppr(op: Operator, graph: GraphIndex, settings: Settings, *, query: str,
            dense_ids: np.ndarray, cosines: np.ndarray, roots: Sequence[int] = (),
            conn: sqlite3.Connection | None = None, limit: int = 100,
            trace: Trace | None = None,
            fused: Sequence[tuple[int, float]] | None = None) -> list[tuple[int, float]]:
    """The channel's ranking: ``(chunk_id, score)``, best first.

    With ``settings.blend`` and the hybrid's ``fused`` list, the blended final
    ranking (:func:`blend_ranking`); otherwise the (centrality-corrected) walk's
    best ``limit`` chunks.
    """
    started = time.perf_counter()
    seeds: list[tuple[int, float]] = []
    if conn is not None and settings.seeds > 0 and settings.seed_weight > 0:
        if settings.seed_match == "exact":
            names = op.name_index(conn, graph, settings.seed_kinds)
            seeds = [(n, settings.seed_weight * w)
                     for n, w in names.match(query, settings.seeds, settings.lowercase_seed_weight)]
        else:
            index = op.seed_index(conn, graph, settings.seed_kinds)
            for phrase, score in index.match(query, settings.seeds, settings.seed_partial):
                seeds += index.seed_mass(phrase, settings.seed_weight * score)
    if settings.require_seeds and not seeds:
        if trace is not None:
            trace.iterations, trace.seeds, trace.roots = 0, [], 0
            trace.ms = (time.perf_counter() - started) * 1000
        return []
    root_mass: list[tuple[int, float]] = []
    if settings.final and settings.root_weight > 0 and roots:
        where = graph.nodes_of_chunks(list(roots))
        root_mass = [(where[c], settings.root_weight / rank)
                     for rank, c in enumerate(roots, 1) if c in where]
    r = reset_vector(op, op.chunk_cosines(dense_ids, cosines), settings.chunk_weight, seeds,
                     root_mass)
    walk, reweighted = relation_walk(op, graph, conn, query, seeds, settings.relation_weight,
                                     settings.relation_hops)
    p, iterations = personalized_pagerank(walk, r, settings.damping, settings.tolerance,
                                          settings.max_iterations, settings.walk_threads)
    keep = trace is not None and trace.keep
    out: list[tuple[int, float]] = []
    if iterations:
        scores = lifted_scores(op, p, settings)
        if keep:
            trace.walk, trace.reset, trace.p, trace.scores = walk, r / float(r.sum()), p, scores
        if settings.blend and fused is not None:
            out = blend_ranking(op, scores, fused, settings.hybrid_weight, limit,
                                trace.blend if keep else None)
        else:
            out = top_chunks(op, scores, limit)
    if trace is not None:
        trace.iterations, trace.seeds, trace.roots = iterations, seeds, len(root_mass)
        trace.relation_edges = reweighted
        trace.ms = (time.perf_counter() - started) * 1000
    return out


class PPRChannel:
    """See the module docstring."""

    name = "ppr"
    #: ``graph_channel = "auto"`` picks this channel: it passes the default-on gate on
    #: 2Wiki, docs-dev and the example KB (docs/benchmarks.md).
    default_channel = True
    #: What ``graph_fusion = "auto"`` means for this channel: its list *is* the ranking
    #: (already blended with the hybrid's scores, see :func:`blend_ranking`).
    fusion = "final"

    def __init__(self) -> None:
        self.last = Trace()

    def prepare(self, kb: Any, store: Any, graph: GraphIndex) -> None:
        """Build this generation's operator and every index a query would (``KB.warm_graph``).

        The SciPy import and matrix, the damped weights, the seed-name (or
        label) index, the centrality divisor and the mention contexts of the
        relation weights: what the first walking query
        of a generation otherwise pays (0.1-0.5 s at 50k chunks).
        """
        settings = Settings.from_config(kb.config.retrieval)
        op = operator_for(graph, dtype=settings.precision)
        op.damped_step(settings.damping, settings.walk_threads)
        if settings.seeds > 0 and settings.seed_weight > 0:
            if settings.seed_match == "exact":
                op.name_index(store.conn, graph, settings.seed_kinds)
            else:
                op.seed_index(store.conn, graph, settings.seed_kinds)
        if settings.centrality_power > 0:
            op.centrality_divisor(settings.damping, settings.centrality_power)
        if settings.relation_weight > 0:
            relation_index(store.conn, graph)  # the mention contexts (45 ms on 2Wiki)
        if settings.final and settings.bridges.weight > 0:
            doc_graph(store.conn, graph)  # the document adjacency and link contexts

    def search(self, ctx: Any) -> list[tuple[int, float]]:
        graph = ctx.kb.graph_index(ctx.store)
        if graph.n_edges == 0:
            return []  # no graph: fusion keeps its two lists
        settings = Settings.from_config(ctx.config)
        op = operator_for(graph, dtype=settings.precision)
        limit = max(int(ctx.config.get("candidates", 100)), 1)
        if getattr(ctx, "explain", False):  # this search's own trace, kept for explain()
            self.last = ctx.record["ppr"] = Trace(keep=True)
        fused = getattr(ctx, "fused", None)
        out = run_ppr(op, graph, settings, query=ctx.query, dense_ids=ctx.dense.ids,
                       cosines=ctx.cosines, roots=ctx.roots, conn=ctx.store.conn, limit=limit,
                       trace=self.last, fused=fused)
        return self._bridged(op, graph, settings, ctx, out, fused)

    def _bridged(self, op: Operator, graph: GraphIndex, settings: Settings, ctx: Any,
                 walked: list[tuple[int, float]], fused: Any) -> list[tuple[int, float]]:
        """The walk's ranking (or, when it did not walk, the hybrid's) with bridges lifted.

        Only when the list is the final ranking: as a third RRF list a lifted
        copy of the hybrid's own list would count the hybrid twice. A search the
        bridges leave alone and the walk did not touch returns [] (the hybrid
        ranking stands, exactly as without the channel).
        """
        self.last.lifts = []
        if not settings.final or settings.bridges.weight <= 0:
            return walked
        base = walked or list(fused or [])
        if not base:
            return walked
        cosines = ChunkCosines(graph, np.asarray(ctx.dense.ids), np.asarray(ctx.cosines))
        lifted, lifts = bridge_lift(doc_graph(ctx.store.conn, graph), graph, ctx.store.conn, base,
                                    cosines, query_idf(ctx), settings.bridges)
        self.last.lifts = lifts
        return lifted if lifts else walked

    def explain(self, ctx: Any, chunk_ids: list[int]) -> dict[str, Any]:
        """Why the walk ranked these chunks: its seeds, and per chunk the path (:mod:`.explain`)."""
        from .explain import explain_walk

        trace = ctx.record.get("ppr")
        if trace is None:
            return {"channel": {"note": "no graph: the hybrid ranking stands"}, "hits": {}}
        graph = ctx.kb.graph_index(ctx.store)
        settings = Settings.from_config(ctx.config)
        op = operator_for(graph, dtype=settings.precision)
        return explain_walk(ctx, trace, graph, op, settings, chunk_ids)


def query_idf(ctx: Any) -> dict[str, float]:
    """The query's terms and their IDF over chunks: the lexical stage's, when it passed them.

    Otherwise counted here with the same FTS5 query per term (a search that
    ran its lexical stage has these counts cached, so this is the fallback).
    """
    given = getattr(ctx, "term_idf", None)
    if given:
        return dict(given)
    from pinakes.termstats import idf
    from pinakes.text import query_terms

    conn = ctx.store.conn
    total = max(1, int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0]))
    tokenizer = str((getattr(ctx, "config", None) or {}).get("tokenizer", "porter"))
    return idf({}, conn, 0, query_terms(ctx.query, cjk_bigrams=tokenizer != "trigram"), total, tokenizer)


@hookimpl
def register_graph_channels(register):  # type: ignore[no-untyped-def]
    register(PPRChannel())
