"""`pnk doctor`: findings, their file:line, and an exit status that is non-zero only for errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pinakes.cli import cli
from pinakes.kb import KB

SICK = {
    "a.md": "# A\n\nalpha\n",
    "a.pnk.yaml": """
        id: 01JDQ5S8Z6W3K1V9XQ2M4B7N1A
        title: A
        links:
          - to: b.md
            rel: cites
          - rel: uses
          - to: nowhere.md
            rel: uses
        """,
    "b.md": "# B\n\nbeta\n",
    "c.md": "# C\n\ngamma\n\nsee [missing](missing.md) and [b](b.md)\n",
    "d.md": "# D\n\nlonely\n",
    "e.md": "---\ntitle: Front Title\ntags: [x, y]\n---\nepsilon\n",
    "e.pnk.yaml": "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N1E\ntitle: Sidecar Title\ntags: [x, z]\n",
    "ghost.pnk.yaml": "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N1G\ntitle: Ghost\n",
    "excluded/kept.pnk.yaml": "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N1K\ntitle: Kept\n",
    "excluded/kept.md": "# Kept\n\nnot indexed\n",
}


def test_doctor_findings_and_exit_status(make_kb) -> None:
    kb = make_kb(SICK, config='exclude = [".pinakes/**", "excluded/**"]\n')
    kb.sync()
    report = kb.doctor()
    assert report["ok"] is True and report["errors"] == 0
    assert report["store"]["indexed"] and report["store"]["current"]
    assert report["store"]["documents"] == 5
    assert report["coverage"] == {"documents": 5, "with_authored_links": 2, "share": 0.4,
                                  "with_any_links": 3}
    assert report["zero_links"] == ["d.md", "e.md"]
    assert [(d["file"], d["line"], d["target"], d["reason"]) for d in report["dangling"]] == [
        ("a.pnk.yaml", 7, "nowhere.md", "missing-file"),
        ("c.md", 5, "missing.md", "missing-file"),
    ]
    assert report["orphan_sidecars"] == ["ghost.pnk.yaml"]  # excluded/kept.md still exists
    assert [(d["field"], d["front_matter"], d["sidecar"]) for d in report["disagreements"]] == [
        ("title", "Front Title", "Sidecar Title"), ("tags", ["x", "y"], ["x", "z"])]
    assert [(d["file"], d["entry"]) for d in report["bad_link_entries"]] == [("a.pnk.yaml", 2)]
    assert report["duplicate_ids"] == []
    assert report["warnings"] == 2 + 1 + 2 + 1 + len(report["problems"])

    runner = CliRunner()
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert res.exit_code == 0, res.output
    assert "c.md:5: missing.md (missing-file)" in res.output
    assert "a.pnk.yaml:7: nowhere.md (missing-file)" in res.output
    assert "ghost.pnk.yaml" in res.output
    assert "2/5 documents (40%)" in res.output
    assert "ok, " in res.output
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["dangling"] == report["dangling"]


def test_doctor_errors_exit_non_zero(make_kb, tmp_path) -> None:
    twin = "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N2T\ntitle: {}\n"
    kb = make_kb({"one.md": "# One\n\n1\n", "one.pnk.yaml": twin.format("One"),
                  "two.md": "# Two\n\n2\n", "two.pnk.yaml": twin.format("Two")})
    runner = CliRunner()
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert res.exit_code == 1 and "not indexed yet" in res.output  # before the first sync
    kb.sync()
    report = kb.doctor()
    assert report["ok"] is False and report["errors"] == 1
    assert report["duplicate_ids"] == [{"id": "01JDQ5S8Z6W3K1V9XQ2M4B7N2T", "paths": ["one.md", "two.md"],
                                        "shared_sidecar": None}]
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert res.exit_code == 1
    assert "duplicate ids" in res.output and "one.md, two.md" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["errors"] == 1


def test_markdown_files_include_leaves_out_are_named_with_the_line_that_takes_them_in(make_kb) -> None:
    kb = make_kb({
        "guide.md": "# Guide\n\nSee [Install](install.mdx) and [[changelog]].\n",
        # A Docusaurus page: MDX, with an import line and a component.
        "install.mdx": "import Tabs from '@theme/Tabs';\n\n# Install\n\nRun the quokka installer twice.\n",
        "changelog.markdown": "# Changelog\n\n1.0: first release.\n",
        ".docusaurus/cache.mdx": "# Cache\n",  # excluded (a hidden folder): not counted
        "site/index.html": "<html></html>",  # not Markdown: not counted
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["sync", "--kb", str(kb.root)])
    assert res.exit_code == 0, res.output
    hint = ('2 Markdown files are not indexed (1 .markdown, 1 .mdx): [kb] include has no pattern for '
            'them; to index them, add "**/*.markdown", "**/*.mdx" to include in pinakes.toml')
    assert f"note: {hint}" in res.stderr
    assert json.loads(runner.invoke(cli, ["sync", "--kb", str(kb.root), "--json"]).stdout)["left_out"] == {
        ".markdown": 1, ".mdx": 1}
    # A later sync that finds its documents unchanged does not repeat it; doctor always does.
    res = runner.invoke(cli, ["sync", "--kb", str(kb.root)])
    assert "not indexed" not in res.output
    assert kb.doctor()["left_out"] == {".markdown": 1, ".mdx": 1}
    assert f"hint: {hint}" in runner.invoke(cli, ["doctor", "--kb", str(kb.root)]).output
    # The line it gives works: the pages are indexed, and links to them resolve.
    toml = kb.root / "pinakes.toml"
    toml.write_text(toml.read_text("utf-8") + 'include = ["**/*.md", "**/*.markdown", "**/*.mdx"]\n', "utf-8")
    kb = KB.open(kb.root)
    res = runner.invoke(cli, ["sync", "--kb", str(kb.root)])
    assert res.exit_code == 0 and "not indexed" not in res.output
    assert kb.doctor()["left_out"] == {} and kb.doctor()["dangling"] == []
    assert kb.search("quokka installer", k=1).hits[0].path == "install.mdx"


def _folder(root: Path, files: dict[str, str]) -> Path:
    """A folder holding ``files`` ({relative path: text}) and no pinakes.toml yet: what
    ``pnk init`` meets."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    return root


