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
