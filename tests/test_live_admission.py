"""Admission of live-mode keys and of the expectations for live runs (issue 5, items 3-4).

`tools` and `setup.workspace_files` are admitted in both modes; `repeat` and `cluster` in
neither; a live turn never carries `steps`. The `workspace`, `budget` and `response_json`
expectations are refused when they could not fail. Every refusal names the file and the
JSON path of the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _fixtures import admit, lines, live_trace, refusal, replay_trace, write_fixture

from harness.agent import AgentSurface
from harness.config import ConfigError, load_config
from harness.expectations.budget import BudgetExpects
from harness.expectations.registry import assertion_count
from harness.expectations.workspace_files import WorkspaceExpects
from harness.fixture import parse_fixture
from harness.json_paths import line_of

COMMAND = (
    "a shell or command-running tool would let the model run anything on this machine; "
    "it is never available"
)
BUILTIN_TOOLS = "echo, fail, list_files, read_file, write_file"
NO_ASSERTION = "declares no effective assertion: a case that asserts nothing would pass vacuously"
EMPTY_RUN = (
    "every check passes against an empty run (no response, no tool calls): "
    "add a check only a working agent satisfies"
)
MODES = pytest.mark.parametrize("mode", ["replay", "live"])


def base(mode: str, **top_level: Any) -> dict[str, Any]:
    return replay_trace(**top_level) if mode == "replay" else live_trace(**top_level)


def with_expects(mode: str, extra: dict[str, Any], **top_level: Any) -> dict[str, Any]:
    """The mode's base case with `extra` added to its (real) expectations."""
    data = base(mode, **top_level)
    data["expects"].update(extra)
    return data


def refused(
    tmp_path: Path, data: dict[str, Any] | str, mode: str = "replay", agent: Any = None
) -> tuple[Path, list[str]]:
    path = write_fixture(tmp_path, "case.json", data)
    return path, lines(refusal(path, mode, agent))  # type: ignore[arg-type]


def refuse_one(
    tmp_path: Path,
    data: dict[str, Any] | str,
    field: str,
    message: str,
    mode: str = "replay",
    agent: Any = None,
) -> None:
    path, found = refused(tmp_path, data, mode, agent)
    assert found == [f"{path}: {field}: {message}"]


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


def setup(**files: str) -> dict[str, Any]:
    return {"workspace_files": files}


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


# --- repeat / cluster: a later phase ------------------------------------------------------------


@MODES
def test_repeat_and_cluster_are_both_reported(tmp_path: Path, mode: str) -> None:
    path, found = refused(tmp_path, base(mode, repeat=5, cluster="c"), mode)
    assert found == [
        f"{path}: $.repeat: not supported yet: repeated runs of one case are a later phase; "
        "remove 'repeat'",
        f"{path}: $.cluster: not supported yet: clusters of correlated cases are a later phase; "
        "remove 'cluster'",
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


# --- expects.workspace ----------------------------------------------------------------------


@MODES
def test_empty_workspace_block_is_refused(tmp_path: Path, mode: str) -> None:
    for i, block in enumerate([{}, {"file_exists": [], "file_absent": [], "file_contains": {}}]):
        data = with_expects(mode, {"workspace": block})
        path = write_fixture(tmp_path, f"case{i}.json", data)
        assert lines(refusal(path, mode)) == [  # type: ignore[arg-type]
            f"{path}: $.expects.workspace: declares no checks: an empty block asserts nothing; "
            "add file_exists, file_absent or file_contains entries, or remove it"
        ]


def test_empty_workspace_block_alone_is_also_no_assertion(tmp_path: Path) -> None:
    path, found = refused(tmp_path, live_trace(expects={"workspace": {}}), "live")
    assert found == [
        f"{path}: $.expects: {NO_ASSERTION}",
        f"{path}: $.expects.workspace: declares no checks: an empty block asserts nothing; "
        "add file_exists, file_absent or file_contains entries, or remove it",
    ]


@MODES
def test_file_contains_with_no_needles_is_refused(tmp_path: Path, mode: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"workspace": {"file_contains": {"out.txt": ["a"], "b.md": []}}}),
        '$.expects.workspace.file_contains["b.md"]',
        "no needles: an empty list asserts nothing",
        mode,
    )


