"""Where a paid run's settings come from: flags, then ``pinakes.toml``, then the user config.

* ``pinakes.toml`` ``[llm]`` picks the backend and model for the KB and may set
  ``base_url``, ``timeout``, ``max_retries``, ``max_retry_wait``, ``system_role``; ``[budget]``
  holds ``max_eur_per_operation`` and ``confirm_above_eur``; ``[deep]`` tunes
  the loop (:data:`DEEP_DEFAULTS`). A key in ``pinakes.toml`` is refused: that
  file is committed and shared.
* ``PINAKES_LLM_BACKEND``, ``PINAKES_LLM_MODEL`` and ``PINAKES_LLM_BASE_URL``
  override both (after the flags of ``pnk ask``).
* The user config (``config.toml`` in the Pinakes user folder,
  ``PINAKES_USER_PATH`` or ``~/.config/pinakes``) fills ``[llm]`` keys the KB
  leaves empty, may hold ``api_key``, holds the ``[prices]`` table, and may set
  ``[deep]`` defaults for every KB (a KB's own ``[deep]`` wins).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pinakes.config import user_dir
from pinakes.errors import ConfigError

from .budget import BudgetError, Price, budget_settings, load_user_config, price_for

USER_CONFIG = "config.toml"
SECRET_KEYS = ("api_key", "key", "token", "secret")

LLM_DEFAULTS: dict[str, Any] = {
    "backend": "",
    "model": "",
    "base_url": "",
    "timeout": 60.0,
    "max_retries": 3,
    "retry_base_seconds": 1.0,
    "max_retry_wait": 30.0,
    # "user": send the instructions at the head of the first user message instead of as a system
    # message, for chat templates that have no system turn (Gemma's; llama.cpp's `gemma` format
    # drops a system message without a word, so the model never sees its instructions).
    "system_role": "system",
}
SYSTEM_ROLES = ("system", "user")

#: The loop's caps. Every variable part of a prompt is cut to a byte size, so
#: each call's input has a fixed upper bound and a round costs the same at most.
DEEP_DEFAULTS: dict[str, Any] = {
    "max_rounds": 4,
    "confident_at": 0.6,
    "max_subquestions": 4,
    "passages": 4,
    "final_passages": 6,
    "passage_bytes": 700,
    "summary_bytes": 1200,
    "question_bytes": 600,
    "answer_tokens": 300,
    "decompose_tokens": 300,
    "solve_tokens": 160,
    "max_suggestions": 6,
}


@dataclass
class Settings:
    """Everything a paid run needs, resolved and checked."""

    backend_id: str
    model: str
    llm: dict[str, Any]
    price: Price
    cap_eur: Decimal
    confirm_above_eur: Decimal
    deep: dict[str, Any] = field(default_factory=dict)
    schema: str = ""

    def public(self) -> dict[str, Any]:
        """The settings as the transcript records them: never a key."""
        llm = {k: v for k, v in self.llm.items() if k not in SECRET_KEYS}
        return {"backend": self.backend_id, "model": self.model, "llm": llm, "deep": self.deep,
                "cap_eur": float(self.cap_eur), "confirm_above_eur": float(self.confirm_above_eur),
                "price": self.price.to_dict()}


def user_config_path() -> Path:
    return user_dir() / USER_CONFIG


def _table(data: Mapping[str, Any], name: str, where: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: [{name}] must be a table")
    return dict(value)


def deep_settings(kb_config: Any, user_deep: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``[deep]``: the user config's values, then the KB's (the KB wins), over the defaults."""
    given = dict(user_deep or {})
    given.update(kb_config.data.get("deep", {}) if hasattr(kb_config, "data") else {})
    out = dict(DEEP_DEFAULTS)
    for key, value in given.items():
        if key not in DEEP_DEFAULTS:
            continue
        default = DEEP_DEFAULTS[key]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(default, int) and not isinstance(default, bool):
            ok = ok and isinstance(value, int) and value >= 1
        if not ok:
            raise ConfigError(f"pinakes.toml: [deep] {key} should be a positive number, got {value!r}")
        out[key] = value
    return out


