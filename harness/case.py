"""The fixture schema (`LlmTrace`) and the admission of one fixture.

Admission fails closed: a fixture either becomes a `LlmTrace` that can fail, or yields
every problem found in it, each naming the JSON path of the offending field.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated, Any

import msgspec

from harness.locate import child_path
from harness.modes import Mode
from harness.tools import runs_commands
from harness.workspace import path_problem

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every fixture struct refuses unknown keys: a typo must never be silently ignored."""


class ToolCallSpec(_Strict):
    id: str
    name: str
    arguments: dict[str, Any]


class TextResponse(_Strict, tag_field="type", tag="text"):
    content: str
    input_tokens: NonNegative = 0
    output_tokens: NonNegative = 0


class ToolCallsResponse(_Strict, tag_field="type", tag="tool_calls"):
    tool_calls: list[ToolCallSpec]
    input_tokens: NonNegative = 0
    output_tokens: NonNegative = 0


Response = TextResponse | ToolCallsResponse


class Step(_Strict):
    response: Response


class Turn(_Strict):
    user_input: str
    # UNSET when the key is absent: a live case must not carry the key at all, not even
    # `[]` or `null`, so its presence has to be visible.
    steps: list[Step] | msgspec.UnsetType | None = msgspec.UNSET


class PayloadExpect(_Strict):
    tool: str
    needle: str
    call_index: NonNegative | None = None


class WorkspaceExpects(_Strict):
    """Files the run must leave in (or keep out of) the case workspace; paths relative to it."""

    file_exists: list[str] = []
    file_absent: list[str] = []
    file_contains: dict[str, list[str]] = {}


class BudgetExpects(_Strict):
    """Inclusive upper bounds on what the run spent."""

    max_input_tokens: NonNegative | None = None
    max_output_tokens: NonNegative | None = None
    max_total_tokens: NonNegative | None = None
    max_llm_calls: NonNegative | None = None
    max_duration_ms: NonNegative | None = None


BUDGET_BOUNDS = (
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_llm_calls",
    "max_duration_ms",
)


class Expects(_Strict):
    response_contains: list[str] = []
    response_not_contains: list[str] = []
    response_matches: list[str] = []
    tools_used: list[str] = []
    tools_not_used: list[str] = []
    max_tool_calls: NonNegative | None = None
    min_tool_calls: NonNegative | None = None
    exact_tool_calls: NonNegative | None = None
    all_tools_succeeded: bool | None = None
    tool_arguments_contain: list[PayloadExpect] = []
    tool_results_contain: list[PayloadExpect] = []
    workspace: WorkspaceExpects | None = None
    budget: BudgetExpects | None = None
    # JSON pointer (RFC 6901) into the final response parsed as JSON -> the expected value.
    response_json: dict[str, Any] = {}


class Setup(_Strict):
    workspace_files: dict[str, str] = {}


class LlmTrace(_Strict):
    model_name: str
    turns: list[Turn]
    id: str | None = None
    description: str | None = None
    expects: Expects | None = None
    setup: Setup | None = None
    tools: list[str] | None = None
    repeat: Annotated[int, msgspec.Meta(ge=1, le=50)] | None = None
    cluster: str | None = None

    @property
    def case_id(self) -> str:
        return self.id if self.id is not None else self.model_name


# Keys of a later phase: refused in every mode rather than ignored, so a case never looks
# like it does something it does not.
UNSUPPORTED_KEYS = {
    "repeat": "repeated runs of one case are a later phase",
    "cluster": "clusters of correlated cases are a later phase",
}
COMMAND_TOOL_REFUSAL = (
    "a shell or command-running tool would let the model run anything on this machine; "
    "it is never available"
)
STRING_FAMILIES = (
    "response_contains",
    "response_not_contains",
    "response_matches",
    "tools_used",
    "tools_not_used",
)
PAYLOAD_FAMILIES = ("tool_arguments_contain", "tool_results_contain")


@dataclass(frozen=True)
class Problem:
    """One admission problem: where it is (file and JSON path) and what is wrong."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class AdmissionError(Exception):
    """A fixture or a suite was refused; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class AgentSurface:
    """What admission needs to know about the agent under test."""

    name: str
    tools: frozenset[str]


