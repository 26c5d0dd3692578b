"""Pinakes plugin: the paid path (``pnk ask``, ``pnk ask --deep``) under a hard euro budget.

It registers three LLM backends (``openai`` for any OpenAI-compatible
server, ``anthropic``, and ``scripted``, test and demo equipment) and the
``pnk ask`` command. Importing it does no I/O and imports no SDK: the SDKs
load only when a call is about to be made. See ``docs/deep.md``.
"""

from __future__ import annotations

from pinakes import hookimpl

__version__ = "0.1.0"


@hookimpl
def register_llm_backends(register):  # type: ignore[no-untyped-def]
    from .backends import BACKENDS

    for cls in BACKENDS:
        register(cls)


class DeepEval:
    """``pnk eval --deep``: every question through ``pnk ask --deep`` (:mod:`.evaluate`)."""

    name = "deep"
    help = "each question through `pnk ask --deep`: calls, tokens, euros and cited recall"

    def run(self, kb, questions, relevant, source, *, json_, yes):  # type: ignore[no-untyped-def]
        from .evaluate import eval_command

        eval_command(kb, questions, relevant, source, json_=json_, yes=yes)


@hookimpl
def register_eval_modes(register):  # type: ignore[no-untyped-def]
    register(DeepEval())


@hookimpl
def register_commands(cli):  # type: ignore[no-untyped-def]
    from .cli import add_commands

    add_commands(cli)
