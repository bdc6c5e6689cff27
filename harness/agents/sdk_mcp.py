"""The MCP servers of an OpenAI Agents SDK agent graph (`Agent(mcp_servers=[...])`): their
tools listed at admission (each server connected within a bound, its tool filter applied,
the names the agent offers its model), and, per case, the servers the user's code leaves to
the runner connected before the first turn and cleaned up after the last, with every call
of their tools recorded at the tool boundary like a function tool's.

Only `harness.agents.frameworks.openai_agents` (and `sdk_graph`) import it: it needs the SDK.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper
from agents.mcp import MCPServer, MCPServerManager, MCPServerStdio
from mcp.client.stdio import stdio_client

from harness.agents.mcp_connect import CONNECT_TIMEOUT as CONNECT_TIMEOUT
from harness.agents.mcp_connect import MCPServerUnavailable as MCPServerUnavailable
from harness.agents.mcp_connect import ServerLog, listed_within
from harness.agents.mcp_connect import why as why
from harness.runtime.deadline import within
from harness.tool_registry import ToolRegistry, canonical_text


def servers_of(graph: list[Agent[Any]]) -> list[MCPServer]:
    """Every MCP server of the graph's agents, each once (agents may share one), in order."""
    seen: dict[int, MCPServer] = {}
    for agent in graph:
        for server in agent.mcp_servers:
            seen.setdefault(id(server), server)
    return list(seen.values())


def server_name(server: MCPServer) -> str:
    try:
        return str(server.name)
    except Exception:  # a user's subclass whose name property fails: still say which kind
        return type(server).__name__


def _connected_by_user(server: MCPServer) -> bool:
    # A server the user's own code connected (at import, say) is theirs to clean up.
    return getattr(server, "session", None) is not None


# The servers a case has connected, so two cases running at once in one process never
# share one connection (one would clean it up under the other's feet).
_IN_USE: set[int] = set()


class CaseServers:
    """The MCP servers of one case that the user's code leaves to the runner: connected on
    `open` (each through the SDK's `MCPServerManager`, which connects and cleans up a
    server in a task of its own, so a turn's cancellation never leaves a transport half
    closed), cleaned up on `close`, whatever happened in between."""

    def __init__(self, servers: list[MCPServer], bound: float | None = None) -> None:
        self._servers = [s for s in servers if not _connected_by_user(s)]
        self._bound = CONNECT_TIMEOUT if bound is None else bound
        self._manager: MCPServerManager | None = None
        self._held: list[int] = []
        self._logs: dict[int, ServerLog] = {}

    async def open(self) -> None:
        if self._manager is not None or not self._servers:
            return
        for server in self._servers:
            if id(server) in _IN_USE:
                raise MCPServerUnavailable(
                    f"MCP server {server_name(server)!r} is connected by another case running "
                    "at the same time: build the server in the agent's factory, so each case "
                    "gets its own"
                )
        self._held = [id(s) for s in self._servers]
        _IN_USE.update(self._held)
        for server in self._servers:
            if isinstance(server, MCPServerStdio):
                self._logs[id(server)] = _log_stderr(server)
        self._manager = MCPServerManager(
            self._servers,
            connect_timeout_seconds=self._bound,
            cleanup_timeout_seconds=self._bound,
            connect_in_parallel=True,
        )
        await self._manager.connect_all()
        errors = self._manager.errors
        failed = next((s for s in self._servers if s in errors), None)
        if failed is not None:
            message = (
                f"MCP server {server_name(failed)!r} could not be started: "
                f"{why(errors[failed], self._bound)}"
            )
            log = self._logs.get(id(failed))
            raise MCPServerUnavailable(message if log is None else log.said(message))

    async def close(self) -> None:
        manager, self._manager = self._manager, None
        try:
            if manager is not None:
                await manager.cleanup_all()
        finally:
            _IN_USE.difference_update(self._held)
            self._held = []
            logs, self._logs = self._logs, {}
            for server in self._servers:
                if id(server) in logs:
                    vars(server).pop("create_streams", None)  # the SDK's own again
            for log in logs.values():
                log.close()


def _log_stderr(server: MCPServerStdio) -> ServerLog:
    """The server's stderr sent to a `ServerLog` of the harness's: the SDK starts it with the
    `mcp` package's default, the `sys.stderr` of when that package was imported. Set on
    the server object, for its connections of this case."""
    log = ServerLog()

    def create_streams() -> Any:
        return stdio_client(server.params, errlog=log.file)

    object.__setattr__(server, "create_streams", create_streams)
    return log


