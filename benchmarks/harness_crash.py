"""Crash harness: kill -9 ``pnk sync``, ``pnk link``, ``pnk adopt`` and ``pnk ask --write-suggestions``
at seeded points, then prove nothing was lost.

    python benchmarks/harness_crash.py --kills 40              # full size: 300 documents
    python benchmarks/harness_crash.py --kills 3 --docs 24     # about what CI runs (tests/test_crash.py)

A generated KB (documents in folders, body links, some hand-written sidecars)
is changed a little every round (edits, new and deleted documents, moves with
their sidecars; before a sync also moves without them, as ``git mv a.md b.md``
leaves ``a.pnk.yaml``, and two documents swapping contents), then one real
subprocess is killed with SIGKILL:

- ``pnk sync`` (sometimes ``--rebuild``) or ``pnk link`` on that KB;
- ``pnk adopt`` of a generated ClaudeKB folder (kb.yml, docs/ with front matter),
  itself edited between rounds so each re-adoption writes sidecars again;
- ``pnk ask ... --write-suggestions`` with pinakes-deep's scripted backend (test
  equipment, no network), which stages ``origin: deep`` links into sidecars and syncs.

The kill lands at a named crash point (``PINAKES_CRASH_AT``, see pinakes/faults.py:
inside an embedding batch, between two documents of the write transaction, just
before its commit, between a truth file's fsync and its rename, just after a
sidecar moved, between the sidecar writes of a swap) or after a random delay.
After every kill:

- ``index.db`` and the embedding cache (``embeddings.db``) open and pass ``PRAGMA integrity_check``;
- every document is byte-for-byte what the harness wrote (Pinakes never edits a body),
  every sidecar parses and keeps its document's id (a moved or swapped document's
  id follows its text), no id is lost, ``pinakes.toml``, ``kb.yml`` and the fleet
  registry are whole;
- (usually) a plain ``pnk sync`` (``pnk adopt`` again for an adoption) then completes
  without rebuilding, removes any temp file the kill left, indexes exactly the files
  on disk under their ids, leaves no sidecar without its document and no id held twice.

At the end each recovered index is compared with a clean rebuild of a copy of its
KB (same embedding cache): the same documents, chunk vectors, links and search
results, and the rebuild embeds nothing (the cache survived every kill). Prints a
JSON report; exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PNK = str(Path(sys.executable).parent / "pnk")

WORDS = """lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower storm
gale reef channel buoy chart compass sextant logbook wick kerosene clockwork shutter foghorn
diaphone cliff headland pier jetty breakwater current swell horizon dusk dawn watch relief
supply boat island granite iron brass copper glass mirror reflector flash period eclipse
range visibility nautical mile coast guard survey station radio bearing pilot vessel cargo
anchor mooring hull mast rigging sail keel rudder helm crew captain voyage passage strait
estuary delta marsh dune shingle lagoon atoll cape bay cove inlet sound firth fjord skerry
weather barometer pressure front squall drizzle mist haze frost thaw season winter summer
archive ledger record inventory repair maintenance paint rust salt spray erosion foundation""".split()

#: Where each command can be killed (``timed``: after a random delay, no crash point).
POINTS = {
    "sync": ["embed-batch", "apply-doc", "apply-commit", "atomic-write", "move-sidecar", "swap-sidecar",
             "timed"],
    "link": ["atomic-write", "apply-doc", "apply-commit", "timed"],
    "adopt": ["atomic-write", "embed-batch", "apply-doc", "apply-commit", "timed"],
    "ask": ["atomic-write", "embed-batch", "apply-doc", "apply-commit", "timed"],
}
#: How often each command is the one killed in a round.
OP_WEIGHTS = {"sync": 0.45, "link": 0.15, "adopt": 0.2, "ask": 0.2}
ADOPT_NAME = "adopted"
ADOPT_TITLE = "Adopted harbour notes"
META = ".pinakes-meta"  # where an adopted ClaudeKB keeps its sidecars
#: The scripted LLM's one reply to ``pnk ask``: it cites four passages, so up to six
#: links (between up to three sources) are staged into sidecars.
ASK_SCRIPT = ["The keepers record it in the logbook [1] [2] [3] [4]."]


def sentence(rng: random.Random, n: int = 12) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def doc_text(rng: random.Random, title: str, others: list[str], rel: str) -> str:
    parts = [f"# {title}", "", sentence(rng, 20), ""]
    for s in range(rng.randint(1, 3)):
        parts += [f"## {rng.choice(WORDS).capitalize()} {s}", "", sentence(rng, 25), sentence(rng, 15), ""]
    if others:
        target = rng.choice(others)
        link = os.path.relpath(target, os.path.dirname(rel) or ".")
        parts.append(f"See [{Path(target).stem}]({link}).")
    return "\n".join(parts) + "\n"




@dataclass
class State:
    """What the harness wrote to one KB: the truth it must still hold after any kill."""

    root: Path
    sidecars: str = "beside"  # the KB's [kb] sidecars
    docs: dict[str, bytes] = field(default_factory=dict)  # rel -> bytes
    ids: dict[str, str] = field(default_factory=dict)  # document rel -> the id its sidecar carries
    # Until the next recovery sync, a moved or swapped document's sidecar may still
    # carry (or sit beside) its old identity: the ids each may show meanwhile.
    prior: dict[str, set[str]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)  # identity in flight: left alone until recovery
    fixed: dict[str, bytes] = field(default_factory=dict)  # other files that must never change
    config: bytes = b""
    config_written: bool = True  # False until an adoption has written pinakes.toml once
    counter: int = 0

    def sidecar_of(self, rel: str) -> str:
        from pinakes.sidecar import sidecar_rel_path

        return sidecar_rel_path(rel, self.sidecars)

    def write(self, rel: str, text: str | bytes) -> None:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8") if isinstance(text, str) else text
        p.write_bytes(data)
        self.docs[rel] = data

    def remove(self, rel: str) -> None:
        """``git rm`` of a document and its sidecar."""
        (self.root / rel).unlink()
        del self.docs[rel]
        sc = self.root / self.sidecar_of(rel)
        if sc.exists():
            sc.unlink()
        self.ids.pop(rel, None)

    def move(self, rel: str, new: str, with_sidecar: bool = True) -> None:
        """``git mv`` of a document, with its sidecar or (as ``git mv a.md b.md`` does) without.

        Without it, sync must recognise the move (pinakes/moves.py) and carry the
        sidecar, and so the identity, over to the new path.
        """
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / rel, self.root / new)
        self.docs[new] = self.docs.pop(rel)
        sc, nsc = self.root / self.sidecar_of(rel), self.root / self.sidecar_of(new)
        if with_sidecar and sc.exists():
            nsc.parent.mkdir(parents=True, exist_ok=True)
            os.replace(sc, nsc)
        if rel in self.ids:
            self.ids[new] = self.ids.pop(rel)
        if not with_sidecar:
            self.pending.add(new)

    def swap(self, a: str, b: str) -> None:
        """Two documents exchange contents, their sidecars untouched: the ids must follow the text."""
        da, db = self.docs[a], self.docs[b]
        self.write(a, db)
        self.write(b, da)
        ia, ib = self.ids[a], self.ids[b]
        self.ids[a], self.ids[b] = ib, ia
        self.prior[a], self.prior[b] = {ia}, {ib}
        self.pending |= {a, b}

    def settled(self) -> None:
        """A recovery sync indexed everything: no identity is in flight any more."""
        self.prior.clear()
        self.pending.clear()


def make_kb(root: Path, n_docs: int, rng: random.Random) -> State:
    root.mkdir(parents=True)
    state = State(root)
    state.config = b'[kb]\nname = "crash"\n'
    (root / "pinakes.toml").write_bytes(state.config)
    folders = ["notes", "ops", "guide/deep", "archive"]
    rels = [f"{rng.choice(folders)}/doc-{i:04d}.md" for i in range(n_docs)]
    for i, rel in enumerate(rels):
        state.write(rel, doc_text(rng, f"Document {i} {rng.choice(WORDS)}", rels[:i], rel))
    # A few hand-written sidecars with comments (their comments and ids must survive).
    for rel in rng.sample(rels, max(1, n_docs // 10)):
        ulid = _ulid(rng)
        (root / state.sidecar_of(rel)).write_text(
            f"# written by hand\nid: {ulid}  # keep\ntitle: Hand {Path(rel).stem}\ntags: [hand]\nlinks: []\n",
            encoding="utf-8")
        state.ids[rel] = ulid
    state.counter = n_docs
    return state


def _ulid(rng: random.Random) -> str:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "01" + "".join(rng.choice(alphabet) for _ in range(24))


def mutate(state: State, rng: random.Random, share: float, op: str = "sync", point: str = "") -> dict[str, int]:
    """Edit, add, delete and move a few documents: fresh chunks to embed every round.

    Before a sync, documents may also be moved without their sidecars and two
    may swap contents (sidecars untouched): sync's rename handling must carry
    each identity to the text it belongs to. Those are made only on documents
    the index holds as they are (a move is recognised by content), and the
    documents stay untouched until a recovery sync has settled them.
    """
    made = {"moved_without_sidecar": 0, "swapped": 0}
    # Before a rebuild too: `--rebuild` settles moves and swaps on the old index first.
    if op in ("sync", "sync --rebuild"):
        # What sync compares with: the index as the last committed sync left it. A move is
        # recognised by content (the index's hash), a swap also needs both sidecars as that
        # sync saw them (a killed `pnk link` may have edited one since).
        view = index_view(state.root)
        steady = [r for r in sorted(state.docs) if r in state.ids and r not in state.pending
                  and view.get(r, ("", "", ""))[:2] == (hashlib.sha256(state.docs[r]).hexdigest(), state.ids[r])]
        rng.shuffle(steady)
        if steady and (point == "move-sidecar" or rng.random() < 0.35):
            rel = steady.pop()
            state.move(rel, f"guide/git-mv-{state.counter:05d}.md", with_sidecar=False)
            state.counter += 1
            made["moved_without_sidecar"] += 1
        pair = [r for r in steady if view[r][2] == _stat_key(state.root / state.sidecar_of(r))][:2]
        if len(pair) == 2 and (point == "swap-sidecar" or rng.random() < 0.35):
            a, b = pair
            if state.docs[a] != state.docs[b]:
                state.swap(a, b)
                made["swapped"] += 1
    free = [r for r in sorted(state.docs) if r not in state.pending]
    n = max(2, int(len(free) * share))
    for rel in rng.sample(free, min(n, len(free))):
        text = state.docs[rel].decode() + f"\n## Update {state.counter}\n\n{sentence(rng, 30)}\n"
        state.counter += 1
        state.write(rel, text)
    # No new documents before an ask: its first sync would write their sidecars, and the
    # kills are meant for the sidecar writes of the staged links.
    for _ in range(max(1, n // 3) if op != "ask" else 0):
        rel = f"notes/new-{state.counter:05d}.md"
        state.counter += 1
        state.write(rel, doc_text(rng, f"New {state.counter} {rng.choice(WORDS)}", free, rel))
    free = [r for r in sorted(state.docs) if r not in state.pending]
    if len(free) > 10 and rng.random() < 0.5:
        state.remove(rng.choice(free))
        free = [r for r in sorted(state.docs) if r not in state.pending]
    if free and rng.random() < 0.5:
        new = f"archive/moved-{state.counter:05d}.md"
        state.counter += 1
        state.move(rng.choice(free), new)
    return made


def index_view(root: Path) -> dict[str, tuple[str, str, str]]:
    """``{path: (hash, id, sidecar stat)}`` as the index holds them (empty before the first sync)."""
    db = root / ".pinakes" / "index.db"
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {p: (h, u, st) for p, h, u, st in
                conn.execute("SELECT path, hash, ulid, sidecar_stat FROM documents")}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def _stat_key(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}"


# -- an adoptable folder (a ClaudeKB, for `pnk adopt`) ------------------------------------------


def page_text(rng: random.Random, title: str, description: str, tags: list[str], body: str = "") -> str:
    return (f"---\ntype: {rng.choice(['concept', 'guide'])}\ntitle: {title}\n"
            f"description: {description}\ntags: [{', '.join(tags)}]\nstatus: published\n---\n\n"
            f"# {title}\n\n{body or sentence(rng, 30)}\n\n{sentence(rng, 20)}\n")


def make_claudekb(root: Path, n_pages: int, rng: random.Random) -> State:
    """A ClaudeKB folder (kb.yml, vocab.yml, docs/ with front matter) that `pnk adopt` takes."""
    from pinakes_claudekb.adopt import config_text

    root.mkdir(parents=True)
    state = State(root, sidecars=META, config_written=False)
    state.config = config_text(ADOPT_NAME, ADOPT_TITLE).encode("utf-8")
    for name, text in {"kb.yml": f"name: {ADOPT_NAME}\ntitle: {ADOPT_TITLE}\n",
                       "vocab.yml": "types: [concept, guide]\ntags: [light, coast, tide, fog]\n"}.items():
        (root / name).write_text(text, encoding="utf-8")
        state.fixed[name] = text.encode("utf-8")
    pages = [f"docs/{rng.choice(['concepts', 'guides'])}/page-{i:03d}.md" for i in range(n_pages)]
    for i, rel in enumerate(pages):
        state.write(rel, page_text(rng, f"Page {i} {rng.choice(WORDS)}", sentence(rng, 8),
                                   rng.sample(["light", "coast", "tide", "fog"], 2)))
    state.write("docs/index.md", "# Catalog\n\n" + "".join(
        f"- [{Path(p).stem}](/{p.removeprefix('docs/')})\n" for p in pages))
    state.write("docs/log.md", "# Change log\n\n## 20260101 created\nThe first pages.\n")
    state.counter = n_pages
    return state


def mutate_claudekb(state: State, rng: random.Random) -> int:
    """Front matter edited (re-adoption updates those sidecars), a body edited, a page added,
    and now and then a page moved without its sidecar (``git mv`` of the page); returns the moves."""
    moved = 0
    view = index_view(state.root)
    steady = [r for r in sorted(state.docs) if "/page-" in r and r in state.ids and r not in state.pending
              and view.get(r, ("", "", ""))[:2] == (hashlib.sha256(state.docs[r]).hexdigest(), state.ids[r])]
    if steady and rng.random() < 0.4:
        state.move(rng.choice(steady), f"docs/concepts/page-{state.counter:03d}.md", with_sidecar=False)
        state.counter += 1
        moved = 1
    pages = [r for r in sorted(state.docs) if "/page-" in r and r not in state.pending]
    for rel in rng.sample(pages, min(2, len(pages))):
        text = state.docs[rel].decode()
        head, _, rest = text.partition("\ndescription: ")
        _, _, rest = rest.partition("\n")
        state.write(rel, f"{head}\ndescription: {sentence(rng, 8)}\n{rest}")
    rel = rng.choice(pages)
    state.write(rel, state.docs[rel].decode() + f"\n{sentence(rng, 25)}\n")
    rel = f"docs/guides/page-{state.counter:03d}.md"
    state.write(rel, page_text(rng, f"Page {state.counter} {rng.choice(WORDS)}", sentence(rng, 8),
                               rng.sample(["light", "coast", "tide", "fog"], 2)))
    state.counter += 1
    state.write("docs/log.md", state.docs["docs/log.md"].decode() + f"\n## {state.counter}\n{sentence(rng)}\n")
    return moved


def env_for(user_dir: Path, crash_at: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(user_dir)  # the fleet registry and the scripted LLM's config
    env["PINAKES_CACHE_DIR"] = str(user_dir / "cache")  # the per-user embedding cache
    if crash_at:
        env["PINAKES_CRASH_AT"] = crash_at
    return env


def run_pnk(args: list[str], env: dict[str, str], delay: float | None = None,
            timeout: float = 600) -> tuple[int, str, str]:
    """Run ``pnk``; with ``delay``, SIGKILL it after that many seconds (if still running)."""
    proc = subprocess.Popen([PNK, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            stdin=subprocess.DEVNULL, text=True)
    if delay is not None:
        try:
            out, err = proc.communicate(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate()
    else:
        out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def integrity(path: Path) -> str:
    if not path.exists():
        return "ok"
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _ids_in_swap_log(root: Path) -> set[str]:
    """Ids held by a sidecar swap's redo log (pinakes/moves.py) that a kill left for the next sync."""
    import base64
    import re

    path = root / ".pinakes" / "swap.journal"
    if not path.exists():
        return set()
    out: set[str] = set()
    for entry in json.loads(path.read_text(encoding="utf-8")):
        for key in ("old", "new"):
            out.update(re.findall(r"^id:\s*([0-9A-Z]{26})", base64.b64decode(entry[key]).decode(), re.M))
    return out


