"""Expectations on which tools were dispatched and how many times."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    NonNegative,
    blank_entries,
    misspelt_absent_tools,
    q,
    q_list,
)
from harness.io.validation import Fault


class ToolDispatch(Kind):
    """`tools_used` / `tools_not_used` and `max_tool_calls` / `min_tool_calls` /
    `exact_tool_calls`, read from the recorded calls."""

    order = 20
    tools_used: list[str] = []
    tools_not_used: list[str] = []
    max_tool_calls: Annotated[int, NonNegative] | None = None
    min_tool_calls: Annotated[int, NonNegative] | None = None
    exact_tool_calls: Annotated[int, NonNegative] | None = None

    @property
    def effective_min(self) -> int | None:
        # `min_tool_calls: 0` holds for every run: it is no check (admission says so).
        return self.min_tool_calls or None

    def problems(self, context: Context) -> Iterator[Fault]:
        # A list, not a generator: admission asks it of most fixtures, which it admits.
        faults = [
            *blank_entries("tools_used", self.tools_used),
            *blank_entries("tools_not_used", self.tools_not_used),
            *misspelt_absent_tools("tools_not_used", self.tools_not_used, context),
        ]
        lo, hi, exact = self.min_tool_calls, self.max_tool_calls, self.exact_tool_calls
        if lo is not None and self.effective_min is None:
            faults.append(
                Fault(f"{EXPECTS}.min_tool_calls", "0 is vacuous: every run makes at least 0 calls")
            )
        if lo is not None and hi is not None and lo > hi:
            faults.append(
                Fault(
                    f"{EXPECTS}.min_tool_calls",
                    f"min_tool_calls ({lo}) exceeds max_tool_calls ({hi}): no run can pass",
                )
            )
        if exact is not None and hi is not None and exact > hi:
            faults.append(
                Fault(
                    f"{EXPECTS}.exact_tool_calls",
                    f"exact_tool_calls ({exact}) exceeds max_tool_calls ({hi}): no run can pass",
                )
            )
        if exact is not None and lo is not None and exact < lo:
            faults.append(
                Fault(
                    f"{EXPECTS}.exact_tool_calls",
                    f"exact_tool_calls ({exact}) is below min_tool_calls ({lo}): no run can pass",
                )
            )
        return iter(faults)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        names = evidence.record.tools_called
        count = len(names)
        shown = q_list(names)
        calls = f"{count} tool call(s): {shown}"
        for i, name in enumerate(self.tools_used):
            ok = name in names
            detail = "called" if ok else f"not called; tools called: {shown}"
            yield Grade(f"tools_used({q(name)})", ok, detail, "tool", f"{EXPECTS}.tools_used[{i}]")
        unknown = evidence.agent_tools
        for i, name in enumerate(self.tools_not_used):
            ok = name not in names
            detail = "not called" if ok else f"unexpectedly called; {calls}"
            if unknown is not None and name not in unknown:
                # Only a model inventing the tool could fail this; say so, so nobody reads
                # it as a check on one of the agent's tools.
                detail += " (not a tool the agent registers)"
            field = f"{EXPECTS}.tools_not_used[{i}]"
            yield Grade(f"tools_not_used({q(name)})", ok, detail, "tool", field)
        if (bound := self.max_tool_calls) is not None:
            yield Grade(f"max_tool_calls({bound})", count <= bound, calls, "tool", _MAX)
        if bound := self.min_tool_calls:  # `effective_min`, without a call for every case
            yield Grade(f"min_tool_calls({bound})", count >= bound, calls, "tool", _MIN)
        if (bound := self.exact_tool_calls) is not None:
            yield Grade(f"exact_tool_calls({bound})", count == bound, calls, "tool", _EXACT)


_MAX, _MIN, _EXACT = (f"{EXPECTS}.{name}_tool_calls" for name in ("max", "min", "exact"))
