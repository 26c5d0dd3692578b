"""Note dialects: Obsidian, Foam, Logseq, Dendron and Zettelkasten links resolve as their tools do.

The vaults are under ``tests/dialects/`` (written for these tests). Each test copies one,
syncs it with the real store and checks, link by link, the note it resolves to (or the
reason it does not), that the wrong reading of an ambiguous form is not taken, and what
``pnk doctor`` and the graph make of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from pinakes.cli import cli
from pinakes.dialects import doc_aliases
from pinakes.fsutil import is_included
from pinakes.graph import load_doc_views
from pinakes.links import link_contexts

FIXTURES = Path(__file__).parent / "dialects"


def vault(make_kb, tool: str, config: str = ""):
    """A copy of the ``tool`` fixture vault as a KB (unsynced)."""
    files = {str(p.relative_to(FIXTURES / tool)): p.read_bytes()
             for p in sorted((FIXTURES / tool).rglob("*")) if p.is_file()}
    return make_kb(files, name=f"{tool}-vault", config=config)


def links_of(kb, src: str) -> list[tuple[str, str, str]]:
    """(raw target, form, resolved path or 'reason') for every body link of ``src``, in order."""
    with kb.reader().snapshot() as conn:
        return [(r[0], r[1], r[2] or r[3]) for r in conn.execute(
            "SELECT l.raw, l.form, d.path, l.reason FROM links l JOIN documents s ON s.doc = l.src_doc"
            " LEFT JOIN documents d ON d.ulid = l.dst_ulid WHERE s.path = ? AND l.origin = 'reverse-scan'"
            " ORDER BY l.line, l.id", (src,))]


def test_obsidian_links_resolve_like_obsidian(make_kb) -> None:
    kb = vault(make_kb, "obsidian")
    kb.sync()
    assert links_of(kb, "Home.md") == [
        ("Sourdough", "wikilink", "Baking/Sourdough.md"),  # a file name anywhere in the vault
        ("Sourdough", "wikilink-alias", "Baking/Sourdough.md"),
        ("Baking/Oven Temperatures#Fan ovens", "wikilink-heading", "Baking/Oven Temperatures.md"),
        ("Starter Care#^feed-ratio", "wikilink-block", "Baking/Starter Care.md"),
        ("Hydration", "wikilink", "Reference/Dough Hydration.md"),  # front-matter aliases
        ("Flour Types", "embed", "Reference/Flour Types.md"),  # an embedded note is a link
        # [[#Plan]] is a link inside the same note and ![[loaf.jpg]] an image: neither is stored
        ("Never Written", "wikilink", "missing-file"),
        # Obsidian reads target|alias: the alias naming another note does not make it a link there
        ("Not Yet Written", "wikilink-alias", "missing-file"),
        ("Notes", "wikilink", "ambiguous-title"),  # two notes of that name, neither beside Home
        ("Recipes/Notes", "wikilink", "Recipes/Notes.md"),  # a path written in full
        ("sourdough.md", "wikilink", "Baking/Sourdough.md"),  # with .md, in another case
        ("reference/flour types", "wikilink", "Reference/Flour Types.md"),
    ]
    # The same name beside the linking note wins, as in Obsidian.
    assert links_of(kb, "Garden/Tomatoes.md") == [("Notes", "wikilink", "Garden/Notes.md")]
    # A Markdown link written the shortest-path way, and target|alias where both name notes.
    assert links_of(kb, "Reference/Flour Types.md") == [
        ("Sourdough.md", "markdown", "Baking/Sourdough.md"),
        ("Sourdough", "wikilink-alias", "Baking/Sourdough.md"),
    ]
    # A wikilink as a front-matter value (an Obsidian property) is a link too (not under aliases:).
    assert links_of(kb, "Baking/Starter Care.md") == [
        ("Flour Types", "property", "Reference/Flour Types.md")]


def test_foam_wikilinks_and_reference_definitions(make_kb) -> None:
    kb = vault(make_kb, "foam")
    kb.sync()
    assert links_of(kb, "inbox.md") == [
        ("project-ideas", "wikilink", "project-ideas.md"),
        ("reading-list", "wikilink", "reading-list.md"),
        # Foam's definitions (with or without .md) serve Markdown reference links
        ("project-ideas.md", "reference", "project-ideas.md"),
        ("reading-list", "reference", "reading-list.md"),
        ("compost-bins", "wikilink", "notes/compost-bins.md"),
    ]
    # The definitions Foam appends are not extra links: one per written link.
    assert links_of(kb, "reading-list.md") == [("compost-bins", "wikilink", "notes/compost-bins.md")]


def test_logseq_pages_tags_properties_namespaces_and_journals(make_kb) -> None:
    kb = vault(make_kb, "logseq")
    kb.sync()
    assert links_of(kb, "pages/Astronomy.md") == [
        ("hobby", "property", "pages/hobby.md"),  # a bare tags:: value is a page reference
        ("clear skies", "property", "tag-only"),  # ... and, like #x, a plain tag when no page has its name
        ("night sky", "wikilink", "pages/night sky.md"),
        ("Telescope", "wikilink", "pages/Telescope.md"),
        ("Star Charts", "tag", "pages/Star Charts.md"),  # #[[multi word]]
        ("Mar 14th, 2023", "wikilink-date", "journals/2023_03_14.md"),
        ("observing", "tag", "pages/observing.md"),
        ("Astronomy/Planets", "wikilink", "pages/Astronomy___Planets.md"),  # a___b file names
        ("Astronomy/Deep Sky", "wikilink", "pages/Astronomy%2FDeep Sky.md"),  # the older %2F
    ]
    # alias:: names the page (case-insensitive), and its [[Sky Watching]] is no link out
    assert links_of(kb, "pages/Telescope.md") == [
        ("stargazing", "wikilink", "pages/Astronomy.md"),
        ("sky watching", "wikilink", "pages/Astronomy.md"),
    ]
    # A tag with no page of its name is a plain tag, not a broken link.
    assert links_of(kb, "journals/2023_03_14.md") == [
        ("Astronomy/Planets", "wikilink", "pages/Astronomy___Planets.md"),
        ("unplanned", "tag", "tag-only"),
    ]
    doc = kb.show("pages/Astronomy.md")
    assert doc["title"] == "Astronomy" and doc["tags"] == ["hobby", "night sky", "clear skies"]
    report = kb.doctor()
    assert not [d for d in report["dangling"] if d["target"] in ("unplanned", "clear skies")]


def test_logseq_block_references_link_to_the_page_that_declares_the_block(make_kb) -> None:
    block = "65f1c2a4-8d3e-4b7a-9c21-3e5d7f0a1b92"
    other = "0badc0de-8d3e-4b7a-9c21-3e5d7f0a1b92"
    kb = make_kb({
        "pages/Bike.md": f"- Tyre pressure\n\t- 4.5 bar on the road\n\t  id:: {block}\n",
        "journals/2024_04_13.md": (f"- a slow ride, tyres at the wrong pressure (({block}))\n"
                                   f"- `(({block}))` in a code span is text\n"
                                   f"- {{{{embed (({block.upper()}))}}}}\n"),
        "pages/Gear.md": f"- the saddle note: (({other}))\n",
    })
    kb.sync()
    assert links_of(kb, "journals/2024_04_13.md") == [
        (block, "block-ref", "pages/Bike.md"),
        (block.upper(), "block-ref", "pages/Bike.md"),  # ids match in any case
    ]
    # A reference to a block no page declares is a broken link, and doctor says so ...
    assert links_of(kb, "pages/Gear.md") == [(other, "block-ref", "missing-file")]
    assert [d["target"] for d in kb.doctor()["dangling"]] == [other]
    # ... until a page declares that id: the link resolves at the next sync.
    (kb.root / "pages" / "Saddle.md").write_text(f"- Brooks B17\n  id:: {other}\n", "utf-8")
    kb.sync()
    assert links_of(kb, "pages/Gear.md") == [(other, "block-ref", "pages/Saddle.md")]
    # The id:: line stays in the hit's text, as in the file, but not in the snippet shown.
    hit = kb.search("tyre pressure on the road", k=1).hits[0]
    assert hit.path == "pages/Bike.md" and f"id:: {block}" in hit.text
    assert "4.5 bar" in hit.snippet and "id::" not in hit.snippet


def test_obsidian_block_ids_stay_in_the_text_but_out_of_the_snippet(make_kb) -> None:
    kb = make_kb({
        "Kitchen.md": ("# Kitchen\n\nThe sink goes under the window, facing the garden. ^sink-spot\n\n"
                       "- tiles: 2^4 rows of terracotta\n- oak shelves\n^shelf-list\n"),
        "Plan.md": "Where does the sink go? See [[Kitchen#^sink-spot]].\n",
    })
    kb.sync()
    assert links_of(kb, "Plan.md") == [("Kitchen#^sink-spot", "wikilink-block", "Kitchen.md")]
    hit = kb.search("where does the sink go under the window", k=1).hits[0]
    assert hit.path == "Kitchen.md" and "^sink-spot" in hit.text and "^shelf-list" in hit.text
    assert "facing the garden." in hit.snippet and "2^4 rows" in hit.snippet  # not an id: stays
    assert "^sink-spot" not in hit.snippet and "^shelf-list" not in hit.snippet


def test_logseq_backup_copies_of_pages_are_not_indexed(make_kb) -> None:
    kb = make_kb({
        "pages/Bubbles.md": "- Bubbles is my sourdough starter, born on 2023-03-14.\n",
        "journals/2024_05_02.md": "- fed [[Bubbles]]\n",
        "logseq/config.edn": ":meta/version 1\n",
        # Logseq's own copies: a backup made when the file changed behind its back, and the
        # version it last synced. Each would be a second, stale answer.
        "logseq/bak/pages/Bubbles/2024_05_01T10_00_00.000Z.Desktop.md":
            "- Bubbles is my sourdough starter, born on 2023-03-01.\n",
        "logseq/version-files/base/pages%2FBubbles.md": "- Bubbles is my starter\n",
    })
    kb.sync()
    with kb.reader().snapshot() as conn:
        assert sorted(r[0] for r in conn.execute("SELECT path FROM documents")) == [
            "journals/2024_05_02.md", "pages/Bubbles.md"]
    assert [h.path for h in kb.search("when was Bubbles born", k=5).hits] == [
        "pages/Bubbles.md", "journals/2024_05_02.md"]
    # Nothing is written into Logseq's folder either.
    assert not list((kb.root / "logseq").rglob("*.pnk.yaml"))


def test_installed_packages_are_not_indexed_at_any_depth(make_kb) -> None:
    """A docs repository's website folder brings its node_modules (and a tool folder its
    Python packages): thousands of other projects' READMEs, never the KB's own pages."""
    kb = make_kb({
        "docs/install.md": "# Install\n\nRun the quokka installer.\n",
        "website/node_modules/left-pad/README.md": "# left-pad\n\nInstall with npm.\n",
        "packages/ui/node_modules/react/CHANGELOG.md": "# Changelog\n\nInstall notes.\n",
        "tools/venv/lib/python3.11/site-packages/pkg/README.md": "# pkg\n\nInstall it.\n",
        "node_modules/x/README.md": "# x\n\nInstall x.\n",
    })
    report = kb.sync()
    with kb.reader().snapshot() as conn:
        assert [r[0] for r in conn.execute("SELECT path FROM documents")] == ["docs/install.md"]
    assert report.added == ["docs/install.md"]


def test_a_suffix_in_capitals_is_still_markdown(make_kb) -> None:
    """Windows tools and old exports write ``NOTES.MD``: it is indexed, and links reach it."""
    kb = make_kb({
        "NOTES.MD": "# Notes\n\nThe quokka sleeps by day. See [the guide](Guide.Md).\n",
        "Guide.Md": "# Guide\n\nBack to [[NOTES]].\n",
        "photo.JPG": b"\xff\xd8\xff",
    })
    report = kb.sync()
    assert sorted(report.added) == ["Guide.Md", "NOTES.MD"]
    assert links_of(kb, "NOTES.MD") == [("Guide.Md", "markdown", "Guide.Md")]
    assert links_of(kb, "Guide.Md") == [("NOTES", "wikilink", "NOTES.MD")]
    assert kb.search("when does the quokka sleep", k=1).hits[0].path == "NOTES.MD"
    assert is_included("a/B.MD", ["**/*.md"]) and not is_included("a/B.MDX", ["**/*.md"])


def test_obsidian_comments_hide_their_links_but_not_their_text(make_kb) -> None:
    kb = make_kb({
        "Plants.md": "# Plants\n\nThe fig needs water weekly.\n",
        "Daily/2025-05-01.md": (
            "Watered the [[Plants|fig]]. %% later: [[Tax 2025]] and #someday %% Read [[Plants]].\n\n"
            "%%\nA draft across paragraphs: [[Old idea]]\n\n[half](Gone.md) and the quokka plan\n%%\n\n"
            "`%%` in a code span opens nothing: [[Plants#Care]] #garden\n\n"
            "```\n%%\n```\n\n"
            "Nor does one in a fence: ![[Plants]]\n\n"
            "A last mark with no pair opens nothing: write %% for a percent sign. [[Draft]]\n"),
    })
    kb.sync()
    assert links_of(kb, "Daily/2025-05-01.md") == [
        ("Plants", "wikilink-alias", "Plants.md"), ("Plants", "wikilink", "Plants.md"),
        ("Plants#Care", "wikilink-heading", "Plants.md"), ("garden", "tag", "tag-only"),
        ("Plants", "embed", "Plants.md"), ("Draft", "wikilink", "missing-file"),
    ]
    # No "Tax 2025", "Old idea" or "Gone.md": only the link after the lone mark dangles.
    assert [d["target"] for d in kb.doctor()["dangling"]] == ["Draft"]
    # The comment's words are still the note's: a search finds them.
    assert kb.search("quokka plan", k=1).hits[0].path == "Daily/2025-05-01.md"


def test_dendron_alias_first_vault_prefix_and_the_trap(make_kb) -> None:
    kb = vault(make_kb, "dendron")
    kb.sync()
    assert links_of(kb, "notes/tools.md") == [
        ("Python", "wikilink-alias", "notes/lang.python.md"),
        ("dendron://notes/lang.rust", "dendron-vault", "notes/lang.rust.md"),
        ("Typing hints", "dendron-vault", "notes/lang.python.typing.md"),
        # Both parts name a note; in a Dendron workspace the second is the target.
        ("Languages", "wikilink-alias", "notes/lang.rust.md"),
        ("lang.python#Setup", "embed", "notes/lang.python.md"),
    ]
    assert links_of(kb, "notes/root.md") == [
        ("Languages", "wikilink-alias", "notes/lang.md"), ("tools", "wikilink", "notes/tools.md")]
    # The alias (not the note name) is recorded as the link's label.
    with kb.reader().snapshot() as conn:
        labels = [r[0] for r in conn.execute(
            "SELECT l.label FROM links l JOIN documents s ON s.doc = l.src_doc"
            " WHERE s.path = 'notes/tools.md' ORDER BY l.line, l.id")]
    assert labels[:4] == ["Python", "dendron://notes/lang.rust", "Typing hints", "Languages"]


def test_alias_order_needs_evidence_outside_dendron(make_kb) -> None:
    """Without a Dendron workspace the second part is taken only when it reads as a note name."""
    kb = make_kb({
        "a.md": "# A\n\n[[Nothing Here|lang.go]] and [[Nothing Here|Go]] and [[Go|lang.go]]\n",
        "lang.go.md": "# The Go language\n\ngophers\n",
        "Go.md": "# Go\n\nthe board game\n",
    })
    kb.sync()
    assert links_of(kb, "a.md") == [
        ("Nothing Here", "wikilink-alias", "lang.go.md"),  # a dotted note name: Dendron's order
        ("Nothing Here", "wikilink-alias", "missing-file"),  # "Go" is display text here
        ("Go", "wikilink-alias", "Go.md"),  # both resolve: the tool's own order stands
    ]


WIKI = {
    "Home.md": "Start with [[Getting Started]], [[the install guide|Installation Guide]] "
               "and [[Setup|Getting Started]].\n",
    "Getting-Started.md": "Run it.\n",
    "Installation-Guide.md": "Install with pip.\n",
    "Setup.md": "Set it up.\n",
}


def test_a_github_wiki_writes_the_page_second(make_kb) -> None:
    """GitHub (Gollum) wikis write ``[[text|Page Name]]``: with the wiki's ``_Sidebar.md`` the
    second part names the page; without it (a root ``Home.md`` is as common in Obsidian
    vaults) Obsidian's order stands."""
    kb = make_kb({**WIKI, "_Sidebar.md": "* [[Home]]\n"}, name="wiki")
    kb.sync()
    assert links_of(kb, "Home.md") == [
        ("Getting Started", "wikilink", "Getting-Started.md"),
        ("the install guide", "wikilink-alias", "Installation-Guide.md"),
        ("Setup", "wikilink-alias", "Getting-Started.md"),  # "Setup" is the text, not Setup.md
    ]
    kb = make_kb(WIKI, name="vault")
    kb.sync()
    assert [dst for _, _, dst in links_of(kb, "Home.md")] == [
        "Getting-Started.md", "missing-file", "Setup.md"]


