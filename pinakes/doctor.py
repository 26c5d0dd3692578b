"""``pnk doctor``: what is wrong with a knowledge base, and what could be better.

Errors (non-zero exit): the store is missing or was built for another schema,
two documents claim one id. Warnings (listed, exit 0): dangling links with
``file:line``, orphan sidecars, front matter that disagrees with its sidecar
(for a sidecar written by ``pnk adopt``: front matter that changed since),
sidecar link entries without a target, problems of the last sync. Nudges:
link coverage (the share of documents with at least one authored link, in or
out), the documents with no link at all, and resolution per link form
(``wikilink 412/430``, ``embed 20/20``...) with a hint for a form that mostly
fails: the sign that a vault's note dialect is not understood.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dialects import FORMS
from .fsutil import WalkProblem, markdown_left_out, other_text_files, site_copies, walk_kb
from .graph import top_hubs
from .health import mark_damaged, verify_index
from .links import DOC_SUFFIXES, SIDECAR, SOFT_REASONS, FleetLookup, fleet_refine
from .sidecar import ADOPTED, SIDECAR_OWN_KEYS, SUFFIX
from .store import SCHEMA_VERSION, NotSynced, damaged

if TYPE_CHECKING:
    from .kb import KB

MAX_LISTED = 200  # per finding list; the counts stay exact
GLUE_SHARE = 0.5  # a tag on at least half the documents ...
GLUE_MIN_DOCS = 5  # ... of at least this many is reported as meaningless glue
HINT_MIN_LINKS = 5  # a link form this common ...
HINT_BELOW = 0.5  # ... resolving less than this share gets a hint


def diagnose(kb: KB) -> dict[str, Any]:
    """Every check, as one JSON-able report (``ok`` is False when there are errors)."""
    report: dict[str, Any] = {
        "kb": kb.name,
        "root": str(kb.root),
        "ok": True,
        "errors": 0,
        "warnings": 0,
        "store": {},
        "coverage": {},
        "link_forms": [],
        "zero_links": [],
        "dangling": [],
        "moved_links": [],
        "duplicate_ids": [],
        "orphan_sidecars": [],
        "disagreements": [],
        "adoption_drift": [],
        "bad_link_entries": [],
        "problems": [],
        "counts": {},
    }
    db = kb.config.state_dir / "index.db"
    if not db.exists():
        report["store"] = {"indexed": False, "message": "not indexed yet: run `pnk sync`"}
        return _finish(report, errors=1)
    try:
        store = kb.reader()
    except NotSynced as exc:
        report["store"] = {"indexed": True, "current": False, "message": str(exc)}
        return _finish(report, errors=1)
    # Doctor reads every row once (pinakes/health.py): damage no search has met yet is
    # found here, and marked so the next sync rebuilds.
    damage = verify_index(db)
    if damage is not None:
        mark_damaged(kb.config.state_dir, damage)
        kb.invalidate()
        report["store"] = {"indexed": True, "current": False, "damaged": damage, "message": damaged(damage)}
        return _finish(report, errors=1)
    last = store.get_meta("last_sync")
    report["store"] = {
        "indexed": True,
        "current": True,
        "schema_version": SCHEMA_VERSION,
        "signature": store.get_meta("signature"),
        "generation": store.generation,
        "last_sync": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None,
    }
    with store.snapshot() as conn:
        docs = [dict(r) for r in conn.execute(
            "SELECT doc, ulid, path, title, sidecar_path, meta FROM documents ORDER BY path")]
        report["store"]["documents"] = len(docs)
        _coverage(kb, conn, docs, report)
        _moved_links(conn, report)
        _duplicates(conn, report)
        sidecar_paths = {d["sidecar_path"] for d in docs}
        for d in docs:
            _disagreements(d, report)
        # A problem with a line already names its file ("a.md:3: ..."): not twice.
        report["problems"] = [m if m.startswith(f"{p}:") else f"{p}: {m}" for p, m in store.document_problems()]
    report["orphan_sidecars"] = _orphans(kb, sidecar_paths)
    # Markdown files no include pattern names, by suffix (a nudge: .mdx pages).
    report["left_out"] = markdown_left_out(kb.root, list(kb.config.kb["include"]), list(kb.config.kb["exclude"]))
    # No document at all: the text files of other formats that are here (.rst, .txt, ...).
    report["other_text"] = other_text_files(kb.root, list(kb.config.kb["include"]), list(
        kb.config.kb["exclude"])) if not report["store"].get("documents") and not report["left_out"] else {}
    # A docs site's copies of its pages that are indexed (a KB made before pnk init left
    # them out, or one that took them back in on purpose): a nudge, not a warning.
    paths = [d["path"] for d in docs]
    report["site_copies"] = [
        {"folder": folder, "what": what, "documents": n}
        for folder, what in site_copies(kb.root)
        if (n := sum(1 for p in paths if p.startswith(folder + "/")))]
    report["uncommitted_deep_links"] = _uncommitted_deep_links(kb, store)
    # Graph hubs: the highest-degree shared-value nodes; a tag on most documents is
    # glue, not signal (its spokes are damped 1/degree, but it is worth knowing).
    with store.snapshot() as conn:
        report["hubs"] = top_hubs(conn, limit=10)
    from .channel_choice import describe as channel_state
    from .evaluation.calibration import describe_in_force

    report["channel"] = channel_state(kb)  # which graph channel searches use, and why
    report["calibration"] = describe_in_force(kb)  # and whether the KB's own went stale
    report["glue_tags"] = [
        h for h in report["hubs"]
        if h["kind"] == "tag" and h["share"] >= GLUE_SHARE and h["degree"] >= GLUE_MIN_DOCS
    ]
    warnings = sum(len(report[k]) for k in ("dangling", "moved_links", "orphan_sidecars", "disagreements",
                                            "adoption_drift", "glue_tags",
                                            "bad_link_entries", "problems"))
    warnings += 1 if report["calibration"]["problem"] else 0
    return _finish(report, errors=len(report["duplicate_ids"]), warnings=warnings)


def _finish(report: dict[str, Any], errors: int = 0, warnings: int = 0) -> dict[str, Any]:
    report["errors"] = errors
    report["warnings"] = warnings
    report["ok"] = errors == 0
    for key in ("zero_links", "dangling", "moved_links", "orphan_sidecars", "disagreements", "adoption_drift",
                "bad_link_entries",
                "problems"):
        report["counts"][key] = len(report[key])
        if len(report[key]) > MAX_LISTED:
            report[key] = report[key][:MAX_LISTED]
    return report


def _coverage(kb: KB, conn: Any, docs: list[dict[str, Any]], report: dict[str, Any]) -> None:
    by_ulid: dict[str, list[int]] = {}
    for d in docs:
        by_ulid.setdefault(d["ulid"], []).append(d["doc"])
    path_of = {d["doc"]: d["path"] for d in docs}
    sidecar_of = {d["doc"]: d["sidecar_path"] for d in docs}
    authored: set[int] = set()
    linked: set[int] = set()
    for src, dst, origin in conn.execute(
        "SELECT src_doc, dst_ulid, origin FROM links WHERE dst_ulid IS NOT NULL"
    ):
        ends = {src, *by_ulid.get(dst, [])}
        linked |= ends
        if origin == SIDECAR:
            authored |= ends
    forms: dict[str, dict[str, Any]] = {}
    for form, total, resolved in conn.execute(
        "SELECT form, count(*), count(dst_ulid) FROM links GROUP BY form"
    ):
        forms[form or "other"] = {"form": form or "other", "links": total, "resolved": resolved,
                                  "reasons": {}, "examples": []}
    rows = [dict(r) for r in conn.execute(
        "SELECT src_doc, raw, kind, key, rel, reason, origin, line, form FROM links"
        " WHERE dst_ulid IS NULL ORDER BY src_doc, origin, line, id")]
    for r in fleet_refine(kb, rows, FleetLookup(kb)):
        tally = forms[r["form"] or "other"]
        if r.get("reason"):
            tally["reasons"][r["reason"]] = tally["reasons"].get(r["reason"], 0) + 1
            if len(tally["examples"]) < 3:
                tally["examples"].append(f"{path_of[r['src_doc']]}:{r['line']}: {r['raw']}")
        else:
            tally["resolved"] += 1
        if r.get("reason") in SOFT_REASONS:
            continue  # a plain tag, a link to what is likely not a note: counted, not dangling
        if r.get("reason"):
            report["dangling"].append({
                "file": path_of[r["src_doc"]] if r["origin"] != SIDECAR else sidecar_of[r["src_doc"]],
                "line": r["line"], "target": r["raw"], "reason": r["reason"], "origin": r["origin"],
                "rel": r["rel"],
            })
        else:  # found in another KB of the fleet: it counts as a link
            linked.add(r["src_doc"])
            if r["origin"] == SIDECAR:
                authored.add(r["src_doc"])
    report["dangling"].sort(key=lambda x: (x["file"], x["line"], x["target"]))
    order = {f: i for i, f in enumerate(FORMS)}
    report["link_forms"] = [_with_hint(f) for f in
                            sorted(forms.values(), key=lambda f: (order.get(f["form"], 99), f["form"]))]
    n = len(docs)
    report["coverage"] = {
        "documents": n,
        "with_authored_links": len(authored),
        "share": round(len(authored) / n, 4) if n else 0.0,
        "with_any_links": len(linked),
    }
    report["zero_links"] = [d["path"] for d in docs if d["doc"] not in linked]


def _moved_links(conn: Any, report: dict[str, Any]) -> None:
    """Links that resolve only through a move record (pinakes/relink.py): the text needs fixing.

    Pinakes never edits a body, so a body link to a note that moved keeps
    naming the old path; it resolves meanwhile (the graph keeps its edge), and
    this names the move and the new path.
    """
    for r in conn.execute(
        "SELECT l.raw, l.key, l.line, l.origin, s.path AS src, s.sidecar_path, d.path AS dst,"
        " EXISTS(SELECT 1 FROM moves m WHERE m.path = l.key AND m.doc = d.doc) AS target_moved"
        " FROM links l JOIN documents s ON s.doc = l.src_doc"
        " JOIN documents d ON d.ulid = l.dst_ulid WHERE l.reason = 'moved'"
        " ORDER BY s.path, l.origin, l.line, l.id"
    ):
        if r["target_moved"]:
            how = f"{r['key']} moved to {r['dst']}"
        else:
            how = f"written before {r['src']} moved; the document meant is {r['dst']}"
        report["moved_links"].append({
            "file": r["src"] if r["origin"] != SIDECAR else r["sidecar_path"], "line": r["line"],
            "target": r["raw"], "old": r["key"], "new": r["dst"], "origin": r["origin"],
            "message": f"{how}: update the link (it resolves through the move meanwhile)",
        })


# Per reason: what the failing links do, and what to check.
_HINTS = {
    "missing-file": ("name no note", "names match a note's path, file name, title or alias, "
                     "in any case; are those notes inside this KB? (docs/links.md, note dialects)"),
    "ambiguous-title": ("name several notes", "write a longer path ([[folder/note]])"),
    "outside-kb": ("point outside the KB", "run pnk on the vault's root folder"),
    "no-document": ("written without .md (a page, a folder, a route, an .html page) name no note",
                    "they are likely folders, web routes or other files"),
    "unknown-kb": ("name a KB not in the fleet", "pnk fleet add NAME PATH"),
    "unknown-id": ("name an unknown id", "no document here or in the fleet has it"),
}


def _with_hint(tally: dict[str, Any]) -> dict[str, Any]:
    """A form's tally with a one-line ``hint`` when it is common and mostly fails to resolve.

    Tags are exempt: a ``#tag`` without a page of its name is a tag, not a failure.
    """
    total, resolved = tally["links"], tally["resolved"]
    tally["reasons"] = dict(sorted(tally["reasons"].items(), key=lambda kv: (-kv[1], kv[0])))
    if tally["form"] != "tag" and total >= HINT_MIN_LINKS and resolved < HINT_BELOW * total \
            and tally["reasons"]:
        reason, n = next(iter(tally["reasons"].items()))
        what, advice = _HINTS.get(reason, (f"do not resolve ({reason})", "see docs/links.md"))
        example = f" (e.g. {tally['examples'][0]})" if tally["examples"] else ""
        tally["hint"] = f"{tally['form']}: {resolved}/{total} resolve; {n} {what}{example}: {advice}"
    return tally


def _duplicates(conn: Any, report: dict[str, Any]) -> None:
    """Ids two documents claim; ``shared_sidecar`` when that is because they share one sidecar
    (``a.md`` and ``a.mdx``: a sidecar is named after the file without its suffix)."""
    for ulid, paths, sidecar, sidecars in conn.execute(
        "SELECT ulid, json_group_array(path), min(sidecar_path), count(DISTINCT sidecar_path)"
        " FROM (SELECT ulid, path, sidecar_path FROM documents ORDER BY path)"
        " GROUP BY ulid HAVING count(*) > 1 ORDER BY ulid"
    ):
        report["duplicate_ids"].append({"id": ulid, "paths": json.loads(paths),
                                        "shared_sidecar": sidecar if sidecars == 1 else None})


def _disagreements(doc: dict[str, Any], report: dict[str, Any]) -> None:
    meta = json.loads(doc["meta"] or "{}")
    fm = meta.get("front_matter") if isinstance(meta.get("front_matter"), dict) else {}
    sc = meta.get("sidecar") if isinstance(meta.get("sidecar"), dict) else {}
    if _adoption_drift(doc, fm, sc, report):
        fm = {}  # an adopted sidecar's title and tags are checked as drift, not twice
    fm_title, sc_title = fm.get("title"), sc.get("title")
    if isinstance(fm_title, str) and isinstance(sc_title, str) and fm_title.strip() and \
            sc_title.strip() and fm_title.strip() != sc_title.strip():
        report["disagreements"].append({"file": doc["sidecar_path"], "document": doc["path"],
                                        "field": "title", "front_matter": fm_title.strip(),
                                        "sidecar": sc_title.strip()})
    fm_tags, sc_tags = _tags(fm.get("tags")), _tags(sc.get("tags"))
    if fm_tags and sc_tags and set(fm_tags) != set(sc_tags):
        report["disagreements"].append({"file": doc["sidecar_path"], "document": doc["path"],
                                        "field": "tags", "front_matter": fm_tags, "sidecar": sc_tags})
    links = sc.get("links")
    if isinstance(links, list):
        for i, item in enumerate(links, 1):
            if not isinstance(item, dict) or not isinstance(item.get("to"), str) or not item["to"].strip():
                report["bad_link_entries"].append({
                    "file": doc["sidecar_path"], "entry": i,
                    "message": "a link entry needs `to:` (a path, pnk://ULID or kb://name/path)",
                })


def _adoption_drift(doc: dict[str, Any], fm: dict[str, Any], sc: dict[str, Any],
                    report: dict[str, Any]) -> bool:
    """Front matter that changed since ``pnk adopt`` copied it into the sidecar.

    An adopted sidecar says which of its keys it took from the front matter
    (``adopted: {from, fields}``); the front matter owns those, so any key
    whose two values now differ, and any front-matter key added since, is
    drift that the next ``pnk adopt`` would copy over. Returns whether the
    sidecar was adopted at all.
    """
    adopted = sc.get(ADOPTED)
    if not isinstance(adopted, dict) or not isinstance(adopted.get("fields"), list):
        return False
    fields = [str(f) for f in adopted["fields"]]
    keys = list(dict.fromkeys(fields + [k for k in fm if k not in SIDECAR_OWN_KEYS]))
    for key in keys:
        if fm.get(key) != sc.get(key):
            report["adoption_drift"].append({
                "file": doc["sidecar_path"], "document": doc["path"], "field": key,
                "front_matter": fm.get(key), "sidecar": sc.get(key),
                "importer": str(adopted.get("from") or ""),
            })
    return True


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list):
        return [str(t) for t in value if isinstance(t, str | int | float)]
    return []


def _orphans(kb: KB, known: set[str]) -> list[str]:
    """Sidecars whose document is gone (neither indexed nor on disk)."""
    mode = str(kb.config.kb["sidecars"])
    problems: list[WalkProblem] = []
    if mode in ("", "beside"):
        base, prefix = kb.root, ""
        exclude = list(kb.config.kb["exclude"])
    else:
        prefix = mode.strip("/")
        base = kb.root / prefix
        if not base.is_dir():
            return []
        exclude = []
    out: list[str] = []
    for rel, _path in walk_kb(base, ["**/*" + SUFFIX], exclude, problems):
        full_rel = f"{prefix}/{rel}" if prefix else rel
        if full_rel in known:
            continue
        stem = rel[: -len(SUFFIX)]
        if any(os.path.lexists(kb.root / (stem + s)) for s in DOC_SUFFIXES):
            continue  # its document exists but was not indexed (excluded, skipped): not an orphan
        out.append(full_rel)
    return sorted(out)


def _uncommitted_deep_links(kb: KB, store: Any) -> list[dict[str, Any]]:
    """Sidecar links staged by ``pnk ask --deep --write-suggestions`` (``origin: deep``) not in git's HEAD.

    A suggestion becomes an authored link when the user commits it; until then
    doctor lists it, so it is reviewed rather than forgotten. Outside a git
    repository every such link is listed.
    """
    import subprocess

    from .sidecar import read_sidecar

    with store.snapshot() as conn:
        rows = [dict(r) for r in conn.execute(
            "SELECT d.sidecar_path, l.raw, l.rel FROM links l JOIN documents d ON d.doc = l.src_doc"
            " WHERE l.origin = ? AND l.provenance = 'deep' ORDER BY d.sidecar_path, l.line", (SIDECAR,))]
    out: list[dict[str, Any]] = []
    committed: dict[str, set[tuple[str, str]] | None] = {}
    for r in rows:
        path = r["sidecar_path"]
        if path not in committed:
            try:
                proc = subprocess.run(["git", "-C", str(kb.root), "show", f"HEAD:./{path}"],
                                      capture_output=True, text=True, timeout=10)
            except (OSError, subprocess.SubprocessError):
                proc = None
            pairs: set[tuple[str, str]] | None = None
            if proc is not None and proc.returncode == 0:
                import tempfile

                with tempfile.TemporaryDirectory() as tmp:
                    p = Path(tmp) / "head.pnk.yaml"
                    p.write_text(proc.stdout, encoding="utf-8")
                    links = read_sidecar(p).links
                pairs = {(str(x.get("to", "")).strip(), str(x.get("rel", ""))) for x in links
                         if isinstance(x, dict) and x.get("origin") == "deep"}
            committed[path] = pairs
        pairs = committed[path]
        if pairs is None or (r["raw"], r["rel"]) not in pairs:
            out.append({"file": path, "to": r["raw"], "rel": r["rel"], "transcript": _transcript_of(kb, path, r["raw"])})
    return out


def _transcript_of(kb: KB, sidecar: str, to: str) -> str:
    from .sidecar import read_sidecar

    for x in read_sidecar(kb.root / sidecar).links:
        if isinstance(x, dict) and str(x.get("to", "")).strip() == to and x.get("origin") == "deep":
            return str(x.get("transcript") or "")
    return ""
