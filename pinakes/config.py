"""``pinakes.toml``: reading it with defaults, writing a fresh one, finding the KB."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, KBNotFound

CONFIG_NAME = "pinakes.toml"
STATE_DIR = ".pinakes"
# `pnk ask`'s spend ledger and transcripts (the deep plugin): truth, kept and committed,
# out of the disposable STATE_DIR; sync only sweeps the temp files of killed writes there.
LEDGER_DIR = ".pinakes-ledger"
DEFAULT_EMBEDDER = "minilm-l6-v2-int8"

#: Never indexed: the store, git, node modules, every hidden folder (Obsidian's .obsidian and
#: .trash among them), and Logseq's own copies of pages: logseq/bak holds a backup of a page
#: each time the file changed on disk behind Logseq's back, logseq/version-files the last
#: synced version. Indexed, each copy is a second, stale answer and a second page of the title.
DEFAULT_EXCLUDE = [".pinakes/**", ".git/**", "**/node_modules/**", "**/site-packages/**", "**/.*/**",
                   "**/logseq/bak/**", "**/logseq/version-files/**"]

DEFAULTS: dict[str, dict[str, Any]] = {
    "kb": {
        "name": "",
        "include": ["**/*.md"],
        "exclude": DEFAULT_EXCLUDE,
        "template": "",
        "sidecars": "beside",
        "max_file_mb": 10.0,
        # Where a root-absolute link (``/concepts/a.md``) and the path of a
        # ``kb://name/path.md`` link start: "" is the KB folder; an adopted
        # ClaudeKB uses "docs", the folder its site is built from.
        "bundle_root": "",
        # Pages (globs) whose body links are indexed and reported but never become
        # graph edges or link priors: a change log mentions everything it touched.
        "no_link_hub": [],
    },
    # batch_size 8, not 32: with dynamic padding, smaller batches of length-sorted
    # chunks embed faster on 2 cores (10-12 vs 8.5-9 chunks/s) at about half the
    # peak memory (358 vs 650 MB), with identical vectors (docs/performance.md).
    "embedding": {"model": DEFAULT_EMBEDDER, "batch_size": 8},
    "retrieval": {
        "k": 10,
        "rrf_k": 60,
        # "auto": the installed default channel (ppr, when pinakes[graph] is installed), else off.
        "graph_channel": "auto",
        "adjacent_k": 8,
        "abstain_below": 0.25,
        # Confidence calibration: "" = golden/calibration.json if present, else the one shipped
        # for the embedder; a path (relative to the KB); or "none" (confidence stays unknown).
        "calibration": "",
        "candidates": 100,
        "tokenizer": "porter",
        "lexical_weight": 1.0,
        "dense_weight": 0.5,  # measured: pnk eval on 2wiki and the example KB (docs/benchmarks.md)
        "graph_weight": 1.0,
        "dense_floor": 0.15,
        "dense_temperature": 0.1,
        # Weigh lexical hits by the share of the query's IDF mass they hold: "hit" (each its
        # own), "list" (the list's best: keeps BM25's order) or "off" (plain RRF).
        "lexical_coverage": "hit",
        "lexical_coverage_power": 1.0,
        # Opt-in for very large KBs: leave terms found in more than this share of the chunks
        # (and in more than lexical_common_min_df of them) out of the FTS5 MATCH; they still
        # count in the coverage weights. 1.0 = off: 0.05 cost docs-dev 1.4 points of R@2.
        "lexical_common_share": 1.0,
        "lexical_common_min_df": 500,
        "concept_weight": 0.5,
        # A document's best chunk gains this times its second-best chunk's fused score: two
        # matching sections are better evidence than one (docs/benchmarks.md, "Document evidence").
        "doc_evidence": 0.3,
        "salience_prior": 0.0,
        "link_distance_rerank": 0.0,
        # A curated catalog's out-links as a search prior: chunks of documents that an
        # index page (globs in index_pages) links to gain index_prior x one rank-1 RRF term.
        "index_prior": 0.0,
        "index_pages": ["index.md"],
        # How a graph channel's list combines with the hybrid: "rrf" fuses it as a
        # third list (weighted by graph_weight); "final" makes it the ranking itself;
        # "auto" asks the channel (its `fusion` attribute; rrf when it has none).
        "graph_fusion": "auto",
        # The ppr channel (plugins/pinakes-ppr); values measured in docs/benchmarks.md.
        "ppr_damping": 0.5,
        "ppr_chunk_weight": 0.005,
        "ppr_seed_weight": 1.0,
        "ppr_seeds": 5,
        # Only entities (document titles, aliases, NER names) seed by default: heading and tag
        # labels named in a question seeded 67 of docs-dev's 90 and dragged hubs in.
        "ppr_seed_kinds": "entity",
        # "exact": a seed's whole name occurs in the query, the longest name wins over the
        # shorter names inside it ("Lothair II", not "Lothair"); "label": IDF-scored labels.
        "ppr_seed_match": "exact",
        "ppr_seed_partial": 0.0,
        "ppr_root_weight": 0.005,
        "ppr_require_seeds": True,
        "ppr_tolerance": 3e-3,  # 1e-3 and 1e-4 ranked all three dev sets identically (6 steps, not 7)
        "ppr_max_iterations": 50,
        # The walk's precision: "float32" (half the bytes per step; every dev set ranked the
        # same, docs/performance.md) or "float64".
        "ppr_precision": "float32",
        # Threads a walk step runs on, over a graph of 200k half-edges or more: 2 splits
        # each step's rows in two (the same scores; at 50k chunks a walk takes ~20 %
        # less wall time and ~20 % more CPU); 1 keeps every walk on the searching thread.
        "ppr_walk_threads": 2,
        # Centrality never wins alone: a chunk's walk score is divided by its score in the
        # query-independent walk raised to this power (0: off).
        "ppr_centrality_power": 0.25,
        # graph_fusion "blend": the channel's log-scaled evidence (0..1) plus this weight times
        # the hybrid's own score (its share of the top fused score).
        "ppr_hybrid_weight": 0.03,
        # Relation-aware mention weights: a chunk's mention edge whose context words (the
        # clause around the mention) hold the query's stems other than the seeds' names
        # weighs 1 + this x their IDF share. 0: off. 2Wiki multi-hop 76.4/94.0 -> 77.8/94.8,
        # docs-dev and the example KB unchanged (docs/benchmarks.md).
        "ppr_relation_weight": 20.0,
        # ...only for the mention edges of chunks this many chunk-entity hops from the seeds
        # (1: the chunks naming a seed; 3: and those naming what they name; 0: everywhere).
        "ppr_relation_hops": 1,
        # A seed name the query writes in lower case though its label has capitals, in a
        # query that capitalises another word: a common noun ("the place of birth of"),
        # its reset mass times this. 1: off; 0: no seed. 0.03-0.1 was best on every dev
        # set: multi-hop R@2/R@5 2Wiki 77.8/94.8 -> 78.8/95.4, docs-dev 75.7/95.2 ->
        # 78.6/95.2, example KB unchanged; 0 lost docs-dev's R@5 (docs/benchmarks.md).
        "ppr_lowercase_seed_weight": 0.1,
        # Bridges (plugins/pinakes-ppr/pinakes_ppr/bridges.py): the best `ppr_bridge_roots`
        # documents lift the documents they link to or name, by how well the link's context
        # fits the question, damped by both ends' degree, gated by the lifted document's own
        # cosine, or vouched for by the best document's fitting link (link_trust: 0 ignores
        # that link); never above the document that lifted it. 0 switches bridges off.
        "ppr_bridge_weight": 12.0,
        "ppr_bridge_roots": 3,
        "ppr_bridge_temperature": 0.12,
        "ppr_bridge_degree_power": 0.5,
        "ppr_bridge_context_floor": 0.0,
        "ppr_bridge_cap": 0.9,
        "ppr_bridge_link_trust": 1.0,
    },
    "budget": {"max_eur_per_operation": 0.10, "confirm_above_eur": 0.02},
    "llm": {"backend": "", "model": ""},
}

TOKENIZERS = ("porter", "unicode61", "trigram")
GRAPH_FUSIONS = ("auto", "rrf", "final", "blend")

TEMPLATE = """\
# Pinakes knowledge base. Every key is optional; the defaults are shown commented out.
# Reference: `pnk help config` prints every key, its default and what it changes
# (the installed docs/configuration.md).

