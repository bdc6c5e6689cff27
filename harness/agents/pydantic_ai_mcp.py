"""The MCP toolsets of a pydantic-ai agent graph (`Agent(toolsets=[MCPToolset(...)])`, and
wrapped: `.filtered()`, `.prefixed()`, …): their tools listed at admission (each toolset
entered within a bound and asked for its tools as the agent's model is offered them), and,
per case, the toolsets the user's code leaves to the runner entered before the first turn
and closed after the last. Their calls are recorded by the adapter's recording toolset,
which wraps every toolset of the agent.

Only `harness.agents.frameworks.pydantic_ai` imports it: it needs pydantic-ai.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

from harness.agents.mcp_connect import CONNECT_TIMEOUT as CONNECT_TIMEOUT
from harness.agents.mcp_connect import MCPServerUnavailable, ServerLog, listed_within, why
from harness.agents.pydantic_ai_graph import GraphAgent
from harness.runtime.deadline import within


def servers_in(toolset: AbstractToolset[Any]) -> list[MCPToolset[Any]]:
    """The MCP toolsets a toolset is or wraps (a filtered, prefixed, … one)."""
    found: list[MCPToolset[Any]] = []
    toolset.apply(lambda leaf: found.append(leaf) if isinstance(leaf, MCPToolset) else None)
    return found


def mcp_toolsets(agent: Agent[Any, Any]) -> list[AbstractToolset[Any]]:
    """The agent's toolsets that reach an MCP server, as configured (wrappers kept)."""
    return [ts for ts in agent.toolsets if not isinstance(ts, FunctionToolset) and servers_in(ts)]


def server_name(server: MCPToolset[Any]) -> str:
    """What names a server to the user: the `id` it was given, else its URL, else its
    command (paths shortened to their file names)."""
    chosen = getattr(server, "_explicit_id", None)
    if chosen:
        return str(chosen)
    transport = getattr(server.client, "transport", None)
    url = getattr(transport, "url", None)
    if url:
        return str(url)
    command = getattr(transport, "command", None)
    if command:
        words = [str(command), *map(str, getattr(transport, "args", None) or [])]
        return " ".join(Path(w).name if "/" in w else w for w in words)
    return type(server).__name__


def _log_stderr(server: MCPToolset[Any]) -> ServerLog | None:
    """A stdio server's stderr sent to a `ServerLog` of the harness's, unless the user's code
    chose its own `log_file` (fastmcp's default is the `sys.stderr` of when it connects,
    which may be no real file at all, and interleaves the server's log with the harness's
    output)."""
    transport = getattr(server.client, "transport", None)
    if transport is None or not hasattr(transport, "log_file") or transport.log_file is not None:
        return None
    log = ServerLog()
    transport.log_file = log.file
    return log


# The servers the cases running in this process hold (entered by the harness), and how many
# cases hold each: a module-level toolset every case shares is entered once and closed
# when its last case is over (pydantic-ai's toolsets count their entries themselves).
_HELD: dict[int, int] = {}


class CaseToolsets:
    """The MCP toolsets of one case that the user's code leaves to the runner: entered on
    `open` (each within the bound; one that cannot be is a refusal naming it), held through
    the case's turns (pydantic-ai enters them again for each run: that only counts), and on
    `close` exited and their client closed, which ends a stdio server's process (fastmcp
    keeps it alive between connections)."""

    def __init__(self, graph: list[GraphAgent], bound: float | None = None) -> None:
        seen: dict[int, MCPToolset[Any]] = {}
        for node in graph:
            for toolset in mcp_toolsets(node.agent):
                for server in servers_in(toolset):
                    seen.setdefault(id(server), server)
        self.servers = list(seen.values())
        self._bound = CONNECT_TIMEOUT if bound is None else bound
        self._entered: list[MCPToolset[Any]] = []
        self._logs: dict[int, ServerLog] = {}
        self._opened = False

    async def open(self) -> None:
        if self._opened:
            return
        self._opened = True
        for server in self.servers:
            if id(server) not in _HELD and server.is_running:
                continue  # the user's code entered it: theirs to close
            if id(server) in _HELD:
                _HELD[id(server)] += 1
                self._entered.append(server)
                continue
            log = _log_stderr(server)
            if log is not None:
                self._logs[id(server)] = log
            try:
                await within(self._bound, server.__aenter__())
            except Exception as exc:
                message = (
                    f"MCP server {server_name(server)!r} could not be started: "
                    f"{why(exc, self._bound)}"
                )
                await self._shut(server)
                raise MCPServerUnavailable(message if log is None else log.said(message)) from None
            _HELD[id(server)] = 1
            self._entered.append(server)

    async def close(self) -> None:
        entered, self._entered = self._entered, []
        try:
            for server in reversed(entered):
                _HELD[id(server)] -= 1
                if _HELD[id(server)] > 0:
                    continue
                del _HELD[id(server)]
                try:
                    await within(self._bound, server.__aexit__(None, None, None))
                finally:
                    await self._shut(server)
        finally:
            logs, self._logs = self._logs, {}
            for log in logs.values():
                log.close()

    async def _shut(self, server: MCPToolset[Any]) -> None:
        # The client closed for good: a stdio server's process ends, and the transport's
        # stderr is fastmcp's default again, as the user's code left it.
        try:
            await within(self._bound, server.client.close())  # type: ignore[no-untyped-call]
        except Exception:
            pass  # already gone: nothing is left to close
        finally:
            transport = getattr(server.client, "transport", None)
            if id(server) in self._logs and transport is not None:
                transport.log_file = None


def list_tools(graph: list[GraphAgent], bound: float | None = None) -> dict[str, set[str]]:
    """Each agent of the graph with MCP toolsets and the names of their tools as its model is
    offered them (filters applied, prefixes added), learnt by entering its toolsets for the
    while, within `bound` each. A server that cannot be started, entered or listed is an
    `MCPServerUnavailable` naming it: never a hang (the listing runs on a thread of its own,
    given up on past its bound)."""
    case = CaseToolsets(graph, bound)
    if not case.servers:
        return {}
    bound = case._bound
    names = [server_name(s) for s in case.servers]
    return listed_within(names, bound, lambda: _list_tools(graph, case, bound))


async def _list_tools(
    graph: list[GraphAgent], case: CaseToolsets, bound: float
) -> dict[str, set[str]]:
    try:
        await case.open()
        found: dict[str, set[str]] = {}
        for node in graph:
            # The context a run gives a toolset, as far as listing tools reads it: a filter
            # that reads the case's deps cannot be applied before a case has any.
            context: RunContext[Any] = RunContext(
                deps=None, model=TestModel(), usage=RunUsage(), agent=node.agent
            )
            for toolset in mcp_toolsets(node.agent):
                try:
                    tools = await within(bound, toolset.get_tools(context))
                except Exception as exc:
                    listed = ", ".join(repr(server_name(s)) for s in servers_in(toolset))
                    raise MCPServerUnavailable(
                        f"MCP server(s) {listed} of agent {node.name!r} could not list their "
                        f"tools: {why(exc, bound)}"
                    ) from None
                found.setdefault(node.name, set()).update(tools)
        return found
    finally:
        await case.close()
