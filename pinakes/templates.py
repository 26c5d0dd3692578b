"""KB templates for ``pnk init --template``: a seed schema written into ``pinakes.toml``.

A template's schema is three lists (entity types, relation types, attribute
types). It lives in the KB's ``[schema]`` table, so it is a committed,
diffable file the user owns: ``pnk ask --deep`` quotes it verbatim in every
decomposition and extraction prompt, which keeps the model on-domain and its
output small, and nothing ever changes it at run time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError

SCHEMA_KEYS = ("entity_types", "relation_types", "attribute_types")

TEMPLATES: dict[str, dict[str, list[str]]] = {
    "research-papers": {
        "entity_types": ["author", "paper", "venue", "method", "dataset"],
        "relation_types": ["cites", "extends", "evaluates_on", "authored_by"],
        "attribute_types": ["year", "task", "metric"],
    },
    "software-docs": {
        "entity_types": ["component", "service", "api", "command", "config_option", "error"],
        "relation_types": ["depends_on", "calls", "configures", "replaces", "documents"],
        "attribute_types": ["version", "default", "platform"],
    },
}


def schema_block(template: str) -> str:
    """The ``[schema]`` table a template adds to a fresh ``pinakes.toml``."""
    if template not in TEMPLATES:
        raise ConfigError(f"unknown template {template!r} (known: {', '.join(sorted(TEMPLATES))})")
    lines = [
        "",
        f"# Seed schema of the {template} template. `pnk ask --deep` quotes it verbatim in every",
        "# decomposition and extraction prompt; it changes only when you edit and commit it.",
        "[schema]",
    ]
    for key in SCHEMA_KEYS:
        items = ", ".join(f'"{v}"' for v in TEMPLATES[template][key])
        lines.append(f"{key} = [{items}]")
    return "\n".join(lines) + "\n"


def apply_template(config_text: str, template: str) -> str:
    """``config_text`` (a fresh pinakes.toml) with ``template = ...`` set and the schema appended."""
    block = schema_block(template)
    line = f'template = "{template}"         # its seed schema is the [schema] table below'
    text, n = re.subn(r"^(name = .*)$", lambda m: m.group(1) + "\n" + line, config_text, count=1, flags=re.M)
    if not n:
        text = config_text.replace("[kb]\n", "[kb]\n" + line + "\n", 1)
    return text.rstrip("\n") + "\n" + block


def render_schema(schema: Mapping[str, Any]) -> str:
    """The schema as prompts quote it: each list in the order the user wrote it."""
    out = []
    for key in SCHEMA_KEYS:
        values = schema.get(key)
        if isinstance(values, list) and values:
            out.append(f"{key.replace('_', ' ')}: {', '.join(str(v) for v in values)}")
    return "\n".join(out)