[kb]
name = "{name}"                # slug, unique in your fleet
# include = ["**/*.md"]
# exclude = [".pinakes/**", ".git/**", "**/node_modules/**", "**/site-packages/**", "**/.*/**", "**/logseq/bak/**", "**/logseq/version-files/**"]
# sidecars = "beside"          # or a folder such as ".pinakes-meta" for a parallel tree
# max_file_mb = 10             # larger Markdown files are skipped with a warning

[embedding]
# model = "minilm-l6-v2-int8"

[retrieval]
# k = 10
# rrf_k = 60
# graph_channel = "auto"       # "off" to switch the graph off; "auto" = ppr when installed
                               # (pinakes[graph]), "expand", or any installed channel
# graph_fusion = "auto"        # "rrf" (a third fused list), "final" (the channel ranks), "auto"
# adjacent_k = 8
# abstain_below = 0.25
# tokenizer = "porter"         # "unicode61" (no stemming) or "trigram" (CJK, substrings)

# [graph]                      # sync-time edge derivers (plugins), switched per KB
# mentions = true              # documents' titles as entity nodes, chunks naming them linked
# ner = false                  # the same plus spaCy's named entities (pip install pinakes[ner])
"""


@dataclass
class Config:
    """A KB's settings: the file's values merged over :data:`DEFAULTS`."""

    root: Path
    data: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """One table of the config, defaults filled in."""
        return self.data.get(name, {})

    @property
    def name(self) -> str:
        return str(self.data["kb"]["name"] or slugify(self.root.name))

    @property
    def kb(self) -> dict[str, Any]:
        return self.data["kb"]

    @property
    def retrieval(self) -> dict[str, Any]:
        return self.data["retrieval"]

    @property
    def embedder_id(self) -> str:
        return str(self.data["embedding"]["model"])

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR


def slugify(text: str) -> str:
    """A KB name usable in URIs and the fleet registry."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "kb"


