"""Adopting a ClaudeKB knowledge base: the one-time write-back ceremony.

A ClaudeKB KB (its architecture spec, blueprint v0.x) is ``kb.yml`` (``name``,
``title``, ...), ``vocab.yml`` (curated ``types`` and ``tags``), and pages
``docs/**/*.md`` whose YAML front matter has ``type``, ``title`` and
``description``, optionally ``tags`` and ``status``, and any unknown keys,
which must be preserved. ``docs/index.md`` (the curated catalog) and
``docs/log.md`` (the append-only change log) have no front matter. Links are
bundle-root-absolute (``/concepts/a.md``, root ``docs/``) or cross-KB
(``kb://name/path.md``); media live under ``docs/media/``;
``blueprint-checksums.json`` names files the blueprint owns.

What adoption writes, and nothing else:

* ``pinakes.toml``, once: name from ``kb.yml`` (``--name`` overrides), pages
  ``docs/**/*.md`` minus media, sidecars in the parallel tree
  ``.pinakes-meta/`` (outside ``docs/``, so the site build never publishes a
  sidecar and no blueprint-owned build config has to change), root-absolute
  links starting at ``docs/``, the change log as a page that is no link hub,
  and the catalog's out-links as a search prior. An existing ``pinakes.toml``
  is never rewritten: if it already says all that it is left alone, otherwise
  adoption stops and says which keys differ.
* one sidecar per page, each written atomically, with a fresh ULID.

The conflict rule is one-directional, front matter to sidecar:

* every front-matter key is copied to the sidecar's top level, and the
  sidecar records which (``adopted.fields``); the front matter owns those, so
  on re-adoption it wins: changed values are copied again, keys it dropped are
  removed from the sidecar;
* ``id`` and ``links`` (and ``adopted``) are the sidecar's own: never copied
  from front matter (a page that has such a key keeps it; a note says so),
  never changed by re-adoption; other keys someone added to a sidecar are
  left alone too;
* between adoptions ``pnk sync`` reads the sidecar (the sidecar wins for
  indexing) and ``pnk doctor`` lists every field where the front matter has
  drifted from what was adopted.

A page without front matter gets a sidecar with its identity only; its H1
stays its title. Nothing is written when nothing changed: a second adoption
is a no-op, byte for byte. No page and no blueprint-owned file is ever a write
target, and :func:`apply` checks that again before writing anything.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from pinakes.config import CONFIG_NAME, DEFAULT_EXCLUDE, DEFAULTS, slugify
from pinakes.errors import PinakesError
from pinakes.fsutil import WalkProblem, atomic_write, walk_kb
from pinakes.markdown import parse_markdown
from pinakes.sidecar import (
    ADOPTED,
    SIDECAR_OWN_KEYS,
    dump_sidecar,
    is_ulid,
    new_ulid,
    read_sidecar,
    sidecar_rel_path,
)

IMPORTER = "claudekb"
BUNDLE_ROOT = "docs"
SIDECAR_DIR = ".pinakes-meta"
INCLUDE = ["docs/**/*.md"]
MEDIA_EXCLUDE = ["docs/media/**", "docs/assets/**"]  # assets: media before blueprint v0.1.1
EXCLUDE = [*DEFAULT_EXCLUDE, *MEDIA_EXCLUDE]
NO_LINK_HUB = ["docs/**/log.md"]
INDEX_PAGES = ["docs/index.md"]
# A starting point, not a fitted value: a quarter of one rank-1 RRF term lets the
# catalogued page win a near-tie and nothing more. Tune it with `pnk eval`.
INDEX_PRIOR = 0.25
# Files the blueprint owns besides those its checksum manifest lists.
ALWAYS_BLUEPRINT = ("blueprint-checksums.json", ".copier-answers.yml")


class AdoptError(PinakesError):
    """Adoption cannot go ahead (a user-fixable situation, told in one line)."""


@dataclass
class FileWrite:
    """One truth file adoption writes: ``action`` is create, update or unchanged."""

    path: str  # KB-relative POSIX path
    kind: str  # "config" or "sidecar"
    action: str
    page: str = ""  # the page a sidecar belongs to
    text: str = field(default="", repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = {"path": self.path, "kind": self.kind, "action": self.action}
        if self.page:
            out["page"] = self.page
        return out


@dataclass
class Adoption:
    """The plan of one adoption, and after :func:`apply`, its record."""

    root: Path
    name: str
    title: str
    pages: list[str]
    writes: list[FileWrite]
    fleet: str  # "register" (will / did join the fleet) or "registered" (already in it)
    blueprint_files: list[str]
    statuses: dict[str, int]
    notes: list[str]
    dry_run: bool = True
    applied: bool = False

    @property
    def changes(self) -> list[FileWrite]:
        """The writes that change a file (create or update)."""
        return [w for w in self.writes if w.action != "unchanged"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "importer": IMPORTER,
            "kb": self.name,
            "title": self.title,
            "root": str(self.root),
            "dry_run": self.dry_run,
            "applied": self.applied,
            "pages": len(self.pages),
            "statuses": self.statuses,
            "writes": [w.to_dict() for w in self.changes],
            "unchanged": sum(1 for w in self.writes if w.action == "unchanged"),
            "fleet": {"name": self.name, "path": str(self.root), "action": self.fleet},
            "blueprint_files": self.blueprint_files,
            "notes": self.notes,
        }


# -- reading the KB's manifests ------------------------------------------------------


def _read_yaml(path: Path) -> Any:
    """A manifest's data (None when absent); an unreadable one stops adoption with its reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AdoptError(f"{path}: cannot read it ({exc})") from exc
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise AdoptError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from exc


