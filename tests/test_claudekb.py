"""`pnk adopt` (plugins/pinakes-claudekb): two ClaudeKB-format KBs adopted into one fleet.

The KBs are written here, in the format of ClaudeKB's architecture spec: kb.yml,
vocab.yml, blueprint-checksums.json naming blueprint-owned files, docs/index.md
and docs/log.md without front matter, pages with front matter (an unknown key,
an archived page), root-absolute links, kb:// links between the two, a dangling
link, and media.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinakes import KB, fleet, plugins
from pinakes.cli import cli, load_plugin_commands
from pinakes.links import NO_HUB, classify, kb_path
from pinakes.sidecar import is_ulid, read_sidecar

pinakes_claudekb = pytest.importorskip("pinakes_claudekb")
from pinakes_claudekb import adopt as adoption  # noqa: E402

BLUEPRINT = {
    ".gitattributes": "docs/log.md merge=union\n",
    ".gitignore": ".build/\n.venv/\n",
    "CLAUDE.md": "# Agent contract\n\nBlueprint-owned: never edit.\n",
    "pyproject.toml": "# MANAGED BY BLUEPRINT v0.4.0 — do not edit\n[project]\nname = \"kb\"\n",
}

ALPHA_PAGES = {
    "docs/index.md": """
        # Lighthouse Keeping

        The catalog. Every page is reachable from here.

        - [The lighthouse](/concepts/lighthouse.md)
        - [Old lamps](/archive/old-lamps.md) (archived)
        - [Change log](/log.md)
        """,
    "docs/log.md": """
        # Change log

        ## 20260301 09:00 ingest | Added the lighthouse
        [The lighthouse](/concepts/lighthouse.md) and [keeping](/guides/keeping.md).

        ## 20260302 10:00 lint | Archived the lamps page
        [Old lamps](/archive/old-lamps.md) is superseded by the fresnel lens notes.
        """,
    "docs/concepts/lighthouse.md": """
        ---
        type: concept
        title: The lighthouse
        description: What a lighthouse is for and how its light is characterised.
        tags: [lights, coast]
        status: published
        reviewer: ada
        ---

        # The lighthouse

        A lighthouse marks a hazard with a light whose flash pattern identifies it.
        How the keepers work is in [keeping](/guides/keeping.md); the tide tables they
        read are in [tides](kb://beta/concepts/tides.md). See also
        [fog signals](/concepts/fog-signals.md).

        ![The tower](/media/tower.png)
        """,
    "docs/guides/keeping.md": """
        ---
        type: playbook
        title: Keeping the light
        description: The keeper's nightly round.
        tags: [lights]
        ---

        # Keeping the light

        Trim the wick at dusk, wind the clockwork that turns the lens every four
        hours, and log the weather. Back to [the lighthouse](kb://alpha/concepts/lighthouse.md).
        """,
    "docs/archive/old-lamps.md": """
        ---
        type: reference
        title: Old lamps
        description: Argand oil lamps, replaced in 1920.
        status: archived
        ---

        # Old lamps

        Argand lamps burned colza oil with a hollow circular wick.
        """,
    "docs/media/notes.md": "# Not a page\n\nMedia notes are not indexed.\n",
}

BETA_PAGES = {
    "docs/index.md": """
        # Tides and Harbours

        - [Tides](/concepts/tides.md)
        - [Harbour entry](/guides/harbour.md)
        - [Change log](/log.md)
        """,
    "docs/log.md": """
        # Change log

        ## 20260303 08:00 ingest | Tides
        [Tides](/concepts/tides.md), [harbour entry](/guides/harbour.md).
        """,
    "docs/concepts/tides.md": """
        ---
        type: concept
        title: Tides
        description: Spring and neap tides, and why the harbour bar dries at low water.
        tags: [sea]
        status: published
        ---

        # Tides

        Spring tides follow the full and new moon; neap tides the quarter moons. At
        low water springs the harbour bar dries, so ships wait for the light of the
        [lighthouse](kb://alpha/concepts/lighthouse.md) and the flood tide.
        """,
    "docs/guides/harbour.md": """
        ---
        type: playbook
        title: Harbour entry
        description: Entering the harbour on the flood.
        tags: [sea]
        status: draft
        ---

        # Harbour entry

        Enter two hours either side of high water; keep the leading lights in line.
        """,
}

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de")


def write_claudekb(root: Path, name: str, pages: dict[str, str]) -> Path:
    """A ClaudeKB-format KB on disk, as the blueprint would scaffold it and agents fill it."""
    root.mkdir(parents=True)
    files = {
        "kb.yml": f"name: {name}\ntitle: {name.title()} KB\ndescription: \"A test KB: {name}.\"\n"
                  f"url: https://kb-{name}.example.com\nvisibility: private\n",
        "vocab.yml": "types: [article, reference, concept, playbook]\n"
                     "tags: [lights, coast, sea]\n",
        "nav.yml": "- Home: index.md\n- Change log: log.md\n",
        "wrangler.jsonc": "// MANAGED BY BLUEPRINT v0.4.0 — do not edit\n{}\n",
        **BLUEPRINT,
    }
    for rel, text in {**files, **pages}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (root / "docs" / "media").mkdir(exist_ok=True)
    (root / "docs" / "media" / "tower.png").write_bytes(PNG)
    sums = {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest()
            for rel in (".gitattributes", ".gitignore", "CLAUDE.md")}
    (root / "blueprint-checksums.json").write_text(json.dumps(
        {"blueprint_version": "0.4.0", "checksums": sums,
         "marked_files": ["wrangler.jsonc", "pyproject.toml"]}, indent=2) + "\n", encoding="utf-8")
    return root


def checksums(root: Path) -> dict[str, str]:
    """Every file of a KB but the derived store, by sha256."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".pinakes" not in p.relative_to(root).parts}


ALPHA_SITE_PAGES = ["docs/archive/old-lamps.md", "docs/concepts/lighthouse.md",
                    "docs/guides/keeping.md", "docs/index.md", "docs/log.md"]


@pytest.fixture
def alpha(tmp_path: Path) -> Path:
    return write_claudekb(tmp_path / "kb-alpha", "alpha", ALPHA_PAGES)


@pytest.fixture
def beta(tmp_path: Path) -> Path:
    return write_claudekb(tmp_path / "kb-beta", "beta", BETA_PAGES)


@pytest.fixture
def runner() -> CliRunner:
    """A CLI runner with `pnk adopt` added the way `pnk` adds it (the plugin's hook)."""
    load_plugin_commands()
    if "adopt" not in cli.commands:  # another test loaded commands under a stand-in plugin manager
        from pinakes_claudekb.cli import add_commands

        add_commands(cli)
    return CliRunner()


def adopt_cli(runner: CliRunner, *args: str) -> dict:
    res = runner.invoke(cli, ["adopt", *args, "--no-sync", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def synced(root: Path, embedder) -> KB:
    kb = KB.open(root)
    kb._embedder = embedder
    kb.sync()
    return kb


# -- the plugin --------------------------------------------------------------------------------


def test_the_importer_is_registered_and_recognises_a_claudekb(alpha: Path, tmp_path: Path) -> None:
    assert "claudekb" in plugins.get_importers()
    assert plugins.importer_for(alpha).name == "claudekb"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("# A\n", encoding="utf-8")
    assert plugins.importer_for(plain) is None
    assert plugins.registrations()["claudekb"]["register_importers"] == ["claudekb"]


def test_not_a_claudekb_is_one_clear_error(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    res = runner.invoke(cli, ["adopt", str(tmp_path / "plain")])
    assert res.exit_code == 1 and "no installed importer recognises" in res.output
    assert "Traceback" not in res.output


# -- what adoption writes ----------------------------------------------------------------------


def test_dry_run_prints_every_file_and_writes_nothing(runner: CliRunner, alpha: Path) -> None:
    before = checksums(alpha)
    res = runner.invoke(cli, ["adopt", str(alpha), "--dry-run"])
    assert res.exit_code == 0, res.output
    expected = ["pinakes.toml"] + [".pinakes-meta/" + p[:-3] + ".pnk.yaml" for p in ALPHA_SITE_PAGES]
    for path in expected:
        assert re.search(rf"^  would create +{re.escape(path)}$", res.output, re.M), path
    assert re.search(r"would register +fleet: alpha", res.output) and "nothing was written" in res.output
    data = json.loads(runner.invoke(cli, ["adopt", str(alpha), "--dry-run", "--json"]).output)
    assert sorted(w["path"] for w in data["writes"]) == sorted(expected)
    assert data["dry_run"] is True and data["applied"] is False
    assert checksums(alpha) == before
    assert not (alpha / ".pinakes").exists() and not fleet.registry_path().exists()


def test_adoption_writes_config_and_one_sidecar_per_page_and_nothing_else(
        runner: CliRunner, alpha: Path) -> None:
    before = checksums(alpha)
    data = adopt_cli(runner, str(alpha))
    after = checksums(alpha)
    # No page, no blueprint-owned file, no media changed: every old file is byte-identical.
    assert {k: after[k] for k in before} == before
    sidecars = {".pinakes-meta/" + p[:-3] + ".pnk.yaml" for p in ALPHA_SITE_PAGES}
    assert set(after) - set(before) == {"pinakes.toml"} | sidecars
    assert {w["path"] for w in data["writes"]} == {"pinakes.toml"} | sidecars
    assert ".gitignore" in data["blueprint_files"] and "pyproject.toml" in data["blueprint_files"]
    assert data["statuses"] == {"archived": 1, "none": 1, "published": 1}

    cfg = KB.open(alpha).config
    assert cfg.name == "alpha"
    assert cfg.kb["include"] == ["docs/**/*.md"] and "docs/media/**" in cfg.kb["exclude"]
    assert cfg.kb["sidecars"] == ".pinakes-meta" and cfg.kb["bundle_root"] == "docs"
    assert cfg.kb["no_link_hub"] == ["docs/**/log.md"]
    assert cfg.retrieval["index_pages"] == ["docs/index.md"] and cfg.retrieval["index_prior"] > 0

    meta = alpha / ".pinakes-meta" / "docs"
    page = read_sidecar(meta / "concepts" / "lighthouse.pnk.yaml")
    assert page.error is None and is_ulid(page.id)
    d = page.to_plain()
    assert d["title"] == "The lighthouse" and d["type"] == "concept" and d["status"] == "published"
    assert d["description"].startswith("What a lighthouse") and d["tags"] == ["lights", "coast"]
    assert d["reviewer"] == "ada"  # an unknown front-matter key, carried
    assert d["links"] == []
    assert d["adopted"] == {"from": "claudekb", "fields": ["type", "title", "description", "tags",
                                                           "status", "reviewer"]}
    assert read_sidecar(meta / "archive" / "old-lamps.pnk.yaml").to_plain()["status"] == "archived"
    index = read_sidecar(meta / "index.pnk.yaml").to_plain()  # no front matter: identity only
    assert set(index) == {"id", "links", "adopted"} and index["adopted"]["fields"] == []
    ids = {read_sidecar(p).id for p in meta.rglob("*.pnk.yaml")}
    assert len(ids) == len(ALPHA_SITE_PAGES)
    assert fleet.load_fleet() == {"alpha": alpha.resolve()}


def test_name_override_and_bad_names(runner: CliRunner, alpha: Path) -> None:
    (alpha / "kb.yml").write_text("name: Alpha KB\ntitle: x\n", encoding="utf-8")
    res = runner.invoke(cli, ["adopt", str(alpha), "--dry-run"])
    assert res.exit_code == 1 and "not a slug" in res.output and "--name" in res.output
    data = adopt_cli(runner, str(alpha), "--name", "lights")
    assert data["kb"] == "lights" and KB.open(alpha).name == "lights"
    assert "lights" in fleet.load_fleet()


def test_a_second_adoption_is_a_no_op(runner: CliRunner, alpha: Path, embedder) -> None:
    adopt_cli(runner, str(alpha))
    synced(alpha, embedder).close()
    first = checksums(alpha)
    res = runner.invoke(cli, ["adopt", str(alpha)])  # with its sync
    assert res.exit_code == 0, res.output
    assert "Nothing to write" in res.output and "0 added, 0 changed" in res.output
    assert checksums(alpha) == first  # byte-identical, sidecars and config included
    assert json.loads(runner.invoke(cli, ["adopt", str(alpha), "--dry-run", "--json"]).output)[
        "writes"] == []


def test_front_matter_wins_on_readoption_and_doctor_reports_drift(
        runner: CliRunner, alpha: Path, embedder) -> None:
    adopt_cli(runner, str(alpha))
    kb = synced(alpha, embedder)
    kb.link("docs/concepts/lighthouse.md", "docs/archive/old-lamps.md", rel="supersedes")
    sc_path = alpha / ".pinakes-meta" / "docs" / "concepts" / "lighthouse.pnk.yaml"
    ident = read_sidecar(sc_path).id
    assert kb.doctor()["adoption_drift"] == []
    # The page changes after adoption (an agent edits it: adoption itself never does).
    page = alpha / "docs" / "concepts" / "lighthouse.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("title: The lighthouse", "title: The Lighthouse")
                        .replace("reviewer: ada\n", "owner: grace\n"), encoding="utf-8")
    kb.sync()
    drift = {(d["field"], d["front_matter"], d["sidecar"]) for d in kb.doctor()["adoption_drift"]}
    assert drift == {("title", "The Lighthouse", "The lighthouse"), ("reviewer", None, "ada"),
                     ("owner", "grace", None)}
    assert kb.doctor()["disagreements"] == []  # reported once, as drift
    res = runner.invoke(cli, ["doctor", "--kb", str(alpha)])
    assert "front matter changed since `pnk adopt`" in res.output
    data = adopt_cli(runner, str(alpha))
    assert [w["path"] for w in data["writes"]] == [".pinakes-meta/docs/concepts/lighthouse.pnk.yaml"]
    after = read_sidecar(sc_path).to_plain()
    assert after["id"] == ident  # the sidecar's own: never changed
    assert after["links"] == [{"to": "../archive/old-lamps.md", "rel": "supersedes"}]
    assert after["title"] == "The Lighthouse" and after["owner"] == "grace" and "reviewer" not in after
    assert after["adopted"]["fields"][-1] == "owner"
    kb.sync()
    assert kb.doctor()["adoption_drift"] == []
    assert kb.resolve("docs/concepts/lighthouse.md")["title"] == "The Lighthouse"


def test_an_existing_config_is_never_rewritten(runner: CliRunner, alpha: Path) -> None:
    adopt_cli(runner, str(alpha))
    toml = alpha / "pinakes.toml"
    tuned = toml.read_text(encoding="utf-8").replace("index_prior = 0.25", "index_prior = 0.1")
    toml.write_text(tuned, encoding="utf-8")
    assert adopt_cli(runner, str(alpha))["writes"] == []  # matches what adoption needs: left alone
    assert toml.read_text(encoding="utf-8") == tuned
    toml.write_text(tuned.replace('sidecars = ".pinakes-meta"', 'sidecars = "beside"'), encoding="utf-8")
    before = checksums(alpha)
    res = runner.invoke(cli, ["adopt", str(alpha)])
    assert res.exit_code == 1 and "[kb] sidecars" in res.output and "never rewrites" in res.output
    assert checksums(alpha) == before


def test_a_malformed_sidecar_is_left_alone(runner: CliRunner, alpha: Path) -> None:
    bad = alpha / ".pinakes-meta" / "docs" / "guides" / "keeping.pnk.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("id: [unclosed\n", encoding="utf-8")
    data = adopt_cli(runner, str(alpha))
    assert bad.read_text(encoding="utf-8") == "id: [unclosed\n"
    assert any("never rewritten" in n for n in data["notes"])
    # A page whose front matter breaks after adoption keeps its adopted sidecar as it is.
    sc = alpha / ".pinakes-meta" / "docs" / "concepts" / "lighthouse.pnk.yaml"
    before = sc.read_bytes()
    page = alpha / "docs" / "concepts" / "lighthouse.md"
    page.write_text(page.read_text(encoding="utf-8").replace("tags: [lights, coast]", "tags: [lights"),
                    encoding="utf-8")
    data = adopt_cli(runner, str(alpha))
    assert sc.read_bytes() == before and data["writes"] == []
    assert any("front matter unreadable" in n for n in data["notes"])


def test_the_guard_refuses_pages_docs_and_blueprint_files(alpha: Path) -> None:
    plan = adoption.plan(alpha)
    for target in ("docs/concepts/lighthouse.md", "docs/x.pnk.yaml", ".gitignore"):
        plan.writes.append(adoption.FileWrite(target, "sidecar", "create", text="x"))
        with pytest.raises(adoption.AdoptError, match="refusing to write"):
            adoption.apply(plan)
        plan.writes.pop()
    assert not (alpha / "pinakes.toml").exists()


# -- links, the index prior, the log --------------------------------------------------------------


def test_bundle_root_arithmetic() -> None:
    assert kb_path("/concepts/a.md", "docs/x/y.md", root_relative=True, bundle_root="docs") == \
        "docs/concepts/a.md"
    assert kb_path("/a.md", "x.md", root_relative=True) == "a.md"
    t = classify("/concepts/a.md#part", "docs/x/y.md", "alpha", bundle_root="docs")
    assert (t.kind, t.key) == ("path", "docs/concepts/a.md")
    t = classify("kb://alpha/concepts/a.md", "docs/y.md", "alpha", bundle_root="docs")
    assert (t.kind, t.key) == ("path", "docs/concepts/a.md")
    t = classify("kb://beta/concepts/a.md", "docs/y.md", "alpha", bundle_root="docs")
    assert (t.kind, t.key) == ("kb", "beta/concepts/a.md")
    assert classify("/media/tower.png", "docs/y.md", "alpha", bundle_root="docs") is None


def test_links_resolve_against_docs_and_across_the_fleet(
        runner: CliRunner, alpha: Path, beta: Path, embedder) -> None:
    adopt_cli(runner, str(alpha))
    a = synced(alpha, embedder)
    dangling = {(d["file"], d["target"], d["reason"]) for d in a.doctor()["dangling"]}
    assert dangling == {  # beta is not in the fleet yet: reported, never dropped
        ("docs/concepts/lighthouse.md", "kb://beta/concepts/tides.md", "unknown-kb"),
        ("docs/concepts/lighthouse.md", "/concepts/fog-signals.md", "missing-file"),
    }
    adopt_cli(runner, str(beta))
    b = synced(beta, embedder)
    assert {(d["target"], d["reason"]) for d in a.doctor()["dangling"]} == {
        ("/concepts/fog-signals.md", "missing-file")}
    res = runner.invoke(cli, ["doctor", "--kb", "alpha"])
    assert "docs/concepts/lighthouse.md:15: /concepts/fog-signals.md (missing-file)" in res.output
    assert b.doctor()["dangling"] == []
    near = {(n["title"], n["direction"], n.get("kb")) for n in a.links("docs/concepts/lighthouse.md")["neighbours"]}
    assert ("Keeping the light", "out", None) in near  # /guides/keeping.md -> docs/guides/keeping.md
    assert ("Keeping the light", "in", None) in near  # kb://alpha/... is this KB: resolved locally
    assert ("Tides", "out", "beta") in near
    assert ("Lighthouse Keeping", "in", None) in near  # the index
    tides = b.links("docs/concepts/tides.md")["neighbours"]
    lighthouse = a.resolve("docs/concepts/lighthouse.md")["ulid"]
    assert {"doc_id": lighthouse, "kb": "alpha"}.items() <= next(
        n for n in tides if n.get("kb") == "alpha").items()


def test_the_log_is_indexed_but_no_link_hub(runner: CliRunner, alpha: Path, embedder) -> None:
    adopt_cli(runner, str(alpha))
    kb = synced(alpha, embedder)
    hits = kb.search("superseded by the fresnel lens notes").hits
    assert hits[0].path == "docs/log.md"  # indexed and searchable
    conn = kb.reader().conn
    log, index = kb.resolve("docs/log.md"), kb.resolve("docs/index.md")
    rows = conn.execute("SELECT provenance, dst_ulid FROM links WHERE src_doc = ?", (log["doc"],)).fetchall()
    assert len(rows) == 3 and all(r[0] == NO_HUB and r[1] for r in rows)  # resolved, marked
    authored = conn.execute("SELECT count(*) FROM edges WHERE kind = 'authored' AND owner = ?",
                            (log["doc"],)).fetchone()[0]
    assert authored == 0 and conn.execute(
        "SELECT count(*) FROM edges WHERE kind = 'authored' AND owner = ?", (index["doc"],)).fetchone()[0] == 3
    from pinakes.search import _link_stats

    salience, adjacent = _link_stats(kb._idf_cache, conn, kb.reader().generation)
    assert adjacent[log["doc"]] == {index["doc"]}  # only the catalog's link to it: none of its own
    # Walks never pass through it; from the log itself its links are still shown.
    assert "Change log" not in {n["title"] for n in kb.links("docs/concepts/lighthouse.md")["neighbours"]}
    assert {n["title"] for n in kb.links("docs/log.md", direction="out")["neighbours"]} == {
        "The lighthouse", "Keeping the light", "Old lamps"}


def test_the_index_out_links_are_a_search_prior(runner: CliRunner, alpha: Path, embedder) -> None:
    adopt_cli(runner, str(alpha))
    kb = synced(alpha, embedder)
    query = "keeper lamp light"
    kb.config.data["retrieval"]["index_prior"] = 0.0
    off = {h.chunk_id: h.score for h in kb.search(query, k=20).hits}
    kb.config.data["retrieval"]["index_prior"] = 0.5
    on = {h.chunk_id: (h.path, h.score) for h in kb.search(query, k=20).hits}
    unit = 0.5 / (float(kb.config.retrieval["rrf_k"]) + 1)
    catalogued = {"docs/concepts/lighthouse.md", "docs/archive/old-lamps.md"}
    paths = {path for path, _ in on.values()}
    assert catalogued | {"docs/guides/keeping.md", "docs/index.md", "docs/log.md"} <= paths
    for cid, (path, score) in on.items():
        # Not lifted: the index itself, keeping.md (not in the catalog) and the log (in the
        # catalog for navigation, but a no-link-hub page: a log is rarely the answer).
        lift = unit if path in catalogued else 0.0
        assert score == pytest.approx(off[cid] + lift, abs=2e-6), path


def test_search_across_two_adopted_kbs_and_mcp(runner: CliRunner, alpha: Path, beta: Path,
                                               embedder) -> None:
    from pinakes.fleet import open_kbs
    from pinakes.mcp_server import PinakesServer

    adopt_cli(runner, str(alpha))
    adopt_cli(runner, str(beta))
    synced(alpha, embedder).close()
    synced(beta, embedder).close()
    res = runner.invoke(cli, ["search", "when do ships enter past the lighthouse on the tide",
                              "--kb", "all", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["kb"] == "all" and {h["kb"] for h in data["hits"]} == {"alpha", "beta"}
    kbs = open_kbs(["all"])
    for kb in kbs:
        kb._embedder = embedder
    server = PinakesServer(kbs)
    listed = {k["name"]: k["documents"] for k in server.kbs_info()["kbs"]}
    assert listed == {"alpha": 5, "beta": 4}
    found = server.search("spring tides and the harbour bar", kb="all")
    assert found["hits"][0]["kb"] == "beta" and found["hits"][0]["path"] == "docs/concepts/tides.md"
    assert {h["kb"] for h in server.search("lighthouse flash pattern tides")["hits"]} == {"alpha", "beta"}


def test_pnk_adopt_is_found_through_its_real_entry_point(alpha: Path) -> None:
    """The command reaches `pnk` through the installed distribution, not a test fixture."""
    import os
    import subprocess
    import sys

    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "adopt", str(alpha), "--dry-run", "--json"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PINAKES_STRICT_PLUGINS": "1"})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["importer"] == "claudekb" and data["kb"] == "alpha" and len(data["writes"]) == 6
    assert not (alpha / "pinakes.toml").exists()
