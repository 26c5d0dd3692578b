"""Links: every form, every unresolved reason, re-resolution, traversal caps, `pnk link`/`unlink`."""

from __future__ import annotations

import builtins
import io
import json
import os

import pytest
from click.testing import CliRunner

from pinakes import links as links_mod
from pinakes.cli import cli
from pinakes.errors import AmbiguousDocument, DocumentNotFound, LinkError, QueryError

E_ID = "01JDQ5S8Z6W3K1V9XQ2M4B7N0C"
NOWHERE_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def out_links(kb, doc: str, **kw) -> dict[str, set[str]]:
    """{neighbour path: {rel, ...}} for outgoing links of ``doc``."""
    result = kb.walk_links(doc, direction="out", **kw)
    found: dict[str, set[str]] = {}
    for n in result.neighbours:
        found.setdefault(n.path, set()).add(n.rel)
    return found


def stored(kb, doc: str) -> list[dict]:
    with kb.reader().snapshot() as conn:
        return [dict(r) for r in conn.execute(
            "SELECT l.origin, l.raw, l.kind, l.key, l.rel, l.line, l.dst_ulid, l.reason FROM links l"
            " JOIN documents d ON d.doc = l.src_doc WHERE d.path = ? ORDER BY l.origin, l.line, l.id",
            (doc,))]


FORMS = {
    "notes/a.md": f"""
        # Note A

        Inline [b](b.md#intro), reference [c][cref], root-absolute [d](/other/d.md),
        by id <pnk://{E_ID}>, by title [[Title F]], by path [[other/g.md|gee]],
        by path without suffix [[other/h]] and percent-encoded [spaced](my%20note.md).

        Not document links: [web](https://example.org/x.md), [mail](mailto:me@example.org),
        ![image](pic.png), [pdf](paper.pdf), [self](#intro), `[code](code.md)`.

        ```
        [fenced](fenced.md)
        ```

        [cref]: ../other/c.md
        """,
    "notes/a.pnk.yaml": f"""
        id: 01JDQ5S8Z6W3K1V9XQ2M4B7N0D
        title: Note A
        links:
          - to: b.md
            rel: extends
          - to: ../other/d.md
            rel: cites
            note: the classic
            origin: deep
          - to: pnk://{E_ID}
            rel: uses
        """,
    "notes/b.md": "# Note B\n\nbee\n",
    "notes/my note.md": "# Spaced\n\nspace\n",
    "other/c.md": "# Note C\n\ncee\n",
    "other/d.md": "# Note D\n\ndee\n",
    "other/e.md": "# Note E\n\nee\n",
    "other/e.pnk.yaml": f"id: {E_ID}\ntitle: Note E\n",
    "other/f.md": "---\ntitle: Title F\n---\nfff\n",
    "other/g.md": "# Note G\n\ngee\n",
    "other/h.md": "# Note H\n\nhaitch\n",
}


def test_every_link_form_resolves(make_kb) -> None:
    kb = make_kb(FORMS)
    kb.sync()
    found = out_links(kb, "notes/a.md")
    assert found == {
        "notes/b.md": {"extends"},  # the typed sidecar link absorbs the body link to the same doc
        "other/c.md": {"links-to"},
        "other/d.md": {"cites"},
        "other/e.md": {"uses"},
        "other/f.md": {"links-to"},
        "other/g.md": {"links-to"},
        "other/h.md": {"links-to"},
        "notes/my note.md": {"links-to"},
    }
    rows = stored(kb, "notes/a.md")
    assert all(r["dst_ulid"] for r in rows), rows
    scan = [r for r in rows if r["origin"] == "reverse-scan"]
    assert [r["raw"] for r in scan] == [
        "b.md#intro", "../other/c.md", "/other/d.md", f"pnk://{E_ID}", "Title F", "other/g.md",
        "other/h", "my note.md",
    ]
    assert {r["line"] for r in scan} == {3, 4, 5}
    sidecar = [r for r in rows if r["origin"] == "sidecar"]
    assert [(r["rel"], r["line"]) for r in sidecar] == [("extends", 4), ("cites", 6), ("uses", 10)]
    # the graph sees authored links with their weight: sidecar 2.0, body 1.0
    weights = {n.path: n.score for n in kb.walk_links("notes/a.md").neighbours if n.direction == "out"}
    assert weights["other/d.md"] == 2.0 and weights["other/c.md"] == 1.0
    # incoming: b is linked from a
    back = kb.links("notes/b.md", direction="in")
    assert [(n["title"], n["rel"], n["direction"]) for n in back["neighbours"]] == [
        ("Note A", "extends", "in")]


