"""Title mentions: entity nodes from document titles, ``mentions`` edges from chunks naming them.

Obsidian's "unlinked mentions" as graph structure, without spaCy and without
an LLM: every document's title (and the title without a trailing
parenthetical, and front-matter ``aliases``) is an entity node, and every
chunk whose text names it gets a ``mentions`` edge. See
:mod:`pinakes_mentions.deriver` for the algorithm, the hub cap and
near-duplicate linking.

Default off, eval-gated (docs/design.md, "The gates"): enable it per KB with

.. code-block:: toml

    [graph]
    mentions = true
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinakes import hookimpl

from .deriver import (
    SCHEMA,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    MentionsDeriver,
    Settings,
    __version__,
    named_entities,
)
from .names import Matcher, fold, normalise, title_names

__all__ = ["Matcher", "MentionsDeriver", "Settings", "__version__", "fold", "named_entities",
           "normalise", "title_names"]


@hookimpl
def register_edge_derivers(register: Callable[[Any], Any]) -> None:
    register(MentionsDeriver())


@hookimpl
def register_store_schema(register: Callable[[str, str, str], Any]) -> None:
    register(SCHEMA_NAME, SCHEMA_VERSION, SCHEMA)
