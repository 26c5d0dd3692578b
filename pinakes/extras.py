"""Which extra installs what: the names the optional plugins register, and their extras.

Every optional piece of Pinakes is its own distribution under ``plugins/``, installed by
an extra of the core (``pip install 'pinakes[graph]'``). When a command asks for a
channel, an edge deriver, a command or a backend that is not installed, the message
should say what to install rather than only "unknown". This table is that knowledge;
``tests/test_release.py`` checks it against what the installed plugins really register
and against the extras in ``pyproject.toml``, so it cannot drift silently.

No imports beyond the standard library: the CLI consults it on its error path.
"""

from __future__ import annotations

#: kind of registration -> registered name -> (distribution, extra of the core).
PROVIDERS: dict[str, dict[str, tuple[str, str]]] = {
    "embedder": {
        "multilingual-e5-small-q4": ("pinakes-e5", "e5"),
    },
    "graph channel": {
        "expand": ("pinakes-expand", "graph"),
        "ppr": ("pinakes-ppr", "graph"),
    },
    "edge deriver": {
        "structural": ("pinakes-structural", "graph"),
        "mentions": ("pinakes-mentions", "graph"),
        "ner": ("pinakes-ner", "ner"),
    },
    "importer": {
        "claudekb": ("pinakes-claudekb", "claudekb"),
    },
    "command": {
        "adopt": ("pinakes-claudekb", "claudekb"),
        "ask": ("pinakes-deep", "deep"),
    },
    "eval mode": {
        "deep": ("pinakes-deep", "deep"),
    },
    "LLM backend": {
        "openai": ("pinakes-deep", "deep"),
        "anthropic": ("pinakes-deep", "deep"),
    },
}


def extra_for(kind: str, name: str) -> str | None:
    """The core's extra whose plugin registers ``name`` as a ``kind``, or None if none does."""
    entry = PROVIDERS.get(kind, {}).get(name)
    return entry[1] if entry else None


def install_command(extra: str) -> str:
    """The pip command that installs one extra (quoted for a POSIX shell)."""
    return f"pip install 'pinakes[{extra}]'"


def not_installed(kind: str, name: str) -> str | None:
    """``"graph channel 'ppr' is not installed: pip install 'pinakes[graph]'"``, or None.

    None means no known plugin provides ``name``: the caller then reports it as
    unknown (a typo, or a third-party plugin this table cannot know about).
    """
    extra = extra_for(kind, name)
    if extra is None:
        return None
    return f"{kind} {name!r} is not installed: {install_command(extra)}"