REASONS = {
    "src.md": f"""
        # Source

        [gone](missing.md) and [escape](../../etc/passwd.md) and <pnk://{NOWHERE_ID}>
        and [other kb](kb://nowhere/x.md) and [[Twin]] and [[No Such Title]].
        """,
    "twin-1.md": "---\ntitle: Twin\n---\none\n",
    "twin-2.md": "---\ntitle: Twin\n---\ntwo\n",
}


def test_every_unresolved_reason_is_kept_with_its_reason(make_kb) -> None:
    kb = make_kb(REASONS)
    kb.sync()
    result = kb.links("src.md")
    assert result["unresolved"] == [
        {"target": "missing.md", "reason": "missing-file"},
        {"target": "../../etc/passwd.md", "reason": "outside-kb"},
        {"target": f"pnk://{NOWHERE_ID}", "reason": "unknown-id"},
        {"target": "kb://nowhere/x.md", "reason": "unknown-kb"},
        {"target": "Twin", "reason": "ambiguous-title"},
        {"target": "No Such Title", "reason": "missing-file"},
    ]
    assert result["neighbours"] == []
    # a link in the sidecar that cannot resolve is kept too
    sc = kb.root / "src.pnk.yaml"
    sc.write_text(sc.read_text().replace("links: []", "links:\n  - to: nothing-here.md\n    rel: cites\n"))
    kb.sync()
    assert {"target": "nothing-here.md", "reason": "missing-file"} in kb.links("src.md")["unresolved"]
    assert kb.links("src.md", rel="cites")["unresolved"] == [
        {"target": "nothing-here.md", "reason": "missing-file"}]


def test_resync_resolves_a_link_once_its_target_appears(make_kb) -> None:
    kb = make_kb({
        "a.md": "# A\n\nSee [later](later.md), [[Future Title]] and [b](b.md).\n",
        "b.md": "# B\n\nbee\n",
    })
    kb.sync()
    assert {u["target"] for u in kb.links("a.md")["unresolved"]} == {"later.md", "Future Title"}
    (kb.root / "later.md").write_text("# Later\n\nNow it exists.\n")
    (kb.root / "c.md").write_text("---\ntitle: Future Title\n---\ncee\n")
    kb.sync()
    assert set(out_links(kb, "a.md")) == {"later.md", "c.md", "b.md"}
    assert kb.links("a.md")["unresolved"] == []
    # a second document with the same title makes the title link ambiguous
    (kb.root / "d.md").write_text("---\ntitle: Future Title\n---\ndee\n")
    kb.sync()
    assert kb.links("a.md")["unresolved"] == [{"target": "Future Title", "reason": "ambiguous-title"}]
    # retitling one of them resolves it again, to the other
    (kb.root / "d.md").write_text("---\ntitle: Something Else\n---\ndee\n")
    sc = kb.root / "d.pnk.yaml"
    sc.write_text(sc.read_text().replace("title: Future Title", "title: Something Else"))
    kb.sync()
    assert "c.md" in out_links(kb, "a.md") and kb.links("a.md")["unresolved"] == []
    # deleting a target unresolves the link; a rename keeps id links and breaks path links
    os.remove(kb.root / "later.md")
    kb.sync()
    assert kb.links("a.md")["unresolved"] == [{"target": "later.md", "reason": "missing-file"}]
    b_id = kb.show("b.md")["doc_id"]
    (kb.root / "c.md").write_text(f"---\ntitle: Future Title\n---\nsee <pnk://{b_id}>\n")
    kb.sync()
    os.rename(kb.root / "b.md", kb.root / "b2.md")
    os.rename(kb.root / "b.pnk.yaml", kb.root / "b2.pnk.yaml")
    report = kb.sync()
    assert report.renamed == [("b.md", "b2.md")]
    assert {"target": "b.md", "reason": "missing-file"} in kb.links("a.md")["unresolved"]
    assert "b2.md" in out_links(kb, "c.md")


