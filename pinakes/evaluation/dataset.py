"""External evaluation datasets (the ``bench/`` format), materialised once into a cached KB.

A dataset is a folder with ``corpus.jsonl`` (``{"id", "title", "text"}`` per
line) and ``queries.jsonl`` (``{"id", "text", "relevant", "class", ...}``).
Each passage becomes one Markdown document, ``# {title}`` then the text, in a
KB under the user cache folder. Embedding a corpus is the expensive part
(minutes), so the KB is kept and reused: a stamp records the corpus's size,
mtime and content hash, and a changed corpus re-materialises the documents
in place, after which an ordinary incremental sync re-indexes only what
changed (unchanged passages come from the embedding cache).

The cached KB is derived and disposable, like ``.pinakes/``: deleting the
cache folder costs one re-embedding and loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import CONFIG_NAME, slugify
from ..errors import DatasetError
from ..fsutil import atomic_write
from ..kb import KB
from ..sidecar import sidecar_rel_path, skeleton
from ..sync import SyncReport
from .golden import CLASSES, Question

#: Bump when the Markdown or sidecar a passage becomes changes: forces re-materialisation.
MATERIALISE_VERSION = 1
STAMP_NAME = "dataset.json"
PASSAGE_DIR = "passages"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str


@dataclass
class Dataset:
    """A loaded dataset folder: its passages and questions (relevant = corpus ids)."""

    path: Path
    name: str
    passages: list[Passage]
    questions: list[Question]


@dataclass
class MaterialisedDataset:
    """A dataset's cached KB, synced and ready, with what the materialisation did."""

    dataset: Dataset
    kb: KB
    paths: dict[str, str]  # corpus id -> KB-relative path
    rematerialised: bool  # documents (re)written because the corpus is new or changed
    sync: SyncReport


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/pinakes/datasets`` (``~/.cache/...`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pinakes" / "datasets"


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(f"missing {path.name} in {path.parent}")
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{number}: each line must be a JSON object")
                rows.append((number, obj))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 ({exc})") from None
    return rows


def load_dataset(path: str | Path) -> Dataset:
    """Read and validate a dataset folder (every problem names its file and line)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DatasetError(f"no dataset folder at {path}")
    corpus_file = folder / "corpus.jsonl"
    passages: list[Passage] = []
    ids: set[str] = set()
    for number, obj in _read_jsonl(corpus_file):
        pid, title, text = obj.get("id"), obj.get("title"), obj.get("text")
        if not isinstance(pid, str) or not pid:
            raise DatasetError(f"{corpus_file}:{number}: `id` must be a non-empty string")
        if not isinstance(title, str) or not isinstance(text, str):
            raise DatasetError(f"{corpus_file}:{number}: `title` and `text` must be strings")
        if pid in ids:
            raise DatasetError(f"{corpus_file}:{number}: duplicate passage id {pid!r}")
        ids.add(pid)
        passages.append(Passage(pid, title, text))
    if not passages:
        raise DatasetError(f"{corpus_file}: no passages")
    queries_file = folder / "queries.jsonl"
    questions: list[Question] = []
    qids: set[str] = set()
    for number, obj in _read_jsonl(queries_file):
        where = f"{queries_file}:{number}"
        qid, text, rel, cls = obj.get("id"), obj.get("text"), obj.get("relevant"), obj.get("class")
        if not isinstance(qid, str | int) or isinstance(qid, bool):
            raise DatasetError(f"{where}: `id` must be a string")
        qid = str(qid)
        if qid in qids:
            raise DatasetError(f"{where}: duplicate query id {qid!r}")
        qids.add(qid)
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where}: `text` must be a non-empty string")
        if cls not in CLASSES:
            raise DatasetError(f"{where}: `class` must be one of {', '.join(CLASSES)} (found {cls!r})")
        if not isinstance(rel, list) or not all(isinstance(r, str) for r in rel):
            raise DatasetError(f"{where}: `relevant` must be a list of corpus ids")
        missing = [r for r in rel if r not in ids]
        if missing:
            raise DatasetError(f"{where}: relevant passage {missing[0]!r} is not in corpus.jsonl")
        if (cls == "unanswerable") != (not rel):
            raise DatasetError(f"{where}: only `unanswerable` questions have no relevant passages")
        qtype = obj.get("question_type")
        answer = obj.get("answer")
        questions.append(Question(
            id=qid, text=text.strip(), cls=cls, documents=tuple(dict.fromkeys(rel)),
            answer=None if answer is None else str(answer),
            question_type=None if qtype is None else str(qtype), line=number,
        ))
    if not questions:
        raise DatasetError(f"{queries_file}: no queries")
    return Dataset(folder, slugify(folder.resolve().name), passages, questions)


def passage_paths(passages: list[Passage]) -> dict[str, str]:
    """A file path for every passage id: readable where possible, always unique.

    Ids are sanitised to a safe file stem; ids whose stems collide (compared
    case-insensitively, for case-insensitive file systems) get a short hash of
    the id appended, so the mapping stays injective and deterministic.
    """
    stems = {p.id: re.sub(r"[^A-Za-z0-9._-]+", "_", p.id).strip("._-")[:80] or "passage"
             for p in passages}
    owners: dict[str, int] = {}
    for stem in stems.values():
        owners[stem.lower()] = owners.get(stem.lower(), 0) + 1
    out: dict[str, str] = {}
    for pid, stem in stems.items():
        if owners[stem.lower()] > 1:
            stem += "-" + hashlib.sha1(pid.encode("utf-8")).hexdigest()[:8]
        out[pid] = f"{PASSAGE_DIR}/{stem}.md"
    if len({v.lower() for v in out.values()}) != len(out):
        raise DatasetError("passage ids map to clashing file names; rename the clashing ids")
    return out


def passage_markdown(p: Passage) -> str:
    """The document a passage becomes: ``# {title}``, a blank line, the text."""
    title = " ".join(p.title.split()) or p.id
    return f"# {title}\n\n{p.text.strip()}\n"


def passage_ulid(pid: str) -> str:
    """A ULID-shaped id derived from the passage id, so identities survive re-materialising.

    128 hash bits in 26 Crockford characters (130 bits): the top two bits are
    zero, so the first character is 0-3, as in every valid ULID.
    """
    n = int.from_bytes(hashlib.sha256(pid.encode("utf-8")).digest()[:16], "big")
    return "".join(_CROCKFORD[(n >> (5 * i)) & 31] for i in reversed(range(26)))


def _corpus_fingerprint(corpus: Path) -> tuple[int, int]:
    st = corpus.stat()
    return st.st_size, st.st_mtime_ns


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_dir_for(dataset_path: Path, name: str, cache_root: Path | None = None) -> Path:
    """``<cache root>/<name>-<hash of the dataset's absolute path>``."""
    root = Path(cache_root).expanduser() if cache_root else default_cache_root()
    digest = hashlib.sha1(str(dataset_path.resolve()).encode("utf-8")).hexdigest()[:10]
    return root / f"{name}-{digest}"


def materialise(
    dataset: Dataset,
    cache_root: Path | None = None,
    *,
    embedder: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
    graph: Sequence[str] = (),
) -> MaterialisedDataset:
    """The dataset's KB, materialised if new or changed, then synced (a no-op when unchanged).

    ``graph`` names edge derivers to switch on in it (``[graph] NAME = true``, e.g.
    ``mentions``): changing the set rewrites only ``pinakes.toml``, and the sync then
    rebuilds the graph without re-embedding (vectors come from the cache).
    """
    kb_dir = cache_dir_for(dataset.path, dataset.name, cache_root)
    corpus = dataset.path / "corpus.jsonl"
    stamp_file = kb_dir / STAMP_NAME
    stamp: dict[str, Any] = {}
    if stamp_file.is_file():
        try:
            stamp = json.loads(stamp_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            stamp = {}
    size, mtime = _corpus_fingerprint(corpus)
    fresh = (
        stamp.get("version") == MATERIALISE_VERSION
        and (kb_dir / CONFIG_NAME).is_file()
        and (kb_dir / PASSAGE_DIR).is_dir()
    )
    digest = stamp.get("sha256")
    if fresh and (stamp.get("size"), stamp.get("mtime_ns")) != (size, mtime):
        digest = _sha256(corpus)
        fresh = digest == stamp.get("sha256")
    paths = passage_paths(dataset.passages)
    if not fresh:
        digest = _sha256(corpus)
        _write_kb(dataset, kb_dir, paths, graph)
    _write_if_changed(kb_dir / CONFIG_NAME, dataset_config(dataset, graph))
    if not fresh or (stamp.get("size"), stamp.get("mtime_ns")) != (size, mtime):
        info = {
            "version": MATERIALISE_VERSION, "dataset": str(dataset.path.resolve()),
            "size": size, "mtime_ns": mtime, "sha256": digest, "passages": len(dataset.passages),
        }
        atomic_write(stamp_file, json.dumps(info, indent=2) + "\n")
    kb = KB.open(kb_dir)
    if embedder is not None:
        kb._embedder = embedder
    report = kb.sync(progress=progress)
    return MaterialisedDataset(dataset, kb, paths, not fresh, report)


def dataset_config(dataset: Dataset, graph: Sequence[str] = ()) -> str:
    """The ``pinakes.toml`` of a dataset's KB, with the requested derivers switched on."""
    config = (
        "# A dataset materialised by `pnk eval --dataset`: derived, disposable, rebuilt when\n"
        f"# {dataset.path.resolve() / 'corpus.jsonl'} changes.\n"
        f'[kb]\nname = "{dataset.name}"\ninclude = ["{PASSAGE_DIR}/**/*.md"]\n'
    )
    if graph:
        # "NAME" switches a deriver on, "!NAME" off (title mentions are on by default).
        config += "\n[graph]\n" + "".join(
            f"{name.lstrip('!')} = {'false' if name.startswith('!') else 'true'}\n"
            for name in sorted(set(graph)))
    return config


def _write_kb(dataset: Dataset, kb_dir: Path, paths: dict[str, str],
              graph: Sequence[str] = ()) -> None:
    """Write pinakes.toml, one document and one sidecar per passage; delete stale ones.

    Files whose content is already right are left untouched (so sync skips
    them by stat). These are cache files, not a user's truth: plain writes,
    no fsync per file (6,000 fsyncs would cost more than the rest).
    """
    kb_dir.mkdir(parents=True, exist_ok=True)
    config = dataset_config(dataset, graph)
    cfg = kb_dir / CONFIG_NAME
    if not cfg.is_file() or cfg.read_text(encoding="utf-8") != config:
        atomic_write(cfg, config)
    wanted: set[str] = set()
    for p in dataset.passages:
        rel = paths[p.id]
        doc = kb_dir / rel
        side_rel = sidecar_rel_path(rel, "beside")
        side = kb_dir / side_rel
        wanted.update((rel, side_rel))
        _write_if_changed(doc, passage_markdown(p))
        _write_if_changed(side, skeleton(passage_ulid(p.id), " ".join(p.title.split()) or p.id))
    folder = kb_dir / PASSAGE_DIR
    for f in folder.rglob("*"):
        if f.is_file() and f.relative_to(kb_dir).as_posix() not in wanted:
            f.unlink()


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def dataset_relevant(md: MaterialisedDataset) -> dict[str, tuple[int, ...]]:
    """Each question's relevant passages as store document keys."""
    conn = md.kb.reader().conn
    by_path = {row["path"]: int(row["doc"]) for row in conn.execute("SELECT doc, path FROM documents")}
    out: dict[str, tuple[int, ...]] = {}
    for q in md.dataset.questions:
        keys = []
        for pid in q.documents:
            rel = md.paths[pid]
            if rel not in by_path:
                raise DatasetError(
                    f"passage {pid!r} ({rel}) is not in the cached index at {md.kb.root}; "
                    "delete that folder to rebuild it"
                )
            keys.append(by_path[rel])
        out[q.id] = tuple(keys)
    return out
