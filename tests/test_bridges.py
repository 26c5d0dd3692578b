"""Bridges (plugins/pinakes-ppr/pinakes_ppr/bridges.py) and the walk's treatment of hubs.

A 21-note personal vault (tests/fixtures/hobby-vault, written for these tests):
notes about coffee, tea, running, a garden..., a home page linking every note,
and a long "Life Log" that names every title. Each two-hop question describes one
note and asks a detail that only the note it links to holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinakes_mentions.deriver import prose_share
from pinakes_ppr.bridges import context_fit

FIXTURE = Path(__file__).parent / "fixtures" / "hobby-vault"

#: (question, the note it describes, the linked note that answers it)
TWO_HOP = [
    ("Which grind setting do I use for the beans I brought back from Lisbon?",
     "Lisbon.md", "French Press.md"),
    ("What did the physiotherapist diagnose after the knee pain in my marathon?",
     "Marathon 2022.md", "Physio Notes.md"),
    ("How often do I drain the bucket that feeds my balcony garden?",
     "Garden.md", "Compost.md"),
    ("How many coats of oil did I season the pan I bake my sourdough in with?",
     "Sourdough.md", "Cast Iron Pan.md"),
    ("How high is the standing height of the desk in my home office?",
     "Home Office.md", "Standing Desk.md"),
]
HUBS = ("Home.md", "Life Log.md")  # the index note, the long note naming everything


@pytest.fixture(scope="module")
def vault_files() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(FIXTURE.glob("*.md"))}


def _order(kb, question: str, **config) -> list[str]:
    kb.config.data["retrieval"].update(config)
    try:
        hits = kb.search(question, k=30, channel="ppr").hits
    finally:
        for key in config:
            kb.config.data["retrieval"].pop(key)
    out: list[str] = []
    for h in hits:
        if h.path not in out:
            out.append(h.path)
    return out


def _rank(order: list[str], path: str) -> int:
    return order.index(path) if path in order else len(order)


def test_hubs_do_not_outrank_a_directly_linked_second_hop(make_kb, vault_files) -> None:
    kb = make_kb(vault_files, name="hobby")
    kb.sync()
    for question, first, second in TWO_HOP:
        order = _order(kb, question)
        assert order[0] == first, (question, order)
        for hub in HUBS:
            assert _rank(order, second) < _rank(order, hub), (question, order)
    # Without bridges the walk alone lifts the long note above the second hop: the
    # assertion above is about the mechanism, not about an easy fixture.
    lost = 0
    for question, _first, second in TWO_HOP:
        order = _order(kb, question, ppr_bridge_weight=0.0)
        lost += _rank(order, "Life Log.md") < _rank(order, second)
    assert lost >= 2


def test_a_link_list_gives_its_names_no_walk_mass(make_kb, vault_files) -> None:
    kb = make_kb(vault_files, name="hobby-edges")
    kb.sync()
    conn = kb.reader().conn
    weights = {(r[0], r[1]): r[2] for r in conn.execute(
        "SELECT d.path, n.key, e.weight FROM edges e JOIN nodes c ON c.id = e.src AND c.kind = 'chunk' "
        "JOIN chunks k ON k.id = CAST(c.key AS INTEGER) JOIN documents d ON d.doc = k.doc "
        "JOIN nodes n ON n.id = e.dst AND n.kind = 'entity' WHERE e.kind = 'mentions'")}
    # The home page's sections are bare lists of links: their mentions count 0...
    assert not any(w > 0 for (path, key), w in weights.items() if path == "Home.md" and key != "home")
    # ...while a sentence that names a note keeps its mention at full weight.
    assert weights[("Kyoto.md", "matcha")] > 0.2
    assert weights[("Home.md", "home")] > 0  # its own title: how a seed reaches the page


def test_prose_share() -> None:
    assert prose_share(2, [("lisbon", 1, "Lisbon"), ("kyoto", 1, "Kyoto")]) == 0.0
    # "Radium was isolated by Marie Curie in Paris": 3 of 5 words are names, still prose.
    assert prose_share(5, [("marie curie", 1, "Marie Curie"), ("paris", 1, "Paris")]) == 1.0
    assert 0.0 < prose_share(10, [("alpha beta gamma delta epsilon zeta eta theta", 1, "")]) < 1.0
    assert prose_share(0, []) == 1.0


def _latex_vault(latex: str) -> dict[str, str]:
    """A LaTeX note (``latex``: its text) linking an editor and a drawing program, and errands.

    On its own text the drawing program matches "theme" and "editor" better than
    the editor does: only the LaTeX note's link says which one the question means.
    """
    files = {
        "latex.md": f"# LaTeX\n\n{latex}\n",
        "quill.md": "# Quill\n\nColours: a warm solarized variant. Font: Iosevka at 15 points. "
                    "Compiles on save.\n",
        "easel.md": "# Easel\n\nA drawing program with an image editor. Its editor theme is a "
                    "dark grey canvas; the theme can be changed in the editor settings.\n",
    }
    for i in range(12):
        files[f"misc/n{i}.md"] = (f"# Errand {i}\n\nShopping list {i}: bread, milk, eggs, "
                                  f"batteries and a new doormat.\n")
    return files


def test_the_link_whose_context_fits_the_question_is_followed(make_kb) -> None:
    """Two notes linked from the same note; the question's relation picks one.

    On its own text the drawing program matches "theme" and "editor" better, so
    the hybrid ranks it first; the sentence that links the LaTeX note to Quill
    ("I write LaTeX in Quill") is what the question asks about.
    """
    files = _latex_vault("I typeset papers and my CV in LaTeX. I write LaTeX in [[Quill]] because "
                         "it compiles on save. For slides I once tried [[Easel]], a drawing program.")
    kb = make_kb(files, name="fit")
    kb.sync()
    q = "Which theme does the editor I write LaTeX in use?"
    hybrid = _order(kb, q, ppr_bridge_weight=0.0)
    assert _rank(hybrid, "easel.md") < _rank(hybrid, "quill.md"), hybrid
    order = _order(kb, q)
    assert order[0] == "latex.md"
    assert _rank(order, "quill.md") < _rank(order, "easel.md"), order


def test_a_bridged_note_stays_below_the_note_that_lifted_it(make_kb, vault_files) -> None:
    kb = make_kb(vault_files, name="hobby-cap")
    kb.sync()
    for question, first, second in TWO_HOP:
        order = _order(kb, question, ppr_bridge_weight=1000.0)  # as strong as it can be
        assert order.index(first) < order.index(second), (question, order)


def test_context_fit() -> None:
    fit, found = context_fit("how to prepare matcha at a tea house", {"tea": 2.0, "whisk": 2.0})
    assert fit == 0.5 and found == ["tea"]
    assert context_fit("", {"tea": 1.0}) == (0.0, [])


def test_context_fit_reads_words_not_substrings() -> None:
    # The substring pre-check only skips contexts that cannot hold a stem; it never decides.
    from pinakes_ppr.bridges import context_stems

    weights = {"tea": 1.0, "grind": 2.0, "lisb": 1.5, "café": 1.0}
    for context in ("steady", "Grinder settings", "I brought it from LISBON", "a café au lait",
                    "tea’s steep", "grinding beans: tea, and a café", "", "instead of that"):
        held = context_stems(context)
        found = sorted(s for s in weights if s in held)
        want = (sum(weights[s] for s in found) / sum(weights.values()), found) if found else (0.0, [])
        assert context_fit(context, weights) == want, context


def test_pair_contexts_read_both_directions_of_each_pair(make_kb) -> None:
    """The words joining a root to its neighbours: its links out, their links and mentions back."""
    from pinakes_ppr.bridges import doc_graph, pair_contexts

    kb = make_kb({
        "root.md": "# Kettle\n\nI heat water for tea in a [[Gooseneck]] pour-over spout kettle.\n",
        "gooseneck.md": "# Gooseneck\n\nA narrow spout. Holds 1.2 litres.\n",
        "stove.md": "# Stove\n\nThe Kettle sits on the back burner, beside the pan.\n",
        "pan.md": "# Pan\n\nCast iron. See [[Stove]] for the burner it sits on.\n",
    }, name="pairs")
    kb.sync()
    store = kb.reader()
    graph = kb.graph_index(store)
    dg = doc_graph(store.conn, graph)
    row = {int(k): r for r, k in enumerate(dg.doc_key.tolist())}
    key = dict(store.conn.execute("SELECT path, doc FROM documents").fetchall())
    root, goose, stove, pan = (row[key[p]] for p in ("root.md", "gooseneck.md", "stove.md", "pan.md"))
    got = pair_contexts(store.conn, dg, [(root, goose), (root, stove)])
    assert "pour" in got[(root, goose)] and "spout" in got[(root, goose)]  # root's link out
    assert "burner" in got[(root, stove)]  # stove names the root's title: the words next to it
    assert (stove, pan) not in got and (pan, stove) not in got  # two neighbours: not asked


def test_a_link_written_as_here_is_followed_for_what_the_sentence_before_says(make_kb, monkeypatch) -> None:
    """"I write LaTeX in an editor that compiles on save. More [here](quill.md)."

    The link's own sentence holds one content word; what the question asks about
    ("write LaTeX") is in the sentence before, which the link's context reads.
    """
    import pinakes.markdown as markdown_mod

    files = _latex_vault("I typeset papers and my CV in LaTeX. I write LaTeX in an editor that "
                         "compiles on save. More [here](quill.md). For slides I once tried "
                         "[Easel](easel.md), a drawing program.")
    q = "Which theme does the editor I write LaTeX in use?"
    kb = make_kb(files, name="here")
    kb.sync()
    order = _order(kb, q)
    assert order[0] == "latex.md"
    assert _rank(order, "quill.md") < _rank(order, "easel.md"), order
    # Read within its own sentence only ("More here."), the link no longer fits the question.
    monkeypatch.setattr(markdown_mod, "SHORT_CONTEXT", 0)
    bare = make_kb(files, name="here-bare")
    bare.sync()
    order = _order(bare, q)
    assert _rank(order, "easel.md") < _rank(order, "quill.md"), order


def _vouch_vault(link: str) -> dict[str, str]:
    """A file-system note whose sentence ``link`` joins it to Sorter, a note unlike the question.

    Sorter's own text shares no word with the question, and a dozen notes on apps
    resemble its asked part ("what else did I use it for") more than Sorter does.
    """
    files = {
        "file-system.md": f"# My file system\n\nRecipes live in ~/recipes. {link} Scans go to "
                          "~/archive and photos to ~/pictures.\n",
        "sorter.md": "# Sorter\n\nA small background utility. Years ago it tidied my downloads "
                     "folder every night; now it only renames scanned receipts.\n",
    }
    for i, app in enumerate(["Notely", "Clipper", "Timer", "Scribe", "Mapper", "Reader",
                             "Pocketbook", "Tasker", "Sketcher", "Player", "Weather", "Budget"]):
        files[f"apps/a{i}.md"] = (f"# {app}\n\nA tool I use every day for lists. What else did I "
                                  f"use it for? Drafts, journals and a few old letters.\n")
    return files


VOUCH_Q = "The tool that auto-commits my recipe lists: what else did I use it for?"


def _vouch_orders(make_kb, sentence: str, name: str):  # type: ignore[no-untyped-def]
    """The KB of :func:`_vouch_vault` with ``sentence``, its order for VOUCH_Q, and without trust."""
    kb = make_kb(_vouch_vault(sentence), name=name)
    kb.sync()
    order = _order(kb, VOUCH_Q)
    assert order[0] == "file-system.md", order
    return kb, order, _order(kb, VOUCH_Q, ppr_bridge_link_trust=0.0)


def test_the_best_notes_fitting_link_vouches_for_a_target_unlike_the_question(make_kb) -> None:
    """VOUCH_Q describes the file-system note; only its link sentence names the tool.

    Sorter resembles nothing in the question, so its own cosine gates the lift
    down; the best note's fitting link ("my recipe lists are committed ... by
    Sorter") stands in for that resemblance (noisy-or), and Sorter comes right
    after the note that links it. With ``ppr_bridge_link_trust = 0`` the gate
    alone decides and Sorter stays below the look-alikes.
    """
    kb, order, gated = _vouch_orders(
        make_kb, "All my recipe lists are committed automatically by [Sorter](sorter.md).", "vouch")
    assert order[1] == "sorter.md", order
    assert _rank(gated, "sorter.md") > 2, gated
    # The lift says why: the gate on Sorter's own cosine, and the best note's link.
    hits = kb.search(VOUCH_Q, k=10, channel="ppr", explain=True).hits
    lift = next(h.explain["graph"]["bridge"] for h in hits if h.path == "sorter.md")
    assert lift["vouched"] > 0.2 and lift["resemblance"] < 0.1, lift
    assert lift["gate"] == pytest.approx(1 - (1 - lift["resemblance"]) * (1 - lift["vouched"]), abs=1e-3)


def test_a_title_mention_does_not_vouch(make_kb) -> None:
    """The same sentence naming Sorter without linking it: a mention is no author's pointer.

    The mention still joins the notes (a bridge with its fit), but Sorter's own
    cosine gates it, as before the best note's link could vouch.
    """
    _kb, order, gated = _vouch_orders(
        make_kb, "All my recipe lists are committed automatically by Sorter.", "mention")
    assert order == gated
    assert _rank(order, "sorter.md") > 2, order