def schema_text(kb_config: Any) -> str:
    """The KB's seed schema (``[schema]`` in pinakes.toml), verbatim, for every prompt."""
    from pinakes.templates import render_schema

    schema = kb_config.data.get("schema") if hasattr(kb_config, "data") else None
    return render_schema(schema) if isinstance(schema, Mapping) and schema else ""


def resolve(kb: Any, *, backend: str | None = None, model: str | None = None,
            base_url: str | None = None, max_eur: float | None = None,
            require_backend: bool = True) -> Settings | None:
    """The run's settings; ``None`` when no backend is configured and ``require_backend`` is False."""
    from pinakes.plugins import get_llm_backends

    kb_llm = dict(kb.config.data.get("llm", {}) or {})
    for secret in SECRET_KEYS:
        if kb_llm.get(secret):
            raise ConfigError(
                f"{kb.root / 'pinakes.toml'}: [llm] {secret} is refused: pinakes.toml is committed and "
                f"shared; put the key in the environment or in {user_config_path()}"
            )
    ucfg_path = user_config_path()
    ucfg = load_user_config(ucfg_path)
    user_llm = _table(ucfg, "llm", str(ucfg_path))
    llm = dict(LLM_DEFAULTS)
    for source in (user_llm, kb_llm):  # the KB's non-empty values win over the user's
        for key, value in source.items():
            if value not in ("", None) or key not in llm:
                llm[key] = value
    if "api_key" in user_llm:
        llm["api_key"] = user_llm["api_key"]
    # Flags first, then the environment (handy for `pnk eval --deep` against a local server).
    backend = backend or os.environ.get("PINAKES_LLM_BACKEND")
    model = model or os.environ.get("PINAKES_LLM_MODEL")
    base_url = base_url or os.environ.get("PINAKES_LLM_BASE_URL")
    if backend:
        llm["backend"] = backend
    if model:
        llm["model"] = model
    if base_url:
        llm["base_url"] = base_url
    if llm.get("system_role") not in SYSTEM_ROLES:
        raise ConfigError(f"[llm] system_role must be one of {', '.join(SYSTEM_ROLES)} "
                          f"(found {llm.get('system_role')!r})")
    backend_id = str(llm.get("backend") or "")
    if not backend_id:
        if require_backend:
            raise ConfigError(no_backend_hint())
        return None
    backends = get_llm_backends()
    if backend_id not in backends:
        known = ", ".join(sorted(backends)) or "none"
        raise ConfigError(f"unknown LLM backend {backend_id!r} (installed: {known})")
    model_id = str(llm.get("model") or ("scripted" if backend_id == "scripted" else ""))
    if not model_id:
        raise ConfigError(f"[llm] model is empty: name the {backend_id} model to call "
                          "(in pinakes.toml, the user config, or --model)")
    llm["model"] = model_id
    price = _price(backends[backend_id], backend_id, model_id, ucfg, str(ucfg_path), llm)
    cap, confirm_above = budget_settings(kb.config.data.get("budget", {}))
    if max_eur is not None:
        cap = Decimal(str(max_eur))
        if cap < 0:
            raise BudgetError("--max-eur must be >= 0")
    return Settings(backend_id, model_id, llm, price, cap, confirm_above,
                    deep_settings(kb.config, _table(ucfg, "deep", str(ucfg_path))), schema_text(kb.config))


def _price(cls: Any, backend_id: str, model: str, ucfg: Mapping[str, Any], where: str,
           llm: Mapping[str, Any]) -> Price:
    prices = _table(ucfg, "prices", where)
    try:
        return price_for(backend_id, model, prices, where)
    except BudgetError:
        if backend_id in ("openai", "anthropic", "scripted"):
            raise
    # A third-party backend: its own price table, else the same refusal.
    try:
        pair = cls(dict(llm)).price(model)
        return Price(Decimal(str(pair[0])), Decimal(str(pair[1])), source=f"backend {backend_id}")
    except Exception:
        return price_for(backend_id, model, prices, where)


def no_backend_hint() -> str:
    return (f"no LLM backend configured: set [llm] backend = \"openai\" (or \"anthropic\") and "
            f"model = \"...\" in pinakes.toml or {user_config_path()}, with the key in OPENAI_API_KEY / "
            "ANTHROPIC_API_KEY (docs/deep.md)")
