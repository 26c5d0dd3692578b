"""Property-based fuzzing (hypothesis) of every parser that takes user or agent input.

Each property says what must hold for *any* input: the parser returns or
raises one of its documented error types, and round trips lose nothing. The
runs are seeded (``derandomize``) and bounded so CI stays fast; set
``PINAKES_FUZZ_EXAMPLES`` (e.g. 2000) for the full run of docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import string
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinakes.config import DEFAULTS, load_config
from pinakes.errors import ConfigError, GoldenSetError, KBNotFound, PinakesError
from pinakes.evaluation.golden import load_golden
from pinakes.fsutil import walk_kb
from pinakes.links import classify, is_outside, kb_path
from pinakes.markdown import parse_markdown
from pinakes.search import _fts_terms
from pinakes.sidecar import dump_sidecar, read_sidecar
from pinakes.store import _TOKENIZE
from pinakes.text import fts_phrase, fts_query, query_terms

EXAMPLES = int(os.environ.get("PINAKES_FUZZ_EXAMPLES", "0")) or None

# Counted by the full run (docs/reliability.md); harmless in CI.
FUZZED: dict[str, int] = {}


def fuzz(ci_examples: int) -> Any:
    """Seeded, bounded settings: ``ci_examples`` in CI, PINAKES_FUZZ_EXAMPLES in the full run."""
    return settings(
        max_examples=EXAMPLES or ci_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.data_too_large],
    )


def _count(name: str) -> None:
    FUZZED[name] = FUZZED.get(name, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    out = os.environ.get("PINAKES_FUZZ_REPORT")
    if out:
        Path(out).write_text(json.dumps(FUZZED, indent=1, sort_keys=True), encoding="utf-8")


# Any Unicode, lone surrogates included: a non-UTF-8 argv byte reaches Python as one
# (surrogateescape), and JSON from an MCP client can carry "\ud800".
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=200)
PRINTABLE = st.text(st.characters(exclude_categories=("Cs",)), max_size=120)

# Markdown made of the pieces that stress the parser and the chunker.
MD_PIECES = st.sampled_from([
    "# Title\n", "## Section\n", "### Deep heading\n", "Setext\n===\n", "Sub\n---\n",
    "```\ncode line\n", "```\n", "~~~python\nx = 1\n~~~\n", "    indented code\n",
    "- item\n", "  - nested item\n", "1. first\n", "> quote\n", "> # heading in quote\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n", "---\ntitle: T\ntags: [a, b]\n---\n", "---\n",
    "[link](other.md)\n", "[ref][r]\n\n[r]: ref.md\n", "[[Wiki Page]]\n", "[[path/x.md|label]]\n",
    "![[embed]]\n", "<pnk://01HZX5A8Q7W3K1V9XQ2M4B7N0C>\n", "[kb](kb://other/a.md)\n",
    "[[[[", "]]", "`code`", "*em* __strong__", "\r\n", "\r", "\t", "\0", "\ufeff",
    "word " * 40 + "\n", "longword" * 60, "句子。" * 50, "\n", "\n\n", "<!-- c -->\n",
    "<div>\n", "</div>\n",
])
MARKDOWN = st.lists(st.one_of(MD_PIECES, PRINTABLE), max_size=30).map("".join)


def approx_tokens(texts: list[str]) -> list[int]:
    return [len(re.findall(r"\w+|[^\w\s]", t)) for t in texts]


# -- the Markdown parser and chunker ------------------------------------------------------


@fuzz(300)
@given(text=st.one_of(MARKDOWN, ANY_TEXT), budget=st.integers(1, 300))
def test_chunker_never_raises_and_keeps_its_invariants(text: str, budget: int) -> None:
    _count("markdown")
    doc = parse_markdown(text, max_tokens=budget, count_tokens=approx_tokens)
    n_lines = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    assert [c.ordinal for c in doc.chunks] == list(range(len(doc.chunks)))
    previous_start = 0
    for c in doc.chunks:
        assert 1 <= c.start_line <= c.end_line <= n_lines, (c, n_lines)
        assert c.start_line >= previous_start
        previous_start = c.start_line
        assert c.text == c.text.strip() and c.text
        # Within the budget, unless one character alone is over it (cannot split).
        tokens = approx_tokens([c.text])[0]
        assert tokens <= budget or len(c.text.split()) == 1 or "```" in c.text or "~~~" in c.text, c
    for link in doc.links:
        assert 1 <= link.line <= n_lines
        assert link.kind in ("inline", "reference", "wikilink", "autolink", "embed", "tag", "property")
        assert link.chunk in range(-1, len(doc.chunks)) and len(link.context) < 2000
    for h in doc.headings:
        assert 1 <= h.level <= 6 and 1 <= h.line <= n_lines
    json.dumps(doc.front_matter, default=str)  # front matter is plain data


@fuzz(150)
@given(body=st.lists(PRINTABLE.filter(lambda s: "`" not in s and "~" not in s), max_size=8))
def test_chunk_text_is_the_files_own_source(body: list[str]) -> None:
    """Outside code fences (re-wrapped when split), chunk text is sliced verbatim from the file."""
    _count("markdown")
    text = "# Doc\n\n" + "\n\n".join(body)
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd").removeprefix("\ufeff")
    for c in parse_markdown(text, max_tokens=16, count_tokens=approx_tokens).chunks:
        assert c.text in src


# -- links ----------------------------------------------------------------------------------


def _target_strings() -> st.SearchStrategy[str]:
    seg = st.one_of(st.sampled_from(["..", ".", "", "a", "b.md", "c d.md", "%2e%2e", "\\", "C:"]),
                    st.text(string.ascii_letters + "._-/\\%#?:", max_size=12))
    path = st.lists(seg, max_size=6).map("/".join)
    return st.one_of(
        ANY_TEXT,
        path,
        path.map(lambda p: "pnk://" + p),
        path.map(lambda p: "kb://" + p),
        path.map(lambda p: "kb://self/" + p),
        st.builds(lambda a, b: f"{a}#{b}", path, PRINTABLE),
    )


@fuzz(400)
@given(raw=_target_strings(), source=st.sampled_from(["a.md", "notes/b.md", "x/y/z.md"]),
       wiki=st.booleans(), sidecar=st.booleans(), bundle=st.sampled_from(["", "docs"]))
def test_link_classifier_never_raises_and_normalises(raw: str, source: str, wiki: bool,
                                                     sidecar: bool, bundle: str) -> None:
    _count("links")
    t = classify(raw, source, "self", wiki=wiki, sidecar=sidecar, bundle_root=bundle)
    if t is None:
        return
    assert t.kind in ("path", "guess", "id", "wiki", "kb")
    if t.kind in ("path", "guess"):
        # Pure arithmetic: normalised, POSIX, and any climb out of the KB is visible up front.
        assert "\\" not in t.key
        parts = t.key.split("/")
        assert "." not in parts and (t.key == "" or "" not in parts[1:]) or t.key.startswith("/")
        if ".." in parts:
            assert is_outside(t.key), t.key
    if t.kind == "id" and re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", t.key.upper()):
        assert t.key == t.key.upper()


@fuzz(200)
@given(path=st.lists(st.sampled_from(["..", ".", "a", "b", "c.md"]), min_size=1, max_size=8),
       source=st.sampled_from(["a.md", "n/b.md", "n/m/c.md"]))
def test_kb_path_agrees_with_a_real_file_system_walk(path: list[str], source: str, tmp_path_factory) -> None:
    """Path arithmetic says "outside" exactly when the real folder arithmetic leaves the KB."""
    _count("links")
    rel = "/".join(path)
    key = kb_path(rel, source)
    real = os.path.normpath(os.path.join("/kb", os.path.dirname(source), rel))
    assert is_outside(key) == (not (real == "/kb" or real.startswith("/kb/")))


@fuzz(200)
@given(target=st.text(string.ascii_letters + string.digits + "-_/.", min_size=1, max_size=30),
       label=st.text(string.ascii_letters + " ", max_size=10))
def test_written_links_are_found(target: str, label: str) -> None:
    """A link written in any of the syntaxes is extracted with its target and line."""
    _count("links")
    lines = [
        f"[{label or 'x'}]({target}.md)",
        f"[[{target}|{label}]]" if label.strip() else f"[[{target}]]",
        f"<pnk://{target}>",
        f"[k](kb://other/{target}.md)",
    ]
    doc = parse_markdown("# T\n\n" + "\n\n".join(lines) + "\n")
    found = {(ln.kind, ln.target, ln.line) for ln in doc.links}
    assert ("inline", f"{target}.md", 3) in found
    assert ("wikilink", target, 5) in found
    assert ("autolink", f"pnk://{target}", 7) in found
    assert ("inline", f"kb://other/{target}.md", 9) in found


# -- the FTS query sanitiser, against real FTS5 tables -------------------------------------


@pytest.fixture(scope="module")
def fts_tables() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    for name, tok in _TOKENIZE.items():
        conn.execute(f"CREATE VIRTUAL TABLE t_{name} USING fts5(title, heading, body, tokenize='{tok}')")
        conn.executemany(f"INSERT INTO t_{name} VALUES (?, ?, ?)", [
            ("Fresnel lenses", "Orders", "concentric prism rings bend light"),
            ("NEAR AND OR NOT", "x*", 'quotes " and (parens'),
            ("日本語のテキスト", "見出し", "東京タワーは高い"),
        ])
    yield conn
    conn.close()


QUERY_TEXT = st.one_of(
    ANY_TEXT,
    st.lists(st.sampled_from(['"', "'", "*", "-", "+", "(", ")", "NEAR", "NEAR(", "AND", "OR",
                              "NOT", ":", "^", "title:", "{", "}", "col:x", "日本", "東京",
                              "’s", "'s", "\\", "\0", "\ud800", " ", "a", "lens"]),
             max_size=20).map(" ".join),
)


@fuzz(500)
@given(query=QUERY_TEXT)
def test_fts_sanitiser_never_makes_an_fts_syntax_error(fts_tables: sqlite3.Connection, query: str) -> None:
    _count("fts")
    for name in _TOKENIZE:
        trigram = name == "trigram"
        terms = query_terms(query, cjk_bigrams=not trigram)
        for match in (_fts_terms(terms, name), fts_query(terms), fts_phrase(query)):
            if match:
                fts_tables.execute(f"SELECT rowid FROM t_{name} WHERE t_{name} MATCH ?",
                                   (match,)).fetchall()


@fuzz(60)
@given(query=QUERY_TEXT, entity=st.one_of(st.none(), QUERY_TEXT))
def test_search_any_query_is_results_or_a_query_error(example_kb, query: str, entity: str | None) -> None:
    """The whole search path (embedder, FTS, fusion) on the real example KB."""
    _count("search")
    try:
        result = example_kb.search(query, k=3, entities=[entity] if entity else ())
    except PinakesError as exc:
        assert "\n" not in str(exc)
        return
    assert len(result.hits) <= 3


# -- sidecars: never raise, round-trip losslessly -------------------------------------------


KEY = st.text(string.ascii_lowercase + "_", min_size=1, max_size=10)
SCALAR = st.one_of(st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=20),
                   st.integers(-10**6, 10**6), st.booleans())
COMMENT = st.text(string.ascii_letters + string.digits + " .,:-", max_size=30)


@st.composite
def sidecar_texts(draw: st.DrawFn) -> str:
    """A sidecar in the layout Pinakes writes, with comments everywhere and keys in any order."""
    keys = draw(st.lists(KEY.filter(lambda k: k not in ("id", "links")), max_size=4, unique=True))
    lines = [f"# {draw(COMMENT)}"]
    order = ["id", "links", *keys]
    order = draw(st.permutations(order))
    for key in order:
        comment = draw(st.one_of(st.none(), COMMENT))
        tail = f"  # {comment}" if comment else ""
        if key == "id":
            lines.append(f"id: 01HZX5A8Q7W3K1V9XQ2M4B7N0C{tail}")
        elif key == "links":
            lines.append(f"links:{tail}")
            for _ in range(draw(st.integers(0, 3))):
                lines.append(f"  - to: {json.dumps(draw(st.text(string.ascii_letters + './', min_size=1, max_size=15)))}")
                lines.append(f"    rel: {draw(st.sampled_from(['cites', 'uses', 'links-to']))}")
                if draw(st.booleans()):
                    lines.append(f"    # {draw(COMMENT)}")
        else:
            lines.append(f"{key}: {json.dumps(draw(SCALAR), ensure_ascii=False)}{tail}")
    return "\n".join(lines) + "\n"


@fuzz(200)
@given(text=sidecar_texts())
def test_sidecar_round_trip_keeps_comments_and_key_order(tmp_path_factory, text: str) -> None:
    _count("sidecar")
    path = tmp_path_factory.mktemp("sc") / "doc.pnk.yaml"
    path.write_text(text, encoding="utf-8")
    sc = read_sidecar(path)
    assert sc.error is None, sc.error
    dumped = dump_sidecar(sc.data)
    # Every comment survives, every key keeps its place.
    for line in text.splitlines():
        if "#" in line:
            comment = line[line.index("#"):].strip()
            assert comment in dumped, (comment, dumped)
    keys = [ln.split(":")[0] for ln in text.splitlines() if re.match(r"^[a-z_]+:", ln)]
    assert [ln.split(":")[0] for ln in dumped.splitlines() if re.match(r"^[a-z_]+:", ln)] == keys
    # Idempotent: writing what was read changes nothing the next time round.
    path.write_text(dumped, encoding="utf-8")
    again = read_sidecar(path)
    assert dump_sidecar(again.data) == dumped
    assert again.to_plain() == sc.to_plain()
    # An edit (what `pnk link` does) keeps the rest intact.
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    seq = again.data.get("links")
    if not isinstance(seq, list):
        seq = CommentedSeq()
        again.data["links"] = seq
    item = CommentedMap()
    item["to"] = "new.md"
    item["rel"] = "cites"
    seq.append(item)
    edited = dump_sidecar(again.data)
    for line in text.splitlines():
        if "#" in line:
            assert line[line.index("#"):].strip() in edited
    path.write_text(edited, encoding="utf-8")
    final = read_sidecar(path)
    assert final.error is None and final.links[-1] == {"to": "new.md", "rel": "cites"}


@fuzz(300)
@given(raw=st.one_of(st.binary(max_size=300), MARKDOWN.map(lambda s: s.encode("utf-8", "surrogatepass")),
                     sidecar_texts().map(lambda s: s.encode())))
def test_any_sidecar_bytes_parse_or_report_one_problem(tmp_path_factory, raw: bytes) -> None:
    _count("sidecar")
    path = tmp_path_factory.mktemp("sc") / "doc.pnk.yaml"
    path.write_bytes(raw)
    sc = read_sidecar(path, display="doc.pnk.yaml")
    if sc.error:
        assert sc.error.startswith("doc.pnk.yaml") and "\n" not in sc.error, sc.error
    # Every accessor sync uses works on whatever was read.
    _ = (sc.id, sc.title, sc.tags, sc.links)
    json.dumps(sc.to_plain())


# -- pinakes.toml and golden sets: parsed, or one documented error ---------------------------

TOML_VALUE = st.recursive(
    st.one_of(st.integers(-5, 10**9), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
              st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=12)),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(_toml(v) for v in value) + "]"


KNOWN_KEYS = st.sampled_from(["name", "include", "exclude", "sidecars", "max_file_mb", "bundle_root",
                              "no_link_hub", "tokenizer", "k", "graph_channel", "graph_fusion",
                              "model", "batch_size", "index_pages", "template", "mentions"])


REAL_KEYS = sorted((table, key) for table, keys in DEFAULTS.items() for key in keys)


@st.composite
def toml_texts(draw: st.DrawFn) -> str:
    out = []
    # Mostly the real (table, key) pairs with values of any type, some unknown ones too.
    pairs = draw(st.lists(st.one_of(st.sampled_from(REAL_KEYS),
                                    st.tuples(st.sampled_from(["kb", "graph", "other"]),
                                              st.one_of(KNOWN_KEYS, KEY))),
                          max_size=6, unique=True))
    by_table: dict[str, list[str]] = {}
    for table, key in pairs:
        by_table.setdefault(table, []).append(key)
    for table, keys in by_table.items():
        out.append(f"[{table}]")
        for key in keys:
            out.append(f"{key} = {_toml(draw(TOML_VALUE))}")
    if draw(st.booleans()):
        out.append(draw(PRINTABLE))
    return "\n".join(out) + "\n"


@fuzz(300)
@given(text=st.one_of(toml_texts(), ANY_TEXT))
def test_config_loads_or_raises_config_error_and_then_works(tmp_path_factory, text: str) -> None:
    """Whatever pinakes.toml holds: a ConfigError line, or a config sync can walk with."""
    _count("config")
    root = tmp_path_factory.mktemp("cfg")
    (root / "pinakes.toml").write_bytes(text.encode("utf-8", "surrogatepass")
                                        if isinstance(text, str) else text)
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    try:
        cfg = load_config(root)
    except (ConfigError, KBNotFound) as exc:
        assert "\n" not in str(exc).strip() or "pinakes.toml" in str(exc)
        return
    from pinakes.kb import KB

    kb = KB(cfg)
    try:
        _ = kb.name, kb.signature, kb.edge_derivers()
        list(walk_kb(root, list(cfg.kb["include"]), list(cfg.kb["exclude"]), []))
        float(cfg.kb["max_file_mb"])
        int(cfg.section("embedding").get("batch_size", 32))
        kb.embedder  # noqa: B018 - the configured embedder id resolves or raises UnknownEmbedder
    except PinakesError:
        pass


def _golden_nodes(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(["version", "questions", "id", "question", "class", "documents", "answer", "x"])
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5))


@fuzz(300)
@given(data=st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
                         _golden_nodes, max_leaves=20),
       raw=st.one_of(st.none(), ANY_TEXT))
def test_golden_loader_raises_only_golden_set_error(tmp_path_factory, data: Any, raw: str | None) -> None:
    _count("golden")
    path = tmp_path_factory.mktemp("golden") / "q.yaml"
    if raw is not None:
        path.write_bytes(raw.encode("utf-8", "surrogateescape"))
    else:
        from ruamel.yaml import YAML

        with open(path, "w", encoding="utf-8") as fh:
            YAML().dump({"version": 1, "questions": data} if not isinstance(data, dict) else data, fh)
    try:
        golden = load_golden(path)
    except GoldenSetError as exc:
        assert str(exc)
        return
    assert golden.questions and all(q.id and q.text for q in golden.questions)


# -- MCP argument validation, through the SDK's own client in-process -----------------------

def _json_nodes(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3))


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=False),
              ANY_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))),
    _json_nodes, max_leaves=6,
)
ARG_NAMES = {
    "pinakes_search": ["query", "kb", "k", "entities", "concepts", "channel"],
    "pinakes_links": ["doc_id", "kb", "rel", "direction", "depth", "query"],
    "pinakes_read": ["doc_id", "kb", "section"],
    "pinakes_kbs": [],
}
LIKELY = {
    "query": st.one_of(QUERY_TEXT, JSON), "doc_id": st.one_of(st.sampled_from(
        ["guide.md", "../../etc/passwd", "pnk://01HZX5A8Q7W3K1V9XQ2M4B7N0C", "/etc/passwd", ""]), JSON),
    "kb": st.one_of(st.sampled_from(["fuzz", "all", "nope", ""]), JSON),
    "k": st.one_of(st.integers(-5, 10**9), JSON), "depth": st.one_of(st.integers(-3, 10**6), JSON),
    "direction": st.one_of(st.sampled_from(["in", "out", "both", "up"]), JSON),
    "section": st.one_of(st.sampled_from(["Guide", "Guide > Part", "", ">"]), JSON),
}


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(ARG_NAMES)))
    names = ARG_NAMES[name] + ["unexpected"]
    chosen = draw(st.lists(st.sampled_from(names), max_size=len(names), unique=True))
    return name, {a: draw(LIKELY.get(a, JSON)) for a in chosen}


@pytest.fixture(scope="module")
def mcp_portal(tmp_path_factory, embedder) -> Iterator[tuple[Any, Any]]:
    """One in-process server and SDK client session, kept open across examples."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from pinakes.kb import KB
    from pinakes.mcp_server import PinakesServer

    root = tmp_path_factory.mktemp("mcpfuzz") / "fuzz"
    root.mkdir()
    (root / "pinakes.toml").write_text('[kb]\nname = "fuzz"\n', encoding="utf-8")
    (root / "guide.md").write_text(textwrap.dedent("""\
        # Guide

        ## Part
        Lighthouses and [the other](other.md) page.
        """), encoding="utf-8")
    (root / "other.md").write_text("# Other\n\nFog signals.\n", encoding="utf-8")
    kb = KB.open(root)
    kb._embedder = embedder
    kb.sync()
    server = PinakesServer([kb])

    with start_blocking_portal() as portal:
        client = Client(server.mcp, mode="legacy")  # JSON-RPC over in-memory streams
        with portal.wrap_async_context_manager(client) as session:
            yield portal, session