def check_truth(state: State, failures: list[str], where: str, strict: bool = False) -> None:
    """Documents untouched, sidecars whole and keeping their ids, config unchanged, no id lost.

    ``strict`` (after a recovery sync): every document has its sidecar carrying
    exactly its id, no sidecar is left without its document, no id is held twice.
    Before it, a move or swap in flight may show a document's old id, and a
    moved document's sidecar may still sit at its old place.
    """
    from pinakes.sidecar import is_ulid, read_sidecar

    root = state.root
    config = root / "pinakes.toml"
    if config.exists() or state.config_written or strict:
        if not config.exists() or config.read_bytes() != state.config:
            failures.append(f"{where}: pinakes.toml changed or missing")
    for rel, data in state.fixed.items():
        if (root / rel).read_bytes() != data:
            failures.append(f"{where}: {rel} changed")
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*.md") if ".pinakes" not in p.parts}
    if on_disk != set(state.docs):
        failures.append(f"{where}: documents on disk differ: {sorted(on_disk ^ set(state.docs))[:5]}")
    for rel, data in state.docs.items():
        p = root / rel
        if p.exists() and p.read_bytes() != data:
            failures.append(f"{where}: document body changed: {rel}")
    held: dict[str, str] = {}  # sidecar rel -> id
    for sc in root.rglob("*.pnk.yaml"):
        if ".pinakes" in sc.relative_to(root).parts:
            continue
        rel = str(sc.relative_to(root))
        parsed = read_sidecar(sc, display=rel)
        if parsed.error or not is_ulid(parsed.id):
            failures.append(f"{where}: sidecar {rel} broken: {parsed.error or parsed.id}")
            continue
        held[rel] = str(parsed.id)
    owner = {state.sidecar_of(rel): rel for rel in state.docs}
    for sc_rel, ident in sorted(held.items()):
        rel = owner.get(sc_rel)
        if rel is None:
            if strict:
                failures.append(f"{where}: sidecar {sc_rel} left without its document (id {ident})")
            continue
        known = state.ids.get(rel)
        if known is None:
            if ident in state.ids.values():
                failures.append(f"{where}: new document {rel} got the id of another ({ident})")
            state.ids[rel] = ident
        elif ident != known and (strict or ident not in state.prior.get(rel, ())):
            failures.append(f"{where}: {rel}'s sidecar changed id {known} -> {ident}")
    if strict:
        counts: dict[str, list[str]] = {}
        for sc_rel, ident in held.items():
            counts.setdefault(ident, []).append(sc_rel)
        for ident, where_held in sorted(counts.items()):
            if len(where_held) > 1:
                failures.append(f"{where}: id {ident} held by {len(where_held)} sidecars: {sorted(where_held)}")
        for rel in sorted(state.docs):
            if state.sidecar_of(rel) not in held:
                failures.append(f"{where}: {rel} has no sidecar after a sync")
    # Even mid-crash no identity is lost: each is in some sidecar (or in a swap's redo log).
    present = set(held.values()) | _ids_in_swap_log(root)
    for rel, ident in sorted(state.ids.items()):
        if rel in state.docs and ident not in present:
            failures.append(f"{where}: the id {ident} of {rel} is in no sidecar: lost")


