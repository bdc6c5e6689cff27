"""The fixture schema (`LlmTrace`) and the admission of one fixture.

Admission fails closed: a fixture either becomes a `LlmTrace` that can fail, or yields
every problem found in it, each naming the JSON path of the offending field.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from harness.modes import Mode

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
    steps: list[Step] | None = None


class PayloadExpect(_Strict):
    tool: str
    needle: str
    call_index: NonNegative | None = None


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


# Keys that only mean something against a real provider; replay refuses them rather than
# ignoring them, so a case never looks like it checks something it does not.
LIVE_ONLY_KEYS = ("setup", "tools", "repeat", "cluster")
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
    try:
        data = json.loads(text, object_pairs_hook=_mark_duplicate_keys)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise AdmissionError([Problem(file, "$", msg)]) from None
    except RecursionError:
        raise AdmissionError([Problem(file, "$", "not valid JSON: nested too deeply")]) from None
    duplicates = _duplicate_key_problems(data, file)
    if duplicates:
        raise AdmissionError(duplicates)
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
                        _child_path(path, key),
                        f"duplicate key {key!r} in one JSON object: refusing to guess which "
                        "value was meant",
                    )
                )
            children = [(_child_path(path, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        stack.extend(reversed(children))
    return problems


def _child_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


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
        return f"{path}.{key}", f"unknown key{suffix}"
    missing = _MISSING.match(msg)
    if missing:
        return f"{path}.{missing.group('key')}", "missing required key"
    if path.endswith(".response.type"):
        return path, f"{msg}; a response's type is 'text' or 'tool_calls'"
    return path, msg


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _known_keys_at(path: str, data: dict[str, Any]) -> list[str]:
    """The field names of the struct that sits at `path`, following tagged unions by value."""
    typ: Any = LlmTrace
    value: Any = data
    for m in _PATH_TOKEN.finditer(path[1:]):
        key, index = m.group(1), m.group(2)
        typ = _unwrap(typ, value)
        if key is not None:
            fields = {f.name: f.type for f in msgspec.structs.fields(typ)}
            typ = fields.get(key)
            value = value.get(key) if isinstance(value, dict) else None
        else:
            typ = getattr(typ, "__args__", (None,))[0]
            value = value[int(index)] if isinstance(value, list) else None
    typ = _unwrap(typ, value)
    if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
        return [f.name for f in msgspec.structs.fields(typ)]
    return []


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
    if mode == "replay":
        for key in LIVE_ONLY_KEYS:
            if getattr(trace, key) is not None:
                yield Problem(
                    file,
                    f"$.{key}",
                    f"'{key}' applies only to --mode live; a replay case must not carry it",
                )
    seen_ids: dict[str, str] = {}
    for t, turn in enumerate(trace.turns):
        where = f"$.turns[{t}]"
        if not turn.user_input.strip():
            yield Problem(file, f"{where}.user_input", "blank user input")
        if mode == "live":
            if turn.steps:
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
                if call.name not in agent.tools:
                    tools = ", ".join(sorted(agent.tools)) or "none"
                    yield Problem(
                        file,
                        f"{cwhere}.name",
                        f"tool {call.name!r} is not registered by agent "
                        f"'{agent.name}' (its tools: {tools})",
                    )
    yield from _expects_problems(trace.expects, file)


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
    return count
