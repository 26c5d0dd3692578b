"""The README's five-minute tour runs, as written, against a fresh knowledge base.

The commands are read from README.md itself (the first ``sh`` block under "A five-minute
tour"), so a tour line that stops working, or a new one that never did, fails here. ``~``
is a scratch home holding the notes the tour talks about (``notes/build.md`` and
``notes/ci.md``) and a copy of the ClaudeKB demo for ``pnk adopt``. ``pnk eval --init``
is tested on its own below as well: the starter it writes is valid and never overwritten.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

NOTES = {
    "notes/build.md": "# Build\n\nThe nightly build is slow: the linker step fails with ERR-4471 "
                      "when the cache is cold.\n\n## Fixing a slow build\n\nWarm the dependency "
                      "cache first, then build in parallel. #build\n",
    "notes/ci.md": "# CI\n\nContinuous integration runs the build on every push and keeps the "
                   "deployment checklist.\n",
    "notes/practice.md": "# Practice routine\n\nTen minutes of scales with the metronome, then "
                         "repertoire.\n",
}
# Commands that serve until stopped: a clean start (still running, no error) is success.
LONG_RUNNING = ("pnk serve", "--watch")


def tour_commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index("## A five-minute tour"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README.md: no sh block under 'A five-minute tour'"
    out = []
    for line in block.group(1).splitlines():
        code = re.sub(r"\s+#\s.*$", "", line).strip()  # drop the trailing comment
        if code:
            out.append(code)
    return out


def _run(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    argv = [os.path.expanduser(a) if a.startswith("~") else a for a in shlex.split(line)]
    argv[0] = str(BIN / argv[0]) if (BIN / argv[0]).exists() else argv[0]
    if any(marker in line for marker in LONG_RUNNING):
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(6)
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=30)
            return 0, ""
        _, err = proc.communicate()
        return proc.returncode, err
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
def test_readme_tour_runs_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "kbs").mkdir(parents=True)
    shutil.copytree(ROOT / "examples" / "claudekb-demo" / "kb-bees", home / "kbs" / "my-claudekb")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("PINAKES_LOAD_PLUGINS", None)
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # for expanduser in _run
    try:
        cwd = tmp_path
        commands = tour_commands()
        assert any(c.startswith("pnk eval") for c in commands)
        for line in commands:
            if line.startswith("cd "):
                cwd = Path(os.path.expanduser(line[3:].strip()))
                continue
            code, output = _run(line, cwd, env)
            assert code == 0, f"README tour: `{line}` failed ({code}):\n{output[-2000:]}"
            assert "Traceback" not in output, line
            if line.startswith("pnk init"):  # the user's notes, which the tour talks about
                kb = Path(os.path.expanduser(shlex.split(line)[2]))
                for rel, body in NOTES.items():
                    (kb / rel).parent.mkdir(parents=True, exist_ok=True)
                    (kb / rel).write_text(body, "utf-8")
    finally:
        if old_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old_home


def test_eval_init_writes_a_starter_that_evaluates(make_kb, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pinakes.cli import cli
    from pinakes.evaluation.golden import load_golden

    kb = make_kb({f"topic{i}/page{i}.md": f"# Page {i}\n\nBody {i}.\n\n## Detail {i}\n\nMore {i}.\n"
                  for i in range(14)})
    runner = CliRunner()
    before = runner.invoke(cli, ["eval", "--init", "--kb", str(kb.root)])
    assert before.exit_code != 0 and "pnk sync" in before.output  # nothing indexed yet
    kb.sync()
    out = runner.invoke(cli, ["eval", "--init", "--kb", str(kb.root)])
    assert out.exit_code == 0, out.output
    golden = kb.root / "golden" / "questions.yaml"
    gs = load_golden(golden)
    assert len(gs.questions) == 10  # spread over the 14 documents, not the first ten
    paths = [q.documents[0] for q in gs.questions]
    everything = sorted(f"topic{i}/page{i}.md" for i in range(14))
    assert len(set(paths)) == 10 and set(paths) & set(everything[-2:])  # spread to the end
    assert all((kb.root / p).is_file() for p in paths)
    assert gs.questions[0].text == "Page 0: Detail 0"
    first = golden.read_text("utf-8")
    again = runner.invoke(cli, ["eval", "--init", "--kb", str(kb.root)])
    assert again.exit_code != 0 and "already exists" in again.output
    assert golden.read_text("utf-8") == first  # never overwritten
    ran = runner.invoke(cli, ["eval", "--kb", str(kb.root), "--json"])
    assert ran.exit_code == 0, ran.output
    other = runner.invoke(cli, ["eval", "--init", "--kb", str(kb.root), "--golden",
                                str(tmp_path / "elsewhere.yaml"), "--json"])
    assert other.exit_code == 0 and '"questions": 10' in other.output


def test_demo_says_what_it_searched_for_and_what_the_output_is(tmp_path: Path, example_kb_copy: Path) -> None:
    """`bash scripts/demo.sh` (the README's first command), on a copy: the query, then the hits.

    The copy has the real demo script, this checkout's venv and a synced copy of the example
    KB; only scripts/setup.sh is a stub (installing is what .ci/run's clean clone tests).
    """
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "demo.sh", tmp_path / "scripts" / "demo.sh")
    (tmp_path / "scripts" / "setup.sh").write_text("exit 0\n", "utf-8")
    (tmp_path / ".venv").symlink_to(BIN.parent)
    # the session's synced copy (its index is relocatable) and cache: the demo's sync has
    # nothing to do, which keeps this test about what the demo prints
    shutil.copytree(example_kb_copy, tmp_path / "examples" / "retrieval-kb")
    cache = os.environ["PINAKES_TEST_SESSION_CACHE"]
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "demo.sh")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1", "PINAKES_CACHE_DIR": cache})
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    query = re.search(r'^query="(.*)"$', (ROOT / "scripts" / "demo.sh").read_text("utf-8"), re.M).group(1)
    said = out.index(f'for: "{query}"')
    first_hit = re.search(r"^ 1\. ", out, re.M)
    assert first_hit and said < first_hit.start()  # what was searched for comes before the results
    assert "Each hit is a document" in out[said:first_hit.start()]
    assert re.search(r"^confidence: ", out, re.M)
