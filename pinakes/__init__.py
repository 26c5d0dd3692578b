"""Pinakes: local-first knowledge bases from folders of Markdown."""

from .hookspecs import hookimpl
from .kb import KB

__version__ = "0.1.0"
__all__ = ["KB", "hookimpl", "__version__"]