def stray_temps(*folders: Path) -> list[str]:
    return sorted(str(p) for folder in folders for p in folder.rglob(".*.tmp")
                  if ".pinakes" not in p.relative_to(folder).parts)


def check_index(state: State, failures: list[str], where: str) -> None:
    """The index holds exactly the documents on disk, each at its current hash and id."""
    db = state.root / ".pinakes" / "index.db"
    conn = sqlite3.connect(db)
    try:
        rows = {p: (h, u) for p, h, u in conn.execute("SELECT path, hash, ulid FROM documents")}
        missing_vec = conn.execute("SELECT count(*) FROM chunks WHERE vec IS NULL").fetchone()[0]
    finally:
        conn.close()
    if set(rows) != set(state.docs):
        failures.append(f"{where}: index documents differ from disk: {sorted(set(rows) ^ set(state.docs))[:5]}")
    for rel, data in state.docs.items():
        if rel not in rows:
            continue
        if rows[rel][0] != hashlib.sha256(data).hexdigest():
            failures.append(f"{where}: {rel} indexed at a stale hash")
        if state.ids.get(rel) and rows[rel][1] != state.ids[rel]:
            failures.append(f"{where}: {rel} indexed under id {rows[rel][1]}, its sidecar says {state.ids[rel]}")
    if missing_vec:
        failures.append(f"{where}: {missing_vec} chunks without a vector")


