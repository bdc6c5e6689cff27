"""pydantic-ai's counterparts of guardrails, as the harness records them: an output
validator that raises `ModelRetry` until the output retries run out (`UnexpectedModelBehavior`)
and a usage limit exceeded (`UsageLimitExceeded`). Each ends the run the way pydantic-ai
ends it; the harness records it as a tripwire named after the validator (its function's
name) or the limit (`request_limit`, `tool_calls_limit`, …), and the turn ends there.

Only the pydantic-ai adapter imports it: it needs pydantic-ai.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic_ai import Agent, ModelRetry, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from harness.model_boundary import ModelBoundary

# Every limit `UsageLimits` can set: a run (or a delegate's, run by a tool with limits of
# its own) exceeding one is a tripwire named after it.
LIMITS = frozenset(f.name for f in dataclasses.fields(UsageLimits) if f.name.endswith("_limit"))

# The output validators of the turn in progress that asked for a retry, newest last, each
# with its agent: set per turn by the session, read by the wrappers in whatever task (or
# worker thread, for a plain `def` validator) pydantic-ai runs them.
_RETRIED: ContextVar[list[tuple[str | None, str]] | None] = ContextVar(
    "zeroclaw_pai_retried", default=None
)
_MARK = "__zeroclaw_noted__"


def validator_names(agent: Agent[Any, Any]) -> list[str]:
    """The names of an agent's output validators (their functions' names)."""
    return [_name(v.function) for v in getattr(agent, "_output_validators", ())]


def _name(function: Callable[..., Any]) -> str:
    return str(getattr(function, "__name__", type(function).__name__))


def note_validators(agent: Agent[Any, Any], name: str | None) -> None:
    """Each output validator of `agent` noting, when it asks for a retry, that it did (for
    the turn in progress of whichever case runs it). Installed once per validator: outside
    a case's turn it notes nothing, so an agent every case shares may keep it."""
    for validator in getattr(agent, "_output_validators", ()):
        if not getattr(validator.function, _MARK, False):
            validator.function = _noting(validator.function, validator._is_async, name)


def _noting(function: Callable[..., Any], is_async: bool, agent: str | None) -> Callable[..., Any]:
    # The same calling convention as the function it wraps: pydantic-ai decided how to call
    # it (with the run context or not, awaited or in a thread) when the agent was built.
    name = _name(function)

    def note() -> None:
        retried = _RETRIED.get()
        if retried is not None:
            retried.append((agent, name))

    if is_async:

        async def run_async(*arguments: Any) -> Any:
            try:
                return await function(*arguments)
            except ModelRetry:
                note()
                raise

        wrapper: Callable[..., Any] = run_async
    else:

        def run(*arguments: Any) -> Any:
            try:
                return function(*arguments)
            except ModelRetry:
                note()
                raise

        wrapper = run
    wrapper = functools.wraps(function)(wrapper)
    setattr(wrapper, _MARK, True)
    return wrapper


@contextmanager
def tripwires(boundary: ModelBoundary) -> Iterator[list[bool]]:
    """The turn's run, its tripwires recorded: an output validator whose retries ran out,
    a usage limit exceeded. The run's exception is swallowed (the turn halts and the
    yielded flag says so); any other passes."""
    retried: list[tuple[str | None, str]] = []
    token = _RETRIED.set(retried)
    tripped = [False]
    try:
        yield tripped
    except UnexpectedModelBehavior as exc:
        # Retries run out on output the validators kept refusing; output the schema refused
        # with no validator asking is the script's fault: a run error as before.
        if not retried or "output retries" not in str(exc):
            raise
        agent, name = retried[-1]
        _trip(boundary, name, "output_validator", agent, str(exc))
        tripped[0] = True
    except UsageLimitExceeded as exc:
        found = re.search(r"\b(\w+_limit)\b", str(exc))
        _trip(boundary, found.group(1) if found else "usage_limit", "usage_limit", None, str(exc))
        tripped[0] = True
    finally:
        _RETRIED.reset(token)


def _trip(boundary: ModelBoundary, name: str, kind: Any, agent: str | None, why: str) -> None:
    boundary.guardrail(name, kind, agent=agent, tripped=True, message=why)
    boundary.halt()