def test_zettelkasten_id_links(make_kb) -> None:
    kb = vault(make_kb, "zettel")
    kb.sync()
    assert links_of(kb, "202301021530 Forgetting curve.md") == [
        ("202301011200", "wikilink-id", "202301011200 Spaced repetition.md"),
        ("202301039999", "wikilink-id", "missing-file"),
    ]
    assert links_of(kb, "index.md") == [
        ("202301011200", "wikilink-id", "202301011200 Spaced repetition.md"),
        ("202301021530 Forgetting curve", "wikilink", "202301021530 Forgetting curve.md"),
    ]


def _edges(kb) -> set[tuple[str, str, str]]:
    """Every edge as (kind, one end, other end), documents by path and hubs by kind:key."""
    with kb.reader().snapshot() as conn:
        paths = {str(r[0]): r[1] for r in conn.execute("SELECT doc, path FROM documents")}
        out = set()
        for kind, ak, akey, bk, bkey in conn.execute(
            "SELECT e.kind, a.kind, a.key, b.kind, b.key FROM edges e JOIN nodes a ON a.id = e.src"
            " JOIN nodes b ON b.id = e.dst WHERE a.kind != 'chunk' AND b.kind != 'chunk'"):
            a = paths[akey] if ak == "doc" else f"{ak}:{akey}"
            b = paths[bkey] if bk == "doc" else f"{bk}:{bkey}"
            out.add((kind, a, b))
        return out


