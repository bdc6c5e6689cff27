"""The agents a piece of the user's code runs, read from the code: the objects of a given
class (a framework's agent class) that a function names directly. Both graphs use it: a
pydantic-ai tool that delegates (`await other.run(...)`), an SDK function tool or guardrail
that runs an agent itself (`await Runner.run(other, ...)`). Framework-free: the class to look
for is a parameter.

A function names an object directly when it reads it from a module global by name or from a
variable it closes over: in itself, in the functions it defines inside itself, in the
functions of its own module it calls by name and in the function a decorator wraps (each
followed the same way, each once). An object reached only through an attribute, a container,
a parameter or a call's result (`ctx.deps.agent`, `AGENTS["search"]`, `make_agent()`) is not
found: nothing says which object that is until the code runs.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class AmbiguousAgentName(ValueError):
    """Two agents of one graph share a name, so their model calls and tool calls could not
    be told apart."""


def named_by(function: Callable[..., Any] | None, kind: type[T]) -> Iterator[tuple[str, T]]:
    """The objects of class `kind` that `function` names directly, each with the name the
    code uses for it, following the functions of its own module it names (each once)."""
    pending: list[Any] = [function]
    followed: set[int] = set()
    while pending:
        current = plain_function(pending.pop(0))
        if current is None or id(current) in followed:
            continue
        followed.add(id(current))
        for name, value in _names_read(current):
            if isinstance(value, kind):
                yield name, value
            elif isinstance(value, types.FunctionType) and value.__globals__ is current.__globals__:
                pending.append(value)
        # A decorator's wrapper (functools.wraps) names the function it wraps, wherever from.
        pending.append(getattr(current, "__wrapped__", None))


def plain_function(value: Any) -> types.FunctionType | None:
    """The Python function behind a callable (a bound method's, a decorator's `__wrapped__`)."""
    for _ in range(100):  # a `__wrapped__` chain that loops back must not spin
        if isinstance(value, types.FunctionType):
            return value
        try:
            inner = getattr(value, "__func__", None) or getattr(value, "__wrapped__", None)
        except Exception:  # a descriptor refusing (the SDK's tool without a function)
            return None
        if inner is None:
            return None
        value = inner
    return None


def _names_read(function: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """The values of the globals `function` (and code nested in it) reads by name, then of
    the variables it closes over."""
    missing = object()
    for name in _global_names(function.__code__):
        value = function.__globals__.get(name, missing)
        if value is not missing:
            yield name, value
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a cell not yet filled: the variable is assigned later
            continue


def _global_names(code: types.CodeType) -> Iterator[str]:
    # The names loaded as globals, not every name of co_names: those include attribute
    # names, and `ctx.deps.agent` does not read a global `agent`.
    pending = [code]
    while pending:
        current = pending.pop(0)
        for instruction in dis.get_instructions(current):
            if instruction.opname in _GLOBAL_LOADS and isinstance(instruction.argval, str):
                yield instruction.argval
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
