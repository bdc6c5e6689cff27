"""JSON paths: how a member's path is spelled, and the line where it sits in a fixture's
text (the line annotations point at)."""

from __future__ import annotations

import json
import re

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def json_path_lines(text: str) -> dict[str, int]:
    """Every JSON path in `text` mapped to the 1-based line where it starts (the key's line
    for an object member). `text` must be valid JSON; paths use `$.key` and `$[i]`."""
    lines: dict[str, int] = {"$": 1}
    stack: list[list[object]] = []  # frames: [path, kind, next index or pending key]
    line = 1
    i, n = 0, len(text)
    expect_key = False
    pending: str | None = None
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if ch in " \t\r,:":
            if ch == "," and stack and stack[-1][1] == "object":
                expect_key = True
            i += 1
            continue
        if ch == '"':
            m = _STRING.match(text, i)
            end = m.end() if m else n
            token = text[i:end]
            if expect_key and stack and stack[-1][1] == "object":
                key = json.loads(token)
                pending = child_path(str(stack[-1][0]), key)
                lines.setdefault(pending, line)
                expect_key = False
            else:
                _value_start(stack, lines, line, pending)
                pending = None
            line += token.count("\n")
            i = end
            continue
        if ch in "{[":
            path = _value_start(stack, lines, line, pending) or "$"
            pending = None
            stack.append([path, "object" if ch == "{" else "array", 0])
            expect_key = ch == "{"
            i += 1
            continue
        if ch in "}]":
            stack.pop()
            expect_key = False
            i += 1
            continue
        # a number, true, false or null
        _value_start(stack, lines, line, pending)
        pending = None
        while i < n and text[i] not in ",}] \t\r\n":
            i += 1
    return lines


def _value_start(
    stack: list[list[object]], lines: dict[str, int], line: int, pending: str | None
) -> str | None:
    """Record an array element's line and return the path of the value starting here."""
    if not stack:
        return None
    path, kind, index = stack[-1]
    if kind == "array":
        assert isinstance(index, int)
        element = f"{path}[{index}]"
        stack[-1][2] = index + 1
        lines.setdefault(element, line)
        return element
    return pending


def child_path(path: str, key: str) -> str:
    """The JSON path of member `key` of the object at `path` (`$.a`, or `$[\"a b\"]`)."""
    if _IDENT.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


# The last segment of a path: `.key`, `[index]`, or a JSON-quoted key (which may itself hold
# `]`, `[` or escaped quotes).
_PARENT = re.compile(r'(\.[A-Za-z_][A-Za-z0-9_]*|\[(?:\d+|"(?:[^"\\]|\\.)*")\])$')


def line_of(text: str, path: str) -> int:
    """The line of `path` in `text`, else of its nearest ancestor present, else 1."""
    return nearest_line(json_path_lines(text), path)


def nearest_line(lines: dict[str, int], path: str) -> int:
    """The line of `path` in a `json_path_lines` map, else of its nearest ancestor, else 1."""
    while path:
        if path in lines:
            return lines[path]
        parent = _PARENT.sub("", path)
        if parent == path:
            break
        path = parent
    return 1
