"""What connecting to an agent's MCP servers needs whatever the framework: the bound on
connecting, the refusal naming a server, a listing of tools run on a thread of its own and
given up on past its bound, a failure said in one line, and the file a stdio server's
stderr goes to.

Framework-free: `sdk_mcp` (the SDK's `mcp_servers=`) and `pydantic_ai_mcp` (pydantic-ai's
MCP toolsets) both build on it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TextIO, TypeVar, cast

from harness.errors import HarnessError
from harness.runtime.deadline import DeadlineExceeded
from harness.runtime.event_loop import CallFailed, CallTimedOut, call_within

# How long a server has to start, answer `initialize` and list its tools, at admission and
# as a case starts; and to shut down after it. The SDK's MCPServerManager has the same
# default; a stdio server written with the `mcp` package starts in well under a second.
CONNECT_TIMEOUT = 10.0

# How much of a server's stderr a refusal quotes: its last lines say why it stopped.
STDERR_QUOTED = 300

T = TypeVar("T")


class MCPServerUnavailable(HarnessError):
    """An MCP server of the agent could not be started, connected or listed."""


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    # An exception group's (anyio's task groups wrap a transport's error in one or two).
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (tuple, list)) and inner:
        for each in inner:
            yield from _leaves(each)
    else:
        yield exc


def why(exc: BaseException, bound: float) -> str:
    """What went wrong with a server, in a line: a timeout as the bound it ran past, an
    exception group (anyio's task groups wrap the transport's error) as its first leaf."""
    leaf = next(_leaves(exc), exc)
    if isinstance(leaf, (TimeoutError, DeadlineExceeded)):
        return f"it did not answer within {bound:g}s"
    text = " ".join(str(leaf).split())
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def listed_within(
    names: list[str],
    bound: float,
    work: Callable[[], Coroutine[Any, Any, T]],
) -> T:
    """`work()` (connecting the servers `names`, listing their tools, cleaning them up, each
    step within `bound`) run to the end on an event loop of its own, on a thread given up on
    once the servers, one after another, have had their bound to connect and to clean up
    (and a stdio server two seconds more to exit): a server that hangs is a refusal naming
    it, never a hang. A failure is an `MCPServerUnavailable` in one line."""
    allowed = 2 * bound * len(names) + 5.0
    try:
        return call_within(allowed, lambda: asyncio.run(work()), name="zeroclaw-mcp")
    except CallTimedOut:
        listed = ", ".join(repr(n) for n in names)
        raise MCPServerUnavailable(
            f"MCP server(s) {listed} did not answer within {allowed:g}s"
        ) from None
    except CallFailed as failed:
        if isinstance(failed.original, HarnessError):
            raise failed.original from None
        raise MCPServerUnavailable(
            f"MCP servers could not be listed: {why(failed.original, bound)}"
        ) from None


class ServerLog:
    """Where a stdio server the harness starts writes its stderr: a file of the harness's
    own, not the process's stderr. The `mcp` package's stdio client would otherwise use the
    `sys.stderr` of when it was imported (closed since, if that was a test's captured
    stream) and a server's log lines would be interleaved with the harness's output; kept
    here, its last lines are quoted when the server could not be started."""

    def __init__(self) -> None:
        self._file: TextIO | None = None

    @property
    def file(self) -> TextIO:
        if self._file is None:
            # A real file: the server process inherits its descriptor.
            opened = tempfile.TemporaryFile(  # noqa: SIM115 (closed by close())
                "w+", encoding="utf-8", errors="replace"
            )
            self._file = cast(TextIO, opened)
        return self._file

    def tail(self) -> str:
        """The server's last words, on one line (empty when it said nothing)."""
        if self._file is None:
            return ""
        try:
            self._file.flush()
            self._file.seek(0)
            text = " ".join(self._file.read().split())
        except (OSError, ValueError):
            return ""
        return text[-STDERR_QUOTED:]

    def said(self, message: str) -> str:
        """`message`, with what the server wrote to its stderr when it wrote anything."""
        tail = self.tail()
        return f"{message} (its stderr: {tail})" if tail else message

    def close(self) -> None:
        log, self._file = self._file, None
        if log is not None:
            log.close()