def test_only_what_can_change_is_resolved_again(make_kb, monkeypatch) -> None:
    files = {f"n{i}.md": f"# N{i}\n\n[next](n{i + 1}.md) [[N{i + 2}]] [gone](nope{i}.md)\n"
             for i in range(12)}
    kb = make_kb(files)
    kb.sync()
    calls: list[int] = []
    real = links_mod.Resolver.answers

    def counting(self, items):
        calls.append(len(items))
        return real(self, items)

    monkeypatch.setattr(links_mod.Resolver, "answers", counting)
    kb.sync()
    assert calls == []  # a no-op sync does no link work
    (kb.root / "n5.md").write_text("# N5\n\n[next](n6.md) and more words [[N7]] [gone](nope5.md)\n")
    kb.sync()
    # n5's three links, plus the links pointing at n5 (n4's path link, n3's title link)
    assert sum(calls) == 5
    calls.clear()
    (kb.root / "n12.md").write_text("# N12\n\nthe end\n")  # a new document
    kb.sync()
    # only the links naming it are retried (n11's link to n12.md and n10's [[N12]]), not the
    # other unresolved ones ("nope" links, [[N13]])
    assert sum(calls) == 2
    assert "n12.md" in out_links(kb, "n11.md") and "n12.md" in out_links(kb, "n10.md")


