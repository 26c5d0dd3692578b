"""The per-user embedding cache: it outlives `.pinakes/`, is shared, bounded and safe to share.

Real components throughout: the real MiniLM embedder (wrapped only to count
the texts it is asked to embed), the real SQLite cache file, and real
concurrent processes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from pinakes import KB, embcache
from pinakes.cli import cli
from pinakes.embcache import EmbeddingCache

DOCS = {
    "bread.md": """
        # Sourdough

        Feed the starter the night before, then fold the dough every half hour.

        ## Baking
        Bake in a covered pot at 250 degrees for twenty minutes, then uncovered.
        """,
    "bikes/chain.md": """
        # Bicycle chains

        Clean the chain with a rag and oil every link once a month.

        ## Wear
        A stretched chain wears the cassette; measure it with a chain checker.
        """,
    "garden.md": """
        # Tomatoes

        Pinch out the side shoots and water at the base, never on the leaves.
        """,
}


class CountingEmbedder:
    """The real embedder, counting every text it is asked to embed (test equipment)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts, *args, **kwargs)


def _open(root: Path, embedder: Any) -> tuple[KB, CountingEmbedder]:
    kb = KB.open(root)
    counting = CountingEmbedder(embedder)
    kb._embedder = counting
    return kb, counting


def _ranking(kb: KB, query: str) -> list[tuple[str, int, float]]:
    return [(h.path, h.start_line, round(h.score, 6)) for h in kb.search(query, k=5).hits]