def test_embeds_count_as_authored_edges(make_kb) -> None:
    kb = vault(make_kb, "obsidian")
    kb.sync()
    edges = _edges(kb)
    assert ("authored", "Home.md", "Reference/Flour Types.md") in edges  # only linked by ![[...]]
    with kb.reader().snapshot() as conn:
        assert conn.execute("SELECT count(*) FROM links WHERE raw LIKE '%loaf%'").fetchone()[0] == 0


def test_dotted_and_namespaced_names_are_parent_child_structure(make_kb) -> None:
    kb = vault(make_kb, "dendron")
    kb.sync()
    located = {(a, b) for kind, a, b in _edges(kb) if kind == "co-located"}
    assert located == {
        ("notes/root.md", "directory:notes"),
        ("notes/tools.md", "directory:notes"),
        ("notes/lang.md", "directory:notes"),
        ("notes/lang.md", "directory:notes/lang"),  # a parent joins its children's hub
        ("notes/lang.rust.md", "directory:notes/lang"),
        ("notes/lang.python.md", "directory:notes/lang"),
        ("notes/lang.python.md", "directory:notes/lang.python"),
        ("notes/lang.python.typing.md", "directory:notes/lang.python"),
    }
    # A first child added later pulls its parent into the new hub (no full re-derive).
    (kb.root / "notes" / "tools.editor.md").write_text("---\ntitle: Editor\n---\nvim\n", "utf-8")
    kb.sync()
    located = {(a, b) for kind, a, b in _edges(kb) if kind == "co-located"}
    assert {("notes/tools.md", "directory:notes/tools"),
            ("notes/tools.editor.md", "directory:notes/tools")} <= located
    assert ("notes/tools.editor.md", "directory:notes") not in located

    kb = vault(make_kb, "logseq")
    kb.sync()
    located = {(a, b) for kind, a, b in _edges(kb) if kind == "co-located"}
    assert {("pages/Astronomy.md", "directory:pages/Astronomy"),
            ("pages/Astronomy___Planets.md", "directory:pages/Astronomy"),
            ("pages/Astronomy%2FDeep Sky.md", "directory:pages/Astronomy")} <= located