def read_manifest(root: Path) -> dict[str, Any]:
    """``kb.yml`` as a mapping; a ClaudeKB without a usable ``name`` cannot join a fleet."""
    data = _read_yaml(root / "kb.yml")
    if data is None:
        raise AdoptError(f"{root} is not a ClaudeKB knowledge base: no kb.yml")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"].strip():
        raise AdoptError(f"{root / 'kb.yml'}: needs a `name:` (the KB's slug); or pass --name")
    return data


def read_vocab(root: Path) -> tuple[set[str], set[str]]:
    """The curated ``types`` and ``tags`` of ``vocab.yml`` (empty sets when absent)."""
    data = _read_yaml(root / "vocab.yml")
    if not isinstance(data, dict):
        return set(), set()

    def words(key: str) -> set[str]:
        value = data.get(key)
        return {str(v) for v in value} if isinstance(value, list) else set()

    return words("types"), words("tags")


def blueprint_owned(root: Path) -> set[str]:
    """KB-relative paths the blueprint owns: its checksummed and managed-marker files."""
    owned = set(ALWAYS_BLUEPRINT)
    path = root / "blueprint-checksums.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return owned
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AdoptError(f"{path}: cannot read it ({exc})") from exc
    if isinstance(data, dict):
        checksums = data.get("checksums")
        if isinstance(checksums, dict):
            owned.update(str(k) for k in checksums)
        marked = data.get("marked_files")
        if isinstance(marked, list):
            owned.update(str(k) for k in marked)
    return owned


# -- pinakes.toml ----------------------------------------------------------------------------


def config_text(name: str, title: str) -> str:
    """The ``pinakes.toml`` adoption writes (every value explained where it is set)."""
    about = f' ("{title}")' if title and title != name else ""
    return f"""\
# Pinakes configuration of the ClaudeKB knowledge base {name}{about},
# written by `pnk adopt`. Pages are docs/**/*.md; their sidecars (identity, tags,
# typed links) live in the parallel tree {SIDECAR_DIR}/, outside docs/, so the site
# build never publishes them. Edit freely; `pnk adopt` never rewrites this file.

[kb]
name = {json.dumps(name)}
include = {json.dumps(INCLUDE)}
exclude = {json.dumps(EXCLUDE)}
sidecars = {json.dumps(SIDECAR_DIR)}
# Root-absolute links (/concepts/a.md) and kb://{name}/... paths start at docs/.
bundle_root = {json.dumps(BUNDLE_ROOT)}
# The change log: indexed and searchable, but its links become no graph edge or prior.
no_link_hub = {json.dumps(NO_LINK_HUB)}

[retrieval]
# The curated catalog: documents it links to win near-ties in search
# (index_prior x one rank-1 RRF term; 0 turns the prior off).
index_pages = {json.dumps(INDEX_PAGES)}
index_prior = {INDEX_PRIOR}
"""


