"""Grading: one grade per expectation entry, each saying what was observed."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from harness.case import (
    BudgetExpects,
    Expects,
    LlmTrace,
    PayloadExpect,
    WorkspaceExpects,
    pointer_problem,
)
from harness.locate import child_path
from harness.record import RunRecord
from harness.tools import ToolFailure
from harness.workspace import path_problem, resolve_inside

Category = Literal["response", "tool", "side_effect", "budget", "run"]

# A file graded by `file_contains` is read up to this size; a larger one fails the check.
MAX_INSPECTED_BYTES = 4 * 1024 * 1024


class Grade(msgspec.Struct, frozen=True):
    check: str
    passed: bool
    detail: str
    category: Category
    # JSON path of the expectation entry that produced this grade, for annotations.
    field: str = "$.expects"


def _q(text: str) -> str:
    """A string quoted for a check name or detail, escapes visible."""
    return json.dumps(text, ensure_ascii=False)


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def grade(expects: Expects, record: RunRecord, workspace: Path | None = None) -> list[Grade]:
    """Grade a run against `expects`, one grade per entry, in the original harness's order:
    response_contains, response_not_contains, tools_used, tools_not_used, the call counts,
    the payload checks, all_tools_succeeded, response_matches, then workspace, budget and
    response_json. `workspace` is the case's workspace as the run left it (None: workspace
    checks fail, having nothing to inspect)."""
    grades = _unique_checks(_grades(expects, record, workspace))
    if not grades:
        # Admission refuses such cases; this backstop keeps a case that asserts nothing from
        # ever passing even when graded directly through the API.
        grades.append(
            Grade("declared_assertions", False, "the case declares no effective check", "run")
        )
    return grades


def _unique_checks(grades: Iterator[Grade]) -> list[Grade]:
    """Grades with unique check names: a repeated entry's check gets ` #2`, ` #3`, ..."""
    seen: dict[str, int] = {}
    out: list[Grade] = []
    for g in grades:
        seen[g.check] = n = seen.get(g.check, 0) + 1
        out.append(g if n == 1 else msgspec.structs.replace(g, check=f"{g.check} #{n}"))
    return out


def _grades(e: Expects, run: RunRecord, workspace: Path | None) -> Iterator[Grade]:
    response = run.final_response
    shown = _q(_clip(response))
    names = run.tools_called
    count = len(names)
    calls = f"{count} tool call(s): {_q_list(names)}"
    at = "$.expects."
    for i, needle in enumerate(e.response_contains):
        ok = needle in response
        detail = "found" if ok else f"not found in response: {shown}"
        yield Grade(
            f"response_contains({_q(needle)})",
            ok,
            detail,
            "response",
            f"{at}response_contains[{i}]",
        )
    for i, needle in enumerate(e.response_not_contains):
        ok = needle not in response
        detail = "absent" if ok else f"unexpectedly present in response: {shown}"
        yield Grade(
            f"response_not_contains({_q(needle)})",
            ok,
            detail,
            "response",
            f"{at}response_not_contains[{i}]",
        )
    for i, name in enumerate(e.tools_used):
        ok = name in names
        detail = "called" if ok else f"not called; tools called: {_q_list(names)}"
        yield Grade(f"tools_used({_q(name)})", ok, detail, "tool", f"{at}tools_used[{i}]")
    for i, name in enumerate(e.tools_not_used):
        ok = name not in names
        detail = "not called" if ok else f"unexpectedly called; {calls}"
        yield Grade(f"tools_not_used({_q(name)})", ok, detail, "tool", f"{at}tools_not_used[{i}]")
    if e.max_tool_calls is not None:
        n = e.max_tool_calls
        yield Grade(f"max_tool_calls({n})", count <= n, calls, "tool", f"{at}max_tool_calls")
    if e.min_tool_calls:
        n = e.min_tool_calls
        yield Grade(f"min_tool_calls({n})", count >= n, calls, "tool", f"{at}min_tool_calls")
    if e.exact_tool_calls is not None:
        n = e.exact_tool_calls
        yield Grade(f"exact_tool_calls({n})", count == n, calls, "tool", f"{at}exact_tool_calls")
    for i, payload in enumerate(e.tool_arguments_contain):
        yield _payload_grade("tool_arguments_contain", i, payload, run, "arguments")
    for i, payload in enumerate(e.tool_results_contain):
        yield _payload_grade("tool_results_contain", i, payload, run, "result")
    if e.all_tools_succeeded is not None:
        actual = run.all_tools_succeeded
        failed = [f"{c.name}: {_clip(c.result, 200)}" for c in run.calls if not c.success]
        detail = f"actual all_tools_succeeded = {str(actual).lower()}"
        if failed:
            detail += f"; failed calls: {_q_list(failed)}"
        yield Grade(
            f"all_tools_succeeded({str(e.all_tools_succeeded).lower()})",
            actual == e.all_tools_succeeded,
            detail,
            "tool",
            f"{at}all_tools_succeeded",
        )
    for i, pattern in enumerate(e.response_matches):
        check = f"response_matches({_q(pattern)})"
        field = f"{at}response_matches[{i}]"
        try:
            ok = re.search(pattern, response) is not None
        except (re.error, OverflowError, RecursionError) as exc:  # admission refuses these
            yield Grade(check, False, f"invalid regex: {exc}", "response", field)
            continue
        detail = "matched" if ok else f"no match in response: {shown}"
        yield Grade(check, ok, detail, "response", field)
    if e.workspace is not None:
        yield from _workspace_grades(e.workspace, workspace)
    if e.budget is not None:
        yield from _budget_grades(e.budget, run)
    if e.response_json:
        yield from _response_json_grades(e.response_json, response)


