"""The trace sources `zeroclaw eval import` reads, and how a file's format is told.

Each source is a module of this room exposing `FORMAT` (its name on the command line),
`sniff(head: bytes) -> bool` (whether the first bytes of a file look like its format) and
`read(path: Path, *, limit_bytes: int) -> Iterator[ImportedConversation]` (the file's
conversations, streamed: no record of the file over `limit_bytes` is held, and a record
it cannot read is a `TraceImportError` naming the file, the trace and the span). Adding a
source is one line of `SOURCES`; a source is imported only once it is asked for.

Also here: the bounded reading every JSON-lines source shares (`json_lines`).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol, cast

import msgspec

from harness.errors import UsageError
from harness.io.files import InputError, decode_json, open_regular
from harness.tracing.conversation import ImportedConversation, TraceImportError

# Module name by format, in the order detection tries them.
SOURCES: dict[str, str] = {
    "openai-agents": "harness.tracing.openai_agents_traces",
    "otlp-genai": "harness.tracing.otlp_genai",
    "pydantic-ai-messages": "harness.tracing.pydantic_ai_messages",
}
AUTO = "auto"
# The most one record (a JSON line, or a whole JSON document) of a trace file may hold.
DEFAULT_LIMIT_BYTES = 64 << 20
# What sniffing reads of a file's start.
HEAD_BYTES = 64 << 10
_CHUNK = 1 << 16

# Warnings a source says while it reads (a truncated last line passed over): the command
# hears them on its own stream.
LOG = logging.getLogger("harness.tracing")


class Source(Protocol):
    FORMAT: str

    def sniff(self, head: bytes) -> bool: ...

    def read(self, path: Path, *, limit_bytes: int) -> Iterator[ImportedConversation]: ...


def source(name: str) -> Source:
    """The source module of the format `name`."""
    return cast(Source, importlib.import_module(SOURCES[name]))


def formats() -> tuple[str, ...]:
    """The `--format` choices."""
    return (AUTO, *SOURCES)


def detect(path: Path, requested: str = AUTO) -> Source:
    """The source that reads `path`: the one `requested`, else the first whose `sniff`
    takes the file's first bytes."""
    if requested != AUTO:
        if requested not in SOURCES:
            raise UsageError(f"--format {requested!r}: choose from {', '.join(formats())}")
        return source(requested)
    head = head_of(path)
    for name in SOURCES:
        found = source(name)
        if found.sniff(head):
            return found
    raise TraceImportError(
        f"{path}: not a trace format this version reads; name it with --format "
        f"({', '.join(SOURCES)})"
    )


def head_of(path: Path) -> bytes:
    """The first bytes of `path` (a regular file, opened without blocking)."""
    try:
        fd, _ = open_regular(path)
    except InputError as exc:
        raise TraceImportError(f"{path}: {exc.reason}") from None
    try:
        return os.read(fd, HEAD_BYTES)
    except OSError as exc:
        raise TraceImportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


class JsonLine(NamedTuple):
    number: int  # 1-based
    value: Any


def json_lines(path: Path, *, limit_bytes: int) -> Iterator[JsonLine]:
    """The JSON value of each non-blank line of `path`, read a chunk at a time, never
    holding more than one line of at most `limit_bytes`. A longer line, or one that is no
    JSON, is a `TraceImportError` naming the line; a last line without its newline that is
    no JSON is a writer stopped mid-line: said (`LOG`) and passed over."""
    try:
        fd, _ = open_regular(path)
    except InputError as exc:
        raise TraceImportError(f"{path}: {exc.reason}") from None
    try:
        yield from _lines(path, fd, limit_bytes)
    finally:
        os.close(fd)


def _lines(path: Path, fd: int, limit_bytes: int) -> Iterator[JsonLine]:
    pending = b""
    number = 0
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError as exc:
            raise TraceImportError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if not chunk:
            break
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            number += 1
            if line.strip():
                yield JsonLine(number, _decode(path, number, line))
        if len(pending) > limit_bytes:
            raise TraceImportError(
                f"{path}: line {number + 1}: longer than the {limit_bytes}-byte limit of a record"
            )
    if pending.strip():
        number += 1
        try:
            value = _decode(path, number, pending)
        except TraceImportError:
            LOG.warning(
                "%s: line %d: a truncated last line (its writer stopped mid-line), passed over",
                path,
                number,
            )
            return
        yield JsonLine(number, value)


def _decode(path: Path, number: int, line: bytes) -> Any:
    try:
        return decode_json(line)
    except msgspec.DecodeError as exc:
        raise TraceImportError(f"{path}: line {number}: not JSON: {exc}") from None
