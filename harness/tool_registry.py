"""The tool boundary: a registry that dispatches tools and records every dispatch.

The recorded calls are the canonical dispatch fact: grading reads them and nothing else.
Tools the registry runs itself are recorded by `dispatch`; tools a framework runs itself
(a user's own agent's) are recorded by `recorded`, which an adapter wraps around them.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import msgspec

from harness.errors import RAISED_BY_AGENT_CODE, HarnessError, describe

ToolFunction = Callable[[dict[str, Any]], "str | Awaitable[str]"]
T = TypeVar("T")
Dispatch = Callable[[str, "str | dict[str, Any]"], Awaitable["ToolOutcome"]]
DispatchFault = Callable[[Dispatch, str, "str | dict[str, Any]"], Awaitable["ToolOutcome"]]


class ToolFailure(HarnessError):
    """Raised by a tool to report failure; its text is what the model is told."""


class RecordedCall(msgspec.Struct, frozen=True, gc=False):
    """One dispatch at the tool boundary, the canonical dispatch fact. Untracked by the
    garbage collector (data only): a run keeps every case's."""

    name: str
    arguments: str
    result: str
    success: bool
    duration_ms: float
    # The agent of a multi-agent graph that made the call; None: the agent under test, or a
    # loop that has only one.
    agent: str | None = None


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call: its model-facing schema and its implementation."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: ToolFunction


@dataclass(frozen=True)
class ToolOutcome:
    """What one dispatch returned to the agent: the text, and whether the tool failed."""

    result: str
    success: bool


def canonical_arguments(arguments: Any) -> str:
    """Compact JSON with sorted keys and non-ASCII kept, the recorded form of arguments."""
    try:
        if _spelt_alike(arguments):
            return _SORTED(arguments).decode("utf-8")
    except (UnicodeEncodeError, RecursionError):  # a lone surrogate; nesting past the limit
        pass
    return _CANONICAL.encode(arguments)


# `json.dumps` with these options builds an encoder on every call: made once instead.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# msgspec spells these arguments byte for byte as `_CANONICAL` does, in a tenth of the time.
_SORTED = msgspec.json.Encoder(order="sorted").encode