def parse_fixture(text: str, file: str) -> LlmTrace:
    """Parse fixture text into a `LlmTrace`, raising `AdmissionError` on the first schema fault.

    Schema faults stop parsing (nothing later can be trusted); semantic rules are checked by
    `check_trace`, which reports them all.
    """
    repeated: list[bool] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        plain = dict(pairs)
        if len(plain) == len(pairs):
            return plain
        repeated.append(True)
        return _mark_duplicate_keys(pairs)

    try:
        data = json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise AdmissionError([Problem(file, "$", msg)]) from None
    except RecursionError:
        raise AdmissionError([Problem(file, "$", "not valid JSON: nested too deeply")]) from None
    if repeated:  # only then is the document walked to name where
        raise AdmissionError(_duplicate_key_problems(data, file))
    if not isinstance(data, dict):
        kind = type(data).__name__ if data is not None else "null"
        raise AdmissionError([Problem(file, "$", f"expected a JSON object, got {kind}")])
    try:
        return msgspec.convert(data, LlmTrace, strict=True)
    except msgspec.ValidationError as exc:
        field, message = _explain_validation_error(str(exc), data)
        raise AdmissionError([Problem(file, field, message)]) from None


class _DuplicateKeys(dict[str, Any]):
    """A parsed JSON object that repeated a key (the last value would silently win)."""

    duplicates: tuple[str, ...] = ()


def _mark_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    duplicates: list[str] = []
    for key, value in pairs:
        if key in out:
            duplicates.append(key)
        out[key] = value
    if not duplicates:
        return out
    marked = _DuplicateKeys(out)
    marked.duplicates = tuple(dict.fromkeys(duplicates))
    return marked