def check_adopted(state: State, user: Path, failures: list[str], where: str) -> None:
    """After an adoption completed: each page's sidecar holds its front matter; the fleet knows the KB."""
    import tomllib

    from pinakes.markdown import parse_markdown
    from pinakes.sidecar import SIDECAR_OWN_KEYS, read_sidecar
    from pinakes_claudekb.adopt import _plain

    for rel, data in sorted(state.docs.items()):
        fm = parse_markdown(data.decode("utf-8")).front_matter
        sc = read_sidecar(state.root / state.sidecar_of(rel))
        for key, value in fm.items():
            if key not in SIDECAR_OWN_KEYS and _plain(sc.data.get(key)) != value:
                failures.append(f"{where}: {state.sidecar_of(rel)} has {key}={sc.data.get(key)!r}, "
                                f"the front matter {value!r}")
    try:
        fleet = tomllib.loads((user / "fleet.toml").read_text(encoding="utf-8"))
        registered = fleet["kbs"][ADOPT_NAME]["path"]
    except (OSError, KeyError, ValueError) as exc:
        failures.append(f"{where}: the fleet registry does not hold {ADOPT_NAME!r}: {exc!r}")
        return
    if Path(registered) != state.root.resolve():
        failures.append(f"{where}: the fleet registers {ADOPT_NAME!r} at {registered}")


