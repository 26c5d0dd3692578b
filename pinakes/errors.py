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