def config_mismatches(root: Path, name: str) -> list[str]:
    """What an existing ``pinakes.toml`` says differently from what adoption relies on.

    Only the keys the adoption depends on are checked (lists need only contain
    adoption's entries); everything else, ``index_prior`` included, is the user's.
    """
    path = root / CONFIG_NAME
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AdoptError(f"{path}: cannot read it ({exc})") from exc
    out: list[str] = []

    def need(table: str, key: str, value: Any, contains: bool = False) -> None:
        section = raw.get(table) if isinstance(raw.get(table), dict) else {}
        got = section.get(key, DEFAULTS.get(table, {}).get(key))
        ok = (isinstance(got, list) and set(value) <= set(map(str, got))) if contains else got == value
        if not ok:
            what = "to contain" if contains else "to be"
            out.append(f"[{table}] {key} is {json.dumps(got)}, adoption needs it {what} {json.dumps(value)}")

    need("kb", "name", name)
    need("kb", "include", INCLUDE, contains=True)
    need("kb", "exclude", MEDIA_EXCLUDE, contains=True)
    need("kb", "sidecars", SIDECAR_DIR)
    need("kb", "bundle_root", BUNDLE_ROOT)
    need("kb", "no_link_hub", NO_LINK_HUB, contains=True)
    need("retrieval", "index_pages", INDEX_PAGES, contains=True)
    return out


# -- sidecars ----------------------------------------------------------------------------------


