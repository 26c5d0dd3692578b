"""The spend ledger: what every paid call cost, kept with the KB where deleting the index cannot reach it.

``.pinakes/`` is derived and disposable; the record of money spent is not.
So ``pnk ask`` keeps its records in ``.pinakes-ledger/`` at the KB's root, a
folder of the KB's truth (commit it with the documents):

* ``spend.jsonl``: one JSON object per line, two per paid call: ``"event":
  "hold"`` before the call is made (its reserved worst case) and ``"event":
  "settle"`` once the budget settled it (the provider's reported tokens and
  euros; 0 for an attempt the provider rejected). Each line is whole on its
  own: date, KB, run id (= transcript id), call number, question, backend,
  model, purpose, tokens in and out, euros as an exact decimal string, status.
  A process killed mid-call leaves a hold with no settlement; it is counted at
  its reservation, as the budget counts a call whose outcome is unknown.
* ``transcripts/ID.json``: each run's transcript (see :mod:`.transcript`);
  the ``transcript:`` id of an ``origin: deep`` sidecar link points here.
* ``.gitattributes``: ``spend.jsonl merge=union``, so two clones that both
  spent money merge their ledgers without a conflict.

Why a dot-folder named after Pinakes rather than ``ledger/``: a KB's own
folders are the user's (a finance KB may well have a ``ledger/``), and the
default ``exclude`` (``**/.*/**``) already keeps dot-folders out of the index.

Appends are safe with two ``pnk ask`` at once and against a kill: each record
is one ``write()`` of one whole line to a file opened ``O_APPEND``, under an
exclusive ``flock`` on the file, then ``fsync``. A line cut short by a power
cut (the only way to get one) is skipped when reading and reported; the next
append starts on a fresh line, so it never glues onto the torn one.

Transcripts written by earlier versions to ``.pinakes/transcripts/`` are moved
here on first use, and their calls are added to the ledger (marked
``recovered``), so nothing spent before the upgrade is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pinakes.config import LEDGER_DIR
from pinakes.errors import PinakesError

DIR = LEDGER_DIR
SPEND = "spend.jsonl"
TRANSCRIPTS = "transcripts"
GITATTRIBUTES = f"{SPEND} merge=union\n"
LEGACY = "transcripts"  # the old home, under the derived .pinakes/
QUESTION_CHARS = 300  # the ledger names the question; the transcript has it whole
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


class LedgerError(PinakesError):
    """The ledger cannot be written or a ``--month`` is malformed."""


def ledger_dir(kb: Any) -> Path:
    return Path(kb.root) / DIR


def spend_path(kb: Any) -> Path:
    return ledger_dir(kb) / SPEND


def transcripts_dir(kb: Any) -> Path:
    return ledger_dir(kb) / TRANSCRIPTS


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def prepare(kb: Any, create: bool = True) -> Path:
    """Make the ledger folder (with its ``.gitattributes``) and bring in old transcripts.

    Called before every read or write of the ledger; cheap when there is
    nothing to do. A reader (``create=False``) makes nothing unless there are
    old transcripts to bring in: looking at what was spent writes no files.
    Returns the folder.
    """
    from pinakes.fsutil import stray_temps_under

    folder = ledger_dir(kb)
    legacy = Path(kb.config.state_dir) / LEGACY
    if not legacy.is_dir() and (not create or (str(folder) in _prepared and folder.is_dir())):
        return folder  # nothing to bring in, and (for a writer) made earlier in this process
    (folder / TRANSCRIPTS).mkdir(parents=True, exist_ok=True)
    for _, stray in stray_temps_under(Path(kb.root), DIR):  # a transcript write killed before its rename
        with contextlib.suppress(OSError):
            os.unlink(stray)
    attrs = folder / ".gitattributes"
    if not attrs.exists():
        from pinakes.fsutil import atomic_write

        atomic_write(attrs, GITATTRIBUTES)
    if legacy.is_dir():
        _adopt_legacy(kb, legacy)
    _prepared.add(str(folder))
    return folder


_prepared: set[str] = set()  # ledger folders made (and swept) by this process: every append asks


def _adopt_legacy(kb: Any, legacy: Path) -> None:
    """Move ``.pinakes/transcripts/*.json`` into the ledger and record their calls.

    Under the ledger's lock, so two processes doing it at once move each file
    once and record each run once.
    """
    with _locked(spend_path(kb)) as fd:
        known = {r.get("run") for r in _parse(_read_all(fd))[0]}
        records: list[dict[str, Any]] = []
        for src in sorted(legacy.glob("*.json")):
            dest = transcripts_dir(kb) / src.name
            try:
                data = json.loads(src.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if not dest.exists():
                os.replace(src, dest)
            else:
                src.unlink()
            if isinstance(data, dict) and data.get("id") not in known:
                records += recovered_records(data, kb.name)
                known.add(data.get("id"))
        _append_locked(fd, records)
    try:
        legacy.rmdir()
    except OSError:  # something else in it: leave it be
        pass


def recovered_records(data: Mapping[str, Any], kb_name: str) -> list[dict[str, Any]]:
    """Ledger records for an old transcript's calls (those that cost or used something)."""
    settings = data.get("settings") or {}
    out = []
    for entry in data.get("rounds") or []:
        for call in entry.get("calls") or []:
            if call.get("status") == "released":
                continue
            out.append(record(
                kb_name, str(data.get("id")), str(data.get("mode") or "ask"), str(data.get("question") or ""),
                str(settings.get("backend") or ""), str(settings.get("model") or ""),
                str(call.get("purpose") or entry.get("kind") or ""), int(call.get("input_tokens") or 0),
                int(call.get("output_tokens") or 0), Decimal(str(call.get("eur") or 0)),
                str(call.get("status") or ""), call=int(call.get("index", len(out))), event="settle",
                at=str(data.get("finished") or data.get("started") or now()), recovered=True))
    return out


def record(kb_name: str, run: str, mode: str, question: str, backend: str, model: str, purpose: str,
           input_tokens: int, output_tokens: int, eur: Decimal, status: str, *, call: int, event: str,
           at: str | None = None, recovered: bool = False) -> dict[str, Any]:
    """One ledger line: a call's hold (its worst case) or its settlement (what it cost)."""
    rec = {"at": at or now(), "kb": kb_name, "run": run, "call": call, "event": event, "mode": mode,
           "question": question[:QUESTION_CHARS], "backend": backend, "model": model,
           "purpose": purpose, "input_tokens": input_tokens, "output_tokens": output_tokens,
           "eur": str(eur), "status": status}
    if recovered:
        rec["recovered"] = True
    return rec


def calls(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per call: its settlement, or its hold when it was never settled.

    A hold left alone means the process died during the call: the provider may
    have billed it, so it counts at its reservation (status ``unsettled``).
    Attempts the provider rejected (``released``) cost nothing and are dropped.
    """
    last: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in records:
        key = (r.get("run"), r.get("call"))
        if r.get("event") == "hold" and key in last:
            continue  # never let a hold replace its own settlement, whatever the line order
        last[key] = dict(r)
    out = []
    for r in last.values():
        if r.get("event") == "hold":
            r["status"] = "unsettled"
        if r.get("status") == "released":
            continue
        out.append(r)
    return out


def append(kb: Any, records: Iterable[Mapping[str, Any]]) -> None:
    """Append ``records`` to the KB's ledger, each as one whole line; safe with other writers."""
    records = list(records)
    if not records:
        return
    prepare(kb)
    try:
        with _locked(spend_path(kb)) as fd:
            _append_locked(fd, records)
    except OSError as exc:
        raise LedgerError(f"cannot write the spend ledger {spend_path(kb)}: {exc}") from None


class _locked:
    """The ledger file opened for appending, under an exclusive ``flock``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self.fd

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _append_locked(fd: int, records: list[Mapping[str, Any]]) -> None:
    if not records:
        return
    size = os.fstat(fd).st_size
    # a line torn by a power cut has no newline: start ours on a line of its own
    lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
    data = lead + b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
                           for r in records)
    view = memoryview(data)
    while view:  # one write() in practice; a short write continues where it stopped
        n = os.write(fd, view)
        view = view[n:]
    os.fsync(fd)


def _parse(raw: bytes) -> tuple[list[dict[str, Any]], int]:
    out: list[dict[str, Any]] = []
    bad = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            Decimal(str(rec["eur"]))
        except (ValueError, KeyError, TypeError, InvalidOperation):
            bad += 1
            continue
        if isinstance(rec, dict):
            out.append(rec)
        else:
            bad += 1
    return out, bad


def read(kb: Any) -> tuple[list[dict[str, Any]], int]:
    """Every record of the KB's ledger, and how many lines could not be read."""
    prepare(kb, create=False)
    path = spend_path(kb)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    return _parse(raw)


def check_month(month: str) -> str:
    if not MONTH.match(month):
        raise LedgerError(f"--month {month!r}: give a month as YYYY-MM, e.g. {now()[:7]}")
    return month


def spent(kb: Any, month: str | None = None, all_time: bool = False) -> dict[str, Any]:
    """What the KB spent in ``month`` (``YYYY-MM``, UTC; default this month) or in all, by model."""
    period = "all" if all_time else check_month(month or now()[:7])
    records, bad = read(kb)
    chosen = [r for r in calls(records) if all_time or str(r.get("at", "")).startswith(period)]
    by_model: dict[tuple[str, str], dict[str, Any]] = {}
    months: dict[str, Decimal] = {}
    for r in chosen:
        key = (str(r.get("backend", "")), str(r.get("model", "")))
        row = by_model.setdefault(key, {"backend": key[0], "model": key[1], "runs": set(), "calls": 0,
                                        "input_tokens": 0, "output_tokens": 0, "eur": Decimal(0)})
        money = Decimal(str(r["eur"]))
        row["runs"].add(r.get("run"))
        row["calls"] += 1
        row["input_tokens"] += int(r.get("input_tokens") or 0)
        row["output_tokens"] += int(r.get("output_tokens") or 0)
        row["eur"] += money
        m = str(r.get("at", ""))[:7]
        months[m] = months.get(m, Decimal(0)) + money
    rows = sorted(by_model.values(), key=lambda x: (-x["eur"], x["backend"], x["model"]))
    total = sum((x["eur"] for x in rows), Decimal(0))
    return {
        "kb": kb.name, "period": period, "timezone": "UTC",
        "runs": len({r.get("run") for r in chosen}), "calls": len(chosen),
        "input_tokens": sum(x["input_tokens"] for x in rows),
        "output_tokens": sum(x["output_tokens"] for x in rows),
        "eur": float(total), "eur_exact": str(total),
        "by_model": [{**x, "runs": len(x["runs"]), "eur": float(x["eur"]), "eur_exact": str(x["eur"])}
                     for x in rows],
        "by_month": {m: str(v) for m, v in sorted(months.items())},
        "unsettled_calls": sum(1 for r in chosen if r.get("status") == "unsettled"),
        "ledger": str(spend_path(kb)), "unreadable_lines": bad,
    }
