"""Check (or rewrite) the output the docs quote, against a real run.

    .venv/bin/python scripts/docs_sessions.py            # check every page; exit 1 on drift
    .venv/bin/python scripts/docs_sessions.py --write    # rewrite the blocks from the run
    .venv/bin/python scripts/docs_sessions.py docs/mcp.md

A quoted block is checked when an HTML comment (invisible on the rendered page) sits on
the line before its opening fence:

``<!-- session: console SCENARIO -->``
    A console block. Each ``$ command`` line runs, in order, through ``bash`` with the
    installed ``pnk`` first on ``PATH``, in the scenario's workspace; the lines under it
    are its output (stdout and stderr). A line ``...`` (or ``…``) stands for any number
    of lines (``--write`` keeps an abridged output that still fits, and writes a drifted
    one out in full). Blocks of one page with one scenario share one workspace, in page
    order.
``<!-- session: mcp SCENARIO TOOL {ARGS} {OPTIONS} -->``
    A JSON block: ``structuredContent`` of one call to ``TOOL`` on ``pnk serve`` (the
    real server, through the official MCP client SDK over stdio). OPTIONS shape what is
    shown: ``keep`` (``{"hits": 1}``: the first n items, then a string saying how many
    more), ``pick`` (keys to show, in order), ``shorten`` (cut text fields to n
    characters, ``[…]`` marking the cut), ``fields`` (``{"hits": ["doc_id", ...]}``:
    keys shown for list items after the first), ``writes`` (serve with
    ``--allow-writes``).
``<!-- session: mcp-text SCENARIO TOOL {ARGS} {OPTIONS} -->``
    The same call's text rendering (``content``); ``lines`` keeps the first n lines.
``<!-- session: mcp-errors SCENARIO [[TOOL, {ARGS}], ...] -->``
    One line per call: the error text each one answers with.

Volatile parts are compared loosely: the workspace's real paths are shown as fixed
ones (``/home/me/...``, ``/tmp/...``); timestamps, durations, the month, a store's sync
generation and ids minted during the run (a transcript's, a new sidecar's) match any
value of their form; and a decimal may differ by two units of its last printed digit.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent
MARK = re.compile(r"^<!-- session: (.*?) -->\s*$")
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")
MONTH = re.compile(r"\b\d{4}-\d\d \(UTC\)")  # `pnk ask --spent`: this month
# A first sync commits in steps (searchable lexically first), as many as the embedding takes time.
GENERATION = re.compile(r'(\bgeneration"?:? )\d+')
ELLIPSIS = ("...", "…")

# What the docs show for the workspace's real folders.
HOME_SHOWN = "/home/me"


@dataclass
class Block:
    page: Path
    spec: str
    kind: str
    lang: str
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    text: str


@dataclass
class Workspace:
    """Where a scenario's commands run: a home, a working folder, what the docs call them."""

    tmp: Path
    cwd: Path
    env: dict[str, str]
    kb: Path
    shown: list[tuple[str, str]] = field(default_factory=list)  # (real, as shown)
    known_ids: set[str] = field(default_factory=set)

    def display(self, text: str) -> str:
        for real, shown in sorted(self.shown, key=lambda p: -len(p[0])):
            text = text.replace(real, shown)
        return text

    def loose(self, text: str) -> str:
        """``text`` with what differs from run to run replaced by its kind."""
        text = TIMESTAMP.sub("<time>", text)
        text = SECONDS.sub("<seconds>", text)
        text = MONTH.sub("<month> (UTC)", text)
        text = GENERATION.sub(r"\1<n>", text)
        return ULID.sub(lambda m: m.group(0) if m.group(0) in self.known_ids else "<new-id>", text)


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        fence = lines[i + 1] if i + 1 < len(lines) else ""
        if not fence.startswith("```"):
            raise SystemExit(f"{_rel(page)}:{i + 1}: a session mark must sit right above a fence")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        spec = m.group(1).strip()
        out.append(Block(page, spec, spec.split()[0], fence[3:].strip(), i + 2, end,
                         "\n".join(lines[i + 2:end])))
    return out


# --- scenarios ------------------------------------------------------------------------------

