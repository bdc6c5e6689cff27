"""A case's own state beside its agent: the `context` setting (a function of the user's that
builds each case a fresh run context or deps from the fixture's `setup.context`), the
`session` setting (an OpenAI Agents SDK `Session` per case), and the context as JSON once
the run is over, for the record and `context_json`.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from harness.agents.protocol import AgentContext
from harness.agents.registry import import_attribute
from harness.errors import RAISED_BY_AGENT_CODE, HarnessError, describe
from harness.runtime.event_loop import CallFailed, CallTimedOut, call_within

# `session = "sqlite"`: each case in an in-memory `agents.SQLiteSession` of its own.
SQLITE = "sqlite"
# A context larger than this as JSON is not kept: a record is held for every case of a run.
MAX_CONTEXT_JSON_BYTES = 1 << 20


class SetupError(HarnessError):
    """The `context` or `session` setting cannot be used; the message names it."""


class ContextError(HarnessError):
    """The user's context builder or session factory failed for a case: its run error."""


@dataclass(frozen=True)
class CaseSetup:
    """The `context` and `session` settings, resolved: `builder` makes a case's context
    from its `setup.context` (`module:function`), `sessions` a case's SDK `Session` from its
    id ("sqlite", or `module:function`). Sent to a worker process as the two settings, which
    it resolves again."""

    context: str | None = None
    session: str | None = None
    builder: Callable[[dict[str, Any]], Any] | None = field(default=None, compare=False)
    sessions: Callable[[str], Any] | None = field(default=None, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return (resolve_setup, (self.context, self.session))


NO_SETUP = CaseSetup()


def resolve_setup(
    context: str | None, session: str | None, seconds: float | None = None
) -> CaseSetup:
    """The settings' functions imported (within `seconds`, when given: importing runs the
    user's module, which may block); `SetupError` naming the setting otherwise."""
    context = (context or "").strip() or None
    session = (session or "").strip() or None
    if context is None and session is None:
        return NO_SETUP

    def load() -> CaseSetup:
        builder = _function("context", context) if context is not None else None
        if session is None or session == SQLITE:
            sessions = _sqlite_session if session == SQLITE else None
        else:
            sessions = _function("session", session)
        return CaseSetup(context, session, builder, sessions)

    if seconds is None:
        return load()
    try:
        return call_within(seconds, load, name="zeroclaw-eval-setup")
    except CallTimedOut:
        raise SetupError(
            f"the context or session setting: still not imported after {seconds:g}s "
            "(its module blocks; the timeout is --timeout / case_timeout_secs)"
        ) from None
    except CallFailed as failed:
        if isinstance(failed.original, HarnessError):
            raise failed.original from None
        raise SetupError(f"the context or session setting: {describe(failed.original)}") from None


def setup_for(
    adapter: object, context: str | None, session: str | None, seconds: float | None = None
) -> CaseSetup:
    """The settings resolved for `adapter`'s run: `session` is the OpenAI Agents SDK's, so
    it is refused for any other agent rather than ignored."""
    setup = resolve_setup(context, session, seconds)
    framework = getattr(adapter, "framework", None)
    if setup.session is not None and framework != "openai-agents":
        name = getattr(adapter, "name", type(adapter).__name__)
        raise SetupError(
            f"session {setup.session!r}: a Session keeps an OpenAI Agents SDK agent's "
            f"conversation, and agent {name!r} is none (pydantic-ai carries its conversation "
            "as message_history, and an own loop keeps its own)"
        )
    return setup


def _function(setting: str, spec: str) -> Callable[..., Any]:
    if ":" not in spec:
        hint = " or 'sqlite'" if setting == "session" else ""
        raise SetupError(f"{setting} {spec!r}: expected 'module:function'{hint}")
    found = import_attribute(spec, f"{setting} {spec!r}", SetupError)
    if not callable(found):
        raise SetupError(f"{setting} {spec!r}: {type(found).__name__} is not callable")
    return found  # type: ignore[no-any-return]


def _sqlite_session(case_id: str) -> Any:
    # Imported only when a run asks for it: importing the harness imports no framework.
    from agents import SQLiteSession

    return SQLiteSession(case_id)


async def prepare_case(setup: CaseSetup, context: AgentContext) -> None:
    """The case's context and session, fresh, before its agent starts."""
    if setup.builder is not None:
        context.run_context = await build_context(setup, context.setup_context)
        context.context_built = True
    if setup.sessions is not None:
        context.sdk_session = await open_session(setup, context.case_id)


async def close_case(context: AgentContext) -> None:
    """What the case's session holds (an SQLite connection) goes with the case; a session
    that fails to close is no failure of the case."""
    if context.sdk_session is not None:
        with contextlib.suppress(*RAISED_BY_AGENT_CODE):
            await close_session(context.sdk_session)


async def build_context(setup: CaseSetup, data: dict[str, Any] | None) -> Any:
    """The builder's context for a case from its `setup.context` (the case's own copy;
    `{}` when the fixture has none): what the user's function returns, awaited when it is
    awaitable."""
    assert setup.builder is not None
    try:
        made = setup.builder(data if data is not None else {})
        return await made if inspect.isawaitable(made) else made
    except RAISED_BY_AGENT_CODE as exc:
        raise ContextError(
            f"the context builder {setup.context!r} failed: {describe(exc)}"
        ) from exc


async def open_session(setup: CaseSetup, case_id: str) -> Any:
    """A fresh SDK `Session` for the case, from the `session` setting."""
    assert setup.sessions is not None
    try:
        made = setup.sessions(case_id)
        return await made if inspect.isawaitable(made) else made
    except RAISED_BY_AGENT_CODE as exc:
        raise ContextError(
            f"the session factory {setup.session!r} failed: {describe(exc)}"
        ) from exc


async def close_session(session: Any) -> None:
    """Close what the case's session holds (an SQLite connection) when it says how."""
    close = getattr(session, "close", None)
    if callable(close):
        done = close()
        if inspect.isawaitable(done):
            await done


def context_as_json(value: Any) -> tuple[Any, str | None]:
    """The run's context as JSON data (pydantic models as `model_dump(mode="json")`,
    dataclasses, dicts, lists, …), or None and why it cannot be; (None, None) for a run
    with no context."""
    if value is None:
        return None, None
    try:
        data = msgspec.to_builtins(value, enc_hook=_unbuilt, str_keys=True)
        size = len(msgspec.json.encode(data))
    except RAISED_BY_AGENT_CODE as exc:
        return None, f"the context ({type(value).__name__}) cannot be rendered as JSON: {_why(exc)}"
    if size > MAX_CONTEXT_JSON_BYTES:
        return None, (
            f"the context ({type(value).__name__}) is {size} bytes as JSON, more than the "
            f"{MAX_CONTEXT_JSON_BYTES} kept"
        )
    return data, None


def _unbuilt(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model, wherever it sits in the context
        return dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _why(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, TypeError) else describe(exc)
