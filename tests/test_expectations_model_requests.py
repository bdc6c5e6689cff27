"""`harness.expectations.model_requests`: grading what crossed the model boundary. Every
request the agent made is read: a message of a role holding a needle (in a turn, or in the
request answered by one step), the tools offered or withheld, the instructions; through
both built-in frameworks, admitted strictly, and never passing a run that made no request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _openai_server import OpenAIServer
from conftest import (
    AGENTS,
    FAITHFUL_LOOP,
    LIVE_KEY,
    LIVE_MODEL,
    admit,
    call,
    expects,
    fixture,
    lines,
    live_case,
    live_trace,
    record,
    refusal,
    refuse_one,
    replay_trace,
    shape_at,
    strict_expects,
    text_step,
    tool_step,
    trace_of,
    turn,
    write_fixture,
    write_module,
    write_suite,
)

from harness import run_suite
from harness.expectations.registry import assertion_count, grade
from harness.fixtures.admission import EMPTY_RUN_PASSES, empty_run_passes
from harness.live.backend import LiveSettings, live_backend_factory
from harness.model_boundary import Message, ModelRequest, Role, ToolSchema
from harness.run_record import RunRecord
from harness.transcript import Conversation, Exchange
from harness.verdict.reports import CaseReport

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

NO_REQUEST = "no model request was made"

# Turn 0 is told a code word; turn 1 echoes it. The case offers only `echo`.
CARRY_TURNS = [
    turn("Remember the code word zircon-42", text_step("Noted: zircon-42.")),
    turn(
        "Echo the code word",
        tool_step(call("c1", message="zircon-42")),
        text_step("Echoed zircon-42"),
    ),
]


def carry(checks: dict[str, Any]) -> dict[str, Any]:
    return fixture("carry", CARRY_TURNS, checks, tools=["echo"])


def entry(turn: int, role: str, needle: str, step: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"turn": turn, "role": role, "needle": needle}
    if step is not None:
        spec["step"] = step
    return spec


def run_one(tmp_path: Path, data: dict[str, Any], agent: str) -> CaseReport:
    suite = write_suite(tmp_path / "suite", {"case.json": data})
    (case,) = run_suite(suite, agent=agent).cases
    assert case.error is None, case.error
    return case


def request_grades(case: CaseReport) -> list[tuple[str, bool, str, str, str]]:
    return [shape_at(g) for g in case.grades if g.category == "request"]


# --- through the real framework loops ----------------------------------------------------------

HOLDS = {
    # What an earlier turn said is carried into the later request...
    "request_contains": [
        entry(1, "user", "Remember the code word zircon-42"),
        entry(1, "assistant", "Noted: zircon-42."),
        # ...and the tool result reaches the request answered by step 1, not step 0.
        entry(1, "tool", "zircon-42", step=1),
    ],
    "request_not_contains": [
        entry(1, "tool", "zircon-42", step=0),
        entry(0, "user", "Echo the code word"),
    ],
    "tools_offered": ["echo"],
    "tools_not_offered": ["write_file"],
}


@pytest.mark.parametrize("agent", AGENTS)
def test_what_the_frameworks_told_the_model_passes(tmp_path: Path, agent: str) -> None:
    case = run_one(tmp_path, carry(HOLDS), agent)
    assert case.passed, [(g.check, g.detail) for g in case.grades if not g.passed]
    assert request_grades(case) == [
        (
            'request_contains(turn 1, "user", "Remember the code word zircon-42")',
            True,
            "found in turn 1, request 0",
            "request",
            "$.expects.request_contains[0]",
        ),
        (
            'request_contains(turn 1, "assistant", "Noted: zircon-42.")',
            True,
            "found in turn 1, request 0",
            "request",
            "$.expects.request_contains[1]",
        ),
        (
            'request_contains(turn 1, step 1, "tool", "zircon-42")',
            True,
            "found in turn 1, request 1",
            "request",
            "$.expects.request_contains[2]",
        ),
        (
            'request_not_contains(turn 1, step 0, "tool", "zircon-42")',
            True,
            "absent from 1 request(s)",
            "request",
            "$.expects.request_not_contains[0]",
        ),
        (
            'request_not_contains(turn 0, "user", "Echo the code word")',
            True,
            "absent from 1 request(s)",
            "request",
            "$.expects.request_not_contains[1]",
        ),
        (
            'tools_offered("echo")',
            True,
            "offered in 3 request(s)",
            "request",
            "$.expects.tools_offered[0]",
        ),
        (
            'tools_not_offered("write_file")',
            True,
            "not offered in 3 request(s)",
            "request",
            "$.expects.tools_not_offered[0]",
        ),
    ]


BREAKS = {
    "request_contains": [
        entry(1, "tool", "zircon-42", step=0),
        entry(0, "user", "Echo the code word"),
    ],
    "request_not_contains": [
        entry(1, "user", "Remember the code word"),
        entry(1, "tool", "zircon-42"),
    ],
    "tools_offered": ["write_file"],
    "tools_not_offered": ["echo"],
}


@pytest.mark.parametrize("agent", AGENTS)
def test_what_the_frameworks_did_not_tell_the_model_fails(tmp_path: Path, agent: str) -> None:
    case = run_one(tmp_path, carry(BREAKS), agent)
    assert not case.passed
    assert [(check, passed, detail) for check, passed, detail, _, _ in request_grades(case)] == [
        (
            'request_contains(turn 1, step 0, "tool", "zircon-42")',
            False,
            "not found in turn 1, request 0; its tool messages: none",
        ),
        (
            'request_contains(turn 0, "user", "Echo the code word")',
            False,
            'not found in turn 0, request 0; its user messages: ["Remember the code word '
            'zircon-42"]',
        ),
        (
            'request_not_contains(turn 1, "user", "Remember the code word")',
            False,
            'unexpectedly present in turn 1, request 0: user message "Remember the code word '
            'zircon-42"',
        ),
        (
            'request_not_contains(turn 1, "tool", "zircon-42")',
            False,
            'unexpectedly present in turn 1, request 1: tool message "zircon-42"',
        ),
        (
            'tools_offered("write_file")',
            False,
            'not offered in turn 0, request 0; it offered: ["echo"]',
        ),
        (
            'tools_not_offered("echo")',
            False,
            'offered in turn 0, request 0; it offered: ["echo"]',
        ),
    ]
    # Every other check of the case (replay conformance included) still passes.
    assert [g.check for g in case.grades if not g.passed and g.category != "request"] == []


INSTRUCTED = """
from agents import Agent as SdkAgent
from pydantic_ai import Agent as PaiAgent

