"""The euro budget: prices, the up-front estimate, per-call reservations, the receipt.

This is the only code in Pinakes that spends money, so it is written to be
checked by reading. Its guarantees:

1. **No price, no call.** A model without a price (built in, or set in the
   user config) refuses to run; nothing is ever guessed.
2. **An upper bound before any paid work.** :func:`estimate` sums every call
   the operation may make at its worst case: counted input tokens (an upper
   bound, see :func:`count_tokens`) plus the call's whole ``max_tokens``.
3. **A reservation before every call.** :meth:`Budget.reserve` holds the
   call's worst case and refuses (:class:`BudgetExceeded`) when spent + held +
   this worst case would pass ``max_eur_per_operation``: the run halts *before*
   the breaching call, never after it.
4. **Settled with what the provider reports.** :meth:`Budget.settle` replaces
   the hold by the reported usage; a response without usage is charged its
   whole reservation, and a call whose outcome is unknown (a timeout: the
   provider may have billed it) is charged its reservation too. A rejected
   call (429, 5xx, refused connection) is released at zero.

Money is :class:`decimal.Decimal` end to end; floats appear only in JSON.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pinakes.errors import PinakesError

#: Tokens added per chat message for the role markers of a chat template, and
#: once per request for the reply's opening: generous, so the count stays a bound.
MESSAGE_OVERHEAD = 16
REQUEST_OVERHEAD = 32

#: List prices in EUR per 1,000 tokens (input, output), converted from the
#: providers' USD list prices at 0.92 EUR/USD as of 2026-12. Prices change: put
#: your own in the user config (``[prices.BACKEND] "MODEL" = {...}``), which wins.
DEFAULT_PRICES: dict[str, dict[str, tuple[str, str]]] = {
    "openai": {
        "gpt-4o-mini": ("0.000138", "0.000552"),
        "gpt-4o": ("0.0023", "0.0092"),
        "gpt-4.1-mini": ("0.000368", "0.001472"),
        "gpt-4.1-nano": ("0.000092", "0.000368"),
    },
    "anthropic": {
        "claude-3-5-haiku-latest": ("0.000736", "0.00368"),
        "claude-haiku-4-5": ("0.00092", "0.0046"),
        "claude-sonnet-4-5": ("0.00276", "0.0138"),
    },
    # Test and demo equipment: a made-up price so the budget machinery runs for real.
    "scripted": {"*": ("0.001", "0.002")},
}


class BudgetError(PinakesError):
    """The paid operation refuses to start (no price, refused confirmation, bad setting)."""


class BudgetExceeded(BudgetError):
    """The next call's worst case would pass ``max_eur_per_operation``: it is not made."""


@dataclass(frozen=True)
class Price:
    """EUR per 1,000 input and output tokens of one backend/model."""

    input_per_1k: Decimal
    output_per_1k: Decimal
    source: str = "built-in"

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (Decimal(input_tokens) * self.input_per_1k
                + Decimal(output_tokens) * self.output_per_1k) / Decimal(1000)

    def to_dict(self) -> dict[str, Any]:
        return {"input_per_1k_eur": str(self.input_per_1k), "output_per_1k_eur": str(self.output_per_1k),
                "source": self.source}