def _payload_grade(
    family: str,
    index: int,
    expect: PayloadExpect,
    run: RunRecord,
    payload: Literal["arguments", "result"],
) -> Grade:
    field = f"$.expects.{family}[{index}]"
    matching = [getattr(c, payload) for c in run.calls if c.name == expect.tool]
    tool, needle = _q(expect.tool), _q(expect.needle)
    if expect.call_index is not None:
        i = expect.call_index
        check = f"{family}({tool}[{i}], {needle})"
        if i >= len(matching):
            detail = (
                f"no call {i} to {tool}; only {len(matching)} call(s) observed: {_q_list(matching)}"
            )
            return Grade(check, False, detail, "tool", field)
        ok = expect.needle in matching[i]
        detail = f"found in call {i}" if ok else f"call {i} payload was {_q(_clip(matching[i]))}"
        return Grade(check, ok, detail, "tool", field)
    check = f"{family}({tool}, {needle})"
    if not matching:
        detail = f"{tool} was never called; tools called: {_q_list(run.tools_called)}"
        return Grade(check, False, detail, "tool", field)
    ok = any(expect.needle in p for p in matching)
    detail = "found" if ok else f"not found; observed payloads: {_q_list(matching)}"
    return Grade(check, ok, detail, "tool", field)


def _q_list(items: list[str]) -> str:
    return "[" + ", ".join(_q(_clip(i, 200)) for i in items) + "]"


def empty_run_passes(trace: LlmTrace) -> bool:
    """True when `trace` passes against a run that did nothing: it cannot tell a working
    agent from a dead one.

    The empty run has no response, no calls, no tokens, and a fresh workspace holding only
    the case's setup files (the harness writes those whatever the agent does)."""
    expects = trace.expects
    if expects is None:
        return True
    if expects.workspace is None:
        return _passes(expects, RunRecord())
    with tempfile.TemporaryDirectory(prefix="zeroclaw-empty-run-") as directory:
        root = Path(directory)
        files = trace.setup.workspace_files if trace.setup is not None else {}
        for relative, text in files.items():
            try:
                target = resolve_inside(root, relative)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            except (ToolFailure, OSError):
                continue  # admission reports bad setup paths; this check judges the rest
        return _passes(expects, RunRecord(), root)


def _passes(expects: Expects, record: RunRecord, workspace: Path | None = None) -> bool:
    """Whether every grade passes, stopping at the first that fails; no grades never pass
    (as `grade`'s backstop decides)."""
    graded = False
    for g in _grades(expects, record, workspace):
        if not g.passed:
            return False
        graded = True
    return graded


# --- workspace -----------------------------------------------------------------------------

NO_WORKSPACE = "no workspace to inspect"


def _workspace_grades(ws: WorkspaceExpects, root: Path | None) -> Iterator[Grade]:
    at = "$.expects.workspace"
    for i, relative in enumerate(ws.file_exists):
        check, field = f"file_exists({_q(relative)})", f"{at}.file_exists[{i}]"
        found = _locate(root, relative)
        if isinstance(found, str):
            yield Grade(check, False, found, "side_effect", field)
        elif found.is_file():
            yield Grade(check, True, "present", "side_effect", field)
        elif found.exists():
            yield Grade(check, False, "present but not a regular file", "side_effect", field)
        else:
            yield Grade(check, False, "missing", "side_effect", field)
    for i, relative in enumerate(ws.file_absent):
        check, field = f"file_absent({_q(relative)})", f"{at}.file_absent[{i}]"
        found = _locate(root, relative)
        if isinstance(found, str):
            yield Grade(check, False, found, "side_effect", field)
            continue
        assert root is not None
        # A dangling symlink is something, too: check the name itself, not only its target.
        there = os.path.lexists(found) or os.path.lexists(root / relative.replace("\\", "/"))
        detail = "unexpectedly present" if there else "absent"
        yield Grade(check, not there, detail, "side_effect", field)
    for relative, needles in ws.file_contains.items():
        where = child_path(f"{at}.file_contains", relative)
        text = _read_text(root, relative)
        for j, needle in enumerate(needles):
            check = f"file_contains({_q(relative)}, {_q(needle)})"
            field = f"{where}[{j}]"
            if isinstance(text, _Unreadable):
                yield Grade(check, False, text.reason, "side_effect", field)
                continue
            ok = needle in text
            detail = "found" if ok else f"not found in file: {_q(_clip(text))}"
            yield Grade(check, ok, detail, "side_effect", field)