def test_init_includes_the_mdx_pages_it_finds(tmp_path) -> None:
    site = _folder(tmp_path / "site", {
        "docs/intro.mdx": "# Intro\n\nThe quokka tour starts here.\n",
        "docs/api.mdx": "# API\n\nCalls.\n",
        "README.md": "# Site\n",
        "node_modules/pkg/readme.mdx": "# Vendored\n",  # excluded
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(site)])
    assert res.exit_code == 0, res.output
    assert 'include = ["**/*.md", "**/*.mdx"]' in res.output
    kb = KB.open(site)
    assert kb.config.kb["include"] == ["**/*.md", "**/*.mdx"]
    assert 'include = ["**/*.md", "**/*.mdx"]  # pnk init found 2 .mdx files' in (
        site / "pinakes.toml").read_text("utf-8")
    res = runner.invoke(cli, ["sync", "--kb", str(site)])
    assert res.exit_code == 0 and "3 added" in res.output and "not indexed" not in res.output
    # A folder of .md files only keeps the default, written as a comment.
    plain = _folder(tmp_path / "notes", {"a.md": "# A\n"})
    assert runner.invoke(cli, ["init", str(plain)]).exit_code == 0
    assert '# include = ["**/*.md"]' in (plain / "pinakes.toml").read_text("utf-8")


