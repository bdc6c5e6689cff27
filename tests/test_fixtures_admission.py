"""`harness.fixtures.admission`: admission of one fixture (SPEC section 4): every refusal names the
file and the JSON path. Also the live-mode keys (`tools` and `setup.workspace_files` in both
modes, `repeat` and `cluster` in neither, a live turn never carries `steps`) and the
empty-run vacuity check."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    BUILTIN_SURFACE,
    BUILTIN_TOOLS,
    COMMAND,
    EMPTY_RUN,
    MODES,
    NO_ASSERTION,
    NO_BOUND,
    SHARED_FIXTURES,
    Cli,
    admit,
    base,
    child_environment,
    fixture,
    lines,
    live_trace,
    project,
    refusal,
    refuse_one,
    refused,
    replay_trace,
    setup,
    text_step,
    trace_of,
    turn,
    write_fixture,
)

from harness.agents.protocol import AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.expectations.dispatch_payloads import PayloadExpect
from harness.expectations.registry import Expects, assertion_count
from harness.fixtures.admission import empty_run_passes
from harness.fixtures.schema import LlmTrace, TextResponse, ToolCallsResponse, parse_fixture
from harness.io.json_paths import line_of

Mutation = Callable[[dict[str, Any]], None]

# Paths into the base replay trace of `replay_trace()`.
CALL_STEP = "$.turns[0].steps[0]"
TEXT_STEP = "$.turns[0].steps[1]"
CALL = f"{CALL_STEP}.response.tool_calls[0]"


# How admission lists the default agent's tools.
def _call_step(d: dict[str, Any]) -> dict[str, Any]:
    return d["turns"][0]["steps"][0]


def _text_step(d: dict[str, Any]) -> dict[str, Any]:
    return d["turns"][0]["steps"][1]


def _call(d: dict[str, Any]) -> dict[str, Any]:
    return d["turns"][0]["steps"][0]["response"]["tool_calls"][0]


def mutated(mutation: Mutation, base: dict[str, Any] | None = None) -> dict[str, Any]:
    data = replay_trace() if base is None else base
    mutation(data)
    return data


# --- 1. unreadable, not UTF-8, not JSON, not an object, duplicate keys --------------------


def test_not_utf8_is_refused_with_the_byte_offset(tmp_path: Path) -> None:
    text = json.dumps(replay_trace(description="caf\u00e9"), ensure_ascii=False)
    raw = text.encode("utf-8").replace("caf\u00e9".encode(), b"caf\xe9")
    offset = raw.index(b"\xe9")
    refuse_one(tmp_path, raw, "$", f"not UTF-8: invalid byte at offset {offset}")


def test_utf16_file_is_not_utf8(tmp_path: Path) -> None:
    raw = json.dumps(replay_trace()).encode("utf-16")  # starts with a BOM, 0xff 0xfe
    refuse_one(tmp_path, raw, "$", "not UTF-8: invalid byte at offset 0")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "model_name": "m",\n  "turns": [,]\n}', "Expecting value (line 3, column 13)"),
        ('{"model_name": "m"', "Expecting ',' delimiter (line 1, column 19)"),
        ("{} trailing", "Extra data (line 1, column 4)"),
        ("", "Expecting value (line 1, column 1)"),
        (
            "{'model_name': 'm'}",
            "Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
    ],
)
def test_not_json_names_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    refuse_one(tmp_path, text, "$", f"not valid JSON: {where}")


def test_deeply_nested_json_is_refused_not_a_crash(tmp_path: Path) -> None:
    text = '{"model_name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    refuse_one(tmp_path, text, "$", "not valid JSON: nested too deeply")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[]", "list"),
        ('"trace"', "str"),
        ("3", "int"),
        ("1.5", "float"),
        ("null", "null"),
        ("true", "bool"),
    ],
)
def test_not_an_object(tmp_path: Path, text: str, kind: str) -> None:
    refuse_one(tmp_path, text, "$", f"expected a JSON object, got {kind}")


DUPLICATE = "in one JSON object: refusing to guess which value was meant"


def test_duplicate_top_level_key(tmp_path: Path) -> None:
    text = json.dumps(replay_trace())
    text = text.replace('"model_name": "echo-hello"', '"model_name": "a", "model_name": "b"')
    refuse_one(tmp_path, text, "$.model_name", f"duplicate key 'model_name' {DUPLICATE}")


def test_duplicate_nested_key_names_its_path(tmp_path: Path) -> None:
    text = json.dumps(replay_trace())
    text = text.replace('"user_input": "Echo hello for me"', '"user_input": "a", "user_input": "b"')
    text = text.replace('"tools_used": ["echo"]', '"tools_used": ["echo"], "tools_used": []')
    path = write_fixture(tmp_path, "case.json", text)
    assert lines(refusal(path)) == [
        f"{path}: $.turns[0].user_input: duplicate key 'user_input' {DUPLICATE}",
        f"{path}: $.expects.tools_used: duplicate key 'tools_used' {DUPLICATE}",
    ]


def test_duplicate_key_inside_tool_arguments(tmp_path: Path) -> None:
    text = json.dumps(replay_trace())
    text = text.replace('{"message": "hello"}', '{"message": "hello", "message": "bye"}')
    refuse_one(tmp_path, text, f"{CALL}.arguments.message", f"duplicate key 'message' {DUPLICATE}")


def test_duplicate_key_that_is_not_an_identifier_is_quoted(tmp_path: Path) -> None:
    text = json.dumps(live_trace(setup={"workspace_files": {"notes/a.txt": "x"}}))
    text = text.replace('"notes/a.txt": "x"', '"notes/a.txt": "x", "notes/a.txt": "y"')
    refuse_one(
        tmp_path,
        text,
        '$.setup.workspace_files["notes/a.txt"]',
        f"duplicate key 'notes/a.txt' {DUPLICATE}",
        mode="live",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "case.json", replay_trace())
    path.chmod(0)
    try:
        assert lines(refusal(path)) == [f"{path}: $: cannot read: Permission denied"]
    finally:
        path.chmod(0o600)


# --- 2. unknown keys at every level ------------------------------------------------------


def test_every_schema_fault_is_listed_not_only_the_first(tmp_path: Path) -> None:
    # A misspelt key is both unknown and leaves its required key missing; a wrong type
    # elsewhere in the same fixture is listed too.
    def mutation(d: dict[str, Any]) -> None:
        d["expects"]["tool_results_contain"] = [{"tool": "echo", "neddle": "hello"}]
        d["model_name"] = 3

    problems = refusal(write_fixture(tmp_path, "case.json", mutated(mutation)))
    assert [(p.field, p.message) for p in problems] == [
        ("$.model_name", "Expected `str`, got `int`"),
        ("$.expects.tool_results_contain[0].neddle", "unknown key (did you mean needle?)"),
        ("$.expects.tool_results_contain[0].needle", "missing required key"),
    ]


@pytest.mark.parametrize(
    ("mutation", "field", "message"),
    [
        pytest.param(
            lambda d: d.update(expect={"response_contains": ["x"]}),
            "$.expect",
            "unknown key (did you mean expects?)",
            id="top-level",
        ),
        pytest.param(
            lambda d: d.update(zzz=1),
            "$.zzz",
            "unknown key (known keys: model_name, turns, id, description, expects, setup, "
            "tools, repeat, cluster, min_pass_rate, next_turn_agent, origin)",
            id="top-level-no-close-match",
        ),
        pytest.param(
            lambda d: d["turns"][0].update(user_imput="x"),
            "$.turns[0].user_imput",
            "unknown key (did you mean user_input?)",
            id="turn",
        ),
        pytest.param(
            lambda d: _call_step(d).update(respnse={}),
            f"{CALL_STEP}.respnse",
            "unknown key (did you mean response?)",
            id="step",
        ),
        pytest.param(
            lambda d: _text_step(d)["response"].update(contnet="x"),
            f"{TEXT_STEP}.response.contnet",
            "unknown key (did you mean content?)",
            id="text-response",
        ),
        pytest.param(
            lambda d: _text_step(d)["response"].update(output_token=3),
            f"{TEXT_STEP}.response.output_token",
            "unknown key (did you mean output_tokens?)",
            id="text-response-tokens",
        ),
        pytest.param(
            lambda d: _call_step(d)["response"].update(tool_call=[]),
            f"{CALL_STEP}.response.tool_call",
            "unknown key (did you mean tool_calls?)",
            id="tool-calls-response",
        ),
        pytest.param(
            lambda d: _call_step(d)["response"].update(input_tokns=3),
            f"{CALL_STEP}.response.input_tokns",
            "unknown key (did you mean input_tokens?)",
            id="tool-calls-response-tokens",
        ),
        pytest.param(
            lambda d: _call(d).update(argumnts={}),
            f"{CALL}.argumnts",
            "unknown key (did you mean arguments?)",
            id="tool-call",
        ),
        pytest.param(
            lambda d: d["expects"].update(respose_contains=["x"]),
            "$.expects.respose_contains",
            "unknown key (did you mean response_contains?)",
            id="expects",
        ),
        pytest.param(
            lambda d: d["expects"].update(tool_used=["echo"]),
            "$.expects.tool_used",
            "unknown key (did you mean tools_used?)",
            id="expects-tool-used",
        ),
        pytest.param(
            lambda d: d["expects"].update(
                tool_arguments_contain=[{"tool": "echo", "needle": "hello", "call_idx": 0}]
            ),
            "$.expects.tool_arguments_contain[0].call_idx",
            "unknown key (did you mean call_index?)",
            id="payload-arguments",
        ),
        pytest.param(
            lambda d: d["expects"].update(
                tool_results_contain=[
                    {"tool": "echo", "needle": "hello"},
                    {"tool": "echo", "needle": "hello", "neddle": "hello"},
                ]
            ),
            "$.expects.tool_results_contain[1].neddle",
            "unknown key (did you mean needle?)",
            id="payload-results",
        ),
    ],
)
def test_unknown_key_is_refused_with_its_path(
    tmp_path: Path, mutation: Mutation, field: str, message: str
) -> None:
    refuse_one(tmp_path, mutated(mutation), field, message)


def test_unknown_key_in_setup(tmp_path: Path) -> None:
    data = live_trace(setup={"workspace_file": {"a.txt": "x"}})
    refuse_one(
        tmp_path,
        data,
        "$.setup.workspace_file",
        "unknown key (did you mean workspace_files?)",
        mode="live",
    )


def test_unknown_key_in_a_later_turn_and_step(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"].append(
        {
            "user_input": "again",
            "steps": [{"response": {"type": "text", "content": "ok", "cost": 3}}],
        }
    )
    refuse_one(
        tmp_path,
        data,
        "$.turns[1].steps[0].response.cost",
        "unknown key (known keys: content, input_tokens, output_tokens)",
    )


# --- 2. wrong types, negative counts, floats and bools for ints, missing keys ------------


@pytest.mark.parametrize(
    ("mutation", "field", "message"),
    [
        (lambda d: d.update(model_name=3), "$.model_name", "Expected `str`, got `int`"),
        (lambda d: d.update(id=7), "$.id", "Expected `str | null`, got `int`"),
        (
            lambda d: d.update(description=["x"]),
            "$.description",
            "Expected `str | null`, got `array`",
        ),
        (lambda d: d.update(turns={}), "$.turns", "Expected `array`, got `object`"),
        (lambda d: d["turns"].__setitem__(0, "hi"), "$.turns[0]", "Expected `object`, got `str`"),
        (
            lambda d: d["turns"][0].update(user_input=None),
            "$.turns[0].user_input",
            "Expected `str`, got `null`",
        ),
        (
            lambda d: d["turns"][0].update(steps={}),
            "$.turns[0].steps",
            "Expected `array | null`, got `object`",
        ),
        (
            lambda d: _text_step(d).update(response="hi"),
            f"{TEXT_STEP}.response",
            "Expected `object`, got `str`",
        ),
        (
            lambda d: _text_step(d)["response"].update(content=None),
            f"{TEXT_STEP}.response.content",
            "Expected `str`, got `null`",
        ),
        (
            lambda d: _call_step(d)["response"].update(tool_calls={}),
            f"{CALL_STEP}.response.tool_calls",
            "Expected `array`, got `object`",
        ),
        (lambda d: _call(d).update(id=1), f"{CALL}.id", "Expected `str`, got `int`"),
        (lambda d: _call(d).update(name=None), f"{CALL}.name", "Expected `str`, got `null`"),
        (
            lambda d: _call(d).update(arguments=["hello"]),
            f"{CALL}.arguments",
            "Expected `object`, got `array`",
        ),
        (
            lambda d: _call(d).update(arguments='{"message": "hello"}'),
            f"{CALL}.arguments",
            "Expected `object`, got `str`",
        ),
        (lambda d: d.update(expects=[]), "$.expects", "Expected `object | null`, got `array`"),
        (
            lambda d: d["expects"].update(response_contains="hello"),
            "$.expects.response_contains",
            "Expected `array`, got `str`",
        ),
        (
            lambda d: d["expects"].update(tools_used=["echo", 1]),
            "$.expects.tools_used[1]",
            "Expected `str`, got `int`",
        ),
        (
            lambda d: d["expects"].update(all_tools_succeeded="true"),
            "$.expects.all_tools_succeeded",
            "Expected `bool | null`, got `str`",
        ),
        (
            lambda d: d["expects"].update(all_tools_succeeded=1),
            "$.expects.all_tools_succeeded",
            "Expected `bool | null`, got `int`",
        ),
        (
            lambda d: d["expects"].update(tool_arguments_contain=[{"tool": "echo", "needle": 3}]),
            "$.expects.tool_arguments_contain[0].needle",
            "Expected `str`, got `int`",
        ),
        (
            lambda d: d["expects"].update(tool_results_contain={"tool": "echo", "needle": "x"}),
            "$.expects.tool_results_contain",
            "Expected `array`, got `object`",
        ),
    ],
)
def test_wrong_type_is_refused(
    tmp_path: Path, mutation: Mutation, field: str, message: str
) -> None:
    refuse_one(tmp_path, mutated(mutation), field, message)


def _set_expect(key: str) -> Callable[[dict[str, Any], Any], None]:
    return lambda d, v: d["expects"].update({key: v})


def _set_tokens(step: Callable[[dict[str, Any]], dict[str, Any]], key: str) -> Any:
    return lambda d, v: step(d)["response"].update({key: v})


def _set_call_index(d: dict[str, Any], v: Any) -> None:
    d["expects"]["tool_results_contain"] = [{"tool": "echo", "needle": "hello", "call_index": v}]


INT_FIELDS = [
    pytest.param(_set_expect("max_tool_calls"), "$.expects.max_tool_calls", True, id="max"),
    pytest.param(_set_expect("min_tool_calls"), "$.expects.min_tool_calls", True, id="min"),
    pytest.param(_set_expect("exact_tool_calls"), "$.expects.exact_tool_calls", True, id="exact"),
    pytest.param(
        _set_tokens(_text_step, "input_tokens"),
        f"{TEXT_STEP}.response.input_tokens",
        False,
        id="text-input-tokens",
    ),
    pytest.param(
        _set_tokens(_call_step, "output_tokens"),
        f"{CALL_STEP}.response.output_tokens",
        False,
        id="call-output-tokens",
    ),
    pytest.param(
        _set_call_index,
        "$.expects.tool_results_contain[0].call_index",
        True,
        id="call-index",
    ),
]


@pytest.mark.parametrize(("setter", "field", "optional"), INT_FIELDS)
def test_negative_count_is_refused(tmp_path: Path, setter: Any, field: str, optional: bool) -> None:
    refuse_one(tmp_path, mutated(lambda d: setter(d, -1)), field, "Expected `int` >= 0")


@pytest.mark.parametrize(("setter", "field", "optional"), INT_FIELDS)
@pytest.mark.parametrize(("value", "kind"), [(1.0, "float"), (True, "bool"), ("1", "str")])
def test_non_integer_count_is_refused(
    tmp_path: Path, setter: Any, field: str, optional: bool, value: Any, kind: str
) -> None:
    expected = "`int | null`" if optional else "`int`"
    refuse_one(
        tmp_path, mutated(lambda d: setter(d, value)), field, f"Expected {expected}, got `{kind}`"
    )


@pytest.mark.parametrize(
    ("value", "message"), [(0, "Expected `int` >= 1"), (51, "Expected `int` <= 50")]
)
def test_repeat_out_of_range(tmp_path: Path, value: int, message: str) -> None:
    refuse_one(tmp_path, live_trace(repeat=value), "$.repeat", message, mode="live")


@pytest.mark.parametrize(
    ("mutation", "field"),
    [
        (lambda d: d.pop("model_name"), "$.model_name"),
        (lambda d: d.pop("turns"), "$.turns"),
        (lambda d: d["turns"][0].pop("user_input"), "$.turns[0].user_input"),
        (lambda d: _text_step(d).pop("response"), f"{TEXT_STEP}.response"),
        (lambda d: _text_step(d)["response"].pop("type"), f"{TEXT_STEP}.response.type"),
        (lambda d: _text_step(d)["response"].pop("content"), f"{TEXT_STEP}.response.content"),
        (lambda d: _call_step(d)["response"].pop("tool_calls"), f"{CALL_STEP}.response.tool_calls"),
        (lambda d: _call(d).pop("id"), f"{CALL}.id"),
        (lambda d: _call(d).pop("name"), f"{CALL}.name"),
        (lambda d: _call(d).pop("arguments"), f"{CALL}.arguments"),
        (
            lambda d: d["expects"].update(tool_arguments_contain=[{"needle": "hello"}]),
            "$.expects.tool_arguments_contain[0].tool",
        ),
        (
            lambda d: d["expects"].update(tool_results_contain=[{"tool": "echo"}]),
            "$.expects.tool_results_contain[0].needle",
        ),
    ],
)
def test_missing_required_key(tmp_path: Path, mutation: Mutation, field: str) -> None:
    refuse_one(tmp_path, mutated(mutation), field, "missing required key")


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("txt", "Invalid value 'txt'"),
        ("Text", "Invalid value 'Text'"),
        ("tool_call", "Invalid value 'tool_call'"),
        (3, "Expected `str`, got `int`"),
    ],
)
def test_bad_response_type_tag(tmp_path: Path, tag: Any, message: str) -> None:
    refuse_one(
        tmp_path,
        mutated(lambda d: _text_step(d)["response"].update(type=tag)),
        f"{TEXT_STEP}.response.type",
        f"{message}; a response's type is 'text' or 'tool_calls'",
    )


def test_text_response_with_tool_call_fields_is_refused(tmp_path: Path) -> None:
    # The tag selects the variant; a text response carrying tool_calls is an unknown key.
    refuse_one(
        tmp_path,
        mutated(lambda d: _text_step(d)["response"].update(tool_calls=[])),
        f"{TEXT_STEP}.response.tool_calls",
        "unknown key (known keys: content, input_tokens, output_tokens)",
    )


# --- 3. turns, steps, tool calls ---------------------------------------------------------


def test_no_turns(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(turns=[]),
        "$.turns",
        "no turns: the agent would never run, so nothing is tested",
    )


@pytest.mark.parametrize("blank", ["", " ", "\t\n  "])
def test_blank_user_input(tmp_path: Path, blank: str) -> None:
    data = mutated(lambda d: d["turns"][0].update(user_input=blank))
    refuse_one(tmp_path, data, "$.turns[0].user_input", "blank user input")


def test_blank_user_input_in_live_mode(tmp_path: Path) -> None:
    data = live_trace(turns=[{"user_input": "go"}, {"user_input": "  "}])
    refuse_one(tmp_path, data, "$.turns[1].user_input", "blank user input", mode="live")


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(lambda d: d["turns"][0].pop("steps"), id="absent"),
        pytest.param(lambda d: d["turns"][0].update(steps=None), id="null"),
        pytest.param(lambda d: d["turns"][0].update(steps=[]), id="empty"),
    ],
)
def test_replay_turn_without_steps(tmp_path: Path, mutation: Mutation) -> None:
    refuse_one(
        tmp_path,
        mutated(mutation),
        "$.turns[0].steps",
        "no scripted steps: replay has nothing to answer with",
    )


def test_replay_second_turn_without_steps(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"].append({"user_input": "and again"})
    refuse_one(
        tmp_path, data, "$.turns[1].steps", "no scripted steps: replay has nothing to answer with"
    )


def test_tool_calls_response_with_no_calls(tmp_path: Path) -> None:
    data = mutated(lambda d: _call_step(d)["response"].update(tool_calls=[]))
    data["expects"] = {"response_contains": ["hello"]}
    refuse_one(
        tmp_path,
        data,
        f"{CALL_STEP}.response.tool_calls",
        "empty list: a tool_calls response must call at least one tool",
    )


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_tool_call_id(tmp_path: Path, blank: str) -> None:
    refuse_one(
        tmp_path, mutated(lambda d: _call(d).update(id=blank)), f"{CALL}.id", "empty tool-call id"
    )


def _echo_step(call_id: str, message: str = "hello") -> dict[str, Any]:
    return {
        "response": {
            "type": "tool_calls",
            "tool_calls": [{"id": call_id, "name": "echo", "arguments": {"message": message}}],
        }
    }


def test_duplicate_tool_call_id_in_one_response(tmp_path: Path) -> None:
    data = replay_trace()
    calls = _call_step(data)["response"]["tool_calls"]
    calls.append({"id": "call_1", "name": "echo", "arguments": {"message": "again"}})
    refuse_one(
        tmp_path,
        data,
        f"{CALL_STEP}.response.tool_calls[1].id",
        f"duplicate tool-call id 'call_1' (first used at {CALL})",
    )


def test_duplicate_tool_call_id_across_turns(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"].append(
        {
            "user_input": "Echo it again",
            "steps": [_echo_step("call_1"), {"response": {"type": "text", "content": "again"}}],
        }
    )
    refuse_one(
        tmp_path,
        data,
        "$.turns[1].steps[0].response.tool_calls[0].id",
        f"duplicate tool-call id 'call_1' (first used at {CALL})",
    )


def test_unregistered_tool_names_the_tool_and_the_agents_tools(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        mutated(lambda d: _call(d).update(name="web_search")),
        f"{CALL}.name",
        "tool 'web_search' is not registered by agent 'openai-agents' "
        f"(its tools: {BUILTIN_TOOLS})",
    )


def test_a_misspelt_tool_gets_did_you_mean(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        mutated(lambda d: _call(d).update(name="read_flie")),
        f"{CALL}.name",
        "tool 'read_flie' is not registered by agent 'openai-agents' "
        f"(its tools: {BUILTIN_TOOLS}); did you mean read_file?",
    )


def test_unregistered_tool_for_a_custom_agent(tmp_path: Path) -> None:
    agent = AgentSurface("my_pkg.agent:build", frozenset({"lookup", "calendar"}))
    refuse_one(
        tmp_path,
        replay_trace(),
        f"{CALL}.name",
        "tool 'echo' is not registered by agent 'my_pkg.agent:build' (its tools: calendar, lookup)",
        agent=agent,
    )


def test_unregistered_tool_for_an_agent_without_tools(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(),
        f"{CALL}.name",
        "tool 'echo' is not registered by agent 'bare' (its tools: none)",
        agent=AgentSurface("bare", frozenset()),
    )


def test_each_agent_and_mode_is_answered_for_itself_fixture_after_fixture() -> None:
    """Admission remembers its answers about tool names per agent and mode: agents asked
    in turn, equal or not, each get their own, however often each is asked."""
    from harness.fixtures.admission import check_trace

    trace = trace_of(replay_trace())
    lookup = AgentSurface("lookup-agent", frozenset({"lookup"}))
    same_as_builtin = AgentSurface("openai-agents", BUILTIN_SURFACE.tools)
    for agent, refused_echo in [
        (BUILTIN_SURFACE, False),
        (lookup, True),
        (BUILTIN_SURFACE, False),
        (same_as_builtin, False),
        (lookup, True),
        (AgentSurface("lookup-agent", frozenset({"lookup", "echo"})), False),
    ]:
        for _ in range(2):
            problems = check_trace(trace, "a.json", "replay", agent)
            assert [p.field for p in problems] == ([f"{CALL}.name"] if refused_echo else [])
    assert [p.field for p in check_trace(trace, "a.json", "live", BUILTIN_SURFACE)] == [
        "$.turns[0].steps"
    ]


def test_scripted_call_to_a_tool_of_a_custom_agent_is_admitted(tmp_path: Path) -> None:
    data = mutated(lambda d: _call(d).update(name="lookup"))
    data["expects"] = {"tools_used": ["lookup"]}
    path = write_fixture(tmp_path, "case.json", data)
    case = admit(path, agent=AgentSurface("mine", frozenset({"lookup"})))
    assert case.trace.expects == Expects(tools_used=["lookup"])


def test_live_mode_refuses_scripted_steps(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(),
        "$.turns[0].steps",
        "a live case must not script model steps: the real model answers",
        mode="live",
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("setup", {"workspace_files": {"notes.txt": "hello"}}),
        ("setup", {}),
        ("tools", ["echo"]),
        ("tools", ["echo", "read_file"]),
    ],
)
def test_setup_and_tools_are_admitted_in_replay(tmp_path: Path, key: str, value: Any) -> None:
    # Setup files are written before any run and `tools` limits what the case may use:
    # both are deterministic, so replay takes them too.
    case = admit(write_fixture(tmp_path, "case.json", replay_trace(**{key: value})))
    assert getattr(case.trace, key) is not None


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("repeat", 1, "a replay is deterministic: every repetition would give the same verdict"),
        ("repeat", 3, "a replay is deterministic: every repetition would give the same verdict"),
        (
            "cluster",
            "echo-family",
            "clusters group the repeated live cases of the suite's interval",
        ),
        ("min_pass_rate", 0.8, "a replay is deterministic: its runs all pass or all fail"),
    ],
)
def test_live_only_key_is_refused_in_replay(tmp_path: Path, key: str, value: Any, why: str) -> None:
    refuse_one(
        tmp_path,
        replay_trace(**{key: value}),
        f"$.{key}",
        f"applies to live mode only ({why}); remove it",
        mode="replay",
    )


def test_repeat_cluster_and_min_pass_rate_are_admitted_in_live(tmp_path: Path) -> None:
    data = live_trace(repeat=20, cluster="echo-family", min_pass_rate=0.9)
    case = admit(write_fixture(tmp_path, "case.json", data), mode="live")
    assert (case.trace.repeat, case.trace.cluster, case.trace.min_pass_rate) == (
        20,
        "echo-family",
        0.9,
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("repeat", 0, "Expected `int` >= 1"),
        ("repeat", 51, "Expected `int` <= 50"),
        ("min_pass_rate", 0, "Expected `float` > 0.0"),
        ("min_pass_rate", 1.5, "Expected `float` <= 1.0"),
        ("cluster", " ", "empty cluster label"),
    ],
)
def test_repeat_keys_out_of_range_are_refused(
    tmp_path: Path, key: str, value: Any, message: str
) -> None:
    _, found = refused(tmp_path, live_trace(**{key: value}), "live")
    assert len(found) == 1 and f"$.{key}" in found[0] and message in found[0], found


def test_live_case_with_live_keys_is_admitted(tmp_path: Path) -> None:
    data = live_trace(
        id="live-echo-1",
        setup={"workspace_files": {"notes.txt": "hello"}},
        tools=["echo"],
    )
    path = write_fixture(tmp_path, "case.json", data)
    case = admit(path, mode="live")
    assert case.id == "live-echo-1"
    assert case.trace.tools == ["echo"]
    assert case.trace.setup is not None
    assert case.trace.setup.workspace_files == {"notes.txt": "hello"}
    # No `steps` key at all: live admission tells absent from `[]` and `null`.
    assert case.trace.turns[0].steps is msgspec.UNSET


def test_live_mode_does_not_check_scripted_tool_names(tmp_path: Path) -> None:
    # Nothing is scripted in live mode, so only the step itself is refused.
    data = mutated(lambda d: _call(d).update(name="web_search"))
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].steps",
        "a live case must not script model steps: the real model answers",
        mode="live",
    )


# --- 4. expects missing or empty ----------------------------------------------------------

MISSING = "missing: a case that asserts nothing would pass vacuously"


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(lambda d: d.pop("expects"), id="absent"),
        pytest.param(lambda d: d.update(expects=None), id="null"),
    ],
)
def test_expects_missing(tmp_path: Path, mutation: Mutation) -> None:
    refuse_one(tmp_path, mutated(mutation), "$.expects", MISSING)


@pytest.mark.parametrize(
    "expects",
    [
        pytest.param({}, id="empty-object"),
        pytest.param(
            {
                "response_contains": [],
                "response_not_contains": [],
                "response_matches": [],
                "tools_used": [],
                "tools_not_used": [],
                "tool_arguments_contain": [],
                "tool_results_contain": [],
            },
            id="all-lists-empty",
        ),
        pytest.param(
            {
                "max_tool_calls": None,
                "min_tool_calls": None,
                "exact_tool_calls": None,
                "all_tools_succeeded": None,
            },
            id="all-null",
        ),
    ],
)
def test_expects_without_assertion(tmp_path: Path, expects: dict[str, Any]) -> None:
    refuse_one(tmp_path, replay_trace(expects=expects), "$.expects", NO_ASSERTION)


def test_min_tool_calls_zero_alone_is_no_assertion_and_vacuous(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "case.json", replay_trace(expects={"min_tool_calls": 0}))
    assert lines(refusal(path)) == [
        f"{path}: $.expects: {NO_ASSERTION}",
        f"{path}: $.expects.min_tool_calls: 0 is vacuous: every run makes at least 0 calls",
    ]


# --- 5. empty entries ---------------------------------------------------------------------

VALID_ENTRY = {
    "response_contains": "hello",
    "response_not_contains": "error",
    "response_matches": "hel+o",
    "tools_used": "echo",
    "tools_not_used": "fail",
}


@pytest.mark.parametrize("family", sorted(VALID_ENTRY))
@pytest.mark.parametrize("blank", ["", " ", "\t\n"])
def test_blank_entry_in_string_family(tmp_path: Path, family: str, blank: str) -> None:
    expects = {"response_contains": ["hello"], family: [VALID_ENTRY[family], blank]}
    refuse_one(
        tmp_path,
        replay_trace(expects=expects),
        f"$.expects.{family}[1]",
        "empty or whitespace-only entry asserts nothing",
    )


@pytest.mark.parametrize("family", ["tool_arguments_contain", "tool_results_contain"])
@pytest.mark.parametrize("key", ["tool", "needle"])
@pytest.mark.parametrize("blank", ["", "  "])
def test_blank_tool_or_needle_in_payload_family(
    tmp_path: Path, family: str, key: str, blank: str
) -> None:
    entries = [{"tool": "echo", "needle": "hello"}, {"tool": "echo", "needle": "hello"}]
    entries[1][key] = blank
    refuse_one(
        tmp_path,
        replay_trace(expects={family: entries}),
        f"$.expects.{family}[1].{key}",
        f"empty {key} asserts nothing",
    )


# --- 6. vacuous and contradictory bounds ---------------------------------------------------


def test_min_tool_calls_zero_with_other_assertions(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(expects={"tools_used": ["echo"], "min_tool_calls": 0}),
        "$.expects.min_tool_calls",
        "0 is vacuous: every run makes at least 0 calls",
    )


def test_min_greater_than_max(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(expects={"min_tool_calls": 3, "max_tool_calls": 2}),
        "$.expects.min_tool_calls",
        "min_tool_calls (3) exceeds max_tool_calls (2): no run can pass",
    )


def test_exact_above_max(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(expects={"exact_tool_calls": 2, "max_tool_calls": 1}),
        "$.expects.exact_tool_calls",
        "exact_tool_calls (2) exceeds max_tool_calls (1): no run can pass",
    )


def test_exact_below_min(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(expects={"exact_tool_calls": 1, "min_tool_calls": 2}),
        "$.expects.exact_tool_calls",
        "exact_tool_calls (1) is below min_tool_calls (2): no run can pass",
    )


def test_exact_outside_both_bounds_reports_each(tmp_path: Path) -> None:
    data = replay_trace(expects={"exact_tool_calls": 5, "min_tool_calls": 6, "max_tool_calls": 4})
    path = write_fixture(tmp_path, "case.json", data)
    assert lines(refusal(path)) == [
        f"{path}: $.expects.min_tool_calls: min_tool_calls (6) exceeds max_tool_calls (4): "
        "no run can pass",
        f"{path}: $.expects.exact_tool_calls: exact_tool_calls (5) exceeds max_tool_calls (4): "
        "no run can pass",
        f"{path}: $.expects.exact_tool_calls: exact_tool_calls (5) is below min_tool_calls (6): "
        "no run can pass",
    ]


def test_consistent_bounds_at_their_edges_are_admitted(tmp_path: Path) -> None:
    data = replay_trace(expects={"min_tool_calls": 1, "max_tool_calls": 1, "exact_tool_calls": 1})
    case = admit(write_fixture(tmp_path, "case.json", data))
    assert case.trace.expects == Expects(min_tool_calls=1, max_tool_calls=1, exact_tool_calls=1)


# --- 7. patterns that do not compile --------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        # RE2's own words (the original harness's dialect), not Python's.
        ("(unclosed", "missing ): (unclosed"),
        ("[a-", "missing ]: [a-"),
        ("*hello", "no argument for repetition operator: *"),
        (
            "hello\\Z",
            "invalid escape sequence: \\Z (`\\Z` is Python's end of text; RE2, the original "
            "harness's dialect, spells it `\\z`",
        ),
        (
            "(?=x)y",
            "invalid perl operator: (?= (RE2 has no lookaround or backreferences: it matches "
            "in linear time)",
        ),
        ("(a)\\1", "invalid escape sequence: \\1 (RE2 has no lookaround or backreferences"),
    ],
)
def test_response_matches_pattern_that_does_not_compile(
    tmp_path: Path, pattern: str, reason: str
) -> None:
    data = replay_trace(expects={"response_matches": ["hel+o", pattern]})
    path = write_fixture(tmp_path, "case.json", data)
    [line] = lines(refusal(path))
    prefix = f"{path}: $.expects.response_matches[1]: pattern does not compile: "
    assert line.startswith(prefix)
    assert reason in line[len(prefix) :]


# --- the empty-run vacuity check ----------------------------------------------------------


@pytest.mark.parametrize(
    "expects",
    [
        {"max_tool_calls": 0},
        {"max_tool_calls": 3},
        {"exact_tool_calls": 0},
        {"response_not_contains": ["error"]},
        {"tools_not_used": ["fail"]},
        {"all_tools_succeeded": True},
        {"response_matches": ["^"]},
        {"response_matches": ["x*"]},
        {"max_tool_calls": 0, "tools_not_used": ["echo"], "response_not_contains": ["error"]},
    ],
)
def test_case_that_passes_against_an_empty_run_is_refused(
    tmp_path: Path, expects: dict[str, Any]
) -> None:
    data = replay_trace(expects=expects)
    data["turns"][0]["steps"] = [{"response": {"type": "text", "content": "hi"}}]
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN)


# --- every problem of one fixture is listed ------------------------------------------------


def test_all_semantic_problems_of_one_fixture_are_listed(tmp_path: Path) -> None:
    data = replay_trace(cluster="c", expects={"tools_used": ["echo", ""], "min_tool_calls": 0})
    data["turns"][0]["user_input"] = " "
    _call(data)["name"] = "web_search"
    data["turns"].append({"user_input": "again", "steps": []})
    path = write_fixture(tmp_path, "case.json", data)
    assert lines(refusal(path)) == [
        f"{path}: $.cluster: applies to live mode only (clusters group the repeated live cases "
        "of the suite's interval); remove it",
        f"{path}: $.turns[0].user_input: blank user input",
        f"{path}: {CALL}.name: tool 'web_search' is not registered by agent 'openai-agents' "
        f"(its tools: {BUILTIN_TOOLS})",
        f"{path}: $.turns[1].steps: no scripted steps: replay has nothing to answer with",
        f"{path}: $.expects.tools_used[1]: empty or whitespace-only entry asserts nothing",
        f"{path}: $.expects.min_tool_calls: 0 is vacuous: every run makes at least 0 calls",
    ]


# --- positive: what must be admitted ------------------------------------------------------


def _shared_fixtures() -> list[Any]:
    if not SHARED_FIXTURES.is_dir():
        return [pytest.param(None, id="shared-fixtures-missing")]
    return [pytest.param(p, id=p.name) for p in sorted(SHARED_FIXTURES.glob("*.json"))]


@pytest.mark.parametrize("path", _shared_fixtures())
def test_shared_fixture_of_the_original_harness_is_admitted(path: Path | None) -> None:
    if path is None:
        pytest.skip(f"{SHARED_FIXTURES} does not exist")
    case = admit(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert case.id == raw.get("id", raw["model_name"])
    assert case.path == path
    assert case.text == path.read_text(encoding="utf-8")
    assert len(case.trace.turns) == len(raw["turns"])
    assert case.trace.expects is not None


def test_base_fixture_parses_into_the_schema(tmp_path: Path) -> None:
    case = admit(write_fixture(tmp_path, "case.json", replay_trace()))
    assert case.id == "echo-hello"
    [turn] = case.trace.turns
    assert turn.user_input == "Echo hello for me"
    assert turn.steps is not None
    calls, text = (step.response for step in turn.steps)
    assert isinstance(calls, ToolCallsResponse)
    assert (calls.input_tokens, calls.output_tokens) == (0, 0)
    assert [(c.id, c.name, c.arguments) for c in calls.tool_calls] == [
        ("call_1", "echo", {"message": "hello"})
    ]
    assert text == TextResponse(content="The echo tool said: hello")


@pytest.mark.parametrize(
    "expects",
    [
        {"response_contains": ["hello"]},
        {"response_matches": ["hel+o"]},
        {"response_matches": ["\\S"]},
        {"tools_used": ["echo"]},
        {"min_tool_calls": 1},
        {"exact_tool_calls": 1},
        {"all_tools_succeeded": False},
        {"tool_arguments_contain": [{"tool": "echo", "needle": "hello"}]},
        {"tool_results_contain": [{"tool": "echo", "needle": "hello", "call_index": 0}]},
    ],
    ids=lambda e: next(iter(e)),
)
def test_single_field_real_assertion_is_admitted(tmp_path: Path, expects: dict[str, Any]) -> None:
    case = admit(write_fixture(tmp_path, "case.json", replay_trace(expects=expects)))
    assert case.trace.expects == Expects(**_as_struct_kwargs(expects))


def _as_struct_kwargs(expects: dict[str, Any]) -> dict[str, Any]:
    out = dict(expects)
    for family in ("tool_arguments_contain", "tool_results_contain"):
        if family in out:
            out[family] = [PayloadExpect(**p) for p in out[family]]
    return out


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("id", None),
        ("description", None),
        ("setup", None),
        ("tools", None),
        ("repeat", None),
        ("cluster", None),
    ],
)
def test_null_optional_top_level_field_equals_absent(tmp_path: Path, key: str, value: None) -> None:
    absent = admit(write_fixture(tmp_path, "absent.json", replay_trace()))
    null = admit(write_fixture(tmp_path, "null.json", replay_trace(**{key: value})))
    assert null.trace == absent.trace
    assert null.id == "echo-hello"


@pytest.mark.parametrize(
    "key", ["max_tool_calls", "min_tool_calls", "exact_tool_calls", "all_tools_succeeded"]
)
def test_null_optional_expectation_equals_absent(tmp_path: Path, key: str) -> None:
    absent = admit(write_fixture(tmp_path, "absent.json", replay_trace()))
    data = replay_trace()
    data["expects"][key] = None
    null = admit(write_fixture(tmp_path, "null.json", data))
    assert null.trace == absent.trace
    assert getattr(null.trace.expects, key) is None


def test_null_call_index_equals_absent(tmp_path: Path) -> None:
    with_null = {"tool_results_contain": [{"tool": "echo", "needle": "hello", "call_index": None}]}
    without = {"tool_results_contain": [{"tool": "echo", "needle": "hello"}]}
    a = admit(write_fixture(tmp_path, "a.json", replay_trace(expects=with_null)))
    b = admit(write_fixture(tmp_path, "b.json", replay_trace(expects=without)))
    assert a.trace == b.trace
    assert a.trace.expects is not None
    assert a.trace.expects.tool_results_contain[0].call_index is None


def test_explicit_id_is_the_case_id(tmp_path: Path) -> None:
    case = admit(write_fixture(tmp_path, "case.json", replay_trace(id="stable-id")))
    assert case.id == "stable-id"
    assert case.trace.model_name == "echo-hello"


def test_tokens_and_unicode_are_kept(tmp_path: Path) -> None:
    data = replay_trace(description="naïve café 日本語 ✓")
    _text_step(data)["response"].update(input_tokens=7, output_tokens=0)
    case = admit(write_fixture(tmp_path, "case.json", data))
    assert isinstance(case.trace, LlmTrace)
    assert case.trace.description == "naïve café 日本語 ✓"
    assert case.trace.turns[0].steps is not None
    response = case.trace.turns[0].steps[1].response
    assert (response.input_tokens, response.output_tokens) == (7, 0)


def test_surface_of_the_default_agent_is_the_builtin_tools() -> None:
    assert BUILTIN_SURFACE.tools == frozenset(
        {"echo", "fail", "read_file", "write_file", "list_files"}
    )


# --- tools: both modes ------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize("blank", ["", "  "])
def test_empty_tool_name_is_refused(tmp_path: Path, mode: str, blank: str) -> None:
    refuse_one(tmp_path, base(mode, tools=["echo", blank]), "$.tools[1]", "empty tool name", mode)


@MODES
def test_duplicate_tool_name_is_refused(tmp_path: Path, mode: str) -> None:
    refuse_one(
        tmp_path,
        base(mode, tools=["echo", "fail", "echo"]),
        "$.tools[2]",
        "duplicate tool 'echo' (also $.tools[0])",
        mode,
    )


@MODES
@pytest.mark.parametrize("name", ["shell", "bash", "run_command", "Shell", "exec_python"])
def test_command_running_tool_is_refused_saying_why(tmp_path: Path, mode: str, name: str) -> None:
    refuse_one(
        tmp_path,
        base(mode, tools=["echo", name]),
        "$.tools[1]",
        f"tool {name!r} is refused: {COMMAND}",
        mode,
    )


@MODES
def test_command_tool_is_refused_even_when_the_agent_registers_it(
    tmp_path: Path, mode: str
) -> None:
    agent = AgentSurface("risky", frozenset({"echo", "shell"}))
    refuse_one(
        tmp_path,
        base(mode, tools=["echo", "shell"]),
        "$.tools[1]",
        f"tool 'shell' is refused: {COMMAND}",
        mode,
        agent,
    )


@MODES
def test_tool_the_agent_does_not_register_is_refused(tmp_path: Path, mode: str) -> None:
    refuse_one(
        tmp_path,
        base(mode, tools=["echo", "web_search"]),
        "$.tools[1]",
        "tool 'web_search' is not registered by agent 'openai-agents' "
        f"(its tools: {BUILTIN_TOOLS})",
        mode,
    )


def test_tool_of_an_agent_without_tools(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        live_trace(tools=["echo"]),
        "$.tools[0]",
        "tool 'echo' is not registered by agent 'bare' (its tools: none)",
        "live",
        AgentSurface("bare", frozenset()),
    )


@MODES
@pytest.mark.parametrize("tools", [[], ["echo"], ["echo", "read_file", "write_file", "list_files"]])
def test_tools_are_admitted_in_both_modes(tmp_path: Path, mode: str, tools: list[str]) -> None:
    data = base(mode, tools=tools)
    if mode == "replay" and "echo" not in tools:  # no scripted echo call then
        data["turns"][0]["steps"] = [{"response": {"type": "text", "content": "hello"}}]
        data["expects"] = {"response_contains": ["hello"]}
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.tools == tools


def test_replay_call_outside_the_cases_tools_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(tools=["fail"]),
        "$.turns[0].steps[0].response.tool_calls[0].name",
        "tool 'echo' is not among the case's tools ($.tools: fail); "
        "add it there or remove the call",
    )


def test_replay_call_with_an_empty_tools_list_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        replay_trace(tools=[]),
        "$.turns[0].steps[0].response.tool_calls[0].name",
        "tool 'echo' is not among the case's tools ($.tools: none); "
        "add it there or remove the call",
    )


def test_replay_scripted_call_to_a_command_tool_is_refused(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "run_command"
    data["expects"] = {"response_contains": ["hello"]}
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].steps[0].response.tool_calls[0].name",
        f"tool 'run_command' is refused: {COMMAND}",
        agent=AgentSurface("risky", frozenset({"echo", "run_command"})),
    )


def test_a_bad_tools_entry_and_its_call_are_both_reported(tmp_path: Path) -> None:
    path, found = refused(tmp_path, replay_trace(tools=["echo", "echo", "shell"]))
    assert found == [
        f"{path}: $.tools[1]: duplicate tool 'echo' (also $.tools[0])",
        f"{path}: $.tools[2]: tool 'shell' is refused: {COMMAND}",
    ]


# --- setup.workspace_files: both modes ----------------------------------------------------------


@MODES
@pytest.mark.parametrize(
    ("relative", "reason"),
    [
        ("/etc/passwd", "absolute path escapes the workspace"),
        ("../secret.txt", "'..' escapes the workspace"),
        ("sub/../../secret.txt", "'..' escapes the workspace"),
        ("sub\\..\\..\\secret.txt", "'..' escapes the workspace"),
        ("C:/secret.txt", "drive path escapes the workspace"),
        ("", "empty path"),
        ("   ", "empty path"),
    ],
)
def test_setup_path_outside_the_workspace_is_refused(
    tmp_path: Path, mode: str, relative: str, reason: str
) -> None:
    data = base(mode, setup={"workspace_files": {"ok.txt": "x", relative: "y"}})
    refuse_one(
        tmp_path,
        data,
        f"$.setup.workspace_files[{json.dumps(relative)}]",
        f"workspace path {relative!r} refused: {reason}",
        mode,
    )


@pytest.mark.parametrize("relative", [".", "./", ".//."])
def test_setup_path_naming_the_workspace_itself_is_refused(tmp_path: Path, relative: str) -> None:
    refuse_one(
        tmp_path,
        live_trace(setup=setup(**{relative: "x"})),
        f"$.setup.workspace_files[{json.dumps(relative)}]",
        f"workspace path {relative!r} names the workspace itself, not a file",
        "live",
    )


@MODES
@pytest.mark.parametrize(
    ("first", "second"),
    [("notes.txt", "./notes.txt"), ("dir/a.txt", "dir//a.txt"), ("dir/a.txt", "dir\\a.txt")],
)
def test_setup_paths_naming_one_file_are_refused(
    tmp_path: Path, mode: str, first: str, second: str
) -> None:
    refuse_one(
        tmp_path,
        base(mode, setup=setup(**{first: "1", second: "2"})),
        f"$.setup.workspace_files[{json.dumps(second)}]",
        f"names the same file as {first!r}: one would overwrite the other",
        mode,
    )


def test_setup_file_where_another_needs_a_directory_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        live_trace(setup=setup(**{"notes": "1", "notes/today.txt": "2"})),
        '$.setup.workspace_files["notes/today.txt"]',
        "needs 'notes' to be a directory, but it is also a setup file ('notes')",
        "live",
    )


@MODES
def test_setup_files_are_admitted_in_both_modes(tmp_path: Path, mode: str) -> None:
    files = {"notes.txt": "hello", "sub/dir/data.json": '{"a": 1}', "./x.md": ""}
    case = admit(write_fixture(tmp_path, "case.json", base(mode, setup=setup(**files))), mode)  # type: ignore[arg-type]
    assert case.trace.setup is not None
    assert case.trace.setup.workspace_files == files


def test_setup_file_with_a_wrong_type_names_the_entry(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        live_trace(setup=setup(**{"a.txt": "x", "b c.txt": 3})),  # type: ignore[arg-type]
        '$.setup.workspace_files["b c.txt"]',
        "Expected `str`, got `int`",
        "live",
    )


# --- repeat / cluster: live mode only ---------------------------------------------------


def test_repeat_and_cluster_in_replay_are_both_reported(tmp_path: Path) -> None:
    path, found = refused(tmp_path, base("replay", repeat=5, cluster="c"), "replay")
    assert found == [
        f"{path}: $.repeat: applies to live mode only (a replay is deterministic: every "
        "repetition would give the same verdict); remove it",
        f"{path}: $.cluster: applies to live mode only (clusters group the repeated live cases "
        "of the suite's interval); remove it",
    ]


# --- live turns never script steps ----------------------------------------------------------------


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([], id="empty"),
        pytest.param(None, id="null"),
        pytest.param([{"response": {"type": "text", "content": "hi"}}], id="scripted"),
    ],
)
def test_live_turn_with_a_steps_key_is_refused(tmp_path: Path, steps: Any) -> None:
    data = live_trace(turns=[{"user_input": "first"}, {"user_input": "second", "steps": steps}])
    refuse_one(
        tmp_path,
        data,
        "$.turns[1].steps",
        "a live case must not script model steps: the real model answers",
        "live",
    )


def test_live_turns_without_steps_are_admitted(tmp_path: Path) -> None:
    data = live_trace(turns=[{"user_input": "first"}, {"user_input": "second"}])
    case = admit(write_fixture(tmp_path, "case.json", data), "live")
    assert len(case.trace.turns) == 2


# --- counting, listing, locating ---------------------------------------------------------------


def test_new_blocks_count_each_entry_needle_bound_and_pointer() -> None:
    data = live_trace(
        expects={
            "workspace": {
                "file_exists": ["a", "b"],
                "file_absent": ["c"],
                "file_contains": {"a": ["x", "y", "z"], "b": ["w"]},
            },
            "budget": {"max_total_tokens": 10, "max_llm_calls": 2, "max_duration_ms": None},
            "response_json": {"/a": 1, "/b": 2},
        }
    )
    expects = parse_fixture(json.dumps(data), "x.json").expects
    assert expects is not None
    assert assertion_count(expects) == 3 + 4 + 2 + 2


def test_every_problem_of_the_new_rules_is_listed(tmp_path: Path) -> None:
    data = live_trace(
        tools=["echo", "shell"],
        setup=setup(**{"../x": "1"}),
        repeat=2,
        expects={
            "response_contains": ["ok"],
            "workspace": {"file_exists": ["/abs"], "file_contains": {"a.txt": [""]}},
            "budget": {},
            "response_json": {"x": 1},
        },
    )
    data["turns"][0]["steps"] = []
    path, found = refused(tmp_path, data, "live")
    assert found == [
        f"{path}: $.tools[1]: tool 'shell' is refused: {COMMAND}",
        f"{path}: $.setup.workspace_files[\"../x\"]: workspace path '../x' refused: "
        "'..' escapes the workspace",
        f"{path}: $.turns[0].steps: a live case must not script model steps: "
        "the real model answers",
        f"{path}: $.expects.workspace.file_exists[0]: workspace path '/abs' refused: "
        "absolute path escapes the workspace",
        f'{path}: $.expects.workspace.file_contains["a.txt"][0]: '
        "empty or whitespace-only needle asserts nothing",
        f"{path}: $.expects.budget: {NO_BOUND}",
        # An identifier key is a `.key` segment, as everywhere else in JSON paths.
        f"{path}: $.expects.response_json.x: JSON pointer 'x' must be \"\" (the whole "
        'response) or start with "/" (RFC 6901)',
    ]


def test_problem_paths_point_at_their_lines(tmp_path: Path) -> None:
    data = live_trace(
        expects={
            "response_contains": ["ok"],
            "workspace": {"file_contains": {"notes/a.txt": ["fine", ""]}},
            "response_json": {"bad~pointer": 1},
        }
    )
    path = write_fixture(tmp_path, "case.json", data)
    text = path.read_text(encoding="utf-8")
    numbered = text.splitlines()
    problems = refusal(path, "live")
    assert [p.field for p in problems] == [
        '$.expects.workspace.file_contains["notes/a.txt"][1]',
        '$.expects.response_json["bad~pointer"]',
    ]
    needle_line = numbered.index('          ""') + 1
    pointer_line = next(i for i, line in enumerate(numbered, 1) if '"bad~pointer"' in line)
    assert [line_of(text, p.field) for p in problems] == [needle_line, pointer_line]


# --- the empty-run vacuity check ------------------------------------------------------------


def trace_expecting(**expect: object):
    return trace_of(fixture("vacuity", [turn("hi", text_step("hello"))], dict(expect)))


@pytest.mark.parametrize(
    "expect",
    [
        {"response_not_contains": ["error"]},
        {"tools_not_used": ["fail"]},
        {"max_tool_calls": 0},
        {"exact_tool_calls": 0},
        {"all_tools_succeeded": True},
        {"response_matches": ["^$"]},
        {"max_tool_calls": 3, "tools_not_used": ["echo"]},
    ],
)
def test_empty_run_passes_for_checks_a_dead_agent_satisfies(expect: dict) -> None:
    assert empty_run_passes(trace_expecting(**expect)) is True


@pytest.mark.parametrize(
    "expect",
    [
        {"response_contains": ["hello"]},
        {"response_matches": ["\\S"]},
        {"tools_used": ["echo"]},
        {"min_tool_calls": 1},
        {"exact_tool_calls": 1},
        {"all_tools_succeeded": False},
        {"tool_arguments_contain": [{"tool": "echo", "needle": "a"}]},
        {"tool_results_contain": [{"tool": "echo", "needle": "a", "call_index": 0}]},
        {"response_not_contains": ["x"], "tools_used": ["echo"]},
    ],
)
def test_empty_run_fails_for_checks_only_a_working_agent_satisfies(expect: dict) -> None:
    assert empty_run_passes(trace_expecting(**expect)) is False


def test_empty_run_passes_when_expects_missing_or_empty() -> None:
    data = fixture("vacuity", [turn("hi", text_step("hello"))], {})
    del data["expects"]
    assert empty_run_passes(trace_of(data)) is True
    # An empty `expects` block grades to the failing backstop, so it cannot pass vacuously.
    assert empty_run_passes(trace_expecting()) is False


# --- the empty-run vacuity check --------------------------------------------------------------


def trace_with(expect: dict[str, Any], **extra: Any) -> Any:
    return trace_of(fixture("vacuity", [turn("hi", text_step("hello"))], expect, **extra))


@pytest.mark.parametrize(
    "expect",
    [
        {"budget": {"max_total_tokens": 100}},
        {"budget": {"max_llm_calls": 0, "max_duration_ms": 0}},
        {"workspace": {"file_absent": ["secret.txt"]}},
        {"workspace": {"file_absent": ["a"]}, "budget": {"max_input_tokens": 1}},
    ],
)
def test_empty_run_passes_budget_and_file_absent_only(expect: dict[str, Any]) -> None:
    assert empty_run_passes(trace_with(expect)) is True


@pytest.mark.parametrize(
    "expect",
    [
        {"workspace": {"file_exists": ["out.txt"]}},
        {"workspace": {"file_contains": {"out.txt": ["x"]}}},
        {"workspace": {"file_absent": ["a"], "file_exists": ["b"]}},
        {"response_json": {"": {}}},
        {"response_json": {"/a": None}},
        {"budget": {"max_total_tokens": 5}, "response_contains": ["hello"]},
    ],
)
def test_empty_run_fails_checks_only_a_working_agent_satisfies(expect: dict[str, Any]) -> None:
    assert empty_run_passes(trace_with(expect)) is False


def test_empty_run_workspace_holds_the_setup_files() -> None:
    files = {"setup": {"workspace_files": {"notes.txt": "hello", "sub/d.txt": "x"}}}
    exists = {"workspace": {"file_exists": ["notes.txt"], "file_contains": {"sub/d.txt": ["x"]}}}
    absent = {"workspace": {"file_absent": ["notes.txt"]}}
    assert empty_run_passes(trace_with(exists, **files)) is True
    assert empty_run_passes(trace_with(absent, **files)) is False
    assert empty_run_passes(trace_with(exists)) is False


def test_empty_run_skips_setup_files_that_would_escape(tmp_path: Path) -> None:
    # Admission reports the bad path; the vacuity check must not write outside meanwhile.
    escaping = {"setup": {"workspace_files": {"../../escaped.txt": "x", "ok.txt": "y"}}}
    expect = {"workspace": {"file_exists": ["ok.txt"]}}
    assert empty_run_passes(trace_with(expect, **escaping)) is True


# --- limits: a fixture cannot hold a CI job for hours ------------------------------------


def test_too_many_turns_are_refused_once(tmp_path: Path) -> None:
    from harness.fixtures.admission import MAX_TURNS

    data = replay_trace()
    data["turns"] = data["turns"] * (MAX_TURNS + 1)
    for i, t in enumerate(data["turns"]):  # ids stay unique
        for s in t["steps"]:
            for c in s["response"].get("tool_calls", []):
                c["id"] = f"call_{i}"
    problems = refusal(write_fixture(tmp_path, "case.json", data))
    sized = [p for p in problems if "exceed the limit" in p.message]
    assert [(p.field, p.message) for p in sized] == [
        ("$.turns", f"{MAX_TURNS + 1} turns exceed the limit of {MAX_TURNS}: split the case")
    ]


def test_too_many_steps_in_one_turn_are_refused(tmp_path: Path) -> None:
    from harness.fixtures.admission import MAX_STEPS_PER_TURN

    data = replay_trace()
    text = {"response": {"type": "text", "content": "x"}}
    data["turns"][0]["steps"] += [text] * MAX_STEPS_PER_TURN
    problems = refusal(write_fixture(tmp_path, "case.json", data))
    assert [(p.field, p.message) for p in problems] == [
        (
            "$.turns[0].steps",
            f"{MAX_STEPS_PER_TURN + 2} steps exceed the limit of {MAX_STEPS_PER_TURN} per turn: "
            "split the turn or the case",
        )
    ]


def test_a_case_at_the_limits_is_admitted(tmp_path: Path) -> None:
    from harness.fixtures.admission import MAX_TURNS

    data = replay_trace()
    data["turns"] = [
        {"user_input": f"say {i}", "steps": [{"response": {"type": "text", "content": f"{i}"}}]}
        for i in range(MAX_TURNS)
    ]
    data["expects"] = {"response_contains": [str(MAX_TURNS - 1)]}
    assert len(admit(write_fixture(tmp_path, "case.json", data)).trace.turns) == MAX_TURNS


# --- numbers no JSON consumer can rely on ---------------------------------------------------

NON_FINITE = (
    "not a finite number (NaN, Infinity, or a literal such as 1e999 that reads as infinity): "
    "JSON has no such number, so no model could send it"
)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_scripted_argument_is_refused_at_its_path(tmp_path: Path, literal: str) -> None:
    data = replay_trace()
    _call(data)["arguments"] = {"message": "hello", "n": "PLACEHOLDER"}
    text = json.dumps(data).replace('"PLACEHOLDER"', literal)
    refuse_one(tmp_path, text, f"{CALL}.arguments.n", NON_FINITE)


def test_non_finite_values_deep_in_arguments_are_each_refused(tmp_path: Path) -> None:
    data = replay_trace()
    _call(data)["arguments"] = {"message": "hello", "deep": {"list": [1, "A", {"x y": "B"}]}}
    text = json.dumps(data).replace('"A"', "NaN").replace('"B"', "1e400")
    path = write_fixture(tmp_path, "case.json", text)
    problems = refusal(path)
    assert sorted(p.field for p in problems) == [
        f"{CALL}.arguments.deep.list[1]",
        f'{CALL}.arguments.deep.list[2]["x y"]',
    ]
    assert {p.message for p in problems} == {NON_FINITE}
    assert all(p.line == line_of(text, p.field) for p in problems)


def test_finite_arguments_of_every_json_type_are_admitted(tmp_path: Path) -> None:
    data = replay_trace()
    arguments = {"message": "hello", "n": 1e308, "m": -0.0, "list": [1, 2.5, None, True, {}]}
    _call(data)["arguments"] = arguments
    steps = admit(write_fixture(tmp_path, "case.json", data)).trace.turns[0].steps
    assert isinstance(steps, list)
    response = steps[0].response
    assert isinstance(response, ToolCallsResponse)
    assert response.tool_calls[0].arguments == arguments


# --- names that would forge, hide or reorder what reports show --------------------------------

# What the characters refused in names look like in a message about them.
UNSAFE_NAMED = [
    ("\x00", "\\x00"),
    ("\x1b", "\\x1b"),
    ("\t", "\\x09"),
    ("\x7f", "\\x7f"),
    ("\x85", "\\x85"),
    ("\x9b", "\\x9b"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
    ("\u202a", "\\u202a"),
    ("\u202e", "\\u202e"),
    ("\u2066", "\\u2066"),
    ("\u2069", "\\u2069"),
    ("\u200b", "\\u200b"),
    ("\ufeff", "\\ufeff"),
    ("\U000e0041", "\\U000e0041"),
]


def unsafe(what: str, name: str, shown: str) -> str:
    return (
        f"{what} '{name}' holds control or format characters ({shown}): they can forge, hide "
        "or reorder what reports and terminals show"
    )


@pytest.mark.parametrize(("char", "shown"), UNSAFE_NAMED)
@pytest.mark.parametrize("field", ["id", "model_name"])
def test_case_id_with_a_control_character_is_refused(
    tmp_path: Path, field: str, char: str, shown: str
) -> None:
    data = replay_trace(**{field: f"evil{char}id"})
    path = write_fixture(tmp_path, "case.json", data)
    problems = refusal(path)
    assert lines(problems) == [f"{path}: $.{field}: {unsafe('case id', f'evil{shown}id', shown)}"]
    assert str(problems[0]).isprintable()


def _tools(d: dict[str, Any], name: str) -> None:
    d["tools"] = ["echo", name]


def _scripted(d: dict[str, Any], name: str) -> None:
    _call(d)["name"] = name


def _expects(family: str, entry: bool = False) -> Callable[[dict[str, Any], str], None]:
    def put(d: dict[str, Any], name: str) -> None:
        d["expects"][family] = [{"tool": name, "needle": "hello"} if entry else name]

    return put


@pytest.mark.parametrize(
    ("field", "put"),
    [
        ("$.tools[1]", _tools),
        (f"{CALL}.name", _scripted),
        ("$.expects.tools_used[0]", _expects("tools_used")),
        ("$.expects.tools_not_used[0]", _expects("tools_not_used")),
        ("$.expects.tools_offered[0]", _expects("tools_offered")),
        ("$.expects.tools_not_offered[0]", _expects("tools_not_offered")),
        ("$.expects.tool_arguments_contain[0].tool", _expects("tool_arguments_contain", True)),
        ("$.expects.tool_results_contain[0].tool", _expects("tool_results_contain", True)),
    ],
)
@pytest.mark.parametrize(("char", "shown"), [("\x1b", "\\x1b"), ("\u202e", "\\u202e")])
def test_tool_name_with_a_control_character_is_refused_once(
    tmp_path: Path,
    field: str,
    put: Callable[[dict[str, Any], str], None],
    char: str,
    shown: str,
) -> None:
    data = replay_trace()
    put(data, f"echo{char}")
    path = write_fixture(tmp_path, "case.json", data)
    problems = refusal(path)
    # Only this problem: not also "not registered", "did you mean echo?" or "not among
    # the case's tools", each of which would repeat the name.
    assert lines(problems) == [f"{path}: {field}: {unsafe('tool name', f'echo{shown}', shown)}"]
    assert str(problems[0]).isprintable()


def test_unsafe_characters_cover_every_control_format_and_separator_character() -> None:
    import sys
    import unicodedata

    from harness.io.problems import _unsafe

    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    matched = set(_unsafe().findall(everything))
    refused = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    missing = [c for c in everything if unicodedata.category(c) in refused and c not in matched]
    assert [f"U+{ord(c):04X}" for c in missing] == []
    # ... and nothing a reader sees: every character refused is one `str.isprintable` is not.
    assert sorted(f"U+{ord(c):04X}" for c in matched if c.isprintable()) == []


def test_the_unsafe_character_class_is_compiled_only_for_a_name_that_is_not_plain_ascii() -> None:
    # Half a millisecond of every start-up, for a class no printable ASCII name needs.
    import subprocess
    import sys

    code = (
        "from harness.io import problems\n"
        "assert problems.unsafe_name_problem('case id', 'plain-id') is None\n"
        "print(problems._unsafe.cache_info().currsize)\n"
        "assert problems.unsafe_name_problem('case id', 'caf\\u00e9') is None\n"
        "print(problems._unsafe.cache_info().currsize, problems._unsafe().pattern[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_environment(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1", "["]


def test_names_with_printable_unicode_are_admitted(tmp_path: Path) -> None:
    data = replay_trace(id="caf\u00e9-\u6d4b\u8bd5-\U0001f600", tools=["echo"])
    assert admit(write_fixture(tmp_path, "case.json", data)).id == data["id"]


# --- through the command line: an integer too long to convert --------------------------------


@pytest.mark.parametrize("action", ["check", "run"])
@pytest.mark.parametrize(
    ("where", "field"),
    [
        ('"message": "hello"', f"{CALL}.arguments.n"),
        ('"type": "text"', f"{TEXT_STEP}.response.input_tokens"),
    ],
    ids=["argument", "tokens"],
)
def test_integer_too_long_to_convert_is_a_problem_not_a_traceback(
    run_cli: Cli, tmp_path: Path, action: str, where: str, field: str
) -> None:
    import sys

    root = project(tmp_path, {})
    text = json.dumps(replay_trace())
    name = "n" if "arguments" in field else "input_tokens"
    text = text.replace(where, f'{where}, "{name}": {"7" * 5001}', 1)
    write_fixture(root / "evals" / "regression", "long.json", text)
    result = run_cli("eval", action, cwd=root)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == (
        f"evals/regression/long.json: {field}: integer of 5001 digits: longer than the "
        f"{sys.get_int_max_str_digits()}-digit limit"
    )


def test_token_counts_are_bounded(tmp_path: Path) -> None:
    from harness.fixtures.schema import MAX_STEP_TOKENS

    data = replay_trace()
    _text_step(data)["response"]["output_tokens"] = MAX_STEP_TOKENS + 1
    refuse_one(
        tmp_path,
        data,
        f"{TEXT_STEP}.response.output_tokens",
        f"Expected `int` <= {MAX_STEP_TOKENS}",
    )
    _text_step(data)["response"]["output_tokens"] = MAX_STEP_TOKENS
    admit(write_fixture(tmp_path, "case.json", data))


# --- a step naming the agent it answers -------------------------------------------------------

TRIAGE_GRAPH = AgentSurface(
    "triage-graph",
    BUILTIN_TOOL_NAMES,
    {"triage": frozenset(), "billing": BUILTIN_TOOL_NAMES, "faq_agent": frozenset()},
)


def test_a_step_naming_an_unknown_agent_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"][0]["steps"][0]["agent"] = "triage"
    data["turns"][0]["steps"][1]["agent"] = "biling"
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].steps[1].agent",
        "'biling' is not an agent of triage-graph (did you mean billing?); its agents: "
        "billing, faq_agent, triage",
        agent=TRIAGE_GRAPH,
    )


def test_a_step_naming_a_blank_agent_is_refused(tmp_path: Path) -> None:
    data = replay_trace()
    data["turns"][0]["steps"][1]["agent"] = " "
    refuse_one(tmp_path, data, "$.turns[0].steps[1].agent", "empty or whitespace-only agent name")


def test_a_step_naming_a_known_agent_is_admitted_and_any_when_the_graph_is_unknown(
    tmp_path: Path,
) -> None:
    data = replay_trace()
    data["turns"][0]["steps"][1]["agent"] = "billing"
    case = admit(write_fixture(tmp_path, "a.json", data), agent=TRIAGE_GRAPH)
    assert [s.agent for s in case.trace.turns[0].steps or ()] == [None, "billing"]
    assert admit(write_fixture(tmp_path, "b.json", data)).trace.turns[0].steps
