"""Crash points: test equipment for the crash harness (``benchmarks/harness_crash.py``).

``PINAKES_CRASH_AT=NAME:N`` makes the process SIGKILL itself the N-th time it
reaches crash point ``NAME`` (``atomic-write``, ``embed-batch``, ``apply-doc``,
``apply-commit``, ``move-sidecar``, ``swap-sidecar``), so the harness can land a
kill -9 exactly inside an embedding batch, the write transaction or a sidecar
move instead of hoping a timer does. It
is read once at import; unset (always, outside the harness) a crash point is
one dictionary lookup. Nothing else in Pinakes reads it.
"""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("PINAKES_CRASH_AT", "")
_NAME, _, _COUNT = _SPEC.partition(":")
_AT = int(_COUNT) if _COUNT.isdigit() else 1
_seen = 0


def crash_point(name: str) -> None:
    """Die here, as kill -9 would, when ``PINAKES_CRASH_AT`` names this point and count."""
    global _seen
    if not _NAME or name != _NAME:
        return
    _seen += 1
    if _seen >= _AT:
        os.kill(os.getpid(), signal.SIGKILL)