@fuzz(200)
@given(call=tool_calls())
def test_mcp_any_arguments_are_a_result_or_one_line_error(mcp_portal, call) -> None:
    _count("mcp")
    portal, session = mcp_portal
    name, args = call
    result = portal.call(session.call_tool, name, args)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        assert "\n" not in text and "Traceback" not in text, text
        assert not text.startswith("Error executing tool") or "unexpected" not in text.lower(), text
    else:
        assert isinstance(result.structured_content, dict)
    # Still serving after whatever came before.
    assert not portal.call(session.call_tool, "pinakes_kbs", {}).is_error


# -- regressions the fuzzers found ----------------------------------------------------------


def test_regression_lone_surrogate_query_searches(example_kb) -> None:
    """A non-UTF-8 argv byte reaches Python as a lone surrogate; the tokenizer used to raise TypeError."""
    result = example_kb.search("late interaction \udcff", k=2, entities=["\ud800"], concepts=["\udfff x"])
    assert result.hits


def test_regression_config_list_of_non_strings_is_a_config_error(tmp_path: Path) -> None:
    """``include = [1, 2]`` passed validation and crashed the walk with TypeError."""
    (tmp_path / "pinakes.toml").write_text('[kb]\ninclude = [1, 2]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[kb\] include should be a list of strings"):
        load_config(tmp_path)


def test_regression_sidecar_reader_error_is_one_line(tmp_path: Path) -> None:
    """ruamel's reader error ("unacceptable character ... in <unicode string>") spanned two lines."""
    path = tmp_path / "doc.pnk.yaml"
    path.write_bytes(b"id: x\x00\n")
    sc = read_sidecar(path, display="doc.pnk.yaml")
    assert sc.error and sc.error.startswith("doc.pnk.yaml:1: ") and "\n" not in sc.error