def load_config(root: Path) -> Config:
    """Read ``root/pinakes.toml``; unknown tables are kept for plugins."""
    path = root / CONFIG_NAME
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise KBNotFound(f"no {CONFIG_NAME} in {root}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    data: dict[str, dict[str, Any]] = {}
    for table, defaults in DEFAULTS.items():
        given = raw.get(table, {})
        if not isinstance(given, dict):
            raise ConfigError(f"{path}: [{table}] must be a table")
        merged = dict(defaults)
        for key, value in given.items():
            if key in defaults and defaults[key] is not None and not _same_kind(
                defaults[key], value
            ):
                kind = ("a list of strings" if isinstance(defaults[key], list)
                        else type(defaults[key]).__name__)
                raise ConfigError(f"{path}: [{table}] {key} should be {kind}, got {value!r}")
            merged[key] = value
        data[table] = merged
    for table, value in raw.items():
        data.setdefault(table, value if isinstance(value, dict) else {})
    sidecars = str(data["kb"]["sidecars"]).replace("\\", "/").strip("/")
    if sidecars and ".." in sidecars.split("/"):
        # A sidecar folder is written into: it must stay inside the KB.
        raise ConfigError(f"{path}: [kb] sidecars must be 'beside' or a folder inside the KB, "
                          f"got {data['kb']['sidecars']!r}")
    tok = data["retrieval"]["tokenizer"]
    if tok not in TOKENIZERS:
        raise ConfigError(f"{path}: [retrieval] tokenizer must be one of {', '.join(TOKENIZERS)}")
    if data["retrieval"]["graph_fusion"] not in GRAPH_FUSIONS:
        raise ConfigError(f"{path}: [retrieval] graph_fusion must be one of {', '.join(GRAPH_FUSIONS)}")
    return Config(root=root, data=data)


def _same_kind(default: Any, value: Any) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, list):
        # Every list setting is a list of globs or names: an int in one crashed the walk.
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, type(default))


def find_kb_root(start: Path | None = None) -> Path:
    """Walk up from ``start`` (default: the current folder) to a ``pinakes.toml``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise KBNotFound(
        f"no Pinakes knowledge base here: no {CONFIG_NAME} in {here} or any parent "
        "(run `pnk init` to create one, or pass --kb PATH)"
    )


def user_dir() -> Path:
    """Where user-level state (the fleet registry) lives; ``PINAKES_USER_PATH`` overrides."""
    env = os.environ.get("PINAKES_USER_PATH")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pinakes"
