"""`harness.agents.code_references`: what a function's code names directly, for any class
(both graphs use it with their framework's agent class): globals read by name, variables
closed over, functions of the same module called by name, a decorator's wrapped function;
never an attribute, a container's item or a call's result."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from harness.agents.code_references import named_by, plain_function


class Thing:
    def __init__(self, label: str) -> None:
        self.label = label


GLOBAL = Thing("global")
HELPED = Thing("helped")
IN_A_DICT = {"key": Thing("in a dict")}


class Holder:
    inner = Thing("attribute")


def helper() -> Thing:
    return HELPED


def found(function: Callable[..., Any]) -> list[tuple[str, str]]:
    return [(name, thing.label) for name, thing in named_by(function, Thing)]


def test_globals_closures_and_helpers_of_the_same_module_are_found() -> None:
    closed = Thing("closed over")

    def tool() -> object:
        return GLOBAL, closed, helper()

    assert found(tool) == [("GLOBAL", "global"), ("closed", "closed over"), ("HELPED", "helped")]


def test_attributes_containers_and_parameters_are_not() -> None:
    def tool(given: Thing) -> object:
        return Holder.inner, IN_A_DICT["key"], given, Thing("made here")

    assert found(tool) == []


def test_a_decorators_wrapped_function_and_a_bound_method_are_followed() -> None:
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any) -> Any:
            return function(*args)

        return wrapper

    @decorate
    def tool() -> Thing:
        return GLOBAL

    class Desk:
        def ask(self) -> Thing:
            return GLOBAL

    assert found(tool) == [("GLOBAL", "global")]
    assert found(Desk().ask) == [("GLOBAL", "global")]


def test_what_is_no_function_names_nothing_and_a_wrapped_loop_ends() -> None:
    class Looping:
        @property
        def __wrapped__(self) -> Looping:
            return self

    assert plain_function(Looping()) is None
    assert found(None) == []  # type: ignore[arg-type]
    assert found(len) == []
