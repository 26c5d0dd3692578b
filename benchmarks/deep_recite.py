"""Re-read the citations of a deep_small_model.py run with today's citation parser.

    .venv/bin/python benchmarks/deep_recite.py /tmp/pnk-deep-bench-XXXX

It prints the cited-document recall as recorded and as re-read (the parser
learnt to ignore passage headers a model echoes back), and how many answers
echo the prompt. Golden-set runs only (it reads the sampled questions file).
"""

import glob
import json
import sys

from ruamel.yaml import YAML

from pinakes import KB
from pinakes_deep.engine import citation_list
from pinakes_deep.ledger import prepare, transcripts_dir
from pinakes_deep.prompts import Passage

D = sys.argv[1]
kb = KB.open(D + "/kb")
golden = YAML().load(open(glob.glob(D + "/kb/golden/questions-*.yaml")[0]))
gold = {q["question"]: {kb.resolve(p)["ulid"] for p in q["documents"]} for q in golden["questions"]}
rec = []
echoes = 0
prepare(kb)  # moves transcripts of runs made before the ledger into .pinakes-ledger/
for f in sorted(glob.glob(str(transcripts_dir(kb) / "*.json"))):
    d = json.load(open(f))
    syn = [r for r in d["rounds"] if r["kind"] == "synthesis"][-1]
    shown = [Passage(p["doc_id"], p["path"], p["title"], "", p["chunk_id"]) for p in syn["retrieved"]]
    cites = {c["doc_id"] for c in citation_list(d["answer"], shown)}
    old = {c["doc_id"] for c in d["citations"]}
    g = gold[d["question"]]
    echoes += d["answer"].lstrip().startswith("QUESTION:")
    rec.append((len(cites & g) / len(g), len(old & g) / len(g)))
print("n", len(rec), "echo-aware cited recall", round(sum(a for a, _ in rec) / len(rec), 4),
      "as run", round(sum(b for _, b in rec) / len(rec), 4), "answers that echo the prompt", echoes)