def _locate(root: Path | None, relative: str) -> Path | str:
    """The path `relative` names inside `root`, or why it cannot be inspected."""
    if root is None:
        return NO_WORKSPACE
    if path_problem(relative) is not None:
        return "path escapes workspace"
    try:
        return resolve_inside(root, relative)
    except ToolFailure:
        return "path escapes workspace: a symlink leads outside the workspace"
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable directory
        return f"cannot inspect path: {_os_reason(exc)}"


class _Unreadable(msgspec.Struct, frozen=True):
    reason: str


def _read_text(root: Path | None, relative: str) -> str | _Unreadable:
    found = _locate(root, relative)
    if isinstance(found, str):
        return _Unreadable(found)
    if not found.exists():
        return _Unreadable("cannot read file: missing")
    if not found.is_file():  # never open a FIFO or a device: it could block or never end
        return _Unreadable("cannot read file: not a regular file")
    try:
        with open(found, "rb") as handle:
            data = handle.read(MAX_INSPECTED_BYTES + 1)
    except OSError as exc:
        return _Unreadable(f"cannot read file: {_os_reason(exc)}")
    if len(data) > MAX_INSPECTED_BYTES:
        return _Unreadable(f"cannot read file: larger than {MAX_INSPECTED_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _Unreadable(f"cannot read file: not UTF-8 (invalid byte at offset {exc.start})")


def _os_reason(exc: BaseException) -> str:
    # The reason without the absolute path: details go into reports, which stay portable.
    return getattr(exc, "strerror", None) or type(exc).__name__


# --- budget --------------------------------------------------------------------------------

# Grading order of the original harness: tokens, then wall clock, then model calls.
_BUDGET_ORDER = (
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_duration_ms",
    "max_llm_calls",
)


def _budget_grades(budget: BudgetExpects, run: RunRecord) -> Iterator[Grade]:
    actual: dict[str, float] = {
        "max_input_tokens": run.input_tokens,
        "max_output_tokens": run.output_tokens,
        "max_total_tokens": run.input_tokens + run.output_tokens,
        "max_duration_ms": run.duration_ms,
        "max_llm_calls": run.model_calls,
    }
    for name in _BUDGET_ORDER:
        bound = getattr(budget, name)
        if bound is None:
            continue
        value = actual[name]
        yield Grade(
            f"{name}({bound})",
            value <= bound,
            f"actual {_number(value)}",
            "budget",
            f"$.expects.budget.{name}",
        )


def _number(value: float) -> str:
    """An int as is; a measured float to 3 decimals, never rounded to look within a bound."""
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if "." in text else repr(value)


# --- response_json -------------------------------------------------------------------------

_MISSING = object()


def _response_json_grades(expected: dict[str, Any], response: str) -> Iterator[Grade]:
    document = _parse_response_json(response)
    for pointer, want in expected.items():
        check = f"response_json({_q(pointer)})"
        field = child_path("$.expects.response_json", pointer)
        if document is _MISSING:
            yield Grade(check, False, "response is not JSON", "response", field)
            continue
        if pointer_problem(pointer) is not None:  # admission refuses these
            yield Grade(check, False, "invalid JSON pointer", "response", field)
            continue
        got = _lookup(document, pointer)
        if got is _MISSING:
            yield Grade(check, False, "pointer not present", "response", field)
            continue
        try:
            ok = json_equal(got, want)
            detail = f"got {_compact(got)}"
            if not ok:
                detail += f"; expected {_compact(want)}"
        except RecursionError:
            ok, detail = False, "value nested too deeply to compare"
        yield Grade(check, ok, detail, "response", field)


def _parse_response_json(response: str) -> Any:
    """The final response as JSON: the whole (trimmed) text, else the first ```json fenced
    block; `_MISSING` when neither parses."""
    document = _loads(response.strip())
    if document is not _MISSING:
        return document
    start = response.find("```json")
    if start < 0:
        return _MISSING
    body = response[start + len("```json") :]
    end = body.find("```")
    return _loads((body if end < 0 else body[:end]).strip())


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return _MISSING


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _lookup(document: Any, pointer: str) -> Any:
    """RFC 6901: `document` at `pointer`, or `_MISSING`."""
    if pointer == "":
        return document
    value = document
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            if token not in value:
                return _MISSING
            value = value[token]
        elif isinstance(value, list):
            if not re.fullmatch(r"0|[1-9][0-9]*", token) or int(token) >= len(value):
                return _MISSING
            value = value[int(token)]
        else:
            return _MISSING
    return value


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality that keeps types apart: 1 != 1.0, true != 1, also inside arrays and
    objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, float) and isinstance(b, float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def _compact(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