def test_plain_dotted_names_stay_plain(make_kb) -> None:
    kb = make_kb({"notes/v2.0.md": "# Release\n\nx\n", "notes/Mr. Smith.md": "# Smith\n\ny\n",
                  "notes/2023.01.05.md": "# Day\n\nz\n"})
    kb.sync()
    located = {(a, b) for kind, a, b in _edges(kb) if kind == "co-located"}
    assert located == {(p, "directory:notes") for p in
                       ("notes/v2.0.md", "notes/Mr. Smith.md", "notes/2023.01.05.md")}


def test_doctor_reports_resolution_per_form(make_kb) -> None:
    kb = vault(make_kb, "obsidian")
    kb.sync()
    report = kb.doctor()
    forms = {f["form"]: (f["resolved"], f["links"]) for f in report["link_forms"]}
    assert forms == {
        "wikilink": (7, 9), "wikilink-alias": (2, 3), "wikilink-heading": (1, 1),
        "wikilink-block": (1, 1), "embed": (1, 1), "markdown": (1, 1), "property": (1, 1),
    }
    wiki = next(f for f in report["link_forms"] if f["form"] == "wikilink")
    assert wiki["reasons"] == {"missing-file": 1, "ambiguous-title": 1}
    assert not any(f.get("hint") for f in report["link_forms"])  # nothing mostly fails
    res = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert res.exit_code == 0, res.output
    assert "links by form  markdown 1/1 resolved, wikilink 7/9, wikilink-alias 2/3, wikilink-heading 1/1," in res.output
    res = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root), "--json"])
    assert json.loads(res.output)["link_forms"] == report["link_forms"]


