"""Transcripts: one JSON file per paid run, in ``.pinakes-ledger/transcripts/`` (kept, committed).

A transcript is the audit trail of where the money went: every round's query,
the ids it retrieved, the prompt's size, each call's reservation and actual
cost, the model's reply, the stop reason, the receipt and the proposed links.
It never holds a key (settings are recorded through ``Settings.public``).
It lives beside the spend ledger (:mod:`.ledger`), not in the disposable
``.pinakes/``: sidecar links a run proposed name its id, and a deleted index
must not leave them pointing at nothing. It is rewritten (atomically) after
every paid call, so a run killed halfway still has a transcript of what it spent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pinakes.errors import PinakesError
from pinakes.fsutil import atomic_write

from . import ledger


class TranscriptNotFound(PinakesError):
    """No transcript matches the id given to ``--show-transcript``."""


class Transcript:
    def __init__(self, ident: str, kb: Any, question: str, mode: str, settings: dict[str, Any]) -> None:
        self.id = ident
        self.kb = kb
        self.rounds: list[dict[str, Any]] = []
        self.data: dict[str, Any] = {
            "id": ident, "kb": kb.name, "question": question, "mode": mode,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "settings": settings, "rounds": self.rounds, "stop_reason": None, "answer": None,
            "citations": [], "suggestions": [], "receipt": None, "error": None,
        }

    def add_round(self, entry: dict[str, Any]) -> None:
        entry = {"step": len(self.rounds), **entry}
        self.rounds.append(entry)

    @property
    def path(self) -> Path:
        return transcripts_dir(self.kb) / f"{self.id}.json"

    def write(self, finished: bool = True) -> Path:
        """Write the transcript; ``finished=False`` is a checkpoint of a run still going."""
        self.data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) if finished else None
        ledger.prepare(self.kb)
        atomic_write(self.path, json.dumps(self.data, indent=2, ensure_ascii=False, default=str) + "\n")
        return self.path


def transcripts_dir(kb: Any) -> Path:
    return ledger.transcripts_dir(kb)


def load(kb: Any, ident: str) -> dict[str, Any]:
    """The transcript whose id is (or starts with) ``ident``; ``last`` is the newest run's.

    Run ids are ULIDs, which sort by creation time, so the newest is the largest.
    """
    ident = ident.strip().upper()
    ledger.prepare(kb, create=False)
    folder = transcripts_dir(kb)
    if ident == "LAST":
        found = folder.glob("*.json") if folder.is_dir() else []
        newest = max((p for p in found if not p.name.startswith(".")), default=None)
        ident = newest.stem if newest else ""
        if not ident:
            raise TranscriptNotFound(f"no transcript in {folder} yet")
    matches = sorted(folder.glob(f"{ident}*.json")) if ident and folder.is_dir() else []
    if not matches:
        raise TranscriptNotFound(f"no transcript {ident!r} in {folder}")
    if len(matches) > 1:
        raise TranscriptNotFound(f"{ident!r} matches {len(matches)} transcripts; give more of the id")
    try:
        return json.loads(matches[0].read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TranscriptNotFound(f"{matches[0]}: unreadable transcript ({exc})") from None