@MODES
@pytest.mark.parametrize("blank", ["", " ", "\n\t"])
def test_blank_needle_is_refused(tmp_path: Path, mode: str, blank: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"workspace": {"file_contains": {"out.txt": ["ok", blank]}}}),
        '$.expects.workspace.file_contains["out.txt"][1]',
        "empty or whitespace-only needle asserts nothing",
        mode,
    )


BAD_PATHS = [
    ("/etc/passwd", "refused: absolute path escapes the workspace"),
    ("../outside.txt", "refused: '..' escapes the workspace"),
    ("a/../../outside.txt", "refused: '..' escapes the workspace"),
    ("", "refused: empty path"),
    (" ", "refused: empty path"),
    (".", "names the workspace itself, not a file"),
]


@MODES
@pytest.mark.parametrize("family", ["file_exists", "file_absent"])
@pytest.mark.parametrize(("relative", "reason"), BAD_PATHS)
def test_workspace_list_path_outside_is_refused(
    tmp_path: Path, mode: str, family: str, relative: str, reason: str
) -> None:
    data = with_expects(mode, {"workspace": {family: ["fine.txt", relative]}})
    refuse_one(
        tmp_path,
        data,
        f"$.expects.workspace.{family}[1]",
        f"workspace path {relative!r} {reason}",
        mode,
    )


@MODES
@pytest.mark.parametrize(("relative", "reason"), BAD_PATHS)
def test_file_contains_path_outside_is_refused(
    tmp_path: Path, mode: str, relative: str, reason: str
) -> None:
    data = with_expects(mode, {"workspace": {"file_contains": {relative: ["root:"]}}})
    refuse_one(
        tmp_path,
        data,
        f"$.expects.workspace.file_contains[{json.dumps(relative)}]",
        f"workspace path {relative!r} {reason}",
        mode,
    )


@pytest.mark.parametrize(
    ("present", "other"),
    [
        ({"file_exists": ["out.txt"]}, "file_exists[0]"),
        ({"file_contains": {"out.txt": ["x"]}}, 'file_contains["out.txt"]'),
    ],
)
def test_file_absent_contradicting_a_file_expected_to_exist(
    tmp_path: Path, present: dict[str, Any], other: str
) -> None:
    block = {**present, "file_absent": ["./out.txt"]}
    refuse_one(
        tmp_path,
        live_trace(expects={"workspace": block}),
        "$.expects.workspace.file_absent[0]",
        f"'./out.txt' must also exist ({other}): no run can pass",
        "live",
    )


def test_workspace_unknown_key_and_wrong_types(tmp_path: Path) -> None:
    cases = [
        ({"file_exist": ["a"]}, "$.expects.workspace.file_exist", "unknown key (did you mean "),
        ({"file_exists": "a"}, "$.expects.workspace.file_exists", "Expected `array`, got `str`"),
        (
            {"file_contains": {"a.txt": ["x"], "b.txt": "x"}},
            '$.expects.workspace.file_contains["b.txt"]',
            "Expected `array`, got `str`",
        ),
        (
            {"file_contains": {"a.txt": ["x", 3]}},
            '$.expects.workspace.file_contains["a.txt"][1]',
            "Expected `str`, got `int`",
        ),
    ]
    for i, (block, field, message) in enumerate(cases):
        path = write_fixture(tmp_path, f"c{i}.json", live_trace(expects={"workspace": block}))
        [line] = lines(refusal(path, "live"))
        assert line.startswith(f"{path}: {field}: {message}"), line


