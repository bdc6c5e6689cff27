"""Expectations on what went into and came out of dispatched tools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    NonNegative,
    Strict,
    clip,
    is_blank,
    q,
    q_list,
)
from harness.io.validation import Fault
from harness.run_record import RunRecord


class PayloadExpect(Strict):
    tool: str
    needle: str
    call_index: Annotated[int, NonNegative] | None = None


class DispatchPayloads(Kind):
    """`tool_arguments_contain` / `tool_results_contain` (`{tool, needle, call_index?}`
    against a call's canonical-JSON arguments or its result text), and
    `all_tools_succeeded`."""

    order = 30
    tool_arguments_contain: list[PayloadExpect] = []
    tool_results_contain: list[PayloadExpect] = []
    all_tools_succeeded: bool | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        # A list, not a generator: admission asks it of many fixtures, which it admits.
        faults = []
        for family, entries in self._families():
            for i, payload in enumerate(entries):
                if is_blank(payload.tool):
                    faults.append(
                        Fault(f"{EXPECTS}.{family}[{i}].tool", "empty tool asserts nothing")
                    )
                if is_blank(payload.needle):
                    faults.append(
                        Fault(f"{EXPECTS}.{family}[{i}].needle", "empty needle asserts nothing")
                    )
        return iter(faults)

    def _families(self) -> tuple[tuple[str, list[PayloadExpect]], ...]:
        return (
            ("tool_arguments_contain", self.tool_arguments_contain),
            ("tool_results_contain", self.tool_results_contain),
        )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        run = evidence.record
        for i, payload in enumerate(self.tool_arguments_contain):
            yield _payload_grade("tool_arguments_contain", i, payload, run, "arguments")
        for i, payload in enumerate(self.tool_results_contain):
            yield _payload_grade("tool_results_contain", i, payload, run, "result")
        if self.all_tools_succeeded is not None:
            actual = run.all_tools_succeeded
            # None failed where all succeeded: only then are they looked for.
            failed = (
                []
                if actual
                else [f"{c.name}: {clip(c.result, 200)}" for c in run.calls if not c.success]
            )
            detail = f"actual all_tools_succeeded = {str(actual).lower()}"
            if failed:
                detail += f"; failed calls: {q_list(failed)}"
            yield Grade(
                f"all_tools_succeeded({str(self.all_tools_succeeded).lower()})",
                actual == self.all_tools_succeeded,
                detail,
                "tool",
                f"{EXPECTS}.all_tools_succeeded",
            )


def _payload_grade(
    family: str,
    index: int,
    expect: PayloadExpect,
    run: RunRecord,
    payload: Literal["arguments", "result"],
) -> Grade:
    field = f"{EXPECTS}.{family}[{index}]"
    matching = [getattr(c, payload) for c in run.calls if c.name == expect.tool]
    tool, needle = q(expect.tool), q(expect.needle)
    if expect.call_index is not None:
        i = expect.call_index
        check = f"{family}({tool}[{i}], {needle})"
        if i >= len(matching):
            detail = (
                f"no call {i} to {tool}; only {len(matching)} call(s) observed: {q_list(matching)}"
            )
            return Grade(check, False, detail, "tool", field)
        ok = expect.needle in matching[i]
        detail = f"found in call {i}" if ok else f"call {i} payload was {q(clip(matching[i]))}"
        return Grade(check, ok, detail, "tool", field)
    check = f"{family}({tool}, {needle})"
    if not matching:
        detail = f"{tool} was never called; tools called: {q_list(run.tools_called)}"
        return Grade(check, False, detail, "tool", field)
    needle = expect.needle
    ok = False
    for text in matching:  # not `any` over a generator: every case grades payloads
        if needle in text:
            ok = True
            break
    detail = "found" if ok else f"not found; observed payloads: {q_list(matching)}"
    return Grade(check, ok, detail, "tool", field)