def _node(value: Any) -> Any:
    """Plain front-matter data as round-trip YAML nodes (block style, like a hand-written file)."""
    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _node(v)
        return m
    if isinstance(value, list):
        return CommentedSeq(_node(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """Round-trip YAML nodes as plain data, to compare them with front matter."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)


def _flow(items: list[str]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _header(page: str) -> str:
    return (
        f"# Pinakes sidecar of {page}, written by `pnk adopt`.\n"
        "# The keys in adopted.fields come from the page's front matter, which owns them:\n"
        "# `pnk adopt` copies them again when it changes. id and links are Pinakes's own;\n"
        "# adoption never changes them (add typed links with `pnk link`).\n"
    )


def _fresh(carried: dict[str, Any]) -> CommentedMap:
    data = CommentedMap()
    data["id"] = new_ulid()
    for key, value in carried.items():
        data[key] = _node(value)
    data["links"] = CommentedSeq()
    adopted = CommentedMap()
    adopted["from"] = IMPORTER
    adopted["fields"] = _flow(list(carried))
    data[ADOPTED] = adopted
    return data


def _slot(data: CommentedMap) -> int:
    """Where a newly adopted key goes: before ``links`` (else ``adopted``), else last."""
    keys = list(data)
    for anchor in ("links", ADOPTED):
        if anchor in keys:
            return keys.index(anchor)
    return len(keys)


def merge(data: CommentedMap, carried: dict[str, Any]) -> None:
    """Apply the conflict rule to an existing sidecar, touching only what differs.

    Values that already match keep their node (and so their formatting), which
    is what makes a second adoption byte-identical.
    """
    adopted = data.get(ADOPTED)
    old = adopted.get("fields") if isinstance(adopted, dict) else None
    old_fields = [str(f) for f in old] if isinstance(old, list) else []
    if not is_ulid(str(data.get("id") or "")):
        data.insert(0, "id", new_ulid())
    for key in old_fields:
        if key not in carried and key in data and key not in SIDECAR_OWN_KEYS:
            del data[key]  # the front matter dropped it
    for key, value in carried.items():
        if key in data:
            if _plain(data[key]) != value:
                data[key] = _node(value)
        else:
            data.insert(_slot(data), key, _node(value))
    if not isinstance(adopted, dict):
        adopted = CommentedMap()
        data[ADOPTED] = adopted
    if adopted.get("from") != IMPORTER:
        adopted["from"] = IMPORTER
    if _plain(adopted.get("fields")) != list(carried):
        adopted["fields"] = _flow(list(carried))


def _page_sidecar(root: Path, page: str, types: set[str], tags: set[str], statuses: Counter[str],
                  notes: list[str]) -> FileWrite | None:
    """The sidecar write of one page, or None (with a note) when it must be left alone."""
    sc_rel = sidecar_rel_path(page, SIDECAR_DIR)
    try:
        text = (root / page).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{page}: not read ({exc}); no sidecar written (sync skips it too)")
        return None
    parsed = parse_markdown(text)
    fm = parsed.front_matter
    if parsed.front_matter_error:
        notes.append(f"{page}: front matter unreadable ({parsed.front_matter_error}); its sidecar "
                     "keeps what it has (a new one: the identity only) until the page is fixed "
                     "and `pnk adopt` runs again")
    carried = {k: v for k, v in fm.items() if k not in SIDECAR_OWN_KEYS}
    for key in fm:
        if key in SIDECAR_OWN_KEYS:
            notes.append(f"{page}: front-matter key {key!r} is the sidecar's own and was not "
                         "copied (it stays in the page)")
    if fm:
        statuses[str(fm.get("status") or "none")] += 1
        kind = fm.get("type")
        if types and isinstance(kind, str) and kind not in types:
            notes.append(f"{page}: type {kind!r} is not in vocab.yml")
        page_tags = fm.get("tags") if isinstance(fm.get("tags"), list) else []
        stray = [str(t) for t in page_tags if tags and str(t) not in tags]
        if stray:
            notes.append(f"{page}: tags not in vocab.yml: {', '.join(stray)}")
    existing = read_sidecar(root / sc_rel, display=sc_rel)
    if existing.error:
        notes.append(f"{existing.error}; a malformed sidecar is never rewritten: fix it and run "
                     "`pnk adopt` again")
        return None
    if existing.exists:
        try:
            current = (root / sc_rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:  # read a moment ago; vanished since
            notes.append(f"{sc_rel}: cannot read it ({exc}); left alone")
            return None
        if parsed.front_matter_error:
            # Unreadable is not empty: keep what was adopted until the page is fixed.
            return FileWrite(sc_rel, "sidecar", "unchanged", page)
        merge(existing.data, carried)
        new = dump_sidecar(existing.data)
        return FileWrite(sc_rel, "sidecar", "unchanged" if new == current else "update", page, new)
    return FileWrite(sc_rel, "sidecar", "create", page, _header(page) + dump_sidecar(_fresh(carried)))


# -- planning and applying -------------------------------------------------------------------


def plan(path: Path, name: str | None = None) -> Adoption:
    """Work out everything an adoption of ``path`` would write; write nothing."""
    from pinakes.fleet import ALL, load_fleet

    root = Path(path).expanduser()
    if not root.is_dir():
        raise AdoptError(f"no such folder: {root}")
    root = root.resolve()
    manifest = read_manifest(root)
    kb_name = (name or str(manifest["name"])).strip()
    if slugify(kb_name) != kb_name or kb_name == ALL:
        hint = "'all' is reserved" if kb_name == ALL else f"try {slugify(kb_name)!r}"
        raise AdoptError(f"KB name {kb_name!r} is not a slug (lower-case letters, digits, '-'): "
                         f"{hint}, with --name")
    title = str(manifest.get("title") or "").strip()
    types, tags = read_vocab(root)
    blueprint = blueprint_owned(root)
    notes: list[str] = []

    writes: list[FileWrite] = []
    include, exclude = INCLUDE, EXCLUDE
    if (root / CONFIG_NAME).exists():
        differs = config_mismatches(root, kb_name)
        if differs:
            raise AdoptError(
                f"{root / CONFIG_NAME} exists and adoption never rewrites it, but "
                + "; ".join(differs) + " (edit it, or delete it and run `pnk adopt` again)"
            )
        from pinakes.config import load_config

        cfg = load_config(root)  # the pages sync will index are the ones that get sidecars
        include, exclude = list(cfg.kb["include"]), list(cfg.kb["exclude"])
        config_write = FileWrite(CONFIG_NAME, "config", "unchanged")
    else:
        config_write = FileWrite(CONFIG_NAME, "config", "create", text=config_text(kb_name, title))

    problems: list[WalkProblem] = []
    pages = [rel for rel, _ in walk_kb(root, include, [*exclude, SIDECAR_DIR + "/**"], problems)]
    notes.extend(f"{p.path}: {p.message}" for p in problems)
    if not pages:
        raise AdoptError(f"{root} has no pages: nothing matches {', '.join(include)}")
    statuses: Counter[str] = Counter()
    for page in pages:
        w = _page_sidecar(root, page, types, tags, statuses, notes)
        if w is not None:
            writes.append(w)
    writes.append(config_write)  # last: a KB with its config is a finished adoption

    fleet = load_fleet()
    if kb_name in fleet and fleet[kb_name].expanduser().resolve() != root:
        raise AdoptError(f"the fleet already has a KB named {kb_name!r} at {fleet[kb_name]}: "
                         f"`pnk fleet remove {kb_name}` first, or adopt under another --name")
    adoption = Adoption(
        root=root, name=kb_name, title=title, pages=pages, writes=writes,
        fleet="registered" if kb_name in fleet else "register",
        blueprint_files=sorted(blueprint), statuses=dict(sorted(statuses.items())), notes=notes,
    )
    _guard(adoption)
    return adoption


def _guard(adoption: Adoption) -> None:
    """Refuse any write target that is a page, inside ``docs/`` or blueprint-owned.

    The plan never produces one; this makes "never touches a page or a
    blueprint-owned file" a checked property rather than a hope.
    """
    pages = set(adoption.pages)
    owned = set(adoption.blueprint_files)
    for w in adoption.writes:
        inside_docs = w.path == BUNDLE_ROOT or w.path.startswith(BUNDLE_ROOT + "/")
        if w.path in pages or w.path in owned or inside_docs:
            raise AdoptError(f"refusing to write {w.path}: it is a page, in {BUNDLE_ROOT}/ or "
                             "owned by the blueprint (this is a bug in pinakes-claudekb)")


def apply(adoption: Adoption) -> Adoption:
    """Write the planned files atomically (sidecars, then ``pinakes.toml``) and join the fleet."""
    from pinakes import fleet

    _guard(adoption)
    for w in adoption.changes:
        atomic_write(adoption.root / w.path, w.text)
    if adoption.fleet == "register":
        fleet.add(adoption.name, adoption.root)
    adoption.dry_run = False
    adoption.applied = True
    return adoption


def adopt(path: Path, name: str | None = None, dry_run: bool = False) -> Adoption:
    """Plan the adoption of ``path`` and, unless ``dry_run``, carry it out.

    A re-adoption after a page was moved (``git mv`` leaves its sidecar behind)
    syncs first, so sync's rename handling carries the sidecar, and the id, to the
    page's new path; planned first, the moved page would get a fresh sidecar and a
    new id, and its old sidecar would stay beside nothing.
    """
    root = Path(path).expanduser()
    if not dry_run and _indexed_page_vanished(root):
        from pinakes import KB

        kb = KB.open(root)
        try:
            kb.sync()
        finally:
            kb.close()
    adoption = plan(path, name=name)
    return adoption if dry_run else apply(adoption)


def _indexed_page_vanished(root: Path) -> bool:
    """True when the KB's index holds a page no longer on disk (moved or deleted since)."""
    import sqlite3

    from pinakes.config import STATE_DIR

    db = root / STATE_DIR / "index.db"
    if not (root / CONFIG_NAME).is_file() or not db.is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            paths = [r[0] for r in conn.execute("SELECT path FROM documents")]
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return any(not (root / p).exists() for p in paths)