def test_doctor_hints_when_a_form_mostly_fails(make_kb) -> None:
    body = "\n".join(f"- see [[missing note {i}|alias {i}]]" for i in range(6))
    kb = make_kb({"a.md": f"# A\n\n{body}\n\n[[b]]\n", "b.md": "# B\n\nb\n"})
    kb.sync()
    report = kb.doctor()
    alias = next(f for f in report["link_forms"] if f["form"] == "wikilink-alias")
    assert (alias["resolved"], alias["links"]) == (0, 6)
    assert "name no note" in alias["hint"]
    res = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert "hint: wikilink-alias: 0/6 resolve" in res.output
    plain = next(f for f in report["link_forms"] if f["form"] == "wikilink")
    assert (plain["resolved"], plain["links"], plain.get("hint")) == (1, 1, None)


def test_link_context_is_recorded_for_the_graph(make_kb) -> None:
    kb = vault(make_kb, "obsidian")
    kb.sync()
    with kb.reader().snapshot() as conn:
        home = conn.execute("SELECT doc FROM documents WHERE path = 'Home.md'").fetchone()[0]
        sour = conn.execute("SELECT doc FROM documents WHERE path = 'Baking/Sourdough.md'").fetchone()[0]
        found = load_doc_views(conn, [home])[0].authored_links(conn)
        to_sour = [a for a in found if a.dst == sour]
        assert [(a.label, a.form, a.heading_path) for a in to_sour] == [
            ("Sourdough", "wikilink", ("Home", "Plan")),
            ("my bread notes", "wikilink-alias", ("Home", "Plan")),
            ("sourdough.md", "wikilink", ("Home", "Plan")),
        ]
        # The sentence around the link, content words only, without the link's own words.
        assert to_sour[0].context.split() == ["week", "bake", "following", "bread", "notes", "closely"]
        assert all(a.chunk == 0 for a in to_sour)
        contexts = link_contexts(conn, [home])
        words = contexts[(home, sour)].split()
        assert {"bread", "bake", "following"} <= set(words)
        assert len(words) == len(set(words))
        # Unresolved and same-note links give no edge and no context entry.
        assert all(dst != home for (_, dst) in contexts)


def test_renamed_alias_and_new_namesake_re_resolve(make_kb) -> None:
    kb = vault(make_kb, "logseq")
    kb.sync()
    page = kb.root / "pages" / "Astronomy.md"
    page.write_text(page.read_text("utf-8").replace("stargazing, ", ""), "utf-8")
    kb.sync()
    assert links_of(kb, "pages/Telescope.md")[0] == ("stargazing", "wikilink", "missing-file")
    page.write_text(page.read_text("utf-8").replace("alias:: ", "alias:: stargazing, "), "utf-8")
    kb.sync()
    assert links_of(kb, "pages/Telescope.md")[0] == ("stargazing", "wikilink", "pages/Astronomy.md")


def test_a_new_namesake_makes_a_link_ambiguous_and_its_removal_resolves_it(make_kb) -> None:
    kb = make_kb({"a/x.md": "# X\n\nsee [[Topic]]\n", "b/Topic.md": "# Topic\n\nt\n"})
    kb.sync()
    assert links_of(kb, "a/x.md") == [("Topic", "wikilink", "b/Topic.md")]
    (kb.root / "c").mkdir()
    (kb.root / "c" / "topic.md").write_text("# Another topic\n\nu\n", "utf-8")
    kb.sync()
    assert links_of(kb, "a/x.md") == [("Topic", "wikilink", "ambiguous-title")]
    (kb.root / "c" / "topic.md").unlink()
    kb.sync()
    assert links_of(kb, "a/x.md") == [("Topic", "wikilink", "b/Topic.md")]


def test_markdown_paths_resolve_case_insensitively_and_without_suffix(make_kb) -> None:
    kb = make_kb({
        "guide/intro.md": "# Intro\n\n[read me](README.md), [setup](setup), [api](../api/), "
                          "[licence](../LICENSE), [gone](gone)\n",
        "guide/readme.md": "# Read me\n\nr\n",
        "guide/setup.md": "# Setup\n\ns\n",
    })
    kb.sync()
    assert links_of(kb, "guide/intro.md") == [
        ("README.md", "markdown", "guide/readme.md"),
        ("setup", "markdown", "guide/setup.md"),
        ("../api/", "markdown", "no-document"),  # a folder with no page of its own
        ("../LICENSE", "markdown", "no-document"),  # no suffix and no note: kept, not dangling
        ("gone", "markdown", "no-document"),
    ]
    assert [d["target"] for d in kb.doctor()["dangling"]] == []


