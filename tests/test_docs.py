"""The documentation stands on its own and agrees with the code.

* every relative link in README.md and docs/**/*.md resolves to a file (and, for a
  ``#fragment`` into a Markdown file, a heading) inside this repository;
* nothing points at material a user of a clone does not have (the design notes and
  benchmark folders that lived beside the repository during development);
* docs/configuration.md has a row for every key of the defaults table in
  pinakes/config.py, showing the default the code really uses.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pinakes.config import DEFAULTS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)


def _prose(text: str) -> str:
    """The text with code blocks and code spans blanked: links there are examples."""
    text = FENCE.sub("", text)
    return INLINE_CODE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out: set[str] = set()
    counts: dict[str, int] = {}
    for line in FENCE.sub("", path.read_text("utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    out |= set(re.findall(r'<a\s+(?:name|id)="([^"]+)"', path.read_text("utf-8")))
    return out


def _links(path: Path) -> list[str]:
    prose = _prose(path.read_text("utf-8"))
    return LINK.findall(prose) + REF_DEF.findall(prose)


def test_the_link_check_finds_broken_links(tmp_path: Path) -> None:
    """The checker itself: it sees links in prose, ignores code, and reads fragments."""
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## Two words\n\nSee [a](missing.md), [b](#two-words), "
                    "[c](https://example.org).\n\n```\n[not a link](nowhere.md)\n```\n"
                    "`[code](also-nowhere.md)`\n\n[ref]: other.md\n", "utf-8")
    assert _links(page) == ["missing.md", "#two-words", "https://example.org", "other.md"]
    assert _anchors(page) == {"top", "two-words"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    broken = []
    for target in _links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, pnk:, ...
            continue
        path_part, _, fragment = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


# Material that lived beside the repository while it was built; a clone has none of it.
OUTSIDE = re.compile(r"\.\./shared\b|research §|DESIGN §|DESIGN\.md|research/graph-design|STYLE §")


def test_nothing_points_outside_the_repository() -> None:
    files = subprocess.run(["git", "ls-files", "*.md", "*.py", "*.toml", "*.sh", "*.yaml"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    me = Path(__file__).relative_to(ROOT).as_posix()
    hits = []
    for rel in files:
        if rel == me or not (ROOT / rel).is_file():
            continue
        for n, line in enumerate((ROOT / rel).read_text("utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not hits, "references to files a clone does not have:\n" + "\n".join(hits)


def test_cli_help_stands_on_its_own() -> None:
    from click.testing import CliRunner

    from pinakes.cli import cli

    runner = CliRunner()
    for name in sorted(cli.commands):
        out = runner.invoke(cli, [name, "--help"])
        assert out.exit_code == 0, (name, out.output)
        assert not OUTSIDE.search(out.output), f"pnk {name} --help: {out.output}"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _config_rows() -> dict[str, dict[str, str]]:
    """``{table: {key: default cell}}`` from docs/configuration.md's tables."""
    rows: dict[str, dict[str, str]] = {}
    table = None
    for line in (ROOT / "docs" / "configuration.md").read_text("utf-8").splitlines():
        m = re.match(r"^## `\[(\w+)\]`", line)
        if m:
            table = m.group(1)
            rows[table] = {}
            continue
        if line.startswith("## "):
            table = None
        m = re.match(r"^\| `(\w+)` \| `(.*?)` \|", line)
        if m and table:
            rows[table][m.group(1)] = m.group(2)
    return rows


def test_configuration_page_documents_every_default() -> None:
    rows = _config_rows()
    problems = []
    for table, defaults in DEFAULTS.items():
        for key, value in defaults.items():
            shown = rows.get(table, {}).get(key)
            if shown is None:
                problems.append(f"[{table}] {key}: no row in docs/configuration.md")
            elif shown != _toml(value):
                problems.append(f"[{table}] {key}: page says {shown}, code says {_toml(value)}")
        if table == "llm":
            continue  # the deep plugin adds [llm] keys: checked by the test below
        for key in set(rows.get(table, {})) - set(defaults):
            problems.append(f"[{table}] {key}: documented but not in pinakes/config.py DEFAULTS")
    assert not problems, "\n".join(problems)


