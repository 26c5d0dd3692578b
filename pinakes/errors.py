"""Typed errors. The CLI turns these into one clear line and a non-zero exit."""

from __future__ import annotations


class PinakesError(Exception):
    """Base of every error a user can cause and fix."""


class KBNotFound(PinakesError):
    """No knowledge base where one was expected."""


class ConfigError(PinakesError):
    """``pinakes.toml`` is unreadable or holds an invalid value."""


class StoreBusy(PinakesError):
    """Another process holds the store's write lock."""


class NotSynced(PinakesError):
    """The store does not exist yet, or was built for another schema."""


class IndexDamaged(NotSynced):
    """The derived index is damaged; the next ``pnk sync`` rebuilds it (pinakes/health.py).

    ``reason`` is what was found damaged, without the advice around it: what the
    damage mark records (the message itself when none is given).
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class DocumentNotFound(PinakesError):
    """A document reference (ULID, ``pnk://`` URI, path or title) matched nothing."""


class AmbiguousDocument(PinakesError):
    """A document reference matched more than one document."""


class PluginError(PinakesError):
    """A plugin registered something invalid (e.g. a duplicate id)."""


class UnknownEmbedder(PinakesError):
    """The configured embedder id is not registered by any plugin."""


class QueryError(PinakesError):
    """A search request is invalid (e.g. an empty query)."""


class SectionNotFound(DocumentNotFound):
    """A heading path named no section of the document (or more than one)."""


class GoldenSetError(PinakesError):
    """A golden set is malformed, or one of its documents resolves to nothing (or to many)."""


class DatasetError(PinakesError):
    """An evaluation dataset (``corpus.jsonl`` + ``queries.jsonl``) is missing or malformed."""


class CalibrationError(PinakesError):
    """A confidence calibration cannot be fitted, read or written."""


class EvalError(PinakesError):
    """An evaluation request is invalid (e.g. an unknown setting in ``--matrix``)."""


class LinkError(PinakesError):
    """A link edit is invalid (bad relation, self-link, a sidecar that cannot be edited)."""


def storage_problem(exc: BaseException) -> str | None:
    """One clear line for a storage fault (disk full, read-only, no permission), else None.

    These are not bugs: the machine refused a write or a read. Every truth file is
    written atomically and the index in one transaction, so the line can promise
    that nothing was left half-written.
    """
    import errno
    import sqlite3

    where = ""
    kind = None
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        kind = {errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EFBIG: "full",
                errno.EROFS: "readonly", errno.EACCES: "denied", errno.EPERM: "denied"}.get(exc.errno or 0)
    elif isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        if "disk is full" in text or "disk i/o error" in text:
            kind = "full"
        elif "readonly" in text or "read-only" in text:
            kind = "readonly"
        elif "unable to open database file" in text:
            kind = "unopenable"
    if kind == "full":
        return (f"the disk is full{where}: free some space and run the command again "
                "(nothing was left half-written; the index keeps its last complete state)")
    if kind == "readonly":
        return (f"read-only file system{where}: this command writes the KB's .pinakes/ folder or "
                "its sidecars (searching a read-only KB works once it has been synced)")
    if kind == "denied":
        return f"permission denied{where}: the KB's files or its .pinakes/ folder are not writable by this user"
    if kind == "unopenable":
        return "cannot open the index under .pinakes/ (missing, unreadable or on a read-only disk): run `pnk sync`"
    return None