INSTRUCTIONS = "You are terse. Answer with one word."


def sdk_agent():
    return SdkAgent(name="terse", instructions=INSTRUCTIONS)


def pydantic_agent():
    return PaiAgent(instructions=INSTRUCTIONS)
"""
GREETING = [turn("Say hello", text_step("Hello.")), turn("Again", text_step("Hello."))]


@pytest.mark.parametrize(
    ("framework", "factory"), [(AGENTS[0], "sdk_agent"), (AGENTS[1], "pydantic_agent")]
)
def test_instructions_reach_the_model_through_both_frameworks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str, factory: str
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{framework}:{write_module(tmp_path, INSTRUCTED, 'instructed')}:{factory}"
    data = fixture("instructed", GREETING, {"instructions_contain": ["You are terse.", "verbose"]})
    case = run_one(tmp_path, data, spec)
    assert [(check, passed, detail) for check, passed, detail, _, _ in request_grades(case)] == [
        ('instructions_contain("You are terse.")', True, "found"),
        (
            'instructions_contain("verbose")',
            False,
            "not found in the system message of the first request (turn 0, request 0): "
            '"You are terse. Answer with one word."',
        ),
    ]


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_without_instructions_fails_instructions_contain(
    tmp_path: Path, agent: str
) -> None:
    case = run_one(tmp_path, fixture("bare", GREETING, {"instructions_contain": ["terse"]}), agent)
    assert request_grades(case) == [
        (
            'instructions_contain("terse")',
            False,
            "the first request (turn 0, request 0) has no system message",
            "request",
            "$.expects.instructions_contain[0]",
        )
    ]


def test_the_checks_hold_in_live_mode_where_a_step_is_the_nth_request(
    tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    data = live_case(
        "live-requests",
        "echo: probe-7",
        "say: done",
        tools=["echo"],
        expects={
            "request_contains": [
                entry(0, "tool", "probe-7", step=1),
                entry(1, "user", "echo: probe-7"),
            ],
            "request_not_contains": [entry(0, "tool", "probe-7", step=0)],
            "tools_offered": ["echo"],
            "tools_not_offered": ["read_file"],
        },
    )
    suite = write_suite(tmp_path / "live", {"case.json": data})
    settings = LiveSettings(base_url=tiny_server.base_url, model=LIVE_MODEL, api_key=LIVE_KEY)
    (case,) = run_suite(suite, mode="live", backend=live_backend_factory(settings)).cases
    assert case.error is None, case.error
    assert [(g.check, g.passed) for g in case.grades] == [
        ('request_contains(turn 0, step 1, "tool", "probe-7")', True),
        ('request_contains(turn 1, "user", "echo: probe-7")', True),
        ('request_not_contains(turn 0, step 0, "tool", "probe-7")', True),
        ('tools_offered("echo")', True),
        ('tools_not_offered("read_file")', True),
    ]


# --- step-specific matching, graded on a conversation --------------------------------------

ECHO = ToolSchema("echo", "Echo a message", {"type": "object"})
FAIL = ToolSchema("fail", "Fail", {"type": "object"})


def request(*messages: tuple[Role, str], tools: tuple[ToolSchema, ...] = (ECHO,)) -> ModelRequest:
    """One request: (role, content) messages, offering `tools`."""
    return ModelRequest(
        messages=tuple(Message(role=role, content=text) for role, text in messages), tools=tools
    )


def conversation(*exchanges: tuple[int, int, ModelRequest]) -> Conversation:
    return Conversation(
        user_inputs=(),
        script=(),
        exchanges=tuple(Exchange(t, s, 0, r) for t, s, r in exchanges),
        calls=(),
        scripted=False,  # no script: replay conformance has nothing to check it against
    )


# Turn 0 asks twice (step 0, then step 1 with a tool result); turn 1 asks once, offering more.
TWO_TURNS = conversation(
    (0, 0, request(("system", "Be brief."), ("user", "echo alpha"))),
    (0, 1, request(("system", "Be brief."), ("user", "echo alpha"), ("tool", "alpha"))),
    (1, 0, request(("system", "Be brief."), ("user", "next"), tools=(ECHO, FAIL))),
)


def graded(checks: dict[str, Any], conv: Conversation | None = TWO_TURNS) -> list[Any]:
    return [
        (g.check, g.passed, g.detail) for g in grade(expects(**checks), record(), conversation=conv)
    ]


def test_a_step_names_the_one_request_it_answers_without_a_step_any_request_of_the_turn() -> None:
    assert graded(
        {
            "request_contains": [
                entry(0, "tool", "alpha"),
                entry(0, "tool", "alpha", step=1),
                entry(0, "tool", "alpha", step=0),
                entry(1, "tool", "alpha"),
            ]
        }
    ) == [
        ('request_contains(turn 0, "tool", "alpha")', True, "found in turn 0, request 1"),
        ('request_contains(turn 0, step 1, "tool", "alpha")', True, "found in turn 0, request 1"),
        (
            'request_contains(turn 0, step 0, "tool", "alpha")',
            False,
            "not found in turn 0, request 0; its tool messages: none",
        ),
        (
            'request_contains(turn 1, "tool", "alpha")',
            False,
            "not found in turn 1, request 0; its tool messages: none",
        ),
    ]


def test_without_a_step_the_negative_holds_only_if_no_request_of_the_turn_has_it() -> None:
    assert graded(
        {
            "request_not_contains": [
                entry(0, "tool", "alpha"),
                entry(0, "tool", "alpha", step=0),
                entry(0, "user", "alpha", step=1),
            ]
        }
    ) == [
        (
            'request_not_contains(turn 0, "tool", "alpha")',
            False,
            'unexpectedly present in turn 0, request 1: tool message "alpha"',
        ),
        ('request_not_contains(turn 0, step 0, "tool", "alpha")', True, "absent from 1 request(s)"),
        (
            'request_not_contains(turn 0, step 1, "user", "alpha")',
            False,
            'unexpectedly present in turn 0, request 1: user message "echo alpha"',
        ),
    ]


def test_the_role_must_match_and_the_needle_is_case_sensitive() -> None:
    assert graded(
        {"request_contains": [entry(0, "assistant", "alpha"), entry(0, "user", "ALPHA")]}
    ) == [
        (
            'request_contains(turn 0, "assistant", "alpha")',
            False,
            "not found in 2 request(s) of turn 0; the assistant messages of the last "
            "(turn 0, request 1): none",
        ),
        (
            'request_contains(turn 0, "user", "ALPHA")',
            False,
            "not found in 2 request(s) of turn 0; the user messages of the last "
            '(turn 0, request 1): ["echo alpha"]',
        ),
    ]


def test_a_request_never_made_fails_both_polarities() -> None:
    checks = {
        "request_contains": [entry(0, "user", "echo", step=2), entry(2, "user", "x")],
        "request_not_contains": [entry(0, "user", "zzz", step=2), entry(2, "user", "x")],
    }
    missing_step = "no request of turn 0 was answered by step 2: the turn made 2 request(s)"
    assert graded(checks) == [
        ('request_contains(turn 0, step 2, "user", "echo")', False, missing_step),
        ('request_contains(turn 2, "user", "x")', False, "turn 2 made no model request"),
        ('request_not_contains(turn 0, step 2, "user", "zzz")', False, missing_step),
        ('request_not_contains(turn 2, "user", "x")', False, "turn 2 made no model request"),
    ]


def test_tools_are_checked_in_every_request() -> None:
    assert graded(
        {"tools_offered": ["echo", "fail"], "tools_not_offered": ["fail", "list_files"]}
    ) == [
        ('tools_offered("echo")', True, "offered in 3 request(s)"),
        ('tools_offered("fail")', False, 'not offered in turn 0, request 0; it offered: ["echo"]'),
        (
            'tools_not_offered("fail")',
            False,
            'offered in turn 1, request 0; it offered: ["echo", "fail"]',
        ),
        ('tools_not_offered("list_files")', True, "not offered in 3 request(s)"),
    ]


def test_the_report_says_when_a_withheld_tool_is_not_the_agents() -> None:
    checks = expects(tools_not_offered=["shell", "fail"])
    tools = frozenset({"echo", "fail"})
    only_echo = conversation((0, 0, request(("user", "hi"))))
    grades = grade(checks, record(), agent_tools=tools, conversation=only_echo)
    assert [g.detail for g in grades] == [
        "not offered in 1 request(s) (not a tool the agent registers)",
        "not offered in 1 request(s)",
    ]


def test_instructions_are_those_of_the_first_request() -> None:
    later = conversation(
        (0, 0, request(("user", "hi"))), (0, 1, request(("system", "Be brief."), ("user", "hi")))
    )
    assert graded({"instructions_contain": ["Be brief."]}, later) == [
        (
            'instructions_contain("Be brief.")',
            False,
            "the first request (turn 0, request 0) has no system message",
        )
    ]
    assert graded({"instructions_contain": ["brief", "long"]}) == [
        ('instructions_contain("brief")', True, "found"),
        (
            'instructions_contain("long")',
            False,
            'not found in the system message of the first request (turn 0, request 0): "Be brief."',
        ),
    ]


def test_long_messages_are_clipped_in_details() -> None:
    long = "x" * 900
    conv = conversation((0, 0, request(("system", long), ("user", long))))
    grades = graded(
        {"request_not_contains": [entry(0, "user", "xx")], "instructions_contain": ["y"]}, conv
    )
    assert [detail for _, _, detail in grades] == [
        f'unexpectedly present in turn 0, request 0: user message "{"x" * 500}… (900 chars)"',
        "not found in the system message of the first request (turn 0, request 0): "
        f'"{"x" * 500}… (900 chars)"',
    ]


def test_the_checks_grade_after_response_json_and_before_conformance() -> None:
    checks = strict_expects(
        {
            "instructions_contain": ["brief"],
            "response_json": {"/ok": True},
            "tools_offered": ["echo"],
            "request_contains": [entry(0, "user", "echo")],
        }
    )
    grades = grade(checks, RunRecord(final_response='{"ok": true}'), conversation=TWO_TURNS)
    assert [(g.check, g.category) for g in grades] == [
        ('response_json("/ok")', "response"),
        ('request_contains(turn 0, "user", "echo")', "request"),
        ('tools_offered("echo")', "request"),
        ('instructions_contain("brief")', "request"),
    ]


def test_repeated_entries_get_unique_names() -> None:
    checks = {"tools_offered": ["echo", "echo"], "request_contains": [entry(0, "user", "a")] * 2}
    assert [check for check, _, _ in graded(checks)] == [
        'request_contains(turn 0, "user", "a")',
        'request_contains(turn 0, "user", "a") #2',
        'tools_offered("echo")',
        'tools_offered("echo") #2',
    ]


# --- the empty run, and assertion counting ---------------------------------------------------

EVERY_FAMILY = {
    "request_contains": [entry(0, "user", "Echo hello")],
    "request_not_contains": [entry(0, "user", "shell"), entry(0, "tool", "hello", step=0)],
    "tools_offered": ["echo"],
    "tools_not_offered": ["write_file"],
    "instructions_contain": ["terse"],
}


def test_the_empty_run_fails_every_entry_the_negative_ones_too() -> None:
    grades = grade(expects(**EVERY_FAMILY), RunRecord())
    assert len(grades) == 6
    assert {(g.passed, g.detail, g.category) for g in grades} == {(False, NO_REQUEST, "request")}
    assert [g.field for g in grades] == [
        "$.expects.request_contains[0]",
        "$.expects.request_not_contains[0]",
        "$.expects.request_not_contains[1]",
        "$.expects.tools_offered[0]",
        "$.expects.tools_not_offered[0]",
        "$.expects.instructions_contain[0]",
    ]
    # A run that did go on but never asked the model is no better.
    none_asked = conversation()
    assert {
        g.detail for g in grade(expects(**EVERY_FAMILY), record(), conversation=none_asked)
    } == {NO_REQUEST}


def test_each_entry_is_one_assertion() -> None:
    assert assertion_count(expects(**EVERY_FAMILY)) == 6
    assert assertion_count(expects(tools_not_offered=["a", "b", "c"])) == 3


@pytest.mark.parametrize(
    "negative",
    [
        {"request_not_contains": [entry(0, "user", "rm -rf")]},
        {"tools_not_offered": ["write_file"]},
    ],
)
def test_a_case_of_only_negative_request_checks_is_not_vacuous(
    tmp_path: Path, negative: dict[str, Any]
) -> None:
    data = replay_trace(expects=negative)
    assert not empty_run_passes(trace_of(data))
    case = admit(write_fixture(tmp_path, "case.json", data))
    assert case.trace.expects is not None
    # The same case with a check the empty run passes is refused, so the test above can fail.
    vacuous = replay_trace(expects={"tools_not_used": ["write_file"]})
    refuse_one(tmp_path, vacuous, "$.expects", EMPTY_RUN_PASSES)


# --- admission -----------------------------------------------------------------------------


def with_checks(checks: dict[str, Any], mode: str = "replay") -> dict[str, Any]:
    data = replay_trace() if mode == "replay" else live_trace()
    data["expects"].update(checks)
    return data


BLANK = "empty or whitespace-only entry asserts nothing"


@pytest.mark.parametrize(
    ("checks", "field", "message"),
    [
        (
            {"request_contains": [entry(0, "user", "")]},
            "$.expects.request_contains[0].needle",
            "empty or whitespace-only needle asserts nothing",
        ),
        (
            {"request_not_contains": [entry(0, "user", "ok"), entry(0, "tool", " \n")]},
            "$.expects.request_not_contains[1].needle",
            "empty or whitespace-only needle asserts nothing",
        ),
        (
            {"request_contains": [entry(1, "user", "Echo")]},
            "$.expects.request_contains[0].turn",
            "turn 1 does not exist: the fixture has 1 turn(s), counted from 0",
        ),
        (
            {"request_not_contains": [entry(0, "tool", "hello", step=2)]},
            "$.expects.request_not_contains[0].step",
            "step 2 does not exist: turn 0 scripts 2 step(s), counted from 0",
        ),
        ({"tools_offered": ["echo", ""]}, "$.expects.tools_offered[1]", BLANK),
        ({"tools_not_offered": ["  "]}, "$.expects.tools_not_offered[0]", BLANK),
        ({"instructions_contain": ["\t"]}, "$.expects.instructions_contain[0]", BLANK),
        (
            {"tools_not_offered": ["fail", "wirte_file"]},
            "$.expects.tools_not_offered[1]",
            "'wirte_file' is not a tool of openai-agents (did you mean write_file?): a tool it "
            "does not have is never offered, so the check could never fail",
        ),
        (
            {"request_contains": [{"turn": 0, "role": "user", "needle": "x", "stpe": 1}]},
            "$.expects.request_contains[0].stpe",
            "unknown key (did you mean step?)",
        ),
        (
            {"request_contains": [entry(0, "model", "x")]},
            "$.expects.request_contains[0].role",
            "Invalid enum value 'model'",
        ),
        (
            {"request_contains": [entry(-1, "user", "x")]},
            "$.expects.request_contains[0].turn",
            "Expected `int` >= 0",
        ),
        (
            {"request_contains": [{"turn": 0, "needle": "x"}]},
            "$.expects.request_contains[0].role",
            "missing required key",
        ),
        (
            {"tools_offerd": ["echo"]},
            "$.expects.tools_offerd",
            "unknown key (did you mean tools_offered?)",
        ),
    ],
)
def test_admission_refuses(
    tmp_path: Path, checks: dict[str, Any], field: str, message: str
) -> None:
    refuse_one(tmp_path, with_checks(checks), field, message)


def test_the_turn_and_step_of_the_last_request_are_admitted(tmp_path: Path) -> None:
    checks = {"request_contains": [entry(0, "tool", "hello", step=1)]}
    admit(write_fixture(tmp_path, "case.json", with_checks(checks)))


def test_the_turn_range_counts_every_turn(tmp_path: Path) -> None:
    data = carry({"request_contains": [entry(1, "tool", "zircon-42", step=1)]})
    admit(write_fixture(tmp_path / "ok", "case.json", data))
    data["expects"]["request_contains"] = [entry(2, "user", "x"), entry(0, "user", "x", step=1)]
    path = write_fixture(tmp_path / "bad", "case.json", data)
    assert lines(refusal(path)) == [
        f"{path}: $.expects.request_contains[0].turn: turn 2 does not exist: the fixture has "
        "2 turn(s), counted from 0",
        f"{path}: $.expects.request_contains[1].step: step 1 does not exist: turn 0 scripts "
        "1 step(s), counted from 0",
    ]


def test_live_cases_range_check_the_turn_only(tmp_path: Path) -> None:
    # Live: no scripted steps, so any step may be named (the Nth request of the turn).
    steps = {"request_contains": [entry(0, "tool", "hello", step=5)]}
    admit(write_fixture(tmp_path, "case.json", with_checks(steps, "live")), mode="live")
    refuse_one(
        tmp_path,
        with_checks({"request_contains": [entry(1, "user", "x")]}, "live"),
        "$.expects.request_contains[0].turn",
        "turn 1 does not exist: the fixture has 1 turn(s), counted from 0",
        mode="live",
    )


@pytest.mark.parametrize("far", ["shell", "http_request", "delete_everything"])
def test_a_withheld_tool_far_from_the_agents_is_admitted(tmp_path: Path, far: str) -> None:
    # It guards against a tool admission cannot see (a toolset known only at run time).
    admit(write_fixture(tmp_path, "case.json", with_checks({"tools_not_offered": [far]})))


def test_the_fields_are_in_the_fixture_schema() -> None:
    from harness.fixtures.schema import json_schema

    schema = json_schema()
    props = schema["$defs"]["Expects"]["properties"]
    for name in (
        "request_contains",
        "request_not_contains",
        "tools_offered",
        "tools_not_offered",
        "instructions_contain",
    ):
        assert name in props, name
    spec = schema["$defs"]["RequestExpect"]
    assert spec["required"] == ["turn", "role", "needle"]
    assert spec["properties"]["role"]["enum"] == ["assistant", "system", "tool", "user"]
    assert spec["additionalProperties"] is False


def test_the_faithful_own_loop_passes_the_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{write_module(tmp_path, FAITHFUL_LOOP)}:factory"
    case = run_one(tmp_path, carry(HOLDS), spec)
    assert case.passed, [(g.check, g.detail) for g in case.grades if not g.passed]
    assert len(request_grades(case)) == 7
