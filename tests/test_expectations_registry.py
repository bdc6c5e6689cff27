"""`harness.expectations.registry`: one grade per expectation in a fixed family order,
readable unique names, the backstop grade when nothing is asserted, grades as serialised."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from conftest import echo_call, expects, only, record, strict_expects, two_echoes

from harness.expectations.base import Evidence
from harness.expectations.registry import grade
from harness.run_record import RunRecord

# --- names, order, backstop -----------------------------------------------------------------

RICH = {
    "response_contains": ["alpha", "beta"],
    "response_not_contains": ["alpha"],
    "response_matches": ["alpha"],
    "tools_used": ["echo"],
    "tools_not_used": ["fail"],
    "max_tool_calls": 3,
    "min_tool_calls": 1,
    "exact_tool_calls": 2,
    "all_tools_succeeded": True,
    "tool_arguments_contain": [
        {"tool": "echo", "needle": "alpha"},
        {"tool": "echo", "needle": "alpha", "call_index": 0},
        {"tool": "echo", "needle": "beta", "call_index": 1},
    ],
    "tool_results_contain": [
        {"tool": "echo", "needle": "alpha"},
        {"tool": "echo", "needle": "alpha", "call_index": 0},
    ],
}


def test_every_entry_yields_one_grade_with_a_unique_name() -> None:
    grades = grade(expects(**RICH), record("alpha beta", two_echoes()))
    assert len(grades) == 15
    checks = [g.check for g in grades]
    assert len(set(checks)) == len(checks), checks
    assert 'tool_arguments_contain("echo", "alpha")' in checks
    assert 'tool_arguments_contain("echo"[0], "alpha")' in checks
    assert 'tool_results_contain("echo"[0], "alpha")' in checks
    assert "min_tool_calls(1)" in checks
    assert {g.category for g in grades} == {"response", "tool"}


def test_duplicate_entries_still_get_unique_names() -> None:
    e = expects(
        response_contains=["hi", "hi"],
        tool_results_contain=[{"tool": "echo", "needle": "a"}, {"tool": "echo", "needle": "a"}],
    )
    grades = grade(e, record("hi", [echo_call("a")]))
    checks = [g.check for g in grades]
    assert len(grades) == 4
    assert len(set(checks)) == 4, checks
    assert checks[0] == 'response_contains("hi")'
    assert all(g.passed for g in grades)


def test_names_escape_quotes_and_keep_non_ascii() -> None:
    g = only(grade(expects(response_contains=['say "hi" ☃']), record('say "hi" ☃')))
    assert g.check == 'response_contains("say \\"hi\\" ☃")'
    assert g.passed


def test_no_effective_assertion_is_a_failing_backstop_grade() -> None:
    g = only(grade(expects(), record("anything")))
    assert not g.passed
    assert g.category == "run"


def test_min_tool_calls_zero_yields_no_grade() -> None:
    grades = grade(expects(min_tool_calls=0, tools_used=["echo"]), record(calls=[echo_call("a")]))
    assert [g.check for g in grades] == ['tools_used("echo")']


# --- order, backstop, two-argument call --------------------------------------------------------


def test_new_families_follow_the_existing_ones_in_order(workspace: Path) -> None:
    (workspace / "out.txt").write_text("done", encoding="utf-8")
    e = strict_expects(
        {
            "response_json": {"/ok": True},
            "budget": {"max_llm_calls": 3},
            "workspace": {"file_contains": {"out.txt": ["done"]}, "file_exists": ["out.txt"]},
            "response_matches": ["ok"],
            "tools_used": ["echo"],
            "response_contains": ["ok"],
        }
    )
    run = RunRecord(final_response='{"ok": true}', calls=[echo_call("a")], model_calls=2)
    grades = grade(e, run, workspace)
    assert [(g.check, g.category) for g in grades] == [
        ('response_contains("ok")', "response"),
        ('tools_used("echo")', "tool"),
        ('response_matches("ok")', "response"),
        ('file_exists("out.txt")', "side_effect"),
        ('file_contains("out.txt", "done")', "side_effect"),
        ("max_llm_calls(3)", "budget"),
        ('response_json("/ok")', "response"),
    ]
    assert all(g.passed for g in grades)


def test_two_argument_call_still_grades_the_old_families() -> None:
    g = only(grade(expects(tools_used=["echo"]), record(calls=[echo_call("a")])))
    assert g.passed


def test_grades_serialise_with_their_fields(workspace: Path) -> None:
    grades = grade(expects(budget={"max_total_tokens": 1}), RunRecord(input_tokens=2))
    [encoded] = json.loads(msgspec.json.encode(grades))
    assert encoded == {
        "check": "max_total_tokens(1)",
        "passed": False,
        "detail": "actual 2",
        "category": "budget",
        "field": "$.expects.budget.max_total_tokens",
    }


def test_a_kind_left_unset_asserts_and_refuses_nothing() -> None:
    """Admission asks only the kinds a fixture sets (an unset kind, one shared instance,
    asserts nothing against the empty run and refuses nothing): every kind keeps to it."""
    from harness.expectations.base import Context, Evidence
    from harness.expectations.registry import _LAYOUT, EMPTY_RUN, views
    from harness.workspace import FilesView

    assert all(span.inert for span in _LAYOUT)
    contexts = [Context(), Context("live"), Context("replay", frozenset({"echo"}), "a", (1, 0))]
    for span in _LAYOUT:
        assert not list(span.unset.grades(Evidence(EMPTY_RUN, FilesView({}))))
        assert not [f for c in contexts for f in span.unset.problems(c)]
    unset = views(expects())
    assert [type(v) for v in unset] == [span.kind for span in _LAYOUT]
    assert all(v is span.unset for v, span in zip(unset, _LAYOUT, strict=True))


# --- the empty run, as admission grades it --------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
# Blocks a dead agent passes, fails, or that assert nothing, one kind or several.
BLOCKS: list[dict[str, object]] = [
    {},
    {"response_contains": ["x"]},
    {"response_not_contains": ["x"]},
    {"response_not_contains": ["x"], "max_tool_calls": 0},
    {"response_not_contains": ["x"], "max_tool_calls": 0, "response_matches": ["\\Ax\\z"]},
    {"tools_not_used": ["fail"], "max_tool_calls": 0, "min_tool_calls": 0},
    {"exact_tool_calls": 0, "all_tools_succeeded": True},
    {"all_tools_succeeded": False, "tool_results_contain": [{"tool": "fail", "needle": "x"}]},
    {"budget": {"max_llm_calls": 2}, "workspace": {"file_absent": ["a.txt"]}},
    {"workspace": {"file_exists": ["a.txt"]}, "response_json": {"/a": 1}},
    {"tools_used": [], "response_contains": [], "loop_exempt": {}},
    {"request_contains": [{"turn": 0, "role": "user", "needle": "x"}]},
    {"tools_not_offered": ["fail"], "instructions_contain": ["x"]},
    {"loop_exempt": {"history": "why"}, "max_tool_calls": 5},
    RICH,
]


def _blocks() -> list[dict[str, object]]:
    committed = [*REPO.glob("evals/*/*.json"), *REPO.glob("examples/*/evals/*.json")]
    found = [json.loads(p.read_text("utf-8")).get("expects", {}) for p in sorted(committed)]
    assert found
    return [*BLOCKS, *found]


def test_the_empty_run_says_what_grading_it_whole_says() -> None:
    """Admission grades the empty run no further than its first failing check: whether the
    block declares a check and whether a dead agent passes it are what every grade says."""
    from harness.expectations.base import Evidence
    from harness.expectations.registry import all_grades, empty_run, views
    from harness.workspace import FilesView

    unset = views(expects())
    for data in _blocks():
        block = expects(**data)
        for files in ({}, {"a.txt": "x"}):
            every = list(all_grades(block, Evidence(RunRecord(), FilesView(files))))
            empty = empty_run(block, files)
            assert empty.declares == bool(every), data
            assert empty.passes == (bool(every) and all(g.passed for g in every)), data
            # The views it asks: each kind set, and every kind when there are setup files.
            asked = [v for v, u in zip(views(block), unset, strict=True) if files or v != u]
            assert empty.views == asked, data


def test_a_view_holds_its_kind_s_values_whatever_the_block_sets() -> None:
    from harness.expectations.registry import KINDS, views

    for data in _blocks():
        block = expects(**data)
        for kind, view in zip(KINDS, views(block), strict=True):
            assert type(view) is kind
            for name in kind.__struct_fields__:
                assert getattr(view, name) == getattr(block, name), (data, name)


def _loud_evidence() -> list[Evidence]:
    """Runs the kinds that grade every case speak up about: a tripwire, an approval no one
    decided, a conversation that lost the user's input; and a quiet one."""
    from harness.approvals import Approval
    from harness.model_boundary import GuardrailRun, ModelRequest, ModelStep
    from harness.transcript import Conversation, Exchange
    from harness.workspace import FilesView

    lost = Conversation(
        user_inputs=("hi",),
        script=((ModelStep(text="hello"),),),
        exchanges=(Exchange(0, 0, 0, ModelRequest(messages=())),),
        calls=(),
    )
    loud = RunRecord(
        final_response="alpha",
        calls=two_echoes(),
        guardrails=[GuardrailRun(0, 0, "no_pii", "input", tripped=True, halted=True)],
        approvals=[Approval(0, "c9", "echo", approved=False, decided=False)],
    )
    files = FilesView({"a.txt": "x"})
    return [
        Evidence(RunRecord(final_response="alpha"), files),
        Evidence(loud, files, frozenset({"echo"}), lost),
    ]