def test_site_generator_links_reach_the_page_they_serve(make_kb) -> None:
    """A folder link is the folder's page, a built page its Markdown source, a site route its
    page under the folder the site is built from; a path written with its suffix stays strict."""
    kb = make_kb({
        "docs/intro.md": "# Intro\n\n[guide](guide/), [reference](guide/reference/), [both](both/), "
                         "[install](guide/install.html), [post](/posts/first/), [file](guide.md), "
                         "[setup](setup/), [later](later/), [up](../), [root](/)\n",
        "docs/guide/index.md": "# Guide\n\ng\n",
        "docs/guide/install.md": "# Install\n\ni\n",
        "docs/guide/reference/README.md": "# Reference\n\nr\n",
        "docs/both/index.md": "# Both index\n\nb\n",
        "docs/both/README.md": "# Both readme\n\nb\n",
        "docs/setup.md": "# Setup\n\ns\n",
        "docs/setup/index.md": "# Setup folder\n\ns\n",
        "content/posts/first.md": "+++\ntitle = \"First\"\n+++\nf\n",
        "content/en/docs/concepts/_index.md": "# Concepts\n\nc\n",
        "content/zh/docs/concepts/_index.md": "# 概念\n\nc\n",  # another language's copy
        "content/en/docs/home.md": "# Home\n\n[concepts](/docs/concepts/), [ingress](/docs/ingress/)\n",
    })
    kb.sync()
    assert links_of(kb, "content/en/docs/home.md") == [
        ("/docs/concepts/", "markdown", "content/en/docs/concepts/_index.md"),  # the nearer section
        ("/docs/ingress/", "markdown", "no-document"),
    ]
    assert links_of(kb, "docs/intro.md") == [
        ("guide/", "markdown", "docs/guide/index.md"),
        ("guide/reference/", "markdown", "docs/guide/reference/README.md"),
        ("both/", "markdown", "docs/both/index.md"),  # the site's page before GitHub's
        ("guide/install.html", "markdown", "docs/guide/install.md"),
        ("/posts/first/", "markdown", "content/posts/first.md"),  # Hugo builds from content/
        ("guide.md", "markdown", "missing-file"),  # a file named with its suffix: that file only
        ("setup/", "markdown", "docs/setup.md"),  # a page of that name first
        ("later/", "markdown", "no-document"),
    ]
    later = kb.root / "docs" / "later"
    later.mkdir()
    (later / "_index.md").write_text("# Later\n\nl\n", "utf-8")
    (kb.root / "content/en/docs/ingress").mkdir()
    (kb.root / "content/en/docs/ingress/_index.md").write_text("# Ingress\n\ni\n", "utf-8")
    kb.sync()  # a folder gaining its page re-resolves the links to the folder
    assert links_of(kb, "docs/intro.md")[-1] == ("later/", "markdown", "docs/later/_index.md")
    assert links_of(kb, "content/en/docs/home.md")[-1] == (
        "/docs/ingress/", "markdown", "content/en/docs/ingress/_index.md")



def test_sphinx_tables_of_contents_and_doc_roles_are_links(make_kb) -> None:
    """A MyST ``{toctree}`` links its index page to each page it lists, a ``{doc}`` role is a link,
    and neither is one in code."""
    kb = make_kb({
        "index.md": "# Project\n\n```{toctree}\n:maxdepth: 2\n:caption: Contents\n\ninstall\n"
                    "Setting up <guide/setup>\nself\nguide/*\nhttps://example.org\n```\n\n"
                    "Start with {doc}`install`, then {doc}`the setup <guide/setup>`.\n\n"
                    "Write `{doc}` roles as ``{doc}`install` ``.\n",
        "install.md": "# Install\n\nSee {doc}`/guide/setup` next.\n",
        "guide/setup.md": "# Setup\n\n:::{toctree}\n---\nhidden: true\n---\n../install\n:::\n",
    })
    kb.sync()
    assert links_of(kb, "index.md") == [
        ("install", "toctree", "install.md"),
        ("guide/setup", "toctree", "guide/setup.md"),
        ("install", "doc-role", "install.md"),
        ("guide/setup", "doc-role", "guide/setup.md"),
    ]
    assert links_of(kb, "install.md") == [("/guide/setup", "doc-role", "guide/setup.md")]
    assert links_of(kb, "guide/setup.md") == [("../install", "toctree", "install.md")]
    forms = {f["form"]: (f["resolved"], f["links"]) for f in kb.doctor()["link_forms"]}
    assert forms["toctree"] == (3, 3) and forms["doc-role"] == (3, 3)  # pnk doctor counts them apart
    hit = kb.search("setting up contents", k=1).hits[0]
    assert hit.path == "index.md" and "Setting up <guide/setup>" in hit.text  # the page's own text


def test_hugo_ref_shortcodes_are_links(make_kb) -> None:
    """``[text]({{< ref "x" >}})`` links as Hugo resolves it: from the page's folder, then
    the site's content root; a shortcode in code or outside a link is none."""
    kb = make_kb({
        "content/posts/second.md": "---\ntitle: Second\n---\nAfter [the first]({{< ref \"first\" >}}), "
                                   "[about]({{% relref path=\"/about.md\" %}}) and "
                                   "[its intro]({{< ref \"first.md#intro\" >}}).\n\n"
                                   "A bare {{< ref \"about\" >}} prints an address.\n\n"
                                   "```go-html-template\n[x]({{< ref \"about\" >}})\n```\n",
        "content/posts/first.md": "+++\ntitle = \"First\"\n+++\n## Intro\n\nf\n",
        "content/about.md": "# About\n\na\n",
    })
    kb.sync()
    assert links_of(kb, "content/posts/second.md") == [
        ("first", "template", "content/posts/first.md"),
        ("about.md", "template", "content/about.md"),  # from the site's root, content/
        ("first.md#intro", "template", "content/posts/first.md"),
    ]