def test_links_pointing_out_of_the_kb_are_reported_and_never_read(make_kb, tmp_path, monkeypatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("# Secret\n\nlaunch codes\n")
    kb = make_kb({
        "a.md": "# A\n\n[passwd](../../etc/passwd.md) [secret](escape/secret.md) [[escape/secret]]\n",
        "a.pnk.yaml": "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N0E\ntitle: A\nlinks:\n  - to: escape/secret.md\n    rel: cites\n",
    })
    os.symlink(outside, kb.root / "escape")
    forbidden = (str(secret), "/etc/passwd.md")
    touched: list[str] = []

    def guard(fn):
        def wrapper(path, *args, **kwargs):
            p = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else ""
            if any(p == f or os.path.abspath(p) == f for f in forbidden):
                touched.append(p)
            return fn(path, *args, **kwargs)
        return wrapper

    for name in ("stat", "lstat", "open", "readlink", "scandir", "listdir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    monkeypatch.setattr(builtins, "open", guard(builtins.open))
    monkeypatch.setattr(io, "open", guard(io.open))
    kb.sync()
    result = kb.links("a.md")
    doctor = kb.doctor()
    monkeypatch.undo()
    assert touched == []
    assert result["neighbours"] == []
    assert {(u["target"], u["reason"]) for u in result["unresolved"]} == {
        ("../../etc/passwd.md", "outside-kb"), ("escape/secret.md", "outside-kb"),
        ("escape/secret", "outside-kb"),
    }
    assert len(result["unresolved"]) == 4  # three body links and the sidecar link, none dropped
    assert {d["reason"] for d in doctor["dangling"]} == {"outside-kb"}
    assert not any("launch codes" in h.text for h in kb.search("launch codes").hits)


CHAIN = {f"{c}.md": f"# {c.upper()}\n\n[next]({n}.md)\n" for c, n in zip("abcde", "bcdef", strict=True)}


def test_depth_is_capped_at_three_and_says_so(make_kb) -> None:
    kb = make_kb(CHAIN)
    kb.sync()
    one = kb.links("a.md", direction="out")
    assert [(n["title"], n["distance"]) for n in one["neighbours"]] == [("B", 1)]
    assert one["frontier"] == [{"doc_id": kb.show("c.md")["doc_id"], "rel": "links-to"}]
    assert one["depth"] == 1 and "note" not in one
    deep = kb.links("a.md", direction="out", depth=10)
    assert deep["depth"] == 3
    assert "capped at 3" in deep["note"] and "asked 10" in deep["note"]
    assert [(n["title"], n["distance"]) for n in deep["neighbours"]] == [("B", 1), ("C", 2), ("D", 3)]
    assert [f["doc_id"] for f in deep["frontier"]] == [kb.show("e.md")["doc_id"]]
    assert deep["unresolved"] == []
    runner = CliRunner()
    res = runner.invoke(cli, ["links", "a.md", "--kb", str(kb.root), "--depth", "10", "--direction", "out"])
    assert res.exit_code == 0, res.output
    assert "depth capped at 3 (asked 10)" in res.output
    assert "D  d.md" in res.output
    res = runner.invoke(cli, ["links", "a.md", "--kb", str(kb.root), "--depth", "10", "--json"])
    assert json.loads(res.output) == kb.links("a.md", depth=10)


def test_a_cycle_terminates(make_kb) -> None:
    kb = make_kb({"a.md": "# A\n\n[b](b.md)\n", "b.md": "# B\n\n[a](a.md)\n"})
    kb.sync()
    result = kb.links("a.md", depth=3)
    assert sorted((n["title"], n["direction"], n["distance"]) for n in result["neighbours"]) == [
        ("B", "in", 1), ("B", "out", 1)]
    assert result["frontier"] == [] and result["truncated"] is False
    res = CliRunner().invoke(cli, ["links", "a.md", "--kb", str(kb.root), "--depth", "3"])
    assert res.exit_code == 0 and "<-> links-to  B" in res.output


def test_exact_structure_and_deterministic_order(make_kb) -> None:
    kb = make_kb(FORMS)
    kb.sync()
    result = kb.links("notes/a.md")
    assert set(result) == {"neighbours", "frontier", "unresolved", "confidence", "truncated", "depth"}
    assert result["confidence"] == "unknown"
    for n in result["neighbours"]:
        assert set(n) == {"doc_id", "title", "rel", "direction", "distance", "score"}
    scores = [(-n["score"], n["distance"]) for n in result["neighbours"]]
    assert scores == sorted(scores)
    assert [n["score"] for n in result["neighbours"][:3]] == [2.0, 2.0, 2.0]
    assert kb.links("notes/a.md") == result
    kb.invalidate()
    assert kb.links("notes/a.md") == result
    only = kb.links("notes/a.md", rel="cites")
    assert [(n["title"], n["rel"]) for n in only["neighbours"]] == [("Note D", "cites")]


def test_query_ranks_neighbours_by_similarity(make_kb) -> None:
    kb = make_kb({
        "hub.md": "# Hub\n\n[x](bikes.md) [y](baking.md) [z](tax.md)\n",
        "bikes.md": "# Bicycle chains\n\nClean and oil the chain of your bicycle every month.\n",
        "baking.md": "# Sourdough\n\nFeed the starter, knead the dough, bake the bread.\n",
        "tax.md": "# Taxes\n\nFile the annual income tax return before the deadline.\n",
    })
    kb.sync()
    result = kb.links("hub.md", query="how do I bake bread at home")
    assert result["neighbours"][0]["title"] == "Sourdough"
    assert result["neighbours"][0]["score"] > result["neighbours"][1]["score"]
    assert 0 < result["neighbours"][0]["score"] <= 1
    assert kb.links("hub.md", query="lubricating a cycle drivetrain")["neighbours"][0]["title"] == (
        "Bicycle chains")


def test_fan_out_cap_and_truncation(make_kb, monkeypatch) -> None:
    spokes = {f"s{i:02d}.md": f"# Spoke {i:02d}\n\nspoke\n" for i in range(60)}
    body = " ".join(f"[s](s{i:02d}.md)" for i in range(60))
    kb = make_kb({"hub.md": f"# Hub\n\n{body}\n", **spokes}, config="[retrieval]\nadjacent_k = 4\n")
    kb.sync()
    capped = kb.links("hub.md")
    assert len(capped["neighbours"]) == 4  # adjacent_k
    assert [n["title"] for n in capped["neighbours"]] == [f"Spoke {i:02d}" for i in range(4)]
    assert len(capped["frontier"]) == 50 and capped["truncated"] is True  # 56 cut, 50 rows shown

    wide = make_kb({"hub.md": f"# Hub\n\n{body}\n", **spokes}, name="wide",
                   config="[retrieval]\nadjacent_k = 100\n")
    wide.sync()
    result = wide.links("hub.md")
    assert len(result["neighbours"]) == links_mod.MAX_ROWS and result["truncated"] is True
    assert wide.links("hub.md", rel="cites") == {
        "neighbours": [], "frontier": [], "unresolved": [], "confidence": "unknown",
        "truncated": False, "depth": 1}
    monkeypatch.setattr(links_mod, "MAX_BYTES", 2000)
    small = wide.links("hub.md")
    assert small["truncated"] is True
    assert len(json.dumps(small, ensure_ascii=False)) <= 2000
    assert 0 < len(small["neighbours"]) < links_mod.MAX_ROWS


def test_bad_arguments_are_typed_errors(make_kb) -> None:
    kb = make_kb(CHAIN)
    kb.sync()
    with pytest.raises(QueryError):
        kb.links("a.md", direction="sideways")
    with pytest.raises(QueryError):
        kb.links("a.md", depth=0)
    with pytest.raises(QueryError):
        kb.links("a.md", query="  ")
    with pytest.raises(DocumentNotFound):
        kb.links("no/such.md")
    res = CliRunner().invoke(cli, ["links", "nothing.md", "--kb", str(kb.root)])
    assert res.exit_code == 1 and "no document" in res.output and "Traceback" not in res.output


LINKABLE = {
    "papers/attention.md": "# Attention Is All You Need\n\ntransformers\n",
    "methods/adam.md": "# Adam\n\nan optimiser\n",
    "methods/sgd.md": "# SGD\n\nanother optimiser\n",
}


def test_pnk_link_is_idempotent_and_keeps_comments(make_kb) -> None:
    kb = make_kb(LINKABLE)
    kb.sync()
    sc = kb.root / "papers" / "attention.pnk.yaml"
    sc.write_text(sc.read_text().replace("tags: []", "# my own comment\ntags: [nlp]  # trailing note"))
    runner = CliRunner()
    args = ["link", "papers/attention.md", "methods/adam.md", "--rel", "uses", "--kb", str(kb.root)]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "Linked papers/attention.md -> ../methods/adam.md (uses)" in first.output
    text = sc.read_text()
    assert "# my own comment" in text and "# trailing note" in text
    assert text.index("id:") < text.index("title:") < text.index("tags:") < text.index("links:")
    assert "links:\n  - to: ../methods/adam.md\n    rel: uses\n" in text
    again = runner.invoke(cli, args)
    assert again.exit_code == 0 and "Already linked" in again.output
    assert sc.read_text() == text
    # the same target by title or by id is the same link
    assert kb.link("Attention Is All You Need", "Adam", "uses")["action"] == "exists"
    adam = kb.show("methods/adam.md")["doc_id"]
    assert kb.link("papers/attention.md", f"pnk://{adam}", "uses")["action"] == "exists"
    assert sc.read_text() == text
    # the index is updated by the command itself
    assert out_links(kb, "papers/attention.md") == {"methods/adam.md": {"uses"}}
    # a new relation to the same document, by id, is written as a pnk:// URI with its note
    out = kb.link("papers/attention.md", adam, "compares_with", note="both are optimisers? no")
    assert out["action"] == "added" and out["to"] == f"pnk://{adam}"
    assert kb.link("papers/attention.md", adam, "compares_with", note="changed")["action"] == "updated"
    assert "note: changed" in sc.read_text()
    assert out_links(kb, "papers/attention.md") == {"methods/adam.md": {"uses", "compares_with"}}
    json_out = runner.invoke(cli, [*args, "--json"])
    assert json.loads(json_out.output)["action"] == "exists"


def test_pnk_link_refuses_unknown_targets_unless_dangling_is_allowed(make_kb) -> None:
    kb = make_kb(LINKABLE)
    kb.sync()
    runner = CliRunner()
    base = ["link", "methods/adam.md", "methods/rmsprop.md", "--rel", "extends", "--kb", str(kb.root)]
    res = runner.invoke(cli, base)
    assert res.exit_code == 1 and "--allow-dangling" in res.output
    assert "rmsprop" not in (kb.root / "methods" / "adam.pnk.yaml").read_text()
    res = runner.invoke(cli, [*base, "--allow-dangling"])
    assert res.exit_code == 0, res.output
    assert "dangling" in res.output
    # written relative to the document, like every path link in a sidecar
    assert kb.links("methods/adam.md")["unresolved"] == [
        {"target": "rmsprop.md", "reason": "missing-file"}]
    (kb.root / "methods" / "rmsprop.md").write_text("# RMSprop\n\nadaptive\n")
    kb.sync()
    assert out_links(kb, "methods/adam.md") == {"methods/rmsprop.md": {"extends"}}
    assert kb.links("methods/adam.md")["unresolved"] == []
    with pytest.raises(LinkError):
        kb.link("methods/adam.md", "methods/adam.md", "uses")
    with pytest.raises(LinkError):
        kb.link("methods/adam.md", "methods/sgd.md", "two words")
    (kb.root / "dup.md").write_text("# Adam\n\nsame title\n")
    kb.sync()
    with pytest.raises(AmbiguousDocument):
        kb.link("methods/sgd.md", "Adam", "compares_with")


def test_pnk_unlink(make_kb) -> None:
    kb = make_kb(LINKABLE)
    kb.sync()
    kb.link("papers/attention.md", "methods/adam.md", "uses")
    kb.link("papers/attention.md", "methods/adam.md", "cites")
    kb.link("papers/attention.md", "methods/sgd.md", "uses")
    kb.link("papers/attention.md", "methods/gone.md", "uses", allow_dangling=True)
    runner = CliRunner()
    res = runner.invoke(cli, ["unlink", "papers/attention.md", "methods/adam.md", "--rel", "cites",
                              "--kb", str(kb.root)])
    assert res.exit_code == 0, res.output
    assert out_links(kb, "papers/attention.md") == {"methods/adam.md": {"uses"}, "methods/sgd.md": {"uses"}}
    assert kb.unlink("papers/attention.md", "Adam")["action"] == "removed"
    assert out_links(kb, "papers/attention.md") == {"methods/sgd.md": {"uses"}}
    res = runner.invoke(cli, ["unlink", "papers/attention.md", "methods/adam.md", "--kb", str(kb.root)])
    assert res.exit_code == 0 and "nothing to do" in res.output
    # a dangling link is removed by what was written
    assert kb.unlink("papers/attention.md", "methods/gone.md")["action"] == "removed"
    assert kb.links("papers/attention.md")["unresolved"] == []
    text = (kb.root / "papers" / "attention.pnk.yaml").read_text()
    assert "gone" not in text and "adam" not in text and "sgd.md" in text


def test_fan_out_counts_documents_not_edges(make_kb) -> None:
    kb = make_kb({
        "hub.md": "# Hub\n\n[a](a.md) [b](b.md) [c](c.md)\n",
        "a.md": "# A\n\n[hub](hub.md)\n",
        "b.md": "# B\n\n[hub](hub.md)\n",
        "c.md": "# C\n\n[hub](hub.md)\n",
    }, config="[retrieval]\nadjacent_k = 2\n")
    kb.sync()
    result = kb.links("hub.md")
    assert [(n["title"], n["direction"]) for n in result["neighbours"]] == [
        ("A", "in"), ("A", "out"), ("B", "in"), ("B", "out")]
    assert result["frontier"] == [{"doc_id": kb.show("c.md")["doc_id"], "rel": "links-to"}]


def test_kb_uri_to_this_kb_is_a_local_path(make_kb) -> None:
    kb = make_kb({"a.md": "# A\n\n[b](kb://test-kb/notes/b.md) [gone](kb://test-kb/nope.md)\n",
                  "notes/b.md": "# B\n\nbee\n"})
    kb.sync()
    assert out_links(kb, "a.md") == {"notes/b.md": {"links-to"}}
    assert kb.links("a.md")["unresolved"] == [{"target": "kb://test-kb/nope.md", "reason": "missing-file"}]


def test_links_with_sidecars_in_a_parallel_folder(make_kb) -> None:
    kb = make_kb({"notes/a.md": "# A\n\nalpha\n", "notes/b.md": "# B\n\nbeta\n"},
                 config='sidecars = ".meta"\n')
    kb.sync()
    out = kb.link("notes/a.md", "notes/b.md", "cites")
    assert out["sidecar"] == ".meta/notes/a.pnk.yaml" and out["to"] == "b.md"
    assert "to: b.md" in (kb.root / ".meta" / "notes" / "a.pnk.yaml").read_text()
    assert not (kb.root / "notes" / "a.pnk.yaml").exists()
    assert out_links(kb, "notes/a.md") == {"notes/b.md": {"cites"}}
    (kb.root / "notes" / "b.md").unlink()
    kb.sync()
    report = kb.doctor()
    assert report["orphan_sidecars"] == [".meta/notes/b.pnk.yaml"]
    assert [(d["file"], d["target"]) for d in report["dangling"]] == [(".meta/notes/a.pnk.yaml", "b.md")]