def check_fleet_file(user: Path, failures: list[str], where: str) -> None:
    import tomllib

    path = user / "fleet.toml"
    if path.exists():
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            failures.append(f"{where}: fleet.toml does not parse: {exc}")


def recover(state: State, user: Path, failures: list[str], where: str, adopt: bool = False) -> dict[str, Any]:
    """The next plain command (``pnk sync``, or ``pnk adopt`` again for an adoption) completes and heals."""
    env = env_for(user, None)
    args = ["adopt", str(state.root), "--json"] if adopt else ["sync", "--kb", str(state.root), "--json"]
    rc, out, err = run_pnk(args, env)
    if rc != 0:
        failures.append(f"{where}: recovery {args[0]} failed ({rc}): {err.strip()[-300:]}")
        return {}
    report = json.loads(out)
    if adopt:
        report = report["sync"]
        state.config_written = True
    if report["rebuilt"]:
        failures.append(f"{where}: recovery {args[0]} rebuilt the index")
    temps = stray_temps(state.root, user)
    if temps:
        failures.append(f"{where}: stray temp files after recovery: {temps}")
    check_truth(state, failures, where, strict=True)
    check_index(state, failures, where)
    if adopt:
        check_adopted(state, user, failures, where)
    state.settled()
    return report


def search_signature(root: Path, queries: list[str], embedder: Any) -> list[Any]:
    """What search ranks from, per query: the lexical candidates with their BM25 scores,
    and the fused top hits as a set.

    Compared as sorted lists and sets because BM25 ties are ordered by internal row
    id, which an incremental index and a rebuild assign differently.
    """
    from pinakes import KB
    from pinakes.search import BM25_WEIGHTS, _fts_terms
    from pinakes.text import query_terms

    kb = KB.open(root)
    kb._embedder = embedder
    conn = kb.reader().conn
    out = []
    for q in queries:
        match = _fts_terms(query_terms(q), str(kb.config.retrieval["tokenizer"]))
        lexical = sorted(
            (r[0], r[1], round(r[2], 6)) for r in conn.execute(
                "SELECT d.path, c.start_line, bm25(chunks_fts, ?, ?, ?) FROM chunks_fts "
                "JOIN chunks c ON c.id = chunks_fts.rowid JOIN documents d ON d.doc = c.doc "
                "WHERE chunks_fts MATCH ?", (*BM25_WEIGHTS, match)))
        hits = kb.search(q, k=8).hits
        out.append((lexical, len(hits)))
    kb.close()
    return out


