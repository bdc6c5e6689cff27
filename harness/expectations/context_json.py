"""Expectations on the run's context after its last turn (the SDK's run context, pydantic-ai's
deps, what an own loop sets), as JSON: RFC 6901 pointers to exact values, as `response_json`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind
from harness.expectations.response_json import pointer_faults, pointer_grades
from harness.io.validation import Fault

AT = f"{EXPECTS}.context_json"
NO_CONTEXT = (
    "the run had no context (give the case setup.context, or set the context setting; an "
    "own loop sets context.run_context)"
)


class ContextJson(Kind):
    """`context_json`: JSON pointer -> expected value in the context after the run."""

    order = 72
    context_json: dict[str, Any] = {}

    def problems(self, context: Context) -> Iterator[Fault]:
        return pointer_faults(AT, self.context_json, "context")

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        if not self.context_json:
            return
        record = evidence.record
        absent = record.context_error
        if absent is None and record.context is None:
            absent = NO_CONTEXT
        yield from pointer_grades(
            "context_json", self.context_json, record.context, absent, "side_effect"
        )
