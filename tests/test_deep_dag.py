"""Sub-question plans from a model's replies (plugins/pinakes-deep/pinakes_deep/dag.py)."""

from __future__ import annotations

import json

from pinakes_deep.dag import parse_plan


def ids(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.id for n in plan.nodes]


def test_every_cycle_loses_a_forward_edge_and_the_order_follows_the_model() -> None:
    reply = json.dumps({"subquestions": [
        {"id": "a", "question": "First?", "depends_on": ["c"]},
        {"id": "b", "question": "Second?", "depends_on": ["a", "b"]},
        {"id": "c", "question": "Third?", "depends_on": ["b", "d"]},
        {"id": "d", "question": "Fourth?", "depends_on": ["c"]},
    ]})
    plan = parse_plan(reply, max_nodes=8)
    assert plan is not None
    assert ids(plan) == ["a", "b", "c", "d"]
    deps = {n.id: n.depends_on for n in plan.nodes}
    assert deps == {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]}
    assert any("a -> c" in r for r in plan.repairs) and any("c -> d" in r for r in plan.repairs)
    assert any("self" in r for r in plan.repairs)


def test_topological_order_puts_dependencies_first() -> None:
    reply = json.dumps([{"id": "x", "question": "Needs y?", "depends_on": ["y"]},
                        {"id": "y", "question": "Base?", "depends_on": []}])
    plan = parse_plan(reply, max_nodes=4)
    assert plan is not None and ids(plan) == ["y", "x"] and not plan.repairs


def test_no_json_falls_back_to_question_lines_and_nonsense_is_rejected() -> None:
    plan = parse_plan("Steps:\n1. Who designed the turbine?\n2. Where was it installed?\nDone.", 4)
    assert plan is not None and [n.question for n in plan.nodes][1] == "Where was it installed?"
    assert plan.nodes[1].depends_on == ["q1"] and plan.repairs
    echoed = parse_plan("QUESTION: What was the first page rank?\n\nPASSAGES (for orientation):\n[1] x", 4)
    assert echoed is not None and echoed.nodes[0].question == "What was the first page rank?"
    assert parse_plan("I am not sure what you mean.", 4) is None
    assert parse_plan("", 4) is None
    assert parse_plan('{"subquestions": [{"id": "q1"}]}', 4) is None


def test_duplicates_strings_and_too_many_nodes_are_repaired() -> None:
    reply = json.dumps({"questions": ["One?", {"id": "q1", "question": "Two?"}, "Three?", "Four?", "Five?"]})
    plan = parse_plan(reply, max_nodes=3)
    assert plan is not None and len(plan.nodes) == 3
    assert len(set(ids(plan))) == 3
    assert any("duplicate" in r for r in plan.repairs) and any("kept the first 3" in r for r in plan.repairs)


def test_the_prompts_own_example_plan_echoed_back_is_no_plan() -> None:
    """Gemma 3 270M repeats its decomposition prompt, JSON example ("question": "...") and all."""
    from pinakes_deep.prompts import DECOMPOSE_SYSTEM

    echo = DECOMPOSE_SYSTEM.format(n=4) + "\n\nQUESTION: Who directed it?"
    assert parse_plan(echo, 4) is None
    mixed = parse_plan('{"subquestions": [{"id": "q1", "question": "..."}, {"id": "q2", "question": "Who?"}]}', 4)
    assert mixed is not None and [n.question for n in mixed.nodes] == ["Who?"]