@MODES
@pytest.mark.parametrize(
    "block",
    [
        {"file_exists": ["out.txt"]},
        {"file_exists": ["sub/dir/out.txt", "./b.txt"]},
        {"file_contains": {"out.txt": ["hello", "world"]}},
        {"file_exists": ["out.txt"], "file_absent": ["tmp.txt"]},
    ],
)
def test_workspace_block_alone_is_admitted(
    tmp_path: Path, mode: str, block: dict[str, Any]
) -> None:
    data = base(mode, expects={"workspace": block})
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.expects is not None
    ws = case.trace.expects.workspace
    assert isinstance(ws, WorkspaceExpects)
    assert ws.file_exists == block.get("file_exists", [])
    assert ws.file_contains == block.get("file_contains", {})


def test_file_absent_alone_passes_an_empty_run_and_is_refused(tmp_path: Path) -> None:
    data = live_trace(expects={"workspace": {"file_absent": ["secret.txt"]}})
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN, "live")


def test_file_absent_of_a_setup_file_fails_an_empty_run_and_is_admitted(tmp_path: Path) -> None:
    # The harness writes setup files whatever the agent does: the empty run still has them.
    data = live_trace(
        setup=setup(**{"draft.txt": "x"}), expects={"workspace": {"file_absent": ["draft.txt"]}}
    )
    admit(write_fixture(tmp_path, "case.json", data), "live")


@pytest.mark.parametrize(
    "block",
    [
        {"file_exists": ["notes.txt"]},
        {"file_contains": {"./notes.txt": ["hello"]}},
    ],
)
def test_check_a_setup_file_satisfies_alone_is_refused(
    tmp_path: Path, block: dict[str, Any]
) -> None:
    data = live_trace(setup=setup(**{"notes.txt": "hello"}), expects={"workspace": block})
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN, "live")


# --- expects.budget -----------------------------------------------------------------------------

NO_BOUND = (
    "declares no bound: an empty budget asserts nothing; set at least one of max_input_tokens, "
    "max_output_tokens, max_total_tokens, max_duration_ms, max_llm_calls, or remove the block"
)


@MODES
@pytest.mark.parametrize(
    "budget", [{}, {"max_total_tokens": None, "max_llm_calls": None}], ids=["empty", "nulls"]
)
def test_budget_without_a_bound_is_refused(
    tmp_path: Path, mode: str, budget: dict[str, Any]
) -> None:
    refuse_one(tmp_path, with_expects(mode, {"budget": budget}), "$.expects.budget", NO_BOUND, mode)


BOUNDS = [
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_llm_calls",
    "max_duration_ms",
]


@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "Expected `int` >= 0"),
        (1.5, "Expected `int | null`, got `float`"),
        (True, "Expected `int | null`, got `bool`"),
        ("10", "Expected `int | null`, got `str`"),
    ],
)
def test_budget_bound_must_be_a_non_negative_int(
    tmp_path: Path, bound: str, value: Any, message: str
) -> None:
    refuse_one(
        tmp_path,
        with_expects("live", {"budget": {bound: value}}),
        f"$.expects.budget.{bound}",
        message,
        "live",
    )


def test_budget_unknown_key_suggests_the_bound(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_expects("live", {"budget": {"max_tokens": 10}}),
        "$.expects.budget.max_tokens",
        "unknown key (did you mean max_total_tokens?)",
        "live",
    )


@pytest.mark.parametrize("bound", BOUNDS)
def test_budget_alone_passes_an_empty_run_and_is_refused(tmp_path: Path, bound: str) -> None:
    refuse_one(
        tmp_path, live_trace(expects={"budget": {bound: 100}}), "$.expects", EMPTY_RUN, "live"
    )


@MODES
@pytest.mark.parametrize("bound", BOUNDS)
def test_budget_with_a_real_check_is_admitted(tmp_path: Path, mode: str, bound: str) -> None:
    data = with_expects(mode, {"budget": {bound: 0}})
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.expects is not None
    assert case.trace.expects.budget == BudgetExpects(**{bound: 0})