def test_a_kind_left_unset_is_graded_only_when_it_grades_every_case() -> None:
    """`grade` asks a kind a fixture leaves unset only when it says it grades every case
    (`graded_unset`): every other one, unset, grades nothing whatever the run did, and
    grading only those asked gives the grades of asking every kind."""
    from harness.expectations.registry import KINDS, all_grades, views

    evidences = _loud_evidence()
    for kind in KINDS:
        spoke = [list(kind().grades(e)) for e in evidences]
        assert any(spoke) == kind.graded_unset, kind.__name__
    for data in _blocks():
        block = expects(**data)
        for evidence in evidences:
            every = list(all_grades(views(block), evidence))
            seen: dict[str, int] = {}
            named = []
            for g in every:
                seen[g.check] = n = seen.get(g.check, 0) + 1
                named.append(g if n == 1 else msgspec.structs.replace(g, check=f"{g.check} #{n}"))
            record, tools = evidence.record, evidence.agent_tools
            got = grade(block, record, evidence.workspace, tools, evidence.conversation)
            assert got == (named or got[:1]), data


def _graded_field_by_field(block: object) -> list[object]:
    """The views `grade` asks, as the field-by-field comparison with every default says."""
    from harness.expectations.registry import _LAYOUT, KINDS

    values = msgspec.structs.astuple(block)
    return [
        span.build(values) if values[span.start : span.end] != span.defaults else span.unset
        for span in _LAYOUT
        if values[span.start : span.end] != span.defaults or KINDS[_LAYOUT.index(span)].graded_unset
    ]


# Values off their default that are false all the same: each must still count as set.
FALSE_BUT_SET = {
    "max_tool_calls": 0,
    "min_tool_calls": 0,
    "exact_tool_calls": 0,
    "approvals_requested": [],
    "all_tools_succeeded": False,
    "handoffs": [],
    "guardrails_tripped": [],
    "final_agent": "",
}


def test_the_kinds_graded_are_those_off_their_default_for_a_shape_seen_or_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_graded` works out which kinds a shape of `expects` is graded by once: the kinds it
    asks, and their values, are those a comparison with every default gives, for a false
    value given as much as a true one, and for a shape seen before as for a new one."""
    from harness.expectations import registry

    monkeypatch.setattr(registry, "_ORDERS", {})
    blocks = [*_blocks(), *({name: value} for name, value in FALSE_BUT_SET.items())]
    blocks.append(FALSE_BUT_SET)
    for data in blocks * 2:  # twice: the second time, each shape is known
        block = expects(**data)
        assert registry._graded(block) == _graded_field_by_field(block), data
    assert registry._ORDERS
