"""LLM backends: ``openai`` (any OpenAI-compatible server), ``anthropic``, and ``scripted``.

A backend makes one *attempt* at a call and says how it went; retrying, waiting
and paying are :func:`paid_call`'s job, so every attempt is reserved and
settled by the budget. An attempt ends in one of three ways:

* a :class:`Completion` (text and the provider's reported usage);
* :class:`Transient` (429, 5xx, a timeout, a refused connection): worth
  retrying, with the provider's ``Retry-After`` when it sent one, and marked
  ``unknown_outcome`` when the provider may have done (and billed) the work;
* :class:`LLMError` (bad key, unknown model, a 4xx): one clear line, no retry.

The SDKs are imported inside the methods that use them, and their own retry
loops are switched off (``max_retries=0``) so that no attempt escapes the budget.
Keys come from the environment or the user config, never from a KB file, and
never appear in a message.
"""

from __future__ import annotations

import email.utils
import importlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pinakes.errors import PinakesError

from .budget import DEFAULT_PRICES, Budget, BudgetError, count_tokens

Messages = Sequence[Mapping[str, str]]


class LLMError(PinakesError):
    """A call failed for a reason retrying will not fix (auth, model, request), or gave up.

    ``unknown_outcome`` marks a failure after the provider may have done the
    work (an unreadable 200 reply): the budget charges such a call its reservation.
    """

    def __init__(self, message: str, unknown_outcome: bool = False) -> None:
        super().__init__(message)
        self.unknown_outcome = unknown_outcome