# --- expects.response_json ------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize("pointer", ["a/b", "#/a", " /a", "a"])
def test_pointer_not_starting_with_a_slash_is_refused(
    tmp_path: Path, mode: str, pointer: str
) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"response_json": {"/ok": 1, pointer: 1}}),
        "$.expects.response_json.a"
        if pointer == "a"
        else f"$.expects.response_json[{json.dumps(pointer)}]",
        f'JSON pointer {pointer!r} must be "" (the whole response) or start with "/" (RFC 6901)',
        mode,
    )


@MODES
@pytest.mark.parametrize("pointer", ["/a~", "/a~2", "/~x/b", "/a/~/b"])
def test_pointer_with_a_bad_escape_is_refused(tmp_path: Path, mode: str, pointer: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"response_json": {pointer: "x"}}),
        f"$.expects.response_json[{json.dumps(pointer)}]",
        f"JSON pointer {pointer!r} has a '~' not followed by 0 or 1 "
        "(RFC 6901: ~0 stands for '~', ~1 for '/')",
        mode,
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_expected_value_is_refused(tmp_path: Path, constant: str) -> None:
    text = json.dumps(live_trace(expects={"response_json": {"/a": ["PLACEHOLDER"]}}))
    text = text.replace('"PLACEHOLDER"', constant)
    refuse_one(
        tmp_path,
        text,
        '$.expects.response_json["/a"]',
        "NaN and Infinity are not JSON: no response can equal them",
        "live",
    )


def test_response_json_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        live_trace(expects={"response_json": ["/a"]}),
        "$.expects.response_json",
        "Expected `object`, got `array`",
        "live",
    )


@MODES
@pytest.mark.parametrize(
    "expected",
    [
        {"": {"city": "Paris"}},
        {"/city": "Paris", "/tags/0": "capital", "/a~1b": 1, "/m~0n": None, "/": False},
        {"/count": 1.0},
    ],
)
def test_response_json_alone_is_admitted(
    tmp_path: Path, mode: str, expected: dict[str, Any]
) -> None:
    case = admit(
        write_fixture(tmp_path, "case.json", base(mode, expects={"response_json": expected})), mode
    )  # type: ignore[arg-type]
    assert case.trace.expects is not None
    assert case.trace.expects.response_json == expected
    # Types survive parsing: 1.0 stays a float, so grading can keep 1 and 1.0 apart.
    if "/count" in expected:
        assert type(case.trace.expects.response_json["/count"]) is float


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
        f"{path}: $.repeat: not supported yet: repeated runs of one case are a later phase; "
        "remove 'repeat'",
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


# --- config: live_allowed_tools ------------------------------------------------------------------


def write_config(tmp_path: Path, tools: str) -> Path:
    path = tmp_path / "eval.toml"
    path.write_text(f"[eval]\nlive_allowed_tools = {tools}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("tool", ["shell", "bash", "execute_command", "my_shell_tool"])
def test_config_refuses_a_command_running_tool(tmp_path: Path, tool: str) -> None:
    path = write_config(tmp_path, f'["echo", "{tool}"]')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: [eval]: live_allowed_tools[1]: tool {tool!r} is refused: {COMMAND}"
    )


@pytest.mark.parametrize("blank", ['""', '"  "'])
def test_config_refuses_an_empty_tool_name(tmp_path: Path, blank: str) -> None:
    path = write_config(tmp_path, f'["echo", {blank}]')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: [eval]: live_allowed_tools[1]: empty tool name"


def test_pyproject_refuses_a_shell_tool(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.zeroclaw.eval]\nlive_allowed_tools = ["shell"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path)
    assert str(caught.value) == (
        f"{pyproject}: [tool.zeroclaw.eval]: live_allowed_tools[0]: tool 'shell' is refused: "
        f"{COMMAND}"
    )


def test_config_admits_safe_tools(tmp_path: Path) -> None:
    path = write_config(tmp_path, '["echo", "read_file", "write_file", "list_files"]')
    loaded = load_config(path)
    assert tuple(loaded.config.live_allowed_tools) == (
        "echo",
        "read_file",
        "write_file",
        "list_files",
    )