def _duplicate_key_problems(data: Any, file: str) -> list[Problem]:
    """One problem per repeated key, at its JSON path, in document order (no recursion)."""
    problems: list[Problem] = []
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, value = stack.pop()
        children: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            for key in getattr(value, "duplicates", ()):
                problems.append(
                    Problem(
                        file,
                        child_path(path, key),
                        f"duplicate key {key!r} in one JSON object: refusing to guess which "
                        "value was meant",
                    )
                )
            children = [(child_path(path, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        stack.extend(reversed(children))
    return problems


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]*)`$")


def _explain_validation_error(raw: str, data: dict[str, Any]) -> tuple[str, str]:
    m = _AT.match(raw)
    assert m is not None  # the pattern matches any string
    msg, path = m.group("msg"), m.group("path") or "$"
    unknown = _UNKNOWN.match(msg)
    if unknown:
        key = unknown.group("key")
        known = _known_keys_at(path, data)
        hint = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        suffix = f" (did you mean {hint[0]}?)" if hint else f" (known keys: {', '.join(known)})"
        return child_path(path, key), f"unknown key{suffix}"
    missing = _MISSING.match(msg)
    if missing:
        return f"{path}.{missing.group('key')}", "missing required key"
    if path.endswith(".response.type"):
        return path, f"{msg}; a response's type is 'text' or 'tool_calls'"
    return _resolve_map_key(path, data), msg


def _resolve_map_key(path: str, data: dict[str, Any]) -> str:
    """msgspec names a map entry `[...]`; name the first entry whose value is wrong instead."""
    prefix, sep, rest = path.partition("[...]")
    if not sep:
        return path
    typ, value = _walk(prefix, data)
    typ = _unwrap(typ, value)
    if getattr(typ, "__origin__", None) is not dict or not isinstance(value, dict):
        return path
    value_type = typ.__args__[1]
    for key, entry in value.items():
        try:
            msgspec.convert(entry, value_type, strict=True)
        except msgspec.ValidationError:
            return f"{child_path(prefix, key)}{rest}"
    return path


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _known_keys_at(path: str, data: dict[str, Any]) -> list[str]:
    """The field names of the struct that sits at `path`, following tagged unions by value."""
    typ, value = _walk(path, data)
    typ = _unwrap(typ, value)
    if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
        return [f.name for f in msgspec.structs.fields(typ)]
    return []


def _walk(path: str, data: dict[str, Any]) -> tuple[Any, Any]:
    """The declared type at `path` (struct fields and list items only) and the value there."""
    typ: Any = LlmTrace
    value: Any = data
    for m in _PATH_TOKEN.finditer(path[1:]):
        key, index = m.group(1), m.group(2)
        typ = _unwrap(typ, value)
        if key is not None:
            if not (isinstance(typ, type) and issubclass(typ, msgspec.Struct)):
                return None, None
            fields = {f.name: f.type for f in msgspec.structs.fields(typ)}
            typ = fields.get(key)
            value = value.get(key) if isinstance(value, dict) else None
        else:
            typ = getattr(typ, "__args__", (None,))[0]
            value = value[int(index)] if isinstance(value, list) else None
    return typ, value


def _unwrap(typ: Any, value: Any) -> Any:
    """Strip Optional/Annotated and pick the tagged-union member matching `value`."""
    while True:
        args = getattr(typ, "__args__", None)
        if args is None:
            return typ
        origin = getattr(typ, "__origin__", None)
        if origin in (list, dict):
            return typ
        members = [a for a in args if a is not type(None)]
        if hasattr(typ, "__metadata__"):
            typ = typ.__origin__
            continue
        tagged = [a for a in members if isinstance(a, type) and issubclass(a, msgspec.Struct)]
        if len(tagged) > 1 and isinstance(value, dict):
            for member in tagged:
                if member.__struct_config__.tag == value.get("type"):
                    return member
            return tagged[0]
        typ = members[0] if members else None


def check_trace(trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface) -> list[Problem]:
    """Every semantic admission rule for one parsed fixture; an empty list admits it."""
    return list(_trace_problems(trace, file, mode, agent))


def _trace_problems(
    trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface
) -> Iterator[Problem]:
    if not trace.turns:
        yield Problem(file, "$.turns", "no turns: the agent would never run, so nothing is tested")
    for key, why in UNSUPPORTED_KEYS.items():
        if getattr(trace, key) is not None:
            yield Problem(file, f"$.{key}", f"not supported yet: {why}; remove '{key}'")
    yield from _tools_problems(trace.tools, file, agent)
    if trace.setup is not None:
        yield from _setup_problems(trace.setup, file)
    seen_ids: dict[str, str] = {}
    for t, turn in enumerate(trace.turns):
        where = f"$.turns[{t}]"
        if not turn.user_input.strip():
            yield Problem(file, f"{where}.user_input", "blank user input")
        if mode == "live":
            if turn.steps is not msgspec.UNSET:
                yield Problem(
                    file,
                    f"{where}.steps",
                    "a live case must not script model steps: the real model answers",
                )
            continue
        if not turn.steps:
            yield Problem(
                file, f"{where}.steps", "no scripted steps: replay has nothing to answer with"
            )
            continue
        for s, step in enumerate(turn.steps):
            response = step.response
            if not isinstance(response, ToolCallsResponse):
                continue
            rwhere = f"{where}.steps[{s}].response.tool_calls"
            if not response.tool_calls:
                yield Problem(
                    file,
                    rwhere,
                    "empty list: a tool_calls response must call at least one tool",
                )
            for c, call in enumerate(response.tool_calls):
                cwhere = f"{rwhere}[{c}]"
                if not call.id.strip():
                    yield Problem(file, f"{cwhere}.id", "empty tool-call id")
                elif call.id in seen_ids:
                    yield Problem(
                        file,
                        f"{cwhere}.id",
                        f"duplicate tool-call id {call.id!r} (first used at {seen_ids[call.id]})",
                    )
                else:
                    seen_ids[call.id] = cwhere
                problem = _tool_name_problem(call.name, agent)
                if problem is None and trace.tools is not None and call.name not in trace.tools:
                    allowed = ", ".join(trace.tools) or "none"
                    problem = (
                        f"tool {call.name!r} is not among the case's tools ($.tools: {allowed}); "
                        "add it there or remove the call"
                    )
                if problem is not None:
                    yield Problem(file, f"{cwhere}.name", problem)
    yield from _expects_problems(trace.expects, file)


def _tool_name_problem(name: str, agent: AgentSurface) -> str | None:
    """Why a case may not use the tool `name` with `agent`, or None when it may."""
    if runs_commands(name):
        return f"tool {name!r} is refused: {COMMAND_TOOL_REFUSAL}"
    if name not in agent.tools:
        tools = ", ".join(sorted(agent.tools)) or "none"
        return f"tool {name!r} is not registered by agent '{agent.name}' (its tools: {tools})"
    return None


def _tools_problems(tools: list[str] | None, file: str, agent: AgentSurface) -> Iterator[Problem]:
    """The case's `tools`: the names it may use, each a real, safe tool of the agent."""
    first: dict[str, int] = {}
    for i, name in enumerate(tools or ()):
        where = f"$.tools[{i}]"
        if not name.strip():
            yield Problem(file, where, "empty tool name")
            continue
        if name in first:
            yield Problem(file, where, f"duplicate tool {name!r} (also $.tools[{first[name]}])")
            continue
        first[name] = i
        problem = _tool_name_problem(name, agent)
        if problem is not None:
            yield Problem(file, where, problem)


def normal_workspace_path(relative: str) -> str:
    """`relative` as the workspace sees it: `/`-separated, without `.` or repeated `/`."""
    return PurePosixPath(relative.replace("\\", "/")).as_posix()


def _workspace_path_problem(relative: str) -> str | None:
    problem = path_problem(relative)
    if problem is not None:
        return f"workspace path {relative!r} refused: {problem}"
    if normal_workspace_path(relative) == ".":
        return f"workspace path {relative!r} names the workspace itself, not a file"
    return None


def _setup_problems(setup: Setup, file: str) -> Iterator[Problem]:
    """Setup files: each path inside the workspace, no two naming the same file, and no
    file standing where another needs a directory."""
    at = "$.setup.workspace_files"
    first: dict[str, str] = {}
    for relative in setup.workspace_files:
        where = child_path(at, relative)
        problem = _workspace_path_problem(relative)
        if problem is not None:
            yield Problem(file, where, problem)
            continue
        normal = normal_workspace_path(relative)
        if normal in first:
            yield Problem(
                file,
                where,
                f"names the same file as {first[normal]!r}: one would overwrite the other",
            )
            continue
        first[normal] = relative
    for normal, relative in first.items():
        parents = PurePosixPath(normal).parents
        for parent in parents:
            if parent.as_posix() in first:
                yield Problem(
                    file,
                    child_path(at, relative),
                    f"needs {parent.as_posix()!r} to be a directory, but it is also a setup "
                    f"file ({first[parent.as_posix()]!r})",
                )
                break


def _expects_problems(expects: Expects | None, file: str) -> Iterator[Problem]:
    if expects is None:
        yield Problem(
            file, "$.expects", "missing: a case that asserts nothing would pass vacuously"
        )
        return
    if assertion_count(expects) == 0:
        yield Problem(
            file,
            "$.expects",
            "declares no effective assertion: a case that asserts nothing would pass vacuously",
        )
    for family in STRING_FAMILIES:
        for i, entry in enumerate(getattr(expects, family)):
            if not entry.strip():
                yield Problem(
                    file,
                    f"$.expects.{family}[{i}]",
                    "empty or whitespace-only entry asserts nothing",
                )
    for i, pattern in enumerate(expects.response_matches):
        if pattern.strip():
            try:
                re.compile(pattern)
            except (re.error, OverflowError, RecursionError) as exc:
                yield Problem(
                    file, f"$.expects.response_matches[{i}]", f"pattern does not compile: {exc}"
                )
    for family in PAYLOAD_FAMILIES:
        for i, payload in enumerate(getattr(expects, family)):
            for key in ("tool", "needle"):
                if not getattr(payload, key).strip():
                    yield Problem(
                        file, f"$.expects.{family}[{i}].{key}", f"empty {key} asserts nothing"
                    )
    lo, hi, exact = expects.min_tool_calls, expects.max_tool_calls, expects.exact_tool_calls
    if lo == 0:
        yield Problem(
            file, "$.expects.min_tool_calls", "0 is vacuous: every run makes at least 0 calls"
        )
    if lo is not None and hi is not None and lo > hi:
        yield Problem(
            file,
            "$.expects.min_tool_calls",
            f"min_tool_calls ({lo}) exceeds max_tool_calls ({hi}): no run can pass",
        )
    if exact is not None:
        if hi is not None and exact > hi:
            yield Problem(
                file,
                "$.expects.exact_tool_calls",
                f"exact_tool_calls ({exact}) exceeds max_tool_calls ({hi}): no run can pass",
            )
        if lo is not None and exact < lo:
            yield Problem(
                file,
                "$.expects.exact_tool_calls",
                f"exact_tool_calls ({exact}) is below min_tool_calls ({lo}): no run can pass",
            )
    if expects.workspace is not None:
        yield from _workspace_expects_problems(expects.workspace, file)
    if expects.budget is not None and _bound_count(expects.budget) == 0:
        yield Problem(
            file,
            "$.expects.budget",
            "declares no bound: an empty budget asserts nothing; set at least one of "
            f"{', '.join(BUDGET_BOUNDS)}, or remove the block",
        )
    for pointer, expected in expects.response_json.items():
        where = child_path("$.expects.response_json", pointer)
        problem = pointer_problem(pointer)
        if problem is not None:
            yield Problem(file, where, problem)
        if not _finite_json(expected):
            yield Problem(file, where, "NaN and Infinity are not JSON: no response can equal them")


def _workspace_expects_problems(ws: WorkspaceExpects, file: str) -> Iterator[Problem]:
    at = "$.expects.workspace"
    if not (ws.file_exists or ws.file_absent or ws.file_contains):
        yield Problem(
            file,
            at,
            "declares no checks: an empty block asserts nothing; add file_exists, file_absent "
            "or file_contains entries, or remove it",
        )
    present: dict[str, str] = {}  # normalised path -> the entry that expects a file there
    for i, relative in enumerate(ws.file_exists):
        problem = _workspace_path_problem(relative)
        if problem is not None:
            yield Problem(file, f"{at}.file_exists[{i}]", problem)
        else:
            present.setdefault(normal_workspace_path(relative), f"file_exists[{i}]")
    for relative, needles in ws.file_contains.items():
        where = child_path(f"{at}.file_contains", relative)
        problem = _workspace_path_problem(relative)
        if problem is not None:
            yield Problem(file, where, problem)
        else:
            present.setdefault(
                normal_workspace_path(relative), child_path("file_contains", relative)
            )
        if not needles:
            yield Problem(file, where, "no needles: an empty list asserts nothing")
        for j, needle in enumerate(needles):
            if not needle.strip():
                yield Problem(
                    file, f"{where}[{j}]", "empty or whitespace-only needle asserts nothing"
                )
    for i, relative in enumerate(ws.file_absent):
        where = f"{at}.file_absent[{i}]"
        problem = _workspace_path_problem(relative)
        if problem is not None:
            yield Problem(file, where, problem)
            continue
        other = present.get(normal_workspace_path(relative))
        if other is not None:
            yield Problem(
                file,
                where,
                f"{relative!r} must also exist ({other}): no run can pass",
            )


def pointer_problem(pointer: str) -> str | None:
    """Why `pointer` is not an RFC 6901 JSON pointer, or None when it is."""
    if pointer and not pointer.startswith("/"):
        return (
            f'JSON pointer {pointer!r} must be "" (the whole response) or start with "/" (RFC 6901)'
        )
    if re.search(r"~(?![01])", pointer):
        return (
            f"JSON pointer {pointer!r} has a '~' not followed by 0 or 1 "
            "(RFC 6901: ~0 stands for '~', ~1 for '/')"
        )
    return None


def _finite_json(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _bound_count(budget: BudgetExpects) -> int:
    return sum(1 for name in BUDGET_BOUNDS if getattr(budget, name) is not None)


def assertion_count(expects: Expects) -> int:
    """How many grades `expects` produces; `min_tool_calls: 0` counts as none."""
    count = sum(len(getattr(expects, f)) for f in STRING_FAMILIES + PAYLOAD_FAMILIES)
    count += sum(
        1
        for value in (expects.max_tool_calls, expects.exact_tool_calls, expects.all_tools_succeeded)
        if value is not None
    )
    if expects.min_tool_calls:
        count += 1
    ws = expects.workspace
    if ws is not None:
        count += len(ws.file_exists) + len(ws.file_absent)
        count += sum(len(needles) for needles in ws.file_contains.values())
    if expects.budget is not None:
        count += _bound_count(expects.budget)
    count += len(expects.response_json)
    return count
