"""Expectations on the final response's text: substrings present or absent, patterns."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    blank_entries,
    clip,
    q,
)
from harness.validation import Fault


class ResponseText(Kind):
    """`response_contains` / `response_not_contains`: case-sensitive substrings of the final
    response (the last turn's final text)."""

    order = 10
    response_contains: list[str] = []
    response_not_contains: list[str] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        yield from blank_entries("response_contains", self.response_contains)
        yield from blank_entries("response_not_contains", self.response_not_contains)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        response = evidence.record.final_response
        shown = q(clip(response))
        for i, needle in enumerate(self.response_contains):
            ok = needle in response
            yield Grade(
                f"response_contains({q(needle)})",
                ok,
                "found" if ok else f"not found in response: {shown}",
                "response",
                f"{EXPECTS}.response_contains[{i}]",
            )
        for i, needle in enumerate(self.response_not_contains):
            ok = needle not in response
            yield Grade(
                f"response_not_contains({q(needle)})",
                ok,
                "absent" if ok else f"unexpectedly present in response: {shown}",
                "response",
                f"{EXPECTS}.response_not_contains[{i}]",
            )


class ResponsePattern(Kind):
    """`response_matches`: a regular-expression search over the final response. Graded
    after the tool checks, in the original harness's order."""

    order = 40
    response_matches: list[str] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        yield from blank_entries("response_matches", self.response_matches)
        for i, pattern in enumerate(self.response_matches):
            if pattern.strip():
                try:
                    re.compile(pattern)
                except (re.error, OverflowError, RecursionError) as exc:
                    yield Fault(
                        f"{EXPECTS}.response_matches[{i}]", f"pattern does not compile: {exc}"
                    )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        response = evidence.record.final_response
        for i, pattern in enumerate(self.response_matches):
            check = f"response_matches({q(pattern)})"
            field = f"{EXPECTS}.response_matches[{i}]"
            try:
                ok = re.search(pattern, response) is not None
            except (re.error, OverflowError, RecursionError) as exc:  # admission refuses these
                yield Grade(check, False, f"invalid regex: {exc}", "response", field)
                continue
            detail = "matched" if ok else f"no match in response: {q(clip(response))}"
            yield Grade(check, ok, detail, "response", field)