class Transient(Exception):
    """One failed attempt worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None, unknown_outcome: bool = False):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.unknown_outcome = unknown_outcome


@dataclass
class Completion:
    text: str
    input_tokens: int | None
    output_tokens: int | None


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` (or ``retry-after-ms``) header asks for; None when absent."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if value is None:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def system_as_user(messages: Messages) -> list[dict[str, str]]:
    """``messages`` with the system text moved to the head of the first user message.

    For servers whose chat template has no system turn. The result is never
    larger than the reservation's token bound: the same bytes plus one blank
    line, in one message fewer.
    """
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
    rest = [{"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    for m in rest:
        if m["role"] == "user":
            m["content"] = f"{system}\n\n{m['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]


def _is_local(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost")


class _SDKBackend:
    """What the two SDK backends share: settings, the key, the SDK, error translation."""

    id = ""
    default_key_env = ""
    default_base_url = ""
    sdk_module = ""  # the official SDK's import name, imported on the first call

    def _client_for(self, sdk: Any) -> Any:
        """The SDK's client object, made once (retries are ours, not the SDK's)."""
        raise NotImplementedError

    def _sdk(self) -> Any:
        try:
            sdk = importlib.import_module(self.sdk_module)
        except ImportError:
            raise LLMError(f"the {self.id} backend needs the {self.sdk_module} package: "
                           "pip install 'pinakes[deep]'") from None
        if self._client is None:
            self._client = self._client_for(sdk)
        return sdk

    def complete(self, messages: Messages, *, max_tokens: int) -> tuple[str, int, int]:
        return _complete(self, messages, max_tokens)

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.model = str(self.config.get("model") or "")
        self.base_url = str(self.config.get("base_url") or "") or None
        self.timeout = float(self.config.get("timeout", 60.0))
        self._client: Any = None

    def price(self, model: str) -> tuple[str, str]:
        table = DEFAULT_PRICES.get(self.id, {})
        pair = table.get(model)
        if pair is None:
            raise BudgetError(f"no built-in price for {self.id} model {model!r}")
        return pair

    def count_tokens(self, messages: Messages) -> int:
        return count_tokens(messages)

    def where(self) -> str:
        return self.base_url or self.default_base_url

    def api_key(self) -> str:
        """The key: the env var ``api_key_env`` names, else the user config's ``api_key``."""
        env_name = str(self.config.get("api_key_env") or self.default_key_env)
        key = os.environ.get(env_name) or str(self.config.get("api_key") or "")
        if key:
            return key
        if self.base_url and _is_local(self.base_url):
            return "no-key-needed-locally"
        raise LLMError(
            f"{self.id}: no API key: set {env_name} in the environment, or api_key under [llm] in "
            "the user config (never in pinakes.toml)"
        )

    def _translate(self, exc: Exception, sdk: Any) -> Exception:
        """An SDK exception as :class:`Transient` or :class:`LLMError` (no key, no body dump)."""
        where = self.where()
        if isinstance(exc, sdk.APITimeoutError):
            return Transient(f"{self.id}: no answer from {where} within {self.timeout:g} s",
                             unknown_outcome=True)
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__
            never_sent = type(cause).__name__ in ("ConnectError", "ConnectTimeout") if cause else False
            return Transient(f"{self.id}: cannot reach {where} ({type(cause).__name__ if cause else 'network error'})",
                             unknown_outcome=not never_sent)
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            headers = getattr(exc.response, "headers", None)
            if status in (401, 403):
                return LLMError(f"{self.id}: authentication failed at {where} (HTTP {status}): check the API key")
            if status == 429 or status >= 500:
                return Transient(f"{self.id}: HTTP {status} from {where}", retry_after_seconds(headers))
            return LLMError(f"{self.id}: HTTP {status} from {where}: {_short(exc)}")
        # Anything else (e.g. a reply that does not parse) came after the request was
        # sent: the provider may have billed it.
        return LLMError(f"{self.id}: {type(exc).__name__}: {_short(exc)}", unknown_outcome=True)


    def attempt(self, messages: Messages, *, max_tokens: int, purpose: str = "") -> Completion:
        """One call: the SDK's request built (``_request``), sent and read (``_send``).

        Errors while building it are ours and propagate; once it is sent, an SDK
        error is translated (:meth:`_translate`) and anything else is a reply
        that could not be read, which the provider may have billed.
        """
        sdk = self._sdk()
        request = self._request(messages, max_tokens)
        try:
            return self._send(request)
        except sdk.APIError as exc:
            raise self._translate(exc, sdk) from None
        except Exception as exc:
            raise self._unreadable(exc) from None

    def _request(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def _send(self, request: dict[str, Any]) -> Completion:
        raise NotImplementedError

    def _unreadable(self, exc: Exception) -> LLMError:
        """A reply the SDK could not read: the work may have been done (and billed)."""
        return LLMError(f"{self.id}: unreadable reply from {self.where()} ({type(exc).__name__}: {_short(exc)})",
                        unknown_outcome=True)


def _short(exc: Exception) -> str:
    text = re.sub(r"\s+", " ", str(exc)).strip()
    return text[:200]


class OpenAIBackend(_SDKBackend):
    """The OpenAI chat-completions API, and every server that speaks it (llama.cpp, Ollama, vLLM)."""

    id = "openai"
    default_key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"

    sdk_module = "openai"

    def _client_for(self, sdk: Any) -> Any:
        return sdk.OpenAI(api_key=self.api_key(), base_url=self.base_url, timeout=self.timeout,
                          max_retries=0)

    def _request(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        sent = (system_as_user(messages) if self.config.get("system_role") == "user"
                else [dict(m) for m in messages])
        return {"model": self.model, "messages": sent, "max_tokens": max_tokens, "temperature": 0}

    def _send(self, request: dict[str, Any]) -> Completion:
        resp = self._client.chat.completions.create(**request)
        text = ""
        if resp.choices:
            text = resp.choices[0].message.content or ""
        usage = resp.usage
        return Completion(text, getattr(usage, "prompt_tokens", None),
                          getattr(usage, "completion_tokens", None))


class AnthropicBackend(_SDKBackend):
    """Anthropic's Messages API (system prompt apart, ``max_tokens`` required)."""

    id = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"

    sdk_module = "anthropic"

    def _client_for(self, sdk: Any) -> Any:
        return sdk.Anthropic(api_key=self.api_key(), base_url=self.base_url, timeout=self.timeout,
                             max_retries=0)

    def _request(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        rest = [{"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"]
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": rest}
        if system:
            kwargs["system"] = system
        return kwargs

    def _send(self, request: dict[str, Any]) -> Completion:
        resp = self._client.messages.create(**request)
        text = "".join(getattr(b, "text", "") for b in (resp.content or [])
                       if getattr(b, "type", "") == "text")
        usage = resp.usage
        return Completion(text, getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))


class ScriptedBackend:
    """Test and demo equipment: replies from a script, else a deterministic stand-in.

    ``[llm] script`` names a JSON file holding a list of replies, used in
    order (a string, or ``{"text", "input_tokens", "output_tokens"}``; the
    tokens default to a bytes/4 count). With no script, or once it runs out,
    it answers by rule: a decomposition keeps the question whole, and an
    answer cites the first passages it was shown. It never leaves the machine.
    """

    id = "scripted"

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.model = str(self.config.get("model") or "scripted")
        self.replies: list[Any] = []
        script = self.config.get("script")
        if script:
            path = Path(str(script)).expanduser()
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise LLMError(f"scripted: cannot read the script {path}: {exc}") from None
            if not isinstance(data, list):
                raise LLMError(f"scripted: {path} must hold a JSON list of replies")
            self.replies = data
        self.calls = 0

    def price(self, model: str) -> tuple[str, str]:
        return DEFAULT_PRICES["scripted"]["*"]

    def count_tokens(self, messages: Messages) -> int:
        return count_tokens(messages)

    def attempt(self, messages: Messages, *, max_tokens: int, purpose: str = "") -> Completion:
        self.calls += 1
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        in_tokens = math.ceil(len(prompt.encode("utf-8")) / 4)
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, dict):
                text = str(reply.get("text", ""))
                out = reply.get("output_tokens")
                return Completion(text[: max_tokens * 4], reply.get("input_tokens", in_tokens),
                                  min(max_tokens, out if out is not None else math.ceil(len(text) / 4)))
            text = str(reply)
        else:
            text = _rule_reply(purpose, prompt)
        text = text[: max_tokens * 4]
        return Completion(text, in_tokens, min(max_tokens, math.ceil(len(text.encode("utf-8")) / 4)))

    def complete(self, messages: Messages, *, max_tokens: int) -> tuple[str, int, int]:
        c = self.attempt(messages, max_tokens=max_tokens)
        return c.text, int(c.input_tokens or 0), int(c.output_tokens or 0)


def _rule_reply(purpose: str, prompt: str) -> str:
    if purpose == "decompose":
        m = re.search(r"QUESTION:\s*(.+)", prompt)
        q = m.group(1).strip() if m else "the question"
        return json.dumps({"subquestions": [{"id": "q1", "question": q, "depends_on": []}]})
    cited = re.findall(r"^\[(\d+)\]", prompt, flags=re.M)[:2]
    marks = " ".join(f"[{n}]" for n in cited)
    return f"Scripted answer from the passages shown {marks}".strip()


def _complete(backend: Any, messages: Messages, max_tokens: int) -> tuple[str, int, int]:
    """The hook's plain ``complete`` contract: retries, no budget (the paid loop uses :func:`paid_call`)."""
    c = with_retries(lambda: backend.attempt(messages, max_tokens=max_tokens),
                     retries=int(backend.config.get("max_retries", 3)), backend_id=backend.id)
    return c.text, int(c.input_tokens or 0), int(c.output_tokens or 0)


def with_retries(fn: Callable[[], Completion], *, retries: int, backend_id: str,
                 base_delay: float = 1.0, max_wait: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep) -> Completion:
    for n in range(retries + 1):
        try:
            return fn()
        except Transient as t:
            if n == retries:
                raise LLMError(f"{t.message}; gave up after {n + 1} attempts") from None
            sleep(_wait(t, n, base_delay, max_wait, backend_id))
    raise AssertionError("unreachable")


def _wait(t: Transient, n: int, base_delay: float, max_wait: float, backend_id: str) -> float:
    if t.retry_after is not None:
        if t.retry_after > max_wait:
            raise LLMError(f"{t.message}: the provider asks to wait {t.retry_after:g} s, more than "
                           f"[llm] max_retry_wait ({max_wait:g} s); try again later") from None
        return t.retry_after
    return min(max_wait, base_delay * (2 ** n))


def paid_call(budget: Budget, backend: Any, messages: Messages, *, max_tokens: int, purpose: str,
              retries: int = 3, base_delay: float = 1.0, max_wait: float = 30.0,
              sleep: Callable[[float], None] = time.sleep,
              on_attempt: Callable[[dict[str, Any]], None] | None = None) -> tuple[Completion, int]:
    """One paid call: count, reserve, attempt, settle; retry transient failures.

    Every attempt is reserved on its own, so a retry that would pass the cap is
    not made (:class:`~pinakes_deep.budget.BudgetExceeded`). Returns the
    completion and the input-token bound that was reserved.
    """
    counter = getattr(backend, "count_tokens", None)
    input_bound = int(counter(messages)) if callable(counter) else count_tokens(messages)
    input_bound = max(input_bound, count_tokens(messages))  # never reserve below the byte bound
    attempt = getattr(backend, "attempt", None)
    for n in range(retries + 1):
        r = budget.reserve(purpose, input_bound, max_tokens)
        try:
            if callable(attempt):
                c = attempt(messages, max_tokens=max_tokens, purpose=purpose)
            else:  # a third-party backend with only the hook's plain contract
                text, tin, tout = backend.complete(messages, max_tokens=max_tokens)
                c = Completion(text, tin, tout)
        except Transient as t:
            rec = budget.charge_reserved(r) if t.unknown_outcome else budget.release(r)
            if on_attempt:
                on_attempt({"purpose": purpose, "attempt": n + 1, "error": t.message, **rec.to_dict()})
            if n == retries:
                raise LLMError(f"{t.message}; gave up after {n + 1} attempts") from None
            sleep(_wait(t, n, base_delay, max_wait, backend.id))
            continue
        except LLMError as exc:  # refused before any work (auth, 4xx), or unknown: see the flag
            rec = budget.charge_reserved(r) if exc.unknown_outcome else budget.release(r)
            if on_attempt:
                on_attempt({"purpose": purpose, "attempt": n + 1, "error": str(exc), **rec.to_dict()})
            raise
        except BaseException:  # interrupted or failed mid-call: the provider may have billed it
            budget.charge_reserved(r)
            raise
        budget.settle(r, c.input_tokens, c.output_tokens)
        return c, input_bound
    raise AssertionError("unreachable")


BACKENDS = (OpenAIBackend, AnthropicBackend, ScriptedBackend)