def test_configuration_page_documents_the_paid_path_keys() -> None:
    """[llm] and [deep] keys the deep plugin reads, with the defaults it uses."""
    from pinakes_deep.settings import DEEP_DEFAULTS, LLM_DEFAULTS

    rows = _config_rows()
    problems = [f"[{table}] {key}: page says {rows.get(table, {}).get(key)}, code says {_toml(v)}"
                for table, defaults in (("llm", LLM_DEFAULTS), ("deep", DEEP_DEFAULTS))
                for key, v in defaults.items() if rows.get(table, {}).get(key) != _toml(v)]
    for table, defaults in (("llm", {**DEFAULTS["llm"], **LLM_DEFAULTS}), ("deep", DEEP_DEFAULTS)):
        problems += [f"[{table}] {key}: documented but no plugin reads it"
                     for key in set(rows.get(table, {})) - set(defaults)]
    assert not problems, "\n".join(problems)


def test_configuration_page_documents_every_graph_key() -> None:
    """[graph] belongs to the plugins: each installed deriver's switch, every entity_*/ner_* key."""
    from pinakes.plugins import get_edge_derivers

    documented = set(_config_rows().get("graph", {}))
    wanted = set(get_edge_derivers())
    mentions = ROOT / "plugins" / "pinakes-mentions" / "pinakes_mentions" / "deriver.py"
    wanted |= set(re.findall(r'"(entity_[a-z_]+)"', mentions.read_text("utf-8")))
    ner = ROOT / "plugins" / "pinakes-ner" / "pinakes_ner" / "__init__.py"
    wanted |= set(re.findall(r'graph\.get\("(ner_[a-z_]+)"', ner.read_text("utf-8")))
    assert wanted and wanted <= documented, sorted(wanted - documented)


def test_generated_config_points_at_a_reference_that_exists(tmp_path: Path) -> None:
    """`pnk init` writes a pinakes.toml pointing at `pnk help config`, which prints the page.

    No URL: a web address goes stale (or never existed); the installed docs match the
    installed code.
    """
    pnk = str(Path(sys.executable).with_name("pnk"))
    subprocess.run([pnk, "init", str(tmp_path / "kb")], check=True, capture_output=True)
    text = (tmp_path / "kb" / "pinakes.toml").read_text("utf-8")
    assert "http" not in text
    refs = re.findall(r"docs/[\w/.-]+\.md", text)
    assert refs and all((ROOT / r).is_file() for r in refs), refs
    assert "`pnk help config`" in text
    shown = subprocess.run([pnk, "help", "config"], check=True, capture_output=True, text=True).stdout
    assert shown == (ROOT / "docs" / "configuration.md").read_text("utf-8")
    listed = subprocess.run([pnk, "help"], check=True, capture_output=True, text=True).stdout
    assert "config " in listed and "deep " in listed and "plugins/writing-plugins" in listed
    bad = subprocess.run([pnk, "help", "../README"], capture_output=True, text=True)
    assert bad.returncode == 1 and "no help topic" in bad.stderr and "Traceback" not in bad.stderr


def test_readme_problem_lines_are_what_sync_prints(tmp_path: Path) -> None:
    """The README's forms of a sync problem: `file:line: ...` with a line, `file: ...` without.

    A binary, oversized or symlinked file has no line to point at; the README must not
    promise one, and the examples it quotes must be what `pnk sync` prints.
    """
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme[readme.index("**Problems never stop a sync.**"):]
    section = section[:section.index("\n\n")]
    assert "with `file:line`" not in section
    quoted = [" ".join(q.split()).removesuffix("...").rstrip()
              for q in re.findall(r"`(notes/[^`]+)`", section)]
    assert any(re.match(r"notes/\S+:\d+:", q) for q in quoted), quoted  # a problem with a line
    assert any(re.match(r"notes/[^:\s]+: ", q) for q in quoted), quoted  # and one without
    kb = tmp_path / "kb"
    (kb / "notes").mkdir(parents=True)
    (kb / "pinakes.toml").write_text('[kb]\nname = "kb"\n', "utf-8")
    (kb / "notes" / "a.md").write_text("# A\n\nfine\n", "utf-8")
    (kb / "notes" / "a.pnk.yaml").write_text("id: [\n", "utf-8")
    (kb / "notes" / "big.md").write_text("# Big\n\n" + "x" * (11 * 1024 * 1024), "utf-8")
    done = subprocess.run([str(Path(sys.executable).with_name("pnk")), "sync", "--kb", str(kb)],
                          capture_output=True, text=True, timeout=300)
    printed = [line.split("problem: ", 1)[1] for line in (done.stdout + done.stderr).splitlines()
               if "problem: " in line]
    for q in quoted:
        assert any(p.startswith(q) for p in printed), (q, printed)
