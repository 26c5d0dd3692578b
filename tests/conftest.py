"""Shared fixtures: isolated user state, a real embedder loaded once, small KBs on disk.

The suite runs in parallel (``pytest -n auto``, pytest-xdist: ``bash scripts/test.sh``),
each worker a process of its own running whole tests. A test is parallel-safe when:

* it writes only under its own ``tmp_path`` (or ``tmp_path_factory``), never into the
  repository (``examples/``, ``docs/``, ``dist/``) or the real home: the autouse
  fixture below gives every test its own user folder (fleet registry, user config)
  and its own embedding cache, through ``PINAKES_USER_PATH`` and ``PINAKES_CACHE_DIR``;
* a server it starts listens on a port the OS picked (port 0, or ``_free_port()``-style),
  never a fixed one;
* it asserts nothing about other processes, the machine's load or wall-clock speed
  (timed targets belong to ``benchmarks/``), and waits for a condition with a deadline
  rather than sleeping a fixed time;
* a ``scope="session"`` fixture is per worker: build it in ``tmp_path_factory`` and
  expect it to be built once in each worker.

Tests of tens of seconds (venvs and wheels, the harnesses, whole-README runs) carry
``@pytest.mark.slow``: ``bash scripts/test.sh --quick`` skips them while you iterate;
the plain command, and ``.ci/run``, run everything.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pinakes import KB

# The per-user embedding cache (pinakes/embcache.py) never lands in the real home.
# Session fixtures made before any test's own folder is set use this one; the process
# that makes it (the only process, or the xdist controller, imported first) hands it to
# the workers through the environment, so a text embedded by one worker's session
# fixture (the example KB) is not embedded again by the next.
_SESSION_CACHE = "PINAKES_TEST_SESSION_CACHE"
if not os.environ.get(_SESSION_CACHE):
    os.environ[_SESSION_CACHE] = tempfile.mkdtemp(prefix="pinakes-test-cache-")
    atexit.register(shutil.rmtree, os.environ[_SESSION_CACHE], True)
os.environ["PINAKES_CACHE_DIR"] = os.environ[_SESSION_CACHE]
os.environ.pop("PINAKES_CACHE_MAX_SIZE", None)


@pytest.fixture(autouse=True)
def _isolated_user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the developer's real fleet registry or embedding cache.

    Each test gets an empty embedding cache, so a test that counts embedded
    chunks never depends on what another test embedded.
    """
    monkeypatch.setenv("PINAKES_USER_PATH", str(tmp_path_factory.mktemp("user")))
    monkeypatch.setenv("PINAKES_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("PINAKES_KB", raising=False)
    monkeypatch.delenv("PINAKES_RAISE_ERRORS", raising=False)


@pytest.fixture(scope="session")
def embedder():
    """The real default embedder, loaded once for the whole session."""
    from pinakes.default_plugins.minilm import MiniLMEmbedder

    emb = MiniLMEmbedder()
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def make_kb(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> Callable[..., KB]:
    """Build a KB from ``{relative path: text}`` (text is dedented); returns it unsynced.

    Every KB shares the session's embedder instance so the model loads once.
    """

    def build(files: dict[str, str | bytes], name: str = "test-kb", root: Path | None = None,
              config: str = "") -> KB:
        base = root or tmp_path / name
        base.mkdir(parents=True, exist_ok=True)
        (base / "pinakes.toml").write_text(f'[kb]\nname = "{name}"\n{config}', encoding="utf-8")
        for rel, text in files.items():
            p = base / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                p.write_bytes(text)
            else:
                p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        kb = KB.open(base)
        kb._embedder = embedder
        return kb

    return build


EXAMPLE_KB = Path(__file__).resolve().parents[1] / "examples" / "retrieval-kb"


@pytest.fixture(scope="session")
def example_kb_copy(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """A synced copy of the bundled example KB, made once per session (read-only use).

    The first worker syncs it (embedding, and the channel check its golden set runs) and
    leaves the synced folder in the shared session folder; the others copy that, index
    included (a KB's index is relocatable), and their sync finds nothing to do.
    """
    import shutil

    root = tmp_path_factory.mktemp("example") / "retrieval-kb"
    shared = Path(os.environ[_SESSION_CACHE]) / "example-kb"
    with open(Path(os.environ[_SESSION_CACHE]) / "example-kb.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker at a time
        if (shared / "done").exists():
            shutil.copytree(shared / "retrieval-kb", root, symlinks=True)
        else:
            shutil.copytree(EXAMPLE_KB, root, ignore=shutil.ignore_patterns(".pinakes", ".pinakes-ledger"))
        kb = KB.open(root)
        kb._embedder = embedder
        kb.sync()
        kb.close()
        if not (shared / "done").exists():
            shutil.rmtree(shared, ignore_errors=True)
            shutil.copytree(root, shared / "retrieval-kb", symlinks=True)
            (shared / "done").touch()
    return root


@pytest.fixture(scope="session")
def example_kb_links_only(example_kb_copy: Path, tmp_path_factory: pytest.TempPathFactory,
                          embedder) -> KB:
    """The example KB without title-mention edges (its authored links and structure only)."""
    import shutil

    root = tmp_path_factory.mktemp("example-links") / "retrieval-kb"
    shutil.copytree(example_kb_copy, root)  # with .pinakes: the rebuild re-embeds nothing
    with open(root / "pinakes.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[graph]\nmentions = false\nner = false\n")
    kb = KB.open(root)
    kb._embedder = embedder
    kb.sync()
    return kb


@pytest.fixture
def example_kb(example_kb_copy: Path, embedder) -> KB:
    """The session's synced example KB, opened fresh for this test."""
    kb = KB.open(example_kb_copy)
    kb._embedder = embedder
    return kb