def _decimal(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise BudgetError(f"{where}: a price must be a number (EUR per 1,000 tokens), got {value!r}")
    try:
        d = Decimal(str(value))
    except InvalidOperation:
        raise BudgetError(f"{where}: a price must be a number (EUR per 1,000 tokens), got {value!r}") from None
    if not d.is_finite() or d < 0:
        raise BudgetError(f"{where}: a price must be a number >= 0, got {value!r}")
    return d


def price_for(backend: str, model: str, user_prices: Mapping[str, Any] | None = None,
              config_file: str = "the user config") -> Price:
    """The price of ``backend``/``model``: the user config's table first, then the built-in one.

    A model found in neither refuses: an unknown model could cost anything.
    """
    user = (user_prices or {}).get(backend)
    if isinstance(user, Mapping):
        entry = user.get(model, user.get("*"))
        if entry is not None:
            where = f"{config_file}: [prices.{backend}] {model!r}"
            if not isinstance(entry, Mapping) or "input_per_1k" not in entry or "output_per_1k" not in entry:
                raise BudgetError(f"{where} needs input_per_1k and output_per_1k (EUR per 1,000 tokens)")
            return Price(_decimal(entry["input_per_1k"], where), _decimal(entry["output_per_1k"], where),
                         source=config_file)
    table = DEFAULT_PRICES.get(backend, {})
    pair = table.get(model, table.get("*"))
    if pair is None:
        raise BudgetError(
            f"no price for {backend} model {model!r}, so Pinakes will not call it: add "
            f'[prices.{backend}] "{model}" = {{ input_per_1k = ..., output_per_1k = ... }} '
            f"(EUR per 1,000 tokens; 0 for a free local model) to {config_file}"
        )
    return Price(Decimal(pair[0]), Decimal(pair[1]))


def count_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """An upper bound on the input tokens of a chat request, with no tokenizer.

    Byte-level BPE and SentencePiece-with-byte-fallback tokenizers (GPT, Claude,
    Llama, Gemma) never produce more tokens than the text has UTF-8 bytes, so
    bytes plus a generous per-message template overhead bound the true count
    from above. The price of that soundness is an estimate about 3-4 times
    the real input size; output, bounded by ``max_tokens``, dominates anyway.
    """
    total = REQUEST_OVERHEAD
    for m in messages:
        total += len(str(m.get("content", "")).encode("utf-8")) + MESSAGE_OVERHEAD
    return total


def eur(value: Decimal) -> str:
    """A euro amount for people: rounded *up* to 6 decimals, so it never understates."""
    q = Decimal("0.000001")
    return f"€{value.quantize(q, rounding='ROUND_CEILING')}"


@dataclass(frozen=True)
class PlannedCall:
    """One call an operation may make: its purpose, input bound and ``max_tokens``."""

    purpose: str
    input_tokens: int
    max_tokens: int


def estimate(price: Price, calls: Iterable[PlannedCall]) -> Decimal:
    """The upper bound printed before paid work: every planned call at its worst case."""
    return sum((price.cost(c.input_tokens, c.max_tokens) for c in calls), Decimal(0))


@dataclass
class Reservation:
    """The worst case of one call, held from before the call until it is settled."""

    index: int
    purpose: str
    input_tokens: int
    max_tokens: int
    eur: Decimal
    settled: bool = False


@dataclass
class CallRecord:
    """What the receipt and the transcript say about one call."""

    index: int
    purpose: str
    reserved_eur: Decimal
    reserved_input: int
    reserved_output: int
    input_tokens: int = 0
    output_tokens: int = 0
    eur: Decimal = Decimal(0)
    status: str = "held"  # ok | no-usage | unknown-outcome | released
    overrun: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "purpose": self.purpose, "status": self.status,
            "reserved_eur": float(self.reserved_eur), "reserved_input_tokens": self.reserved_input,
            "reserved_output_tokens": self.reserved_output, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "eur": float(self.eur), "overrun": self.overrun,
        }