def _spelt_alike(value: Any) -> bool:
    """Whether msgspec spells `value` as `json` does: text, whole numbers, booleans and
    null, in objects with text keys and arrays, exactly those types. Not floats (their
    digits differ), tuples, sets, subclasses or anything `json` refuses and msgspec knows."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is dict:
        # Mostly a flat object of text and numbers: its values told apart here, without a
        # call for each.
        for key, item in value.items():
            if type(key) is not str:
                return False
            held = type(item)
            if not (
                held is str or held is int or held is bool or item is None or _spelt_alike(item)
            ):
                return False
        return True
    return kind is list and all(map(_spelt_alike, value))


def canonical_text(arguments: str) -> str:
    """Arguments sent as JSON text, in their recorded form; text that is not JSON is kept
    as sent (what the model sent is what is graded)."""
    try:
        return canonical_arguments(json.loads(arguments))
    except ValueError:
        return arguments


@dataclass
class ToolRegistry:
    """The tools of one case, and the record of every dispatch made through them."""

    tools: dict[str, Tool] = field(default_factory=dict)
    calls: list[RecordedCall] = field(default_factory=list)
    # Mutation testing only: a fault wrapped around every `dispatch` (it gets the real one).
    dispatch_fault: DispatchFault | None = None
    # The agent whose calls are being dispatched, in a multi-agent graph: an adapter sets it
    # as its framework passes control, and every call recorded carries it.
    agent: str | None = None

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> ToolRegistry:
        tools = list(tools)
        # Made at once for every case: one by one (`add`) only to say which name repeats.
        registry = cls({tool.name: tool for tool in tools})
        if len(registry.tools) != len(tools):
            registry.tools = {}
            for tool in tools:
                registry.add(tool)
        return registry

    def add(self, tool: Tool) -> None:
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self.tools[tool.name] = tool

    def names(self) -> frozenset[str]:
        return frozenset(self.tools)

    def add_call(
        self, name: str, arguments: str, result: str, success: bool, duration_ms: float
    ) -> None:
        """Record a dispatch made outside `dispatch` (a tool the framework ran itself)."""
        self.calls.append(RecordedCall(name, arguments, result, success, duration_ms, self.agent))

    # The spelling the adapter protocol documented first; it stays.
    record = add_call

    async def recorded(
        self,
        name: str,
        arguments: str,
        run: Callable[[], Awaitable[T]],
        *,
        text: Callable[[T], str],
        failed: Callable[[T], bool] = lambda _result: False,
        unrun: tuple[type[BaseException], ...] = (),
    ) -> T:
        """`await run()` and record it as one call of `name` with `arguments` (already in
        recorded form): its result as `text(result)`, failed when `failed(result)`; an
        exception is recorded as a failed call (`Type: message`) and propagates. A result
        that cannot be shown as text (its `__str__` raises) is a failed call too, and the
        framework gets that failure's text in its place: no framework could send it on.

        An exception of `unrun` says the call did not run at all (a framework holding it for
        approval): it propagates and nothing is recorded.

        A `dispatch_fault` applies here as in `dispatch`: mutation testing reaches the tools
        a framework runs itself, a nested agent's included."""
        if self.dispatch_fault is None:
            return await self._recorded(name, arguments, run, text, failed, unrun)
        return await self._faulted(self.dispatch_fault, name, arguments, run, text, failed, unrun)

    async def _faulted(
        self,
        fault: DispatchFault,
        name: str,
        arguments: str,
        run: Callable[[], Awaitable[T]],
        text: Callable[[T], str],
        failed: Callable[[T], bool],
        unrun: tuple[type[BaseException], ...],
    ) -> T:
        # The fault sees outcomes; the framework needs its own result back. Each real run
        # is remembered by its outcome, so what the fault passes on goes back as the run
        # gave it (its exception raised again), and only an outcome the fault made up is
        # handed over as its text.
        real: dict[int, tuple[ToolOutcome, T | Exception]] = {}

        async def dispatch(_name: str, _arguments: str | dict[str, Any]) -> ToolOutcome:
            try:
                result: T | Exception = await self._recorded(
                    name, arguments, run, text, failed, unrun
                )
            except unrun:
                raise  # the call did not run: no outcome for the fault to see
            except Exception as exc:  # recorded as failed; raised again if passed on
                result = exc
            outcome = _outcome(result, text, failed)
            real[id(outcome)] = (outcome, result)
            return outcome

        outcome = await fault(dispatch, name, arguments)
        kept = real.get(id(outcome))
        if kept is None or kept[0] is not outcome:
            return cast(T, outcome.result)
        if isinstance(kept[1], Exception):
            raise kept[1]
        return kept[1]

    async def _recorded(
        self,
        name: str,
        arguments: str,
        run: Callable[[], Awaitable[T]],
        text: Callable[[T], str],
        failed: Callable[[T], bool],
        unrun: tuple[type[BaseException], ...] = (),
    ) -> T:
        start = time.perf_counter()
        try:
            result = await run()
        except unrun:
            raise
        except BaseException as exc:  # recorded whatever it was; it goes on as it came
            elapsed = (time.perf_counter() - start) * 1e3
            self.add_call(name, arguments, f"{type(exc).__name__}: {exc}", False, elapsed)
            raise
        elapsed = (time.perf_counter() - start) * 1e3
        try:
            shown = text(result)
        except Exception as exc:
            unshowable = f"the tool's result cannot be shown: {describe(exc)}"
            self.add_call(name, arguments, unshowable, False, elapsed)
            return cast(T, unshowable)
        self.add_call(name, arguments, shown, not failed(result), elapsed)
        return result

    async def dispatch(self, name: str, arguments: str | dict[str, Any]) -> ToolOutcome:
        """Run one tool call and record it; never raises for a tool's own failure."""
        if self.dispatch_fault is not None:
            return await self.dispatch_fault(self._dispatch, name, arguments)
        return await self._dispatch(name, arguments)

    async def _dispatch(self, name: str, arguments: str | dict[str, Any]) -> ToolOutcome:
        start = time.perf_counter()
        parsed: Any = arguments
        if not isinstance(arguments, str):
            recorded = canonical_arguments(arguments)
        else:
            recorded = arguments
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
                recorded = canonical_arguments(parsed)
            except ValueError as exc:
                parsed = exc  # keep the raw text as recorded: what was sent is what is graded
        outcome = await self._run(name, parsed)
        self.add_call(
            name, recorded, outcome.result, outcome.success, (time.perf_counter() - start) * 1e3
        )
        return outcome

    async def _run(self, name: str, arguments: Any) -> ToolOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return ToolOutcome(f"unknown tool: {name}", False)
        if isinstance(arguments, ValueError):
            return ToolOutcome(f"invalid JSON arguments for {name}: {arguments}", False)
        if not isinstance(arguments, dict):
            return ToolOutcome(f"arguments for {name} must be a JSON object", False)
        try:
            result = tool.function(arguments)
            # Most tools answer text at once: told so before the look for an awaitable.
            if type(result) is not str and inspect.isawaitable(result):
                result = await result
        except ToolFailure as exc:
            return ToolOutcome(str(exc), False)
        except _cancelled():  # the deadline's: never the tool's failure
            raise
        except RAISED_BY_AGENT_CODE as exc:  # a tool's bug is the tool's failure, not ours
            return ToolOutcome(f"{name} raised {describe(exc)}", False)
        if result is None:
            return ToolOutcome("", True)  # nothing returned is an empty output, not "None"
        if isinstance(result, str):
            return ToolOutcome(result, True)
        try:
            return ToolOutcome(str(result), True)
        except RAISED_BY_AGENT_CODE as exc:  # a result that cannot even be shown
            return ToolOutcome(
                f"{name} returned a result whose str() raised {describe(exc)}", False
            )


def _cancelled() -> type[BaseException]:
    """asyncio's `CancelledError`, looked up only once a tool raised: `eval check` imports
    this module and runs no event loop, and a tool that returns pays nothing for it."""
    import asyncio

    return asyncio.CancelledError


def _outcome(result: Any, text: Callable[[Any], str], failed: Callable[[Any], bool]) -> ToolOutcome:
    """What a framework's tool run told its model, as a dispatch's outcome."""
    if isinstance(result, Exception):
        return ToolOutcome(f"{type(result).__name__}: {result}", False)
    try:
        return ToolOutcome(text(result), not failed(result))
    except Exception as exc:  # `recorded` already recorded it as a failed call
        return ToolOutcome(f"the tool's result cannot be shown: {describe(exc)}", False)
