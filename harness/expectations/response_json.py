"""Expectations on the final response parsed as JSON: RFC 6901 pointers to exact values."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from harness.expectations.base import (
    EXPECTS,
    Category,
    Context,
    Evidence,
    Grade,
    Kind,
    clip,
    finite_json,
    q,
)
from harness.io.json_paths import child_path
from harness.io.validation import Fault

AT = f"{EXPECTS}.response_json"
_MISSING = object()


class ResponseJson(Kind):
    """`response_json`: JSON pointer -> expected value, compared type-strictly."""

    order = 70
    response_json: dict[str, Any] = {}

    def problems(self, context: Context) -> Iterator[Fault]:
        return pointer_faults(AT, self.response_json, "response")

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        if not self.response_json:
            return
        document = _parse_response_json(evidence.record.final_response)
        absent = "response is not JSON" if document is _MISSING else None
        yield from pointer_grades("response_json", self.response_json, document, absent, "response")


def pointer_faults(at: str, expected: dict[str, Any], document: str) -> Iterator[Fault]:
    """Admission's rules for a family of JSON pointers to expected values at `at`, into
    the `document` it names."""
    for pointer, value in expected.items():
        where = child_path(at, pointer)
        problem = pointer_problem(pointer, document)
        if problem is not None:
            yield Fault(where, problem)
        if not finite_json(value):
            yield Fault(where, f"NaN and Infinity are not JSON: no {document} can equal them")


def pointer_grades(
    family: str, expected: dict[str, Any], document: Any, absent: str | None, category: Category
) -> Iterator[Grade]:
    """One grade per pointer of `expected`: the value `document` holds there equals the
    expected one, type-strictly; `absent` says why there is no document to look in (every
    pointer fails saying it), None when there is one."""
    at = f"{EXPECTS}.{family}"
    for pointer, want in expected.items():
        check = f"{family}({q(pointer)})"
        field = child_path(at, pointer)
        if absent is not None:
            yield Grade(check, False, absent, category, field)
            continue
        if pointer_problem(pointer) is not None:  # admission refuses these
            yield Grade(check, False, "invalid JSON pointer", category, field)
            continue
        got = _lookup(document, pointer)
        if got is _MISSING:
            yield Grade(check, False, "pointer not present", category, field)
            continue
        try:
            ok = json_equal(got, want)
            detail = f"got {_compact(got)}"
            if not ok:
                detail += f"; expected {_compact(want)}"
        except RecursionError:
            ok, detail = False, "value nested too deeply to compare"
        yield Grade(check, ok, detail, category, field)


def pointer_problem(pointer: str, document: str = "response") -> str | None:
    """Why `pointer` is not an RFC 6901 JSON pointer, or None when it is."""
    if pointer and not pointer.startswith("/"):
        return (
            f'JSON pointer {pointer!r} must be "" (the whole {document}) or start with "/" '
            "(RFC 6901)"
        )
    if re.search(r"~(?![01])", pointer):
        return (
            f"JSON pointer {pointer!r} has a '~' not followed by 0 or 1 "
            "(RFC 6901: ~0 stands for '~', ~1 for '/')"
        )
    return None


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
    return clip(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