@dataclass
class Budget:
    """One paid operation's money: a hard cap, holds for calls in flight, what was spent."""

    price: Price
    cap_eur: Decimal
    estimate_eur: Decimal = Decimal(0)
    spent: Decimal = Decimal(0)
    held: Decimal = Decimal(0)
    calls: list[CallRecord] = field(default_factory=list)
    #: Told ``("hold", record)`` before each call and ``("settle", record)`` once it is
    #: settled, charged or released: the spend ledger writes both, so a process killed
    #: mid-call leaves its reservation on record (the provider may have billed it).
    journal: Callable[[str, CallRecord], None] | None = None

    def __post_init__(self) -> None:
        if self.cap_eur < 0:
            raise BudgetError("[budget] max_eur_per_operation must be >= 0")

    def worst_case(self, input_tokens: int, max_tokens: int) -> Decimal:
        return self.price.cost(input_tokens, max_tokens)

    def remaining(self) -> Decimal:
        return self.cap_eur - self.spent - self.held

    def can_afford(self, eur_amount: Decimal) -> bool:
        """Whether ``eur_amount`` more (e.g. a round plus the final synthesis) fits under the cap."""
        return self.spent + self.held + eur_amount <= self.cap_eur

    def reserve(self, purpose: str, input_tokens: int, max_tokens: int) -> Reservation:
        """Hold a call's worst case, or raise :class:`BudgetExceeded` and make no call."""
        if input_tokens < 0 or max_tokens < 1:
            raise BudgetError(f"{purpose}: invalid call size ({input_tokens} in, {max_tokens} max out)")
        worst = self.worst_case(input_tokens, max_tokens)
        if not self.can_afford(worst):
            raise BudgetExceeded(
                f"the next call ({purpose}, up to {eur(worst)}) would take the operation past its "
                f"cap of {eur(self.cap_eur)} (spent {eur(self.spent)}): not made"
            )
        r = Reservation(len(self.calls), purpose, input_tokens, max_tokens, worst)
        rec = CallRecord(r.index, purpose, worst, input_tokens, max_tokens)
        if self.journal is not None:  # on record before the call; a failure here makes no call
            self.journal("hold", rec)
        self.held += worst
        self.calls.append(rec)
        return r

    def _journal(self, rec: CallRecord) -> CallRecord:
        if self.journal is not None:
            self.journal("settle", rec)
        return rec

    def _close(self, r: Reservation) -> CallRecord:
        if r.settled:
            raise BudgetError(f"call {r.index} ({r.purpose}) was already settled")
        r.settled = True
        self.held -= r.eur
        return self.calls[r.index]

    def settle(self, r: Reservation, input_tokens: int | None, output_tokens: int | None) -> CallRecord:
        """Replace the hold by the reported usage (missing usage: the whole reservation)."""
        rec = self._close(r)
        if input_tokens is None or output_tokens is None or input_tokens < 0 or output_tokens < 0:
            rec.input_tokens, rec.output_tokens = r.input_tokens, r.max_tokens
            rec.eur, rec.status = r.eur, "no-usage"
        else:
            rec.input_tokens, rec.output_tokens = int(input_tokens), int(output_tokens)
            rec.eur, rec.status = self.price.cost(rec.input_tokens, rec.output_tokens), "ok"
            # A provider counting more than the bound would break guarantee 2: it is
            # charged (money is money) and flagged, and the receipt shows it.
            rec.overrun = rec.eur > r.eur
        self.spent += rec.eur
        return self._journal(rec)

    def charge_reserved(self, r: Reservation) -> CallRecord:
        """A call whose outcome is unknown (timed out mid-request): charge its worst case."""
        rec = self._close(r)
        rec.input_tokens, rec.output_tokens = r.input_tokens, r.max_tokens
        rec.eur, rec.status = r.eur, "unknown-outcome"
        self.spent += rec.eur
        return self._journal(rec)

    def release(self, r: Reservation) -> CallRecord:
        """A call the provider rejected (429, 5xx) or that never left: nothing spent."""
        rec = self._close(r)
        rec.status = "released"
        return self._journal(rec)

    def receipt(self) -> dict[str, Any]:
        """Calls, tokens in/out, euros, estimate vs actual: printed at the end of every paid run."""
        made = [c for c in self.calls if c.status != "released"]
        return {
            "calls": len(made),
            "rejected_attempts": len(self.calls) - len(made),
            "input_tokens": sum(c.input_tokens for c in made),
            "output_tokens": sum(c.output_tokens for c in made),
            "eur": float(self.spent),
            "eur_exact": str(self.spent),
            "estimate_eur": float(self.estimate_eur),
            "cap_eur": float(self.cap_eur),
            "within_estimate": self.spent <= self.estimate_eur,
            "within_cap": self.spent <= self.cap_eur,
            "overruns": sum(1 for c in made if c.overrun),
            "price": self.price.to_dict(),
        }


def receipt_line(receipt: Mapping[str, Any]) -> str:
    """The receipt as one line for people."""
    return (f"receipt: {receipt['calls']} call{'s' if receipt['calls'] != 1 else ''}, "
            f"{receipt['input_tokens']} tokens in, {receipt['output_tokens']} out, "
            f"{eur(Decimal(receipt['eur_exact']))} (estimate {eur(Decimal(str(receipt['estimate_eur'])))}, "
            f"cap {eur(Decimal(str(receipt['cap_eur'])))})")


def confirm(estimate_eur: Decimal, cap_eur: Decimal, confirm_above_eur: Decimal, *, yes: bool,
            interactive: bool, ask: Callable[[str], bool]) -> None:
    """Ask before paid work that may cost more than ``confirm_above_eur``.

    What the operation can cost is the smaller of its estimate and the cap (the
    budget never lets it pass the cap). ``--yes`` skips the question; a run
    with no terminal to ask on refuses instead of spending unasked.
    """
    at_most = min(estimate_eur, cap_eur)
    if at_most <= confirm_above_eur or yes:
        return
    if not interactive:
        raise BudgetError(
            f"this may cost up to {eur(at_most)}, above confirm_above_eur ({eur(confirm_above_eur)}), "
            "and there is no terminal to ask: pass --yes to allow it"
        )
    if not ask(f"This may cost up to {eur(at_most)} (cap {eur(cap_eur)}). Go ahead?"):
        raise BudgetError("cancelled: nothing was spent")


def budget_settings(section: Mapping[str, Any], where: str = "pinakes.toml") -> tuple[Decimal, Decimal]:
    """``(max_eur_per_operation, confirm_above_eur)`` from a ``[budget]`` table, checked."""
    cap = _decimal(section.get("max_eur_per_operation", 0.10), f"{where}: [budget] max_eur_per_operation")
    conf = _decimal(section.get("confirm_above_eur", 0.02), f"{where}: [budget] confirm_above_eur")
    return cap, conf


def load_user_config(path: Path) -> dict[str, Any]:
    """The user config (``config.toml`` in the user folder); missing is empty, malformed refuses."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BudgetError(f"{path}: {exc}") from None