def test_init_leaves_out_a_docusaurus_sites_versions_and_translations(tmp_path) -> None:
    """A Docusaurus site keeps each release's docs and each language's pages as copies beside its
    config: indexed, one question finds the same page once per copy. Init excludes them, says so,
    and a folder without the site's config keeps them."""
    site = _folder(tmp_path / "repo", {
        "website/docusaurus.config.ts": "export default {};\n",
        "website/docs/intro.md": "# Intro\n\nThe quokka tour starts here.\n",
        "website/versioned_docs/version-1.0/intro.md": "# Intro\n\nThe old quokka tour.\n",
        "website/i18n/fr/docusaurus-plugin-content-docs/current/intro.md": "# Intro\n\nLa visite quokka.\n",
        "README.md": "# Repo\n",
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(site)])
    assert res.exit_code == 0, res.output
    assert ("Left out website/versioned_docs/ (older versions of the docs) and website/i18n/ "
            "(translations of the pages)") in res.output
    res = runner.invoke(cli, ["sync", "--kb", str(site), "--json"])
    assert sorted(json.loads(res.stdout)["added"]) == ["README.md", "website/docs/intro.md"]
    hits = KB.open(site).search("quokka tour", k=5).hits
    assert [h.path for h in hits if "intro" in h.path] == ["website/docs/intro.md"]  # once, not per copy
    # A KB that indexes the copies (made before init left them out) is told by doctor how to.
    (site / "pinakes.toml").write_text('[kb]\nname = "repo"\n', "utf-8")
    runner.invoke(cli, ["sync", "--kb", str(site)])
    copies = KB.open(site).doctor()["site_copies"]
    assert copies == [{"folder": "website/versioned_docs", "what": "older versions of the docs", "documents": 1},
                      {"folder": "website/i18n", "what": "translations of the pages", "documents": 1}]
    res = runner.invoke(cli, ["doctor", "--kb", str(site)])
    assert 'add "website/versioned_docs/**" to exclude in pinakes.toml' in res.output
    plain = _folder(tmp_path / "plain", {"i18n/fr/a.md": "# A\n", "versioned_docs/b.md": "# B\n"})
    assert runner.invoke(cli, ["init", str(plain)]).exit_code == 0
    assert "# exclude = " in (plain / "pinakes.toml").read_text("utf-8")  # no site config: the default


def test_init_leaves_out_a_hugo_sites_other_languages(tmp_path) -> None:
    """A multilingual Hugo site keeps each language's pages under content/<lang>/, mirroring the
    default language's tree: init keeps the default (hugo.toml's defaultContentLanguage) and
    leaves the translations out; a folder named like a language that mirrors nothing stays."""
    site = _folder(tmp_path / "site", {
        "config/_default/hugo.toml": 'defaultContentLanguage = "de"\n',
        "content/de/docs/pods.md": "# Pods\n\nEin Pod.\n",
        "content/en/docs/pods.md": "# Pods\n\nA pod.\n",
        "content/ja/docs/pods.md": "# Pods\n\nポッド.\n",
        "content/ui/buttons.md": "# Buttons\n\nA folder named like a language code.\n",
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(site)])
    assert res.exit_code == 0, res.output
    assert "Left out content/en/, content/ja/ (translations of content/de/)" in res.output
    res = runner.invoke(cli, ["sync", "--kb", str(site), "--json"])
    assert sorted(json.loads(res.stdout)["added"]) == ["content/de/docs/pods.md", "content/ui/buttons.md"]
    one = _folder(tmp_path / "one", {"hugo.toml": "", "content/en/a.md": "# A\n", "content/docs/b.md": "# B\n"})
    assert runner.invoke(cli, ["init", str(one)]).exit_code == 0
    assert "# exclude = " in (one / "pinakes.toml").read_text("utf-8")  # one language: nothing left out


def test_an_unreadable_language_folder_does_not_stop_init(tmp_path, monkeypatch) -> None:
    """A folder init cannot list names no copies; init goes on (no traceback)."""
    site = _folder(tmp_path / "site", {"hugo.toml": "", "content/en/a.md": "# A\n", "content/fr/a.md": "# A\n"})
    listdir = Path.iterdir

    def refuse(self: Path):
        if self.name == "fr":
            raise PermissionError(13, "Permission denied", str(self))
        return listdir(self)

    monkeypatch.setattr(Path, "iterdir", refuse)
    res = CliRunner().invoke(cli, ["init", str(site)])
    assert res.exit_code == 0 and "Left out" not in res.output and "Traceback" not in res.output


def test_a_quarto_project_is_indexed_from_init(tmp_path) -> None:
    """Quarto pages (.qmd: Markdown with code cells) are notes: init includes them, links reach them."""
    site = _folder(tmp_path / "quarto", {
        "index.qmd": "---\ntitle: Kiln log\n---\n\nSee [the glazes](glazes.qmd).\n\n"
                     "```{python}\nprint('[not a link](x.qmd)')\n```\n",
        "glazes.qmd": "# Glazes\n\nCeladon needs a reduction firing.\n",
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(site)])
    assert res.exit_code == 0 and 'include = ["**/*.md", "**/*.qmd"]' in res.output
    res = runner.invoke(cli, ["sync", "--kb", str(site), "--json"])
    assert sorted(json.loads(res.stdout)["added"]) == ["glazes.qmd", "index.qmd"]
    kb = KB.open(site)
    assert kb.search("what does celadon need", k=1).hits[0].path == "glazes.qmd"
    assert kb.doctor()["dangling"] == []
    with kb.reader().snapshot() as conn:
        assert conn.execute("SELECT count(*) FROM links WHERE dst_ulid IS NOT NULL").fetchone()[0] == 1


