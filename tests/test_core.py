"""init, sync and search on a small real KB, end to end through the library and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli
from pinakes.errors import KBNotFound, QueryError

from .small_kb import DOCS


@pytest.fixture
def kb(make_kb):
    kb = make_kb(DOCS)
    kb.sync()
    return kb


def test_init_writes_config_and_gitignore_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["init", str(tmp_path / "notes"), "--name", "My Notes"])
    assert result.exit_code == 0, result.output
    config = (tmp_path / "notes" / "pinakes.toml").read_text()
    assert 'name = "my-notes"' in config
    assert ".pinakes/" in (tmp_path / "notes" / ".gitignore").read_text().splitlines()
    again = runner.invoke(cli, ["init", str(tmp_path / "notes")])
    assert again.exit_code != 0
    assert "already exists" in again.output
    assert (tmp_path / "notes" / "pinakes.toml").read_text() == config


def test_commands_say_clearly_when_there_is_no_kb(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["search", "anything"])
    assert result.exit_code == 1
    assert "no Pinakes knowledge base here" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(KBNotFound):
        KB.open(tmp_path)


def test_kb_found_by_walking_up(kb, monkeypatch) -> None:
    monkeypatch.chdir(kb.root / "kitchen")
    result = CliRunner().invoke(cli, ["status", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["documents"] == len(DOCS)


def test_sync_creates_sidecars_with_ulids(kb) -> None:
    sidecar = (kb.root / "kitchen" / "pasta.pnk.yaml").read_text()
    assert "title: Cooking Dried Pasta" in sidecar
    info = kb.show("kitchen/pasta.md")
    assert len(info["doc_id"]) == 26
    assert info["doc_id"] in sidecar
    # title from front matter wins over the H1-less fallback
    assert kb.show("health/cpr.md")["title"] == "Cardiopulmonary Resuscitation"
    assert kb.show("health/cpr.md")["tags"] == ["first-aid", "emergency"]


def test_paraphrase_without_shared_words_finds_its_document(kb) -> None:
    result = kb.search("someone fainted and has no pulse, what first aid should I give?")
    assert result.hits[0].path == "health/cpr.md"
    result = kb.search("keeping drivetrain links clean and oiled")
    assert result.hits[0].path == "garage/bicycle-chain.md"


def test_exact_identifier_found_through_bm25(kb) -> None:
    result = kb.search("ERR-4471")
    top = result.hits[0]
    assert top.path == "code/packaging.md"
    assert top.heading_path == ["Python Packaging Errors", "Build failures"]
    assert top.ranks["lexical"] == 1
    assert "ERR-4471" in top.snippet
    a, b = top.highlights[0]
    assert top.snippet[a:b].lower().startswith("err")


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "pasta*", "-boil", "NEAR(pasta water)", "(((", "AND OR NOT", "a:b", "'; DROP TABLE chunks; --"],
)
def test_fts_syntax_in_queries_is_just_text(kb, query: str) -> None:
    result = kb.search(query)
    assert isinstance(result.hits, list)


def test_empty_query_is_a_clear_error(kb) -> None:
    with pytest.raises(QueryError):
        kb.search("   ")
    result = CliRunner().invoke(cli, ["search", "", "--kb", str(kb.root)])
    assert result.exit_code == 1
    assert "query is empty" in result.output


def test_entities_and_concepts_shape_the_ranking(kb) -> None:
    plain = kb.search("water", k=10)
    boosted = kb.search("water", k=10, entities=["starchy cooking water"])
    assert boosted.hits[0].path == "kitchen/pasta.md"
    assert [h.path for h in plain.hits] != [h.path for h in boosted.hits] or plain.hits[0].path == "kitchen/pasta.md"
    shifted = kb.search("routine", k=3, concepts=["musical instrument practice"])
    assert shifted.hits[0].path == "music/piano-practice.md"


def test_search_cli_prints_hits_and_json(kb) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["search", "tomato blight", "--kb", str(kb.root), "-k", "3"])
    assert out.exit_code == 0, out.output
    assert "Growing Tomatoes" in out.output
    assert "garden/tomatoes.md" in out.output
    # The calibration shipped for the default embedder gives a probability (pnk eval).
    assert "confidence: 0." in out.output or "confidence: 1.00" in out.output
    js = runner.invoke(cli, ["search", "tomato blight", "--kb", str(kb.root), "--json"])
    data = json.loads(js.output)
    assert isinstance(data["confidence"], float) and 0.25 <= data["confidence"] <= 1.0
    assert data["abstained"] is False
    first = data["hits"][0]
    assert {"doc_id", "title", "path", "heading_path", "text", "score", "ranks"} <= set(first)
    assert set(first["ranks"]) == {"lexical", "dense"}


def test_status_and_show(kb) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["status", "--kb", str(kb.root)])
    assert out.exit_code == 0, out.output
    assert "documents  10" in out.output
    assert "minilm-l6-v2-int8" in out.output
    shown = runner.invoke(cli, ["show", "Cardiopulmonary Resuscitation", "--kb", str(kb.root)])
    assert shown.exit_code == 0, shown.output
    assert "Compressions" in shown.output
    missing = runner.invoke(cli, ["show", "No Such Doc", "--kb", str(kb.root)])
    assert missing.exit_code == 1
    assert "no document" in missing.output


def test_installed_pnk_runs_as_a_subprocess(kb) -> None:
    pnk = Path(sys.executable).with_name("pnk")
    assert pnk.exists(), "pnk console script not installed in this environment"
    proc = subprocess.run(
        [str(pnk), "search", "how long should coffee brew", "--kb", str(kb.root), "--json", "-k", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "kitchen/coffee.md"
    bad = subprocess.run([str(pnk), "status", "--kb", str(kb.root / "nope")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    assert "no such folder" in bad.stderr


@pytest.mark.parametrize("tokenizer", ["porter", "trigram"])
def test_cjk_text_is_searchable_lexically(make_kb, tokenizer: str) -> None:
    kb = make_kb(
        {
            "tokyo.md": "# 東京タワー\n\n東京タワーは東京都港区にある電波塔です。\n",
            "kyoto.md": "# 京都の寺\n\n京都には多くの古い寺があります。\n",
            "bread.md": "# Bread\n\nKnead the dough and let it rise overnight.\n",
        },
        config=f'\n[retrieval]\ntokenizer = "{tokenizer}"\n',
    )
    kb.sync()
    hit = kb.search("東京都港区", k=3).hits[0]
    assert hit.path == "tokyo.md" and hit.ranks["lexical"] == 1
    assert kb.search("古い寺", k=3).hits[0].path == "kyoto.md"


@pytest.mark.parametrize(("score", "shown"), [
    (0.027694, "0.0277"), (0.0013, "0.0013"), (0.0, "0.0000"), (1.8e-05, "1.8e-05"), (2e-06, "2e-06"),
])
def test_a_tiny_score_is_printed_as_tiny_not_as_zero(score: float, shown: str) -> None:
    """A graph channel's final ranking gives far hits scores like 2e-06: not "0.0000"."""
    from pinakes.cli.core import score_text

    assert score_text(score) == shown