def test_deleting_the_index_folder_re_embeds_nothing(make_kb, embedder, tmp_path: Path) -> None:
    kb = make_kb(DOCS, name="notes")
    kb, first = _open(kb.root, embedder)
    report = kb.sync()
    assert report.chunks_embedded > 0 and first.texts == report.chunks_embedded
    before = _ranking(kb, "how do I oil a bike chain")
    kb.close()

    shutil.rmtree(kb.root / ".pinakes")  # the README: disposable, rebuilt without re-embedding
    again, counting = _open(kb.root, embedder)
    report = again.sync()
    assert report.added and report.chunks_embedded == 0 and report.chunks_cached > 0
    assert counting.texts == 0 and counting.calls == 0
    assert _ranking(again, "how do I oil a bike chain") == before  # ranks exactly as before
    assert again.sync(rebuild=True).chunks_embedded == 0
    again.close()

    # every KB on the machine shares it: a copy elsewhere embeds nothing either
    copy = tmp_path / "copy"
    shutil.copytree(kb.root, copy, ignore=shutil.ignore_patterns(".pinakes"))
    other, counting = _open(copy, embedder)
    assert other.sync().chunks_embedded == 0 and counting.texts == 0
    # an edit embeds just the changed chunk
    (copy / "garden.md").write_text("# Tomatoes\n\nStake the plants before they flop over.\n",
                                    encoding="utf-8")
    assert other.sync().chunks_embedded == 1 and counting.texts == 1
    other.close()

    # the CLI, as a user runs it: rm -rf .pinakes, pnk sync
    shutil.rmtree(kb.root / ".pinakes")
    res = CliRunner().invoke(cli, ["sync", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["chunks_embedded"] == 0


def test_cache_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PINAKES_CACHE_DIR", str(tmp_path / "explicit"))
    assert embcache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("PINAKES_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert embcache.cache_dir() == tmp_path / "xdg" / "pinakes"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert embcache.cache_dir() == tmp_path / "home" / ".cache" / "pinakes"
    for text, size in (("1G", 1 << 30), ("500M", 500 << 20), ("1.5GiB", 3 << 29), ("4096", 4096),
                       ("64kb", 64 << 10)):
        assert embcache.parse_size(text) == size
    monkeypatch.setenv("PINAKES_CACHE_MAX_SIZE", "lots")
    with pytest.raises(embcache.ConfigError, match="PINAKES_CACHE_MAX_SIZE"):
        embcache.max_bytes()
    monkeypatch.delenv("PINAKES_CACHE_MAX_SIZE")
    assert embcache.max_bytes() == embcache.DEFAULT_MAX_BYTES


def _unit(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _hashes(prefix: str, n: int) -> list[str]:
    import hashlib

    return [hashlib.sha1(f"{prefix}{i}".encode()).hexdigest() for i in range(n)]


def test_vectors_are_compact_and_round_trip(tmp_path: Path) -> None:
    vecs = _unit(4000)
    hashes = _hashes("v", 4000)
    with EmbeddingCache(tmp_path) as cache:
        for start in range(0, 4000, 256):
            cache.put("m", list(zip(hashes[start:start + 256], vecs[start:start + 256], strict=True)))
        per_vector = cache.used_bytes() / cache.entries()
        assert per_vector <= 2200, per_vector  # 768 bytes of float16 plus key, clock and SQLite
        got = cache.get("m", hashes[:10] + ["0" * 40])
        assert set(got) == set(hashes[:10])  # the miss is absent
        back = np.frombuffer(got[hashes[3]], dtype="<f4")
        assert back.shape == (384,) and float(np.max(np.abs(back - vecs[3]))) < 1e-3
        assert got[hashes[3]] == embcache.canonical(vecs[3])  # what sync stores in the index
        assert cache.get("other-model", hashes[:10]) == {}  # keyed by model too
        info = cache.info()
    assert info["entries"] == 4000 and info["models"] == [{"model": "m", "entries": 4000}]
    # a vector float16 cannot hold is not cached (and the index keeps it as float32)
    huge = np.full(384, 1e6, dtype=np.float32)
    with EmbeddingCache(tmp_path) as cache:
        cache.put("m", [("f" * 40, huge)])
        assert cache.get("m", ["f" * 40]) == {}
    assert np.frombuffer(embcache.canonical(huge), dtype="<f4")[0] == 1e6


def test_float16_keeps_dense_rankings(example_kb: KB, embedder) -> None:
    """Top-10 dense lists over the example KB's chunks agree between float32 and the cached float16.

    A subset keeps the test cheap; over all 268 chunks and 97 golden questions the
    top-10 lists were identical, in order, and no cosine moved by more than 5e-5.
    """
    import yaml

    from pinakes.sync import embed_text

    conn = example_kb.reader().conn
    rows = conn.execute("SELECT d.title, c.heading_path, c.text FROM chunks c JOIN documents d "
                        "USING (doc) ORDER BY c.id LIMIT 48").fetchall()
    f32 = np.asarray(embedder.embed([embed_text(r[0], tuple(json.loads(r[1])), r[2]) for r in rows]),
                     dtype=np.float32)
    f16 = np.stack([np.frombuffer(embcache.canonical(v), dtype="<f4") for v in f32])
    golden = yaml.safe_load((example_kb.root / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    overlaps = []
    for q in golden["questions"][:20]:
        v = np.asarray(embedder.embed_query(q["question"]), dtype=np.float32)
        a, b = f32 @ v, f16 @ v
        assert float(np.max(np.abs(a - b))) < 2e-3
        overlaps.append(len(set(np.argsort(-a)[:10]) & set(np.argsort(-b)[:10])) / 10)
    assert np.mean(overlaps) >= 0.99 and min(overlaps) >= 0.9, overlaps


def test_lru_pruning_keeps_what_was_used(tmp_path: Path) -> None:
    old, new = _hashes("old", 600), _hashes("new", 600)
    with EmbeddingCache(tmp_path, max_size=10 << 30) as cache:
        cache.put("m", list(zip(old, _unit(600, seed=1), strict=True)))
        # the old batch was last used a day ago; a lookup refreshes part of it
        cache.conn.execute("UPDATE vectors SET used = used - 86400")
        assert len(cache.get("m", old[:100])) == 100
        cache.put("m", list(zip(new, _unit(600, seed=2), strict=True)))
        full = cache.used_bytes()
        limit = int(full * 0.8)
        deleted = cache.prune(limit)
        assert deleted > 0 and cache.used_bytes() <= limit
        kept = cache.get("m", old + new)
    assert set(old[:100]) <= set(kept) and set(new) <= set(kept)  # the recently used survive
    assert not set(old[100:]) <= set(kept)  # the stale ones went first
    # writing past the maximum prunes by itself
    with EmbeddingCache(tmp_path, max_size=limit) as cache:
        cache.put("m", list(zip(_hashes("more", 400), _unit(400, seed=3), strict=True)))
        assert cache.used_bytes() <= limit


WRITER = textwrap.dedent("""
    import hashlib, sys, time
    import numpy as np
    from pinakes.embcache import EmbeddingCache

    folder, tag, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rng = np.random.default_rng(len(tag))
    cache = EmbeddingCache(folder)
    while time.time() < start_at:
        time.sleep(0.005)
    for batch in range(40):
        items = [(hashlib.sha1(f"{tag}{batch}-{i}".encode()).hexdigest(), rng.standard_normal(384))
                 for i in range(25)]
        cache.put("shared-model", items)
        cache.get("shared-model", [h for h, _ in items])
    print(cache.entries())
""")


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    start_at = f"{time.time() + 1.5:.3f}"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag, start_at],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in ("a", "bb")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, errs) in zip(procs, outs, strict=True):
        assert p.returncode == 0, errs
        assert "Traceback" not in errs and "locked" not in errs
    with EmbeddingCache(tmp_path) as cache:
        assert cache.entries() == 2 * 40 * 25
        assert cache.info()["models"] == [{"model": "shared-model", "entries": 2000}]


OPENER = textwrap.dedent("""
    import sys, time
    from pinakes.embcache import EmbeddingCache

    start_at = float(sys.argv[2])
    while time.time() < start_at:
        pass
    EmbeddingCache(sys.argv[1]).conn.close()
""")


def test_processes_opening_a_new_cache_together_all_succeed(tmp_path: Path) -> None:
    """Switching a brand-new cache file to WAL raced: SQLite refused one opener at once
    with "database is locked" (no busy wait). Before the fix about one opener in ten failed."""
    failures = []
    for trial in range(6):
        folder = tmp_path / f"t{trial}"
        start_at = f"{time.time() + 1.0:.3f}"
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(folder), start_at],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for p in procs:
            _out, errs = p.communicate(timeout=120)
            if p.returncode != 0:
                failures.append(errs.strip().splitlines()[-1])
    assert failures == []


def test_a_corrupt_cache_is_replaced_not_fatal(make_kb, embedder, monkeypatch, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "embeddings.db").write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("PINAKES_CACHE_DIR", str(folder))
    kb = make_kb({"a.md": "# A\n\nalpha beta\n"}, name="corrupt")
    assert kb.sync().chunks_embedded == 1
    assert "starting a new embedding cache" in capsys.readouterr().err
    with EmbeddingCache(folder) as cache:
        assert cache.entries() == 1


def test_pnk_cache_and_status(make_kb, tmp_path: Path) -> None:
    runner = CliRunner()
    empty = json.loads(runner.invoke(cli, ["cache", "--json"]).stdout)
    assert empty["exists"] is False and empty["entries"] == 0
    kb = make_kb(DOCS, name="notes")
    kb.sync()
    n = kb.status()["chunks"]
    status = json.loads(runner.invoke(cli, ["status", "--kb", str(kb.root), "--json"]).stdout)
    cache = status["embedding_cache"]
    assert cache["entries"] == n and cache["path"] == str(embcache.cache_dir() / "embeddings.db")
    assert cache["bytes"] > 0 and cache["max_bytes"] == 1 << 30
    text = runner.invoke(cli, ["status", "--kb", str(kb.root)]).stdout
    assert f"cache      {n} vectors" in text and "embeddings.db" in text
    shown = runner.invoke(cli, ["cache"])
    assert shown.exit_code == 0 and f"{n} vectors" in shown.stdout and "minilm" in shown.stdout

    pruned = json.loads(runner.invoke(cli, ["cache", "--prune", "--max-size", "1", "--json"]).stdout)
    assert pruned["done"]["action"] == "prune" and pruned["done"]["deleted"] == n
    assert pruned["entries"] == 0
    kb.sync(rebuild=True)  # fills it again
    res = runner.invoke(cli, ["cache", "--clear", "--model", "nope"])
    assert res.exit_code == 0 and "Cleared 0 vectors of nope" in res.stdout
    res = runner.invoke(cli, ["cache", "--clear"])
    assert res.exit_code == 0 and f"Cleared {n} vectors" in res.stdout
    assert json.loads(runner.invoke(cli, ["cache", "--json"]).stdout)["entries"] == 0
    for bad, message in ((["cache", "--prune", "--clear"], "either --prune or --clear"),
                         (["cache", "--max-size", "2G"], "only used with --prune"),
                         (["cache", "--prune", "--max-size", "lots"], "invalid size"),
                         (["cache", "--model", "x"], "only used with --clear")):
        res = runner.invoke(cli, bad)
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def test_an_unusable_cache_folder_only_costs_a_warning(make_kb, monkeypatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    monkeypatch.setenv("PINAKES_CACHE_DIR", str(blocker / "pinakes"))
    kb = make_kb({"a.md": "# A\n\nalpha beta\n"}, name="nocache")
    report = kb.sync()
    assert report.chunks_embedded == 1 and not report.problems
    assert "embedding cache unavailable" in capsys.readouterr().err
    assert kb.search("alpha").hits
