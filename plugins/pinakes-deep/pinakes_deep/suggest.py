"""Write-back: what a paid run discovered, as sidecar links for the user to review and commit.

Two kinds of pair are proposed: documents the final answer cited together
(``rel: related``), and a document that answered a sub-question paired with
one that answered a sub-question depending on it (``rel: bridges``). Pairs
already linked either way are skipped. Each proposal carries ``origin: deep``
and the transcript id; once committed it is an ordinary authored link.

:func:`write_suggestions` stages them with the same sidecar editing code as
``pnk link`` (comments and key order kept, each file written atomically),
prepares every edit before writing any, and is idempotent: a link already in
the sidecar (same target, same relation) is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ORIGIN = "deep"


def _linked(kb: Any) -> set[tuple[str, str]]:
    with kb.reader().snapshot() as conn:
        rows = conn.execute(
            "SELECT d.ulid, l.dst_ulid FROM links l JOIN documents d ON d.doc = l.src_doc"
            " WHERE l.dst_ulid IS NOT NULL").fetchall()
    out: set[tuple[str, str]] = set()
    for a, b in rows:
        out.add((a, b))
        out.add((b, a))
    return out


def propose(kb: Any, cites: Sequence[Any], bridges: Sequence[tuple[Sequence[Any], Sequence[Any], str]],
            transcript_id: str, question: str, limit: int) -> list[dict[str, Any]]:
    """Proposed links (dicts), most useful first, at most ``limit``."""
    linked = _linked(kb)
    seen: set[frozenset[str]] = set()
    out: list[dict[str, Any]] = []

    def add(a: Any, b: Any, rel: str, why: str) -> None:
        if a.doc_id == b.doc_id or not a.doc_id or not b.doc_id:
            return
        key = frozenset((a.doc_id, b.doc_id))
        if key in seen or (a.doc_id, b.doc_id) in linked:
            return
        seen.add(key)
        out.append({"src": a.path, "src_id": a.doc_id, "to": b.path, "to_id": b.doc_id, "rel": rel,
                    "origin": ORIGIN, "transcript": transcript_id, "why": why})

    for src, dst, via in bridges:
        for a in src[:2]:
            for b in dst[:2]:
                add(a, b, "bridges", f"answered sub-questions {via}")
    for i, a in enumerate(cites):
        for b in cites[i + 1:]:
            add(a, b, "related", "cited together in one answer")
    q = question if len(question) <= 80 else question[:77] + "..."
    for s in out:
        s["note"] = f"{s['why']}: {q}"
    return out[:limit]


def write_suggestions(kb: Any, suggestions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Stage ``suggestions`` into their sidecars; returns what was added and what existed."""
    from ruamel.yaml.comments import CommentedMap

    from pinakes.errors import DocumentNotFound
    from pinakes.links import _editable_sidecar, _links_seq, _matching, relative_to, target_for
    from pinakes.sidecar import write_sidecar

    edits: dict[str, Any] = {}
    added: list[dict[str, Any]] = []
    existing: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    if suggestions:
        # As `pnk link` does: the index must know where each document is now. A source
        # deleted since the last sync would otherwise get its sidecar written back
        # beside nothing, and a moved one the sidecar at its old path.
        kb.sync()
    for s in suggestions:
        try:
            src_row = kb.resolve(s["src_id"])
        except DocumentNotFound:
            skipped.append(s)
            continue
        target = target_for(kb, s["to_id"])
        if target is None:
            skipped.append(s)
            continue
        sc = edits.get(src_row["sidecar_path"]) or _editable_sidecar(kb, src_row)
        seq = _links_seq(sc, create=True)
        if _matching(kb, src_row, seq, target["path"], target, s["rel"]):
            existing.append(s)
            continue
        item = CommentedMap()
        item["to"] = relative_to(src_row["path"], target["path"])
        item["rel"] = s["rel"]
        item["note"] = s.get("note") or ""
        item["origin"] = ORIGIN
        item["transcript"] = s["transcript"]
        if getattr(seq, "fa", None) is not None and seq.fa.flow_style():
            seq.fa.set_block_style()
        seq.append(item)
        edits[src_row["sidecar_path"]] = sc
        added.append({**s, "sidecar": src_row["sidecar_path"]})
    for sc in edits.values():  # every edit prepared before the first write
        write_sidecar(sc)
    summary = kb.sync().summary() if edits else None
    return {"added": added, "existing": existing, "skipped": skipped, "sidecars": sorted(edits),
            "sync": summary}
