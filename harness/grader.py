"""Grading: one grade per expectation entry, each saying what was observed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Literal

import msgspec

from harness.case import Expects, LlmTrace, PayloadExpect
from harness.record import RunRecord

Category = Literal["response", "tool", "run"]


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


def grade(expects: Expects, record: RunRecord) -> list[Grade]:
    """Grade a run against `expects`; the order is the declaration order of the families."""
    grades = _unique_checks(_grades(expects, record))
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


def _grades(e: Expects, run: RunRecord) -> Iterator[Grade]:
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
    agent from a dead one."""
    if trace.expects is None:
        return True
    return all(g.passed for g in grade(trace.expects, RunRecord()))