def test_jekyll_links_and_declared_addresses(make_kb) -> None:
    """Jekyll's Liquid links, and a route to the page declaring that address (permalink,
    Hugo's url and old aliases) before any file of that name."""
    kb = make_kb({
        "index.md": "# Home\n\n[a]({% link _posts/2019-01-01-hello.md %}), "
                    "[b]({{ site.baseurl }}{% link about.md %}#team),\n"
                    "[c]({% post_url 2019-01-01-hello %}), [d]({{ site.baseurl }}/team/), "
                    "[e]({{ \"/help/faq.html\" | relative_url }}), [f](/team), [g](/old/news/),\n"
                    "[h]({{ page.url }}), [i](/later/)\n",
        "_posts/2019-01-01-hello.md": "---\ntitle: Hello\n---\nh\n",
        "about.md": "---\npermalink: /team/\n---\n# About\n\n## Team\n\nt\n",
        "guides/team.md": "# Team guide\n\ng\n",  # a file of the route's name: the route wins
        "pages/faq.md": "---\npermalink: /help/faq.html\n---\n# FAQ\n",
        "content/news.md": "---\nurl: /news/\naliases: [\"/old/news/\"]\n---\n# News\n",
    })
    kb.sync()
    assert links_of(kb, "index.md") == [
        ("_posts/2019-01-01-hello.md", "template", "_posts/2019-01-01-hello.md"),
        ("about.md#team", "template", "about.md"),
        ("2019-01-01-hello", "template", "_posts/2019-01-01-hello.md"),
        ("/team/", "template", "about.md"),
        ("/help/faq.html", "template", "pages/faq.md"),
        ("/team", "markdown", "about.md"),
        ("/old/news/", "markdown", "content/news.md"),
        ("/later/", "markdown", "no-document"),
    ]
    (kb.root / "notes").mkdir()
    (kb.root / "notes" / "l.md").write_text("---\npermalink: /later/\n---\n# Later\n", "utf-8")
    kb.sync()  # a page declaring the address re-resolves the links to it
    assert links_of(kb, "index.md")[-1] == ("/later/", "markdown", "notes/l.md")
    assert doc_aliases({"aliases": ["/old/news/", "Newsroom"]}) == ["Newsroom"]  # an address, no name


def test_docusaurus_addresses_leave_out_ordering_numbers_and_take_the_page_id(make_kb) -> None:
    """A Docusaurus site serves ``docs/01-guide/02-install.mdx`` at ``/docs/guide/install`` and a
    page declaring ``id: config`` at ``/docs/config``: links written as those addresses reach
    the files; a date or version in a file name keeps its numbers."""
    kb = make_kb({
        "website/docs/01-guide/01-intro.md": "# Intro\n\n[install](./install), [next](install), "
                                             "[config](/docs/config), [guide](/docs/guide/),\n"
                                             "[notes](/docs/notes), [release](../release), [later](./later)\n",
        "website/docs/01-guide/02-install.mdx": "import Tabs from '@theme/Tabs';\n\n# Install\n\n"
                                                "Back to [the intro](/docs/guide/intro).\n",
        "website/docs/01-guide/index.md": "# Guide\n\ng\n",
        "website/docs/configuration.md": "---\nid: config\n---\n# Configuration\n\nc\n",
        "website/docs/2023-05-01-notes.md": "# Notes of May\n\nn\n",  # a date, not an order
        "website/docs/1.2-release.md": "# Release 1.2\n\nr\n",  # a version, not an order
    }, config='include = ["**/*.md", "**/*.mdx"]\n')
    kb.sync()
    assert links_of(kb, "website/docs/01-guide/01-intro.md") == [
        ("./install", "markdown", "website/docs/01-guide/02-install.mdx"),
        ("install", "markdown", "website/docs/01-guide/02-install.mdx"),
        ("/docs/config", "markdown", "website/docs/configuration.md"),
        ("/docs/guide/", "markdown", "website/docs/01-guide/index.md"),
        ("/docs/notes", "markdown", "no-document"),
        ("../release", "markdown", "no-document"),
        ("./later", "markdown", "no-document"),
    ]
    assert links_of(kb, "website/docs/01-guide/02-install.mdx") == [
        ("/docs/guide/intro", "markdown", "website/docs/01-guide/01-intro.md")]
    (kb.root / "website/docs/01-guide/03-later.md").write_text("# Later\n\nl\n", "utf-8")
    kb.sync()  # a page served at the address re-resolves the links to it
    assert links_of(kb, "website/docs/01-guide/01-intro.md")[-1] == (
        "./later", "markdown", "website/docs/01-guide/03-later.md")


def test_jekyll_posts_are_reached_at_their_dated_addresses(make_kb) -> None:
    """Jekyll serves ``_posts/2019-01-01-hello.md`` at ``/2019/01/01/hello.html``, under its
    categories (folders above ``_posts`` and front matter): links written as those addresses
    reach the post."""
    kb = make_kb({
        "index.md": "# Home\n\n[a](/2019/01/01/hello.html), [b]({{ site.baseurl }}/blog/jekyll/2019/01/02/second/),"
                    " [c](/2019/01/03/renamed), [d](/2019/01/09/missing.html)\n",
        "_posts/2019-01-01-hello.md": "---\ntitle: Hello\n---\nh\n",
        "blog/_posts/2019-01-02-second.md": "---\ncategories: [jekyll]\n---\n# Second\n",
        "_posts/2019-01-03-third.md": "---\nslug: renamed\n---\n# Third\n",
        "notes/2019-01-01-hello.md": "# Not a post\n",  # a dated note outside _posts: no address
    })
    kb.sync()
    assert links_of(kb, "index.md") == [
        ("/2019/01/01/hello.html", "markdown", "_posts/2019-01-01-hello.md"),
        ("/blog/jekyll/2019/01/02/second/", "template", "blog/_posts/2019-01-02-second.md"),
        ("/2019/01/03/renamed", "markdown", "_posts/2019-01-03-third.md"),
        ("/2019/01/09/missing.html", "markdown", "no-document"),
    ]


BAD = {
    "junk.md": (
        "# Junk\n\n"
        "[[unclosed and [[[[nested]] and ]] stray ![[ and #\n\n"
        "[[" + "x" * 5000 + "]] and #" + "t" * 400 + "\n\n"
        "[[../../../etc/passwd]] ![[../outside]] [[dendron://v/../../../etc/x]]\n"
        "[up](../outside.md) #[[../../escape]] [[a/../../b]] [[|]] [[#]] [[ | alias]]\n\n"
        "tags:: not, [[a property]] here\n"
    ),
    "fine.md": "# Fine\n\n[[junk]]\n",
}


