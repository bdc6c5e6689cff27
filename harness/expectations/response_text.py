"""Expectations on the final response's text: substrings present or absent, patterns."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    blank_entries,
    clip,
    is_blank,
    q,
)
from harness.io.text import without_surrogates
from harness.io.validation import Fault


class ResponseText(Kind):
    """`response_contains` / `response_not_contains`: case-sensitive substrings of the final
    response (the last turn's final text)."""

    order = 10
    response_contains: list[str] = []
    response_not_contains: list[str] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        return chain(
            blank_entries("response_contains", self.response_contains),
            blank_entries("response_not_contains", self.response_not_contains),
        )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        response = evidence.record.final_response
        for i, needle in enumerate(self.response_contains):
            ok = needle in response
            yield Grade(
                f"response_contains({q(needle)})",
                ok,
                "found" if ok else f"not found in response: {q(clip(response))}",
                "response",
                f"{EXPECTS}.response_contains[{i}]",
            )
        for i, needle in enumerate(self.response_not_contains):
            ok = needle not in response
            yield Grade(
                f"response_not_contains({q(needle)})",
                ok,
                "absent" if ok else f"unexpectedly present in response: {q(clip(response))}",
                "response",
                f"{EXPECTS}.response_not_contains[{i}]",
            )


class PatternError(Exception):
    """A `response_matches` pattern RE2 cannot compile; the message says why."""


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> Any:
    """`pattern` compiled by RE2: linear-time matching whatever the model answers, and the
    dialect of the original harness's `regex` crate (`\\z`, `\\p{Lu}`, `[[:digit:]]`)."""
    import re2  # imported when a pattern is first used: `--help` never pays for it

    options = re2.Options()
    options.log_errors = False  # RE2 would log every refusal to stderr on its own
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        raise PatternError(_reason(exc, pattern)) from None


@functools.lru_cache(maxsize=1024)
def finder(pattern: str) -> Callable[[str], bool]:
    """Whether `pattern` (as `compiled`) matches anywhere in a text. RE2's Python `search`
    works out the match's offsets in the text (a generator, and the text's UTF-8 offsets
    mapped back to characters), several times the search itself; a check needs only
    whether there is one, which the module's compiled expression answers by itself when
    it has its usual shape (else `search` is asked)."""
    regexp = compiled(pattern)
    import re2

    raw = getattr(regexp, "_regexp", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if anchor is None or not callable(getattr(raw, "Match", None)):
        return lambda text: regexp.search(_utf_8_able(text)) is not None
    match = raw.Match  # type: ignore[union-attr]

    def found(text: str) -> bool:
        try:
            encoded = text.encode("utf-8")  # what `search` matches a text as
        except UnicodeEncodeError:
            encoded = _utf_8_able(text).encode("utf-8")
        return bool(match(anchor, encoded, 0, len(encoded))[0] != _NO_SPAN)

    return found


_NO_SPAN = (-1, -1)


def _utf_8_able(text: str) -> str:
    """`text` as RE2 can read it (UTF-8): a lone surrogate, which an agent's answer can hold
    and no UTF-8 can, is matched as the U+FFFD every report shows in its place."""
    return text if text.isascii() else without_surrogates(text)


def _reason(exc: Exception, pattern: str) -> str:
    raw = exc.args[0] if exc.args else exc
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if "\\Z" in pattern:
        reason += (
            " (`\\Z` is Python's end of text; RE2, the original harness's dialect, spells it "
            "`\\z`, and `$` without `(?m)` means the end of the text too)"
        )
    elif "(?=" in pattern or "(?!" in pattern or "(?<" in pattern or re.search(r"\\[1-9]", pattern):
        reason += " (RE2 has no lookaround or backreferences: it matches in linear time)"
    return reason


class ResponsePattern(Kind):
    """`response_matches`: an RE2 search over the final response (linear time, the original
    harness's dialect). Graded after the tool checks, in the original harness's order."""

    order = 40
    response_matches: list[str] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        faults = list(blank_entries("response_matches", self.response_matches))
        for i, pattern in enumerate(self.response_matches):
            if not is_blank(pattern):
                try:
                    compiled(pattern)
                except PatternError as exc:
                    faults.append(
                        Fault(
                            f"{EXPECTS}.response_matches[{i}]", f"pattern does not compile: {exc}"
                        )
                    )
        return iter(faults)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        response = evidence.record.final_response
        for i, pattern in enumerate(self.response_matches):
            check = f"response_matches({q(pattern)})"
            field = f"{EXPECTS}.response_matches[{i}]"
            try:
                ok = finder(pattern)(response)
            except PatternError as exc:  # admission refuses these
                yield Grade(check, False, f"invalid regex: {exc}", "response", field)
                continue
            detail = "matched" if ok else f"no match in response: {q(clip(response))}"
            yield Grade(check, ok, detail, "response", field)
