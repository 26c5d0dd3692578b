"""The euro budget (plugins/pinakes-deep/pinakes_deep/budget.py), unit by unit.

No network here: these pin the arithmetic and the refusals that every paid
call goes through. The whole loop against a real HTTP server is test_deep.py.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from pinakes_deep.budget import (
    Budget,
    BudgetError,
    BudgetExceeded,
    PlannedCall,
    Price,
    confirm,
    count_tokens,
    estimate,
    eur,
    price_for,
)

PRICE = Price(Decimal("0.01"), Decimal("0.03"))  # EUR per 1k in / out


def test_unknown_model_refuses_and_says_how_to_price_it() -> None:
    with pytest.raises(BudgetError) as err:
        price_for("openai", "some-new-model", {}, "/u/config.toml")
    msg = str(err.value)
    assert "will not call it" in msg and '[prices.openai] "some-new-model"' in msg and "/u/config.toml" in msg


def test_user_price_wins_over_the_built_in_table_and_is_exact() -> None:
    built_in = price_for("openai", "gpt-4o-mini")
    assert built_in.source == "built-in"
    mine = price_for("openai", "gpt-4o-mini", {"openai": {"gpt-4o-mini": {"input_per_1k": 0.5, "output_per_1k": 1}}})
    assert (mine.input_per_1k, mine.output_per_1k) == (Decimal("0.5"), Decimal("1"))
    local = price_for("openai", "gemma", {"openai": {"*": {"input_per_1k": 0, "output_per_1k": 0}}})
    assert local.cost(10_000, 10_000) == 0


@pytest.mark.parametrize("bad", [-1, "abc", True, {"x": 1}, float("nan")])
def test_a_bad_user_price_is_one_clear_error(bad: object) -> None:
    with pytest.raises(BudgetError, match="price must be a number"):
        price_for("openai", "m", {"openai": {"m": {"input_per_1k": bad, "output_per_1k": 1}}})


def test_token_count_bounds_the_utf8_bytes_of_every_message() -> None:
    msgs = [{"role": "system", "content": "héllo"}, {"role": "user", "content": "日本語 text"}]
    n = count_tokens(msgs)
    assert n >= sum(len(m["content"].encode("utf-8")) for m in msgs) + 2 * 16


def test_estimate_is_the_sum_of_worst_cases() -> None:
    calls = [PlannedCall("a", 1000, 100), PlannedCall("b", 2000, 200)]
    assert estimate(PRICE, calls) == Decimal("0.01") + Decimal("0.003") + Decimal("0.02") + Decimal("0.006")


def test_reserve_refuses_the_call_that_would_pass_the_cap() -> None:
    b = Budget(PRICE, Decimal("0.05"))
    r1 = b.reserve("one", 1000, 1000)  # worst 0.04
    assert b.held == Decimal("0.04")
    with pytest.raises(BudgetExceeded, match="not made"):
        b.reserve("two", 1000, 1000)  # 0.04 held + 0.04 > 0.05
    b.settle(r1, 500, 100)  # actual 0.005 + 0.003
    assert b.spent == Decimal("0.008") and b.held == 0
    r2 = b.reserve("two", 1000, 1000)  # now fits: 0.008 + 0.04 <= 0.05
    b.settle(r2, 1000, 1000)
    assert b.spent <= b.cap_eur
    assert b.spent == Decimal("0.048")
    with pytest.raises(BudgetExceeded):
        b.reserve("three", 100, 100)  # 0.048 + 0.004 > 0.05
    assert len(b.calls) == 2  # the refused call left no record
    b.release(b.reserve("four", 10, 10))  # 0.048 + 0.0004 fits


def test_exactly_at_the_cap_is_allowed() -> None:
    b = Budget(PRICE, Decimal("0.04"))
    r = b.reserve("x", 1000, 1000)
    b.settle(r, 1000, 1000)
    assert b.spent == b.cap_eur
    with pytest.raises(BudgetExceeded):
        b.reserve("y", 0, 1)


def test_missing_usage_and_unknown_outcomes_are_charged_the_reservation() -> None:
    b = Budget(PRICE, Decimal("1"))
    r = b.reserve("no usage", 1000, 1000)
    rec = b.settle(r, None, None)
    assert rec.status == "no-usage" and rec.eur == Decimal("0.04")
    r = b.reserve("timeout", 1000, 1000)
    rec = b.charge_reserved(r)
    assert rec.status == "unknown-outcome" and b.spent == Decimal("0.08")
    r = b.reserve("429", 1000, 1000)
    rec = b.release(r)
    assert rec.status == "released" and b.spent == Decimal("0.08") and b.held == 0
    receipt = b.receipt()
    assert receipt["calls"] == 2 and receipt["rejected_attempts"] == 1
    with pytest.raises(BudgetError, match="already settled"):
        b.settle(r, 1, 1)


def test_a_provider_counting_past_the_bound_is_charged_and_flagged() -> None:
    b = Budget(PRICE, Decimal("1"), estimate_eur=Decimal("0.04"))
    r = b.reserve("x", 1000, 1000)
    rec = b.settle(r, 3000, 1000)
    assert rec.overrun and b.receipt()["overruns"] == 1 and not b.receipt()["within_estimate"]


def test_confirmation_rules() -> None:
    asked: list[str] = []

    def yes(msg: str) -> bool:
        asked.append(msg)
        return True

    confirm(Decimal("0.01"), Decimal("0.1"), Decimal("0.02"), yes=False, interactive=False, ask=yes)
    assert not asked  # below the threshold: no question
    confirm(Decimal("0.05"), Decimal("0.1"), Decimal("0.02"), yes=True, interactive=False, ask=yes)
    assert not asked  # --yes
    with pytest.raises(BudgetError, match="pass --yes"):
        confirm(Decimal("0.05"), Decimal("0.1"), Decimal("0.02"), yes=False, interactive=False, ask=yes)
    confirm(Decimal("0.05"), Decimal("0.1"), Decimal("0.02"), yes=False, interactive=True, ask=yes)
    assert asked and "€0.050000" in asked[0]
    with pytest.raises(BudgetError, match="nothing was spent"):
        confirm(Decimal("0.05"), Decimal("0.1"), Decimal("0.02"), yes=False, interactive=True,
                ask=lambda m: False)
    # what can be spent is capped: an estimate above the cap is asked about at the cap
    confirm(Decimal("5"), Decimal("0.01"), Decimal("0.02"), yes=False, interactive=False, ask=yes)


def test_amounts_for_people_round_up() -> None:
    assert eur(Decimal("0.0000001")) == "€0.000001"
    assert eur(Decimal("0.1")) == "€0.100000"