def list_tools(graph: list[Agent[Any]], bound: float | None = None) -> dict[str, set[str]]:
    """Each agent of the graph with MCP servers and the names of the MCP tools it offers its
    model (tool filters applied, server prefixes as its `mcp_config` makes them), learnt by
    connecting its servers for the while, within `bound` per server. A server that cannot be
    started, connected or listed is an `MCPServerUnavailable` naming it: never a hang, as
    the listing runs on a thread of its own given up on past its bound."""
    servers = servers_of(graph)
    if not servers:
        return {}
    bound = CONNECT_TIMEOUT if bound is None else bound
    return listed_within(
        [server_name(s) for s in servers], bound, lambda: _list_tools(graph, servers, bound)
    )


async def _list_tools(
    graph: list[Agent[Any]], servers: list[MCPServer], bound: float
) -> dict[str, set[str]]:
    case = CaseServers(servers, bound)
    try:
        await case.open()
        found: dict[str, set[str]] = {}
        context: RunContextWrapper[Any] = RunContextWrapper(context=None)
        for agent in graph:
            for server in agent.mcp_servers:
                # Each server listed alone first, so a failure names it.
                try:
                    await within(bound, server.list_tools(context, agent))
                except Exception as exc:
                    raise MCPServerUnavailable(
                        f"MCP server {server_name(server)!r} could not list its tools: "
                        f"{why(exc, bound)}"
                    ) from None
            if agent.mcp_servers:
                tools = await within(bound, agent.get_mcp_tools(context))
                found.setdefault(agent.name, set()).update(t.name for t in tools)
        return found
    finally:
        await case.close()


# How the MCP call in progress ended at the server (True: an `isError` result or an
# exception; False: a result): a fresh list set by the recording wrapper of the tool in the
# task that runs it; the server's `call_tool`, run in a task of the SDK's that copies this
# context, appends to that same list.
_FLAGGED: ContextVar[list[bool] | None] = ContextVar("zeroclaw_mcp_flagged", default=None)
_NOTING = "_zeroclaw_notes_is_error"


def note_errors(server: MCPServer) -> None:
    """Have `server.call_tool` tell the recording wrapper whether a result was an error
    result (`isError`): the SDK hands the model its content either way. Set once on the
    server object; it does nothing outside a recorded call."""
    if getattr(server, _NOTING, False):
        return
    original = server.call_tool

    async def call_tool(*args: Any, **kwargs: Any) -> Any:
        flagged = _FLAGGED.get()
        try:
            result = await original(*args, **kwargs)
        except BaseException:
            if flagged is not None:
                flagged.append(True)
            raise
        if flagged is not None:
            error = getattr(result, "is_error", None)
            flagged.append(bool(getattr(result, "isError", False) if error is None else error))
        return result

    object.__setattr__(server, "call_tool", call_tool)
    object.__setattr__(server, _NOTING, True)


def recording_mcp_tools(
    agent: Agent[Any],
    registry: ToolRegistry,
    owner: str | None,
    text: Callable[[Any], str],
    handled: Callable[[Any], bool],
) -> None:
    """`agent` (a per-case clone) lists its MCP tools with each wrapped to record its calls
    under `owner`: the SDK builds them from the servers on every model call, outside
    `agent.tools`, so they are wrapped where it fetches them."""
    if not agent.mcp_servers:
        return
    for server in agent.mcp_servers:
        note_errors(server)
    fetch = agent.get_mcp_tools

    async def get_mcp_tools(run_context: RunContextWrapper[Any]) -> list[Any]:
        try:
            tools = await fetch(run_context)
        except Exception as exc:  # a server that crashed or hung up since it connected
            names = ", ".join(repr(server_name(s)) for s in agent.mcp_servers)
            raise MCPServerUnavailable(
                f"MCP server(s) {names} of agent {agent.name!r} could not list their tools: "
                f"{why(exc, CONNECT_TIMEOUT)}"
            ) from exc
        return [_recorded(t, registry, owner, text, handled) for t in tools]

    object.__setattr__(agent, "get_mcp_tools", get_mcp_tools)


def _recorded(
    tool: Any,
    registry: ToolRegistry,
    owner: str | None,
    text: Callable[[Any], str],
    handled: Callable[[Any], bool],
) -> Any:
    if not isinstance(tool, FunctionTool):
        return tool
    original = tool.on_invoke_tool

    async def invoke(context: Any, arguments: str) -> Any:
        flagged: list[bool] = []

        async def run() -> Any:
            token = _FLAGGED.set(flagged)
            try:
                return await original(context, arguments)
            finally:
                _FLAGGED.reset(token)
                if owner is not None:
                    registry.agent = owner

        return await registry.recorded(
            tool.name,
            canonical_text(arguments),
            run,
            text=text,
            # Succeeded only when the server answered, with no error result: the SDK's
            # failure handler turns a call that raised (the server gone, arguments that
            # are no JSON object) into text for the model, flagged on the context only
            # for its own default handler.
            failed=lambda _result: not flagged or any(flagged) or handled(context),
        )

    return dataclasses.replace(tool, on_invoke_tool=invoke)