def _base(tmp: Path, kb_rel: str, source: Path, extra_env: dict[str, str] | None = None,
          keep_index: bool = False) -> Workspace:
    home = tmp / "home"
    kb = home / kb_rel
    skip = [".pinakes-ledger"] if keep_index else [".pinakes", ".pinakes-ledger"]
    shutil.copytree(source, kb, ignore=shutil.ignore_patterns(*skip), symlinks=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env.update(HOME=str(home), PINAKES_USER_PATH=str(home / ".config" / "pinakes"),
               PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", COLUMNS="200", NO_COLOR="1")
    from pinakes.embcache import cache_dir

    env["PINAKES_CACHE_DIR"] = str(cache_dir())  # yours (or the test suite's): nothing is embedded twice
    env.pop("XDG_CACHE_HOME", None)
    env.update(extra_env or {})
    ws = Workspace(tmp, kb, env, kb, [(str(home), HOME_SHOWN)])
    ws.known_ids = set(ULID.findall("\n".join(p.read_text("utf-8") for p in kb.rglob("*.pnk.yaml"))))
    return ws


def _sync(ws: Workspace, kb: Path | None = None) -> None:
    done = subprocess.run([str(BIN / "pnk"), "sync", "--kb", str(kb or ws.kb), "-q"], env=ws.env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"pnk sync failed: {done.stderr}")


def example(tmp: Path) -> Workspace:
    """The example KB at ~/pinakes/examples/retrieval-kb, synced; commands run in it.

    ``PINAKES_DOCS_SYNCED_EXAMPLE`` may name an already synced copy of it (the test
    suite's): it is copied with its index, and the sync finds nothing to do.
    """
    synced = os.environ.get("PINAKES_DOCS_SYNCED_EXAMPLE")
    if synced:
        ws = _base(tmp, "pinakes/examples/retrieval-kb", Path(synced), keep_index=True)
    else:
        ws = _base(tmp, "pinakes/examples/retrieval-kb", ROOT / "examples" / "retrieval-kb")
    _sync(ws)
    return ws


def cache(tmp: Path) -> Workspace:
    """A new user's embedding cache, after syncing one small KB (~/notes: the bees demo's pages)."""
    ws = _base(tmp, "notes", ROOT / "examples" / "claudekb-demo" / "kb-bees" / "docs",
               {"PINAKES_CACHE_DIR": str(tmp / "home" / ".cache" / "pinakes")})
    (ws.kb / "pinakes.toml").write_text('[kb]\nname = "notes"\n', encoding="utf-8")
    _sync(ws)
    return ws


def fleet(tmp: Path) -> Workspace:
    """The example KB plus a one-note KB `notes` in /tmp/demo that links into it."""
    ws = example(tmp)
    demo = tmp / "demo"
    notes = demo / "notes"
    notes.mkdir(parents=True)
    (notes / "pinakes.toml").write_text('[kb]\nname = "notes"\n', encoding="utf-8")
    (notes / "reading-list.md").write_text(
        "# Reading list\n\n"
        "- Late interaction: <pnk://01M8NK2VA9AJ1YS5RDXZNJZHMD>\n"
        "- Fusion: [RRF](kb://retrieval-kb/fusion/reciprocal-rank-fusion.md)\n"
        "- Someone's notes: [graph notes](kb://team-wiki/graphs.md)\n", encoding="utf-8")
    _sync(ws, notes)
    ws.cwd = demo
    ws.shown.append((str(demo), "/tmp/demo"))
    return ws


def claudekb(tmp: Path) -> Workspace:
    """Copies of the ClaudeKB demo in /tmp/adopt-demo, a scratch fleet registry, an empty cache."""
    demo = tmp / "adopt-demo"
    shutil.copytree(ROOT / "examples" / "claudekb-demo", demo)
    ws = _base(tmp, "unused", ROOT / "examples" / "retrieval-kb",
               {"PINAKES_CACHE_DIR": str(tmp / "home" / ".cache" / "pinakes")})  # a new user's: counts embeddings
    ws.cwd = demo
    ws.kb = demo
    ws.shown.append((str(demo), "/tmp/adopt-demo"))
    # the page's own MCP client script, which it then runs as `python mcp_kbs.py`
    page = (ROOT / "docs" / "adopt.md").read_text(encoding="utf-8")
    script = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "pnk serve --all" in b)
    (demo / "mcp_kbs.py").write_text(script, encoding="utf-8")
    return ws


def vault(tmp: Path) -> Workspace:
    """A notes vault of two folders, with a KB made of one of them (~/vault/Baking), synced.

    Its notes link, Obsidian-style, to notes in the other folder, which the KB cannot see.
    """
    vault_dir = tmp / "home" / "vault"
    (vault_dir / "Kitchen").mkdir(parents=True)
    for name in ("Flour Types", "Oven Temperatures", "Proofing"):
        (vault_dir / "Kitchen" / f"{name}.md").write_text(f"# {name}\n\nNotes on {name.lower()}.\n",
                                                          encoding="utf-8")
    baking = vault_dir / "Baking"
    baking.mkdir()
    notes = {
        "Bake 1": "Rye and spelt.\n\nUsed [[Flour Types]] and [[Oven Temperatures|a hot oven]].\n",
        "Bake 2": "A long cold proof.\n\nSee [[Proofing]] and [[Flour Types]].\n",
        "Bake 3": "Too dense.\n\n[[Proofing|Proof]] longer; check [[Oven Temperatures]].\n",
        "Bake 4": "Better crumb.\n\nThe [[Flour Types|flour]] mattered most.\n",
        "Bake 5": "Baguettes.\n\n[[Oven Temperatures]] with steam.\n",
    }
    for name, body in notes.items():
        (baking / f"{name}.md").write_text(f"# {name}\n\n{body}", encoding="utf-8")
    (baking / "Plan.md").write_text('---\nnext: "[[Proofing]]"\n---\n# Plan\n\nBake on Saturdays; '
                                    "see [[Flour Types]].\n", encoding="utf-8")
    (baking / "pinakes.toml").write_text('[kb]\nname = "baking"\n', encoding="utf-8")
    ws = _base(tmp, "unused", ROOT / "examples" / "claudekb-demo" / "kb-orchard" / "docs" / "concepts")
    ws.kb = ws.cwd = baking
    _sync(ws)
    return ws


SCRIPTED = [
    '{"subquestions": [{"id": "q1", "question": "Which ranking algorithm does HippoRAG run over its graph?", '
    '"depends_on": []}, {"id": "q2", "question": "In what year was that algorithm first proposed for '
    'topic-sensitive search?", "depends_on": ["q1"]}]}',
    "Personalized PageRank [1].",
    "2002 [1].",
    "HippoRAG ranks passages with Personalized PageRank [1], first proposed for topic-sensitive search "
    "in 2002 [2].",
]


def deep(tmp: Path) -> Workspace:
    """The example KB with the scripted backend replaying four replies, the loop forced."""
    ws = example(tmp)
    (ws.kb / "replies.json").write_text(json.dumps(SCRIPTED), encoding="utf-8")
    with open(ws.kb / "pinakes.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[llm]\nbackend = "scripted"\nscript = "replies.json"\n\n[deep]\nconfident_at = 0.99\n')
    return ws


SCENARIOS: dict[str, Callable[[Path], Workspace]] = {
    "example": example, "writes": example, "cache": cache, "fleet": fleet, "claudekb": claudekb,
    "deep": deep, "vault": vault}


# --- running blocks -------------------------------------------------------------------------

def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """``[(command, expected output lines)]`` of a console block."""
    out: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + "\n" + lines[i]
            out.append((cmd, []))
        elif out:
            out[-1][1].append(line)
        i += 1
    return out


def run_console(ws: Workspace, text: str) -> tuple[str, list[tuple[str, list[str], list[str]]]]:
    """Run the block; returns the block as the run printed it and each command's outputs."""
    rendered: list[str] = []
    results = []
    for cmd, expected in console_commands(text):
        # stderr into stdout, unbuffered: the lines come in the order a terminal shows them
        done = subprocess.run(["bash", "-c", cmd], cwd=ws.cwd, env={**ws.env, "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        got = ws.display(done.stdout.rstrip("\n")).splitlines()
        results.append((cmd, expected, got))
        rendered.append("$ " + cmd.replace("\n", "\\\n"))
        elided = any(x.strip() in ELLIPSIS for x in expected)
        # an abridged output that still fits is kept as the page abridged it
        rendered.extend(expected if elided and matches(expected, got, ws.loose) else got)
        while expected and expected[-1] == "" and (not got or got[-1] != ""):
            expected.pop()
            rendered.append("")
    return "\n".join(rendered), results


NUMBER = re.compile(r"-?\d+\.\d+")


def same_line(a: str, b: str) -> bool:
    """Equal, except that decimals may differ by two units of their last printed digit.

    Scores and cosines come from float arithmetic whose last bits depend on the CPU's
    vector instructions; a page is not wrong because another machine rounds differently.
    """
    if a == b:
        return True
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b), strict=True):
        places = max(len(x.split(".")[1]), len(y.split(".")[1]))
        if abs(float(x) - float(y)) > 2 * 10 ** -places + 1e-12:
            return False
    return True


def matches(expected: list[str], got: list[str], loose: Callable[[str], str]) -> bool:
    """Whether ``got`` fits ``expected``, where a ``...`` line stands for any lines."""
    exp = [loose(x.rstrip()) for x in expected]
    act = [loose(x.rstrip()) for x in got]

    def fit(i: int, j: int) -> bool:
        if i == len(exp):
            return j == len(act)
        if exp[i].strip() in ELLIPSIS:
            return any(fit(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and same_line(exp[i], act[j]) and fit(i + 1, j + 1)

    return fit(0, 0)


class Server:
    """``pnk serve`` on the workspace's KB, driven by the MCP SDK's client over stdio."""

    def __init__(self, ws: Workspace, writes: bool) -> None:
        self.ws = ws
        self.writes = writes

    def calls(self, batch: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client

        args = ["serve", "--kb", str(self.ws.kb), *(["--allow-writes"] if self.writes else [])]

        async def go() -> list[Any]:
            params = StdioServerParameters(command=str(BIN / "pnk"), args=args, env=self.ws.env,
                                           cwd=str(self.ws.cwd))
            with open(os.devnull, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as session:
                    await session.initialize()
                    return [await session.call_tool(tool, arguments) for tool, arguments in batch]

        return anyio.run(go)


def shape(data: Any, options: dict[str, Any]) -> Any:
    """Cut a structured result to what the page shows, saying what was left out."""
    shorten = options.get("shorten")
    if isinstance(data, dict):
        keys = options.get("pick") or list(data)
        out = {}
        for key in keys:
            if key not in data:
                continue
            value = data[key]
            if isinstance(value, list) and key in options.get("keep", {}):
                n = options["keep"][key]
                fields = options.get("fields", {}).get(key)
                kept = [shape(v, {"shorten": shorten}) for v in value[:n]]
                if fields:  # after the first item, only these keys
                    kept = kept[:1] + [{f: v[f] for f in fields if f in v} for v in kept[1:]]
                if len(value) > n:
                    kept.append(f"… {len(value) - n} more")
                value = kept
            else:
                value = shape(value, {"shorten": shorten})
            out[key] = value
        return out
    if isinstance(data, list):
        return [shape(v, {"shorten": shorten}) for v in data]
    if isinstance(data, str) and shorten and len(data) > shorten:
        cut = data[:shorten].rsplit(" ", 1)[0]
        return f"{cut} […]"
    return data


def dump(data: Any) -> str:
    """JSON as the docs show it: indented, with short objects in lists kept on one line."""
    def render(value: Any, indent: int) -> str:
        pad = " " * indent
        if isinstance(value, dict) and value:
            one = json.dumps(value, ensure_ascii=False)
            if indent >= 2 and len(one) + indent <= 160:
                return one
            items = [f'{pad}  {json.dumps(k)}: {render(v, indent + 2)}' for k, v in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(value, list) and value:
            one = json.dumps(value, ensure_ascii=False)
            if all(not isinstance(v, dict | list) for v in value) and len(one) + indent <= 100:
                return one
            return "[\n" + ",\n".join(f"{pad}  {render(v, indent + 2)}" for v in value) + f"\n{pad}]"
        return json.dumps(value, ensure_ascii=False)

    return render(data, 0)


def parse_mcp_spec(spec: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    kind, scenario, tool, rest = spec.split(None, 3)
    decoder = json.JSONDecoder()
    args, end = decoder.raw_decode(rest.strip())
    tail = rest.strip()[end:].strip()
    options = json.loads(tail) if tail else {}
    return scenario, tool, args, options


def mcp_calls(block: Block) -> tuple[bool, list[tuple[str, dict[str, Any]]]]:
    """``(with writes, [(tool, arguments)])`` of an MCP block."""
    if block.kind == "mcp-errors":
        return False, [(t, a) for t, a in json.loads(block.spec.split(None, 2)[2])]
    _, tool, args, options = parse_mcp_spec(block.spec)
    return bool(options.get("writes")), [(tool, args)]


def prefetch(found: list[Block], name: str, ws: Workspace) -> dict[int, list[Any]]:
    """Every MCP call of a scenario that runs no console command, in one server session.

    Starting ``pnk serve`` costs seconds; one session per scenario (and per
    ``writes``) keeps a page of many calls quick. The calls run in page order.
    """
    mine = [b for b in found if scenario_of(b) == name]
    if any(b.kind == "console" for b in mine):
        return {}
    out: dict[int, list[Any]] = {}
    for writes in (False, True):
        chosen = [(b, mcp_calls(b)[1]) for b in mine if mcp_calls(b)[0] == writes]
        if not chosen:
            continue
        results = Server(ws, writes).calls([c for _, calls in chosen for c in calls])
        for b, calls in chosen:
            out[b.start], results = results[:len(calls)], results[len(calls):]
    return out


def run_block(block: Block, ws: Workspace, results: list[Any] | None = None) -> tuple[bool, str, str]:
    """``(ok, what the run printed as the block's body, a diff for people)``."""
    if block.kind == "console":
        rendered, outcome = run_console(ws, block.text)
        ok = all(matches(exp, got, ws.loose) for _, exp, got in outcome)
        return ok, rendered, _diff(block.text, rendered)
    if results is None:
        writes, calls = mcp_calls(block)
        results = Server(ws, writes).calls(calls)
    if block.kind == "mcp-errors":
        body = ws.display("\n".join(r.content[0].text for r in results))
        return matches(block.text.splitlines(), body.splitlines(), ws.loose), body, _diff(block.text, body)
    scenario, tool, args, options = parse_mcp_spec(block.spec)
    result = results[0]
    if block.kind == "mcp-text":
        body = result.content[0].text
        if options.get("lines"):
            body = "\n".join(body.splitlines()[: options["lines"]] + ["…"])
        if options.get("shorten"):
            body = "\n".join(shape(line, options) for line in body.splitlines())
    else:
        body = dump(shape(result.structured_content, options))
    body = ws.display(body)
    ok = matches(block.text.splitlines(), body.splitlines(), ws.loose)
    return ok, body, _diff(block.text, body)


def _diff(expected: str, got: str) -> str:
    return "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(), "page", "run", lineterm=""))


def scenario_of(block: Block) -> str:
    return block.spec.split()[1]


def check_page(page: Path, write: bool = False, log: Callable[[str], None] = print) -> list[str]:
    """Run every marked block of ``page``; returns the drifts (rewrites them with ``write``)."""
    found = blocks(page)
    if not found:
        return []
    problems: list[str] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    replacements: list[tuple[int, int, str]] = []
    with tempfile.TemporaryDirectory(prefix="pnk-docs-") as tmp:
        spaces: dict[str, Workspace] = {}
        fetched: dict[int, list[Any]] = {}
        for block in found:
            name = scenario_of(block)
            if name not in SCENARIOS:
                raise SystemExit(f"{_rel(page)}: unknown scenario {name!r}")
            ws = spaces.get(name)
            if ws is None:
                folder = Path(tmp) / name
                folder.mkdir()
                ws = spaces[name] = SCENARIOS[name](folder)
                fetched.update(prefetch(found, name, ws))
            ok, body, diff = run_block(block, ws, fetched.get(block.start))
            where = f"{_rel(page)}:{block.start}"
            if ok:
                log(f"ok     {where}  {block.spec[:70]}")
                continue
            if write:
                replacements.append((block.start, block.end, body))
                log(f"wrote  {where}  {block.spec[:70]}")
            else:
                problems.append(f"{where} ({block.spec[:70]}) drifted from a real run:\n{diff}")
                log(f"DRIFT  {where}  {block.spec[:70]}\n{diff}")
    if replacements:
        for start, end, body in sorted(replacements, reverse=True):
            lines[start:end] = body.splitlines()
        from pinakes.fsutil import atomic_write

        atomic_write(page, "\n".join(lines) + "\n")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="*", help="pages to check (default: README.md and docs/)")
    ap.add_argument("--write", action="store_true", help="rewrite drifted blocks from the run "
                    "(a command's abridged output that still fits is kept as it is)")
    args = ap.parse_args()
    pages = [Path(p).resolve() for p in args.pages] or PAGES
    problems = [p for page in pages for p in check_page(page, write=args.write)]
    if problems:
        print(f"\n{len(problems)} block(s) drifted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