def test_bad_input_is_safe(make_kb, tmp_path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# secret\n", "utf-8")
    kb = make_kb(BAD, name="bad-kb")
    report = kb.sync()
    assert not report.problems
    rows = links_of(kb, "junk.md")
    assert rows and all(dst in ("outside-kb", "missing-file", "tag-only") for _, _, dst in rows), rows
    assert ("../../../etc/passwd", "wikilink", "outside-kb") in rows
    assert ("../outside.md", "markdown", "outside-kb") in rows  # it exists, and is never read
    assert ("../outside", "embed", "outside-kb") in rows
    assert all(len(raw) <= 1000 for raw, _, _ in rows)
    assert links_of(kb, "fine.md") == [("junk", "wikilink", "junk.md")]
    assert kb.doctor()["ok"]
    shutil.rmtree(kb.root / ".pinakes")
    assert not kb.sync().problems  # a rebuild reads the same junk the same way


def test_date_id_and_ulid_links_resolve_when_their_note_appears(make_kb) -> None:
    """A new note re-resolves only the links naming it, including by date, note id or ULID."""
    ulid = "01JDQ5S8Z6W3K1V9XQ2M4B7N9Z"
    kb = make_kb({"a.md": f"# A\n\n[[Jan 2nd, 2024]], [[202401021200]], <pnk://{ulid}>, [[Other]]\n"})
    kb.sync()
    assert [dst for _, _, dst in links_of(kb, "a.md")] == [
        "missing-file", "missing-file", "unknown-id", "missing-file"]
    (kb.root / "journals").mkdir()
    (kb.root / "journals" / "2024_01_02.md").write_text("- a day\n", "utf-8")
    (kb.root / "202401021200 Idea.md").write_text("# Idea\n\nsmall\n", "utf-8")
    (kb.root / "c.md").write_text("# C\n\nc\n", "utf-8")
    (kb.root / "c.pnk.yaml").write_text(f"id: {ulid}\ntitle: C\n", "utf-8")
    kb.sync()
    assert [dst for _, _, dst in links_of(kb, "a.md")] == [
        "journals/2024_01_02.md", "202401021200 Idea.md", "c.md", "missing-file"]


def test_page_properties_are_only_the_first_block_before_any_heading() -> None:
    from pinakes.markdown import parse_markdown

    page = parse_markdown("title:: Moons\nalias:: satellites\ntags:: sky\n\n- Io [[Jupiter]]\n")
    assert page.front_matter == {"title": "Moons", "alias": ["satellites"], "tags": ["sky"]}
    assert page.title == "Moons"
    # Inline fields further down, or under a heading, are text; YAML front matter wins.
    for text in ("# Moons\n\nstatus:: done\n", "- Io\n\nstatus:: done\n",
                 "---\ntitle: Y\n---\nstatus:: done\n"):
        assert "status" not in parse_markdown(text).front_matter, text


def test_a_notion_pages_properties_are_its_front_matter() -> None:
    """A Notion export writes a page's properties as ``Key: value`` lines under its title; its
    file name ends in the page's 32-digit hex id, which no other note tool writes."""
    from pinakes.markdown import parse_markdown

    page = ("# Decision: printing vendor\n\nCreated: May 13, 2024 10:20 AM\nDecided by: Lotte"
            "\nTags: print, Vireo\n\n## Context\n\nWho: prints the sleeves.\n")
    notion = "Decision log/Decision printing vendor f34313b069a1980c08fc262e9c3b2e4d.md"
    parsed = parse_markdown(page, name=notion)
    assert parsed.front_matter == {"created": "May 13, 2024 10:20 AM", "decided by": "Lotte",
                                   "tags": ["print", "Vireo"]}
    assert parsed.title == "Decision: printing vendor"
    assert "Created: May 13" in parsed.chunks[0].text  # the lines stay the page's text too
    # Not a Notion page; a first paragraph that is not all properties; properties not under
    # the title: no properties.
    assert parse_markdown(page, name="decisions/printing-vendor.md").front_matter == {}
    for text in (page.replace("Decided by: Lotte", "We went with Lindeboom."),
                 "Intro.\n\n" + page, page.replace("# Decision", "## Decision")):
        assert parse_markdown(text, name=notion).front_matter == {}, text


def test_a_notion_relation_property_is_a_link(make_kb) -> None:
    """A relation's value names the related page with its path in brackets ("Client: Vireo
    Tea (../Clients%20…/Vireo%20Tea%20….md)"): a link of form ``property`` that resolves."""
    client = "Clients 1e969a758672a64dfea579f174b610e0/Vireo Tea 5865beaced2fca1377e4cb39b4f98170.md"
    project = "Projects 88a926b4cb79f6d89385e71a1af4b8f2/Tin redesign 1af7755c6ee162ee187ff13f39d08f27.md"
    kb = make_kb({
        client: "# Vireo Tea\n\nStatus: Active\nCity: Brugge\n\nA tea importer in Brugge.\n",
        project: ("# Tin redesign\n\nOwner: Saskia Brandt\nClient: Vireo Tea (../Clients%201e969a758672a64dfea"
                  "579f174b610e0/Vireo%20Tea%205865beaced2fca1377e4cb39b4f98170.md)\nBudget: €18,500\n\n"
                  "Seven sleeves for the tea tins.\n"),
    }, name="notion-relation")
    kb.sync()
    assert links_of(kb, project) == [(f"../{client}", "property", client)]
    assert kb.show(project)["front_matter"]["client"].startswith("Vireo Tea (../Clients%20")
