"""Scoped search: ``pnk search --in PATH --tag TAG --since D --until D --not-in PATH``,
``KB.search(within=, tags=, since=, until=, not_within=)`` (pinakes/scope.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pinakes import fleet
from pinakes.cli import cli
from pinakes.errors import QueryError
from pinakes.fleet import search_many
from pinakes.scope import OutOfScope

# Ten notes on sourdough at work, one on bread at home: the home note is the weakest
# match for "sourdough starter feeding" in every list, so it is found in scope only if
# the scope applies before each list is cut to its candidates.
NOTES = {
    **{f"work/bakery/day-{i:02d}.md": f"# Bakery day {i}\n\nSourdough starter feeding at dawn, batch {i}: "
       f"feed the starter, proof the sourdough, bake the loaves.\n" for i in range(10)},
    "home/kitchen.md": "---\ntags: [Food/Baking]\n---\n# Kitchen\n\nOn weekends I bake bread; the starter lives "
                       "in the fridge.\n",
    "home/garden.md": "# Garden\n\nTomatoes and beans. #food/growing and #Chores\n",
    "work/meetings/standup.md": "---\ntags: [work]\n---\n# Standup\n\nWe talked about the new oven. #chores\n",
    "Notes [old]/oven.md": "# Old oven\n\nThe old oven baked unevenly.\n",
}


@pytest.fixture
def kb(make_kb):
    kb = make_kb(NOTES, name="life", config="[retrieval]\ncandidates = 4\n")
    kb.sync()
    return kb


def paths(result) -> set[str]:
    return {h.path for h in result.hits}


def test_a_scope_ranks_its_own_best_candidates_not_the_leftovers_of_the_whole_kb(kb) -> None:
    whole = kb.search("sourdough starter feeding", k=4)
    assert paths(whole) <= {p for p in NOTES if p.startswith("work/bakery/")}  # home is out-ranked
    home = kb.search("sourdough starter feeding", k=4, within=["home"])
    assert home.hits and home.hits[0].path == "home/kitchen.md"
    assert paths(home) <= {"home/kitchen.md", "home/garden.md"}
    assert home.scope == {"within": ["home"], "tags": [], "documents": 2}
    assert whole.scope is None and "scope" not in whole.to_dict()


def test_folders_files_globs_and_tags(kb) -> None:
    q = "bake"
    assert paths(kb.search(q, within=["home/kitchen.md"])) == {"home/kitchen.md"}
    assert paths(kb.search(q, within=["work/meetings", "home/garden.md"])) == {
        "work/meetings/standup.md", "home/garden.md"}  # any of the paths
    assert paths(kb.search(q, within=["work/*/s*"])) == {"work/meetings/standup.md"}  # a glob
    assert paths(kb.search(q, within=["work/m*"])) == {"work/meetings/standup.md"}  # a folder it names
    assert paths(kb.search(q, within=["**/kitchen.md", "**/oven.md"])) == {"home/kitchen.md", "Notes [old]/oven.md"}
    assert paths(kb.search(q, within=["Notes [old]"])) == {"Notes [old]/oven.md"}  # a name, not a glob
    assert paths(kb.search(q, within=["./home/../home/"])) <= {"home/kitchen.md", "home/garden.md"}
    assert kb.search(q, within=["."]).scope is None  # the root: the whole KB
    # tags: front matter or inline, any case, with or without '#', a parent of a nested tag
    assert paths(kb.search(q, tags=["food"])) == {"home/kitchen.md", "home/garden.md"}
    assert paths(kb.search(q, tags=["#FOOD/baking"])) == {"home/kitchen.md"}
    assert paths(kb.search(q, tags=["chores"])) == {"home/garden.md", "work/meetings/standup.md"}
    assert paths(kb.search(q, tags=["chores", "work"])) == {"work/meetings/standup.md"}  # every tag
    assert paths(kb.search(q, within=["home"], tags=["chores"])) == {"home/garden.md"}


def test_an_empty_or_outside_scope_is_a_clear_error(kb, tmp_path) -> None:
    with pytest.raises(OutOfScope, match=r"^no document is under 'hom' \(did you mean 'home'\?\)$"):
        kb.search("bread", within=["hom"])
    with pytest.raises(OutOfScope, match=r"^no document is tagged #food/bakin \(did you mean #food/baking or #food/growing\?\)$"):
        kb.search("bread", tags=["food/bakin"])  # a prefix of a tag is not its parent
    with pytest.raises(OutOfScope, match=r"^no document is tagged #zzz$"):
        kb.search("bread", tags=["chores", "zzz"])  # the part that finds nothing, nothing near it
    with pytest.raises(OutOfScope, match="no document under 'work' is tagged #food"):
        kb.search("bread", within=["work"], tags=["food"])
    for outside in ("../elsewhere", str(tmp_path)):
        with pytest.raises(OutOfScope, match="is outside the knowledge base"):
            kb.search("bread", within=[outside])


def test_cli_scope_from_the_current_folder_and_errors(kb, monkeypatch) -> None:
    runner = CliRunner()
    monkeypatch.chdir(kb.root / "home")
    res = runner.invoke(cli, ["search", "sourdough starter", "--in", ".", "-k", "3"])
    assert res.exit_code == 0, res.output
    assert "home/kitchen.md" in res.stdout and "work/" not in res.stdout
    assert "searched 2 documents under home" in res.stdout
    res = runner.invoke(cli, ["search", "sourdough starter", "--in", ".", "--tag", "#Food", "--explain"])
    assert "scope: 2 documents under home, tagged #food; each list ranks only their chunks" in res.stdout
    res = runner.invoke(cli, ["search", "oven", "--in", "work/meetings", "--json"])  # from the KB's root
    data = json.loads(res.stdout)
    assert [h["path"] for h in data["hits"]] == ["work/meetings/standup.md"]
    assert data["scope"] == {"within": ["work/meetings"], "tags": [], "documents": 1}
    res = runner.invoke(cli, ["search", "oven", "--tag", "nope"])
    assert res.exit_code == 1 and res.output.strip() == "Error: no document is tagged #nope"
    res = runner.invoke(cli, ["search", "oven", "--in", "../.."])
    assert res.exit_code == 1 and "outside the knowledge base" in res.output
    assert "Traceback" not in res.output


def test_a_fleet_search_skips_a_kb_with_nothing_in_scope(kb, make_kb) -> None:
    other = make_kb({"recipes/bread.md": "# Bread\n\nA sourdough loaf needs a lively starter.\n"},
                    name="recipes")
    other.sync()
    both = search_many([kb, other], "sourdough starter", k=3, scope={"within": ["recipes"]})
    assert paths(both) == {"recipes/bread.md"}
    assert both.skipped == [{"kb": fleet.label(kb), "reason": "no document is under 'recipes'"}]
    with pytest.raises(OutOfScope, match="in no knowledge base"):
        search_many([kb, other], "sourdough", scope={"within": ["nowhere"]})


def test_show_lists_the_tags_a_scope_matches(kb) -> None:
    """``pnk show`` lists a note's inline #tags with its front-matter tags (what --tag matches),
    not as unresolved links."""
    shown = kb.show("home/garden.md")
    assert shown["inline_tags"] == ["food/growing", "Chores"] and shown["outgoing"] == []
    res = CliRunner().invoke(cli, ["show", "work/meetings/standup.md", "--kb", str(kb.root)])
    assert "  tags     work, #chores\n" in res.output and "tag-only" not in res.output


def test_a_span_of_dates_keeps_the_notes_dated_in_it(make_kb) -> None:
    """--since/--until: a journal day or chat session is dated by its front matter or its file
    name (the journal dialects' forms, a month for a whole month); an undated note is outside."""
    kb = make_kb({
        "journal/thu.md": "---\ndate: 2024-03-14\n---\n# Thursday\n\nDentist at nine.\n",
        "journal/wed.md": "---\ncreated: 2024-03-20T10:11:00\n---\n# Wednesday\n\nDentist, the filling.\n",
        "journal/2024-04-02.md": "# Tuesday\n\nDentist again.\n",
        "journals/2024_04_05.md": "- dentist, last visit\n",
        "journal/April 9th, 2024.md": "# April 9th\n\nDentist bill paid.\n",
        "chats/2024-02-19-session-02.md": "# Session\n\nuser: book the dentist\n",
        "journal/2024-05 review.md": "# May review\n\nNo dentist this month.\n",
        "dentist.md": "# Dentist\n\nDr Okoro, Main Street.\n",
    })
    kb.sync()

    def dated(**span) -> set[str]:
        return paths(kb.search("dentist", k=10, **span))

    assert dated(since="2024-03", until="2024-03") == {"journal/thu.md", "journal/wed.md"}
    assert dated(since="2024-04-03") == {"journals/2024_04_05.md", "journal/April 9th, 2024.md",
                                         "journal/2024-05 review.md"}
    assert dated(until="2024-02") == {"chats/2024-02-19-session-02.md"}
    assert dated(since="2024-05-31", until="2024-06") == {"journal/2024-05 review.md"}  # a month, whole
    assert kb.search("dentist", since="2024-04", within=["journal"]).scope == {
        "within": ["journal"], "tags": [], "since": "2024-04-01", "until": None, "documents": 3}
    with pytest.raises(OutOfScope, match="^no document is dated from 2025-01-01$"):
        kb.search("dentist", since="2025")
    with pytest.raises(QueryError, match="takes a date written 2024, 2024-03 or 2024-03-14"):
        kb.search("dentist", since="last week")
    with pytest.raises(QueryError, match="is after until"):
        kb.search("dentist", since="2024-04", until="2024-03")
    res = CliRunner().invoke(cli, ["search", "dentist", "--kb", str(kb.root), "--since", "2024-04-03",
                                   "--until", "2024-04-08"])
    assert res.exit_code == 0 and "searched 1 document dated 2024-04-03 to 2024-04-08" in res.output
    # pnk show says what a note is dated, as the span reads it
    assert kb.show("journal/wed.md")["dated"] == ["2024-03-20", "2024-03-20"]
    assert kb.show("journal/2024-05 review.md")["dated"] == ["2024-05-01", "2024-05-31"]
    assert kb.show("dentist.md")["dated"] is None
    res = CliRunner().invoke(cli, ["show", "journal/2024-05 review.md", "--kb", str(kb.root)])
    assert "  dated    2024-05-01 to 2024-05-31\n" in res.output


def test_a_sync_refreshes_what_a_scope_holds(kb) -> None:
    """Tags and dates are read once per store generation: a note tagged or dated after the
    last scoped search is in the next one."""
    assert paths(kb.search("oven", tags=["chores"])) == {"home/garden.md", "work/meetings/standup.md"}
    with pytest.raises(OutOfScope):
        kb.search("oven", since="2024-06")
    (kb.root / "home" / "2024-06-01.md").write_text("# June\n\nCleaned the oven. #chores\n", "utf-8")
    kb.sync()
    assert "home/2024-06-01.md" in paths(kb.search("oven", tags=["chores"]))
    assert paths(kb.search("oven", since="2024-06")) == {"home/2024-06-01.md"}


def test_status_outlines_the_folders_and_tags_a_scope_can_take(kb) -> None:
    """``pnk status`` (and the MCP ``pinakes_kbs`` tool) list the top folders and tags with
    their document counts, most first: what --in and --tag can be given."""
    info = kb.status()
    assert info["folders"] == {"work": 11, "home": 2, "Notes [old]": 1} and info["folders_total"] == 3
    assert info["tags"] == {"chores": 2, "food/baking": 1, "food/growing": 1, "work": 1}
    res = CliRunner().invoke(cli, ["status", "--kb", str(kb.root)])
    assert "  folders    work 11, home 2, Notes [old] 1\n" in res.output
    assert "  tags       #chores 2, #food/baking 1, #food/growing 1, #work 1\n" in res.output


def test_not_in_leaves_a_folder_out(kb) -> None:
    """--not-in: everything but an archive; alone or with the other parts of a scope."""
    everything = kb.search("sourdough starter feeding", k=20, not_within=["work/bakery"])
    assert everything.hits and not any(h.path.startswith("work/bakery/") for h in everything.hits)
    assert everything.scope["not_within"] == ["work/bakery"] and everything.scope["documents"] == 4
    assert paths(kb.search("bake", within=["home"], not_within=["home/garden.md"])) == {"home/kitchen.md"}
    assert kb.search("bake", not_within=["../elsewhere"]).scope is None  # outside: leaves out nothing
    with pytest.raises(OutOfScope, match="^no document is under 'home', outside 'home'$"):
        kb.search("bake", within=["home"], not_within=["home"])
    with pytest.raises(QueryError, match="leaves out the whole knowledge base"):
        kb.search("bake", not_within=["."])
    res = CliRunner().invoke(cli, ["search", "bake", "--kb", str(kb.root), "--not-in", "work", "--not-in", "home"])
    assert res.exit_code == 0 and "searched 1 document not under work or home" in res.output


def test_a_glob_reads_as_include_does(make_kb) -> None:
    """``**/`` is any depth, the root too; ``*`` stays within a name and takes the folders it names."""
    kb = make_kb({"plan.md": "# Plan\n\nRoot plan.\n", "a/plan.md": "# Plan A\n\nA plan.\n",
                  "a/b/plan.md": "# Plan B\n\nB plan.\n", "a/notes.md": "# Notes\n\nA plan too.\n"})
    kb.sync()
    assert paths(kb.search("plan", within=["**/plan.md"])) == {"plan.md", "a/plan.md", "a/b/plan.md"}
    assert paths(kb.search("plan", within=["a/*.md"])) == {"a/plan.md", "a/notes.md"}
    assert paths(kb.search("plan", within=["a/*"])) == {"a/plan.md", "a/notes.md", "a/b/plan.md"}