def link_rows(root: Path) -> list[Any]:
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        return sorted(conn.execute(
            "SELECT d.path, l.origin, l.raw, l.kind, l.key, l.rel, l.dst_ulid, l.reason "
            "FROM links l JOIN documents d ON d.doc = l.src_doc").fetchall(), key=repr)
    finally:
        conn.close()


def chunk_vectors(root: Path) -> dict[tuple[str, str], bytes]:
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        return {(p, h): v for p, h, v in conn.execute(
            "SELECT d.path, c.hash, c.vec FROM chunks c JOIN documents d ON d.doc = c.doc")}
    finally:
        conn.close()


def compare_with_rebuild(state: State, user: Path, embedder: Any, queries: list[str], failures: list[str],
                         label: str) -> None:
    """The recovered index against a clean rebuild of a copy of the KB (same embedding cache)."""
    from pinakes import KB

    clean = state.root.parent / f"{state.root.name}-clean"
    shutil.copytree(state.root, clean, ignore=shutil.ignore_patterns(".pinakes"))
    saved = os.environ.get("PINAKES_CACHE_DIR")
    os.environ["PINAKES_CACHE_DIR"] = str(user / "cache")  # the same (shared) embedding cache
    try:
        kb = KB.open(clean)
        kb._embedder = embedder
        rebuilt = kb.sync()
        kb.close()
    finally:
        if saved is None:
            os.environ.pop("PINAKES_CACHE_DIR", None)
        else:
            os.environ["PINAKES_CACHE_DIR"] = saved
    if rebuilt.chunks_embedded:
        failures.append(f"{label}: clean rebuild embedded {rebuilt.chunks_embedded} chunks: the cache lost them")
    if chunk_vectors(clean) != chunk_vectors(state.root):
        failures.append(f"{label}: recovered chunk vectors differ from a clean rebuild's")
    if search_signature(state.root, queries, embedder) != search_signature(clean, queries, embedder):
        failures.append(f"{label}: search after recovery differs from a clean rebuild's")
    if link_rows(state.root) != link_rows(clean):
        failures.append(f"{label}: links after recovery differ from a clean rebuild's")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run(kills: int = 20, docs: int = 300, seed: int = 15, workdir: Path | None = None,
        share: float = 0.03, log: Any = None, ops: Sequence[str] = tuple(OP_WEIGHTS),
        plan: Sequence[tuple[str, str]] = (), cover: bool = False) -> dict[str, Any]:
    """The whole harness; returns the report (``failures`` empty when every check held).

    ``ops``: the commands to kill (``sync``, ``link``, ``adopt``, ``ask``); ``plan``:
    (command, crash point) pairs run first, in order, so a small run can be made to
    cover given points; ``cover`` adds every point of every command, shuffled; the
    remaining rounds are drawn at random.
    """
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="pnk-crash-", dir=workdir))
    user = tmp / "user"
    user.mkdir()
    ops = [op for op in ops if (op != "adopt" or _installed("pinakes_claudekb"))
           and (op != "ask" or _installed("pinakes_deep"))]
    plan = [(op, point) for op, point in plan if op in ops]
    if cover:
        every = [(op, point) for op in ops for point in POINTS[op]]
        rng.shuffle(every)
        plan += every
    state = make_kb(tmp / "kb", docs, rng)
    failures: list[str] = []
    started = time.perf_counter()
    stats: dict[str, Any] = {"kills": 0, "rounds": 0, "not_reached": 0, "by_point": {},
                             "recovery_syncs": 0, "chunks_embedded": 0, "moved_without_sidecar": 0,
                             "swapped": 0, "pages_moved_without_sidecar": 0, "links_staged": 0,
                             "moves_and_swaps_before_a_rebuild": 0}
    say = log or (lambda *_: None)

    def landed(op: str, point: str, rc: int) -> bool:
        killed = rc == -signal.SIGKILL
        if killed:
            stats["kills"] += 1
            key = f"{op} {point}"
            stats["by_point"][key] = stats["by_point"].get(key, 0) + 1
        return killed

    if "ask" in ops:  # the scripted LLM backend (test equipment of pinakes-deep): no network
        script = tmp / "script.json"
        script.write_text(json.dumps(ASK_SCRIPT), encoding="utf-8")
        (user / "config.toml").write_text(f'[llm]\nbackend = "scripted"\nscript = {json.dumps(str(script))}\n',
                                          encoding="utf-8")

    # A first sync, itself killed inside its embedding, then the baseline.
    rc, _, _ = run_pnk(["sync", "--kb", str(state.root)], env_for(user, "embed-batch:2"))
    landed("sync", "embed-batch", rc)
    check_truth(state, failures, "first sync")
    recover(state, user, failures, "baseline")
    t0 = time.perf_counter()
    run_pnk(["sync", "--kb", str(state.root)], env_for(user, None))
    noop = time.perf_counter() - t0

    ckb = None
    if "adopt" in ops:  # a first adoption, killed among its sidecar writes
        ckb = make_claudekb(tmp / "ckb", max(8, docs // 10), rng)
        count = rng.randint(1, len(ckb.docs) // 2 + 1)
        rc, _, err = run_pnk(["adopt", str(ckb.root), "--json"], env_for(user, f"atomic-write:{count}"))
        if not landed("adopt", "atomic-write", rc):
            failures.append(f"first adoption was not killed ({rc}): {err.strip()[-300:]}")
        check_truth(ckb, failures, "first adoption")
        recover(ckb, user, failures, "first adoption recovered", adopt=True)

    queue = list(plan)
    max_rounds = kills * 4 + len(queue)
    while (stats["kills"] < kills or queue) and stats["rounds"] < max_rounds:
        stats["rounds"] += 1
        where = f"round {stats['rounds']}"
        if queue:
            op, point = queue.pop(0)
        else:
            op = rng.choices(ops, weights=[OP_WEIGHTS[o] for o in ops])[0]
            point = rng.choice(POINTS[op])
        if op in ("link", "ask") and state.pending:
            # A move or swap must be recognised by a sync before anything else edits
            # those sidecars (a swap is recognised only while its sidecars are untouched).
            recover(state, user, failures, f"{where} (settle)")
            stats["recovery_syncs"] += 1
        target = state
        count = rng.randint(1, 3)
        if op == "adopt":
            assert ckb is not None
            target = ckb
            stats["pages_moved_without_sidecar"] += mutate_claudekb(ckb, rng)
            args = ["adopt", str(ckb.root), "--json"]
        else:
            rebuild = (op == "sync" and point not in ("move-sidecar", "swap-sidecar") and not state.pending
                       and rng.random() < 0.15)  # a killed --rebuild must recover too
            made = mutate(state, rng, share, "sync --rebuild" if rebuild else op, point)
            for key, n in made.items():
                stats[key] += n
            if rebuild:
                stats["moves_and_swaps_before_a_rebuild"] += sum(made.values())
            if op == "link":
                src, dst = rng.sample(sorted(state.docs), 2)
                args = ["link", src, dst, "--rel", rng.choice(["cites", "uses", "extends"]),
                        "--kb", str(state.root)]
            elif op == "ask":
                question = " ".join(rng.sample(WORDS, 3))
                args = ["ask", question, "--kb", str(state.root), "--write-suggestions", "--yes", "--json"]
                # The first atomic write is the run's transcript; it syncs twice (before and after).
                count = rng.randint(2, 4) if point == "atomic-write" else rng.randint(1, 2)
            else:
                args = ["sync", "--kb", str(state.root), *(["--rebuild"] if rebuild else [])]
                op = "sync --rebuild" if rebuild else "sync"
                if point in ("move-sidecar", "swap-sidecar"):
                    count = 1 if point == "move-sidecar" else rng.randint(1, 2)  # one move; a swap writes 2
        if point == "timed":
            delay = rng.uniform(0.2, max(0.5, noop * 3))
            rc, out, err = run_pnk(args, env_for(user, None), delay=delay)
            label = f"timed {delay:.2f}s"
        else:
            rc, out, err = run_pnk(args, env_for(user, f"{point}:{count}"))
            label = f"{point}:{count}"
        killed = landed(op, point, rc)
        if not killed:
            stats["not_reached"] += 1
            if rc != 0:
                failures.append(f"{where}: pnk {op} exited {rc} without a kill: {err.strip()[-300:]}")
            elif op == "ask":
                staged = json.loads(out).get("staged") or {}
                stats["links_staged"] += len(staged.get("added", []))
        say(f"{where}: pnk {op} at {label}: {'killed' if killed else f'finished ({rc})'}")
        for db in (target.root / ".pinakes" / "index.db", user / "cache" / "embeddings.db"):
            verdict = integrity(db)
            if verdict != "ok":
                failures.append(f"{where}: {db.name} integrity_check: {verdict}")
        check_fleet_file(user, failures, where)
        check_truth(target, failures, where)
        if rng.random() < 0.7 or stats["kills"] >= kills:
            report = recover(target, user, failures, where, adopt=op == "adopt")
            stats["recovery_syncs"] += 1
            stats["chunks_embedded"] += int(report.get("chunks_embedded", 0))
    recover(state, user, failures, "final")
    if ckb is not None:
        recover(ckb, user, failures, "final adoption", adopt=True)
        rc, out, err = run_pnk(["sync", "--kb", str(ckb.root), "--json"], env_for(user, None))
        after = json.loads(out) if rc == 0 else {}
        if rc != 0 or after.get("rebuilt") or after.get("added") or after.get("changed") or after.get("removed"):
            failures.append(f"a plain sync after the last adoption was not a no-op ({rc}): "
                            f"{(err.strip() or out)[-300:]}")

    from pinakes.default_plugins.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(12)]
    compare_with_rebuild(state, user, embedder, queries, failures, "kb")
    if ckb is not None:
        compare_with_rebuild(ckb, user, embedder, queries, failures, "adopted kb")
    deep_links = sum(p.read_text(encoding="utf-8").count("origin: deep") for p in state.root.rglob("*.pnk.yaml"))

    stats.update({
        "documents": len(state.docs),
        "sidecars": len(state.ids),
        "adopted_pages": len(ckb.docs) if ckb is not None else 0,
        "deep_links_in_sidecars": deep_links,
        "seed": seed,
        "queries_compared": len(queries),
        "seconds": round(time.perf_counter() - started, 1),
        "failures": failures,
    })
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        stats["kept"] = str(tmp)
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=40, help="kills to land (default 40)")
    ap.add_argument("--docs", type=int, default=300, help="documents in the generated KB (default 300)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--share", type=float, default=0.03, help="share of documents edited per round")
    ap.add_argument("--ops", default=",".join(OP_WEIGHTS), help="commands to kill (default: all four)")
    ap.add_argument("--no-cover", action="store_true",
                    help="do not start with one kill at every crash point of every command")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    report = run(args.kills, args.docs, args.seed, args.workdir, args.share,
                 log=None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True)),
                 ops=[o.strip() for o in args.ops.split(",") if o.strip()], cover=not args.no_cover)
    print(json.dumps(report, indent=2))
    sys.exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