def test_a_folder_of_other_text_files_is_told_why_nothing_was_indexed(tmp_path) -> None:
    """A folder of Sphinx .rst pages or Simplenote .txt notes synced to "0 added" in silence."""
    docs = _folder(tmp_path / "docs", {
        "guide/install.rst": "Install\n=======\n\nRun the quokka installer.\n",
        "guide/usage.rst": "Usage\n=====\n\nCall it.\n",
        "todo.txt": "feed the quokka\n",
        "node_modules/x/notes.txt": "vendored\n",  # excluded
    })
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(docs)])
    hint = ('no Markdown file to index here, but 2 .rst, 1 .txt files: to index them as Markdown '
            'text (their words searchable, their own link syntax not read), add "**/*.rst", '
            '"**/*.txt" to [kb] include in pinakes.toml')
    assert res.exit_code == 0 and f"Note: {hint}." in res.output
    res = runner.invoke(cli, ["sync", "--kb", str(docs)])
    assert res.exit_code == 0 and f"note: {hint}" in res.stderr
    assert json.loads(runner.invoke(cli, ["sync", "--kb", str(docs), "--json"]).stdout)["other_text"] == {
        ".rst": 2, ".txt": 1}
    assert f"hint: {hint}" in runner.invoke(cli, ["doctor", "--kb", str(docs)]).output
    # The line it gives works, and once there is a document the note is not said again.
    toml = docs / "pinakes.toml"
    toml.write_text(toml.read_text("utf-8").replace(
        '# include = ["**/*.md"]', 'include = ["**/*.md", "**/*.rst", "**/*.txt"]'), "utf-8")
    res = runner.invoke(cli, ["sync", "--kb", str(docs), "--json"])
    assert sorted(json.loads(res.stdout)["added"]) == ["guide/install.rst", "guide/usage.rst", "todo.txt"]
    assert "no Markdown" not in res.stderr
    kb = KB.open(docs)
    assert kb.search("quokka installer", k=1).hits[0].path == "guide/install.rst"
    assert kb.doctor()["other_text"] == {}
    # A Markdown KB with a stray requirements.txt is told nothing.
    md = _folder(tmp_path / "md", {"a.md": "# A\n", "requirements.txt": "numpy\n"})
    res = runner.invoke(cli, ["init", str(md)])
    assert "Note:" not in res.output
    assert json.loads(runner.invoke(cli, ["sync", "--kb", str(md), "--json"]).stdout)["other_text"] == {}


def test_two_files_sharing_a_sidecar_are_told_so(make_kb) -> None:
    """``a.md`` and ``a.mdx`` share ``a.pnk.yaml``, so one id: the fix is a rename, not a new id."""
    kb = make_kb({"a.md": "# A\n\nalpha\n", "a.mdx": "# A page\n\nbeta\n", "b.md": "# B\n"},
                 config='include = ["**/*.md", "**/*.mdx"]\n')
    report = kb.sync()
    assert [p for p in report.problems if "a.pnk.yaml" in p] == [
        f"a.md, a.mdx share one sidecar, a.pnk.yaml (named after the file without its suffix), and so "
        f"one id {kb.doctor()['duplicate_ids'][0]['id']}: rename one of them, or leave its suffix out "
        "of [kb] include"]
    assert kb.doctor()["duplicate_ids"][0]["shared_sidecar"] == "a.pnk.yaml"
    res = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert res.exit_code != 0 and "they share the sidecar a.pnk.yaml" in res.output
    (kb.root / "a.mdx").rename(kb.root / "a-page.mdx")
    assert not [p for p in kb.sync().problems if "sidecar" in p] and kb.doctor()["duplicate_ids"] == []


def test_a_problem_with_a_line_names_its_file_once(make_kb) -> None:
    kb = make_kb({"a.md": "---\ntitle: ok\nbad: x: y\n---\nbody\n",
                  "big.md": "x" * 2_000_000}, config="max_file_mb = 1\n")
    kb.sync()
    problems = kb.doctor()["problems"]
    assert "a.md:3: mapping values are not allowed here" in problems
    assert any(p.startswith("big.md: ") for p in problems)  # no line: the file is named once too
