"""What the OpenAI Agents SDK adapter would make again for every case or request, made once:
the built-in agent and its function tools, the tools a request offers as the model boundary
shows them (`ModelRequest.tools`), and the model settings a request is sent with as the
model boundary keeps them (`ModelRequest.settings`: the SDK's traceable fields that are
set, as JSON).

Building an SDK `Agent` evaluates its dataclass's type hints again (a third of a replayed
case's own cost), and the SDK serialises settings through a pydantic `TypeAdapter` it builds
on every call (more than the rest of a replayed request). A case's built-in agent is a copy
of one built once, with lists of its own; its `FunctionTool`s are made once for each of the
registry's tools (five of them cost what copying the agent costs) and dispatch through the
registry of the case whose turn runs them (`CASE_TOOLS`); the schemas of the function tools
a request offers are one tuple for every request offering the same tools (what keys a
request by its tools' identity, the snapshot check and the transcript, finds the tuple of
the request before); each distinct value of the settings is serialised once (settings with
nothing set, most agents', not even once), and every request gets a dict of its own."""

from __future__ import annotations

import copy
import dataclasses
import operator
from contextvars import ContextVar
from typing import Any, TypeVar

import agents.model_settings
from agents import Agent, FunctionTool, Model, ModelSettings, Tool

from harness.errors import HarnessError
from harness.model_boundary import ToolSchema
from harness.tool_registry import Tool as RegistryTool
from harness.tool_registry import ToolRegistry

K = TypeVar("K")
V = TypeVar("V")

# The fields the SDK traces (its own list: a private name, so every field when it is gone).
_TRACED: tuple[str, ...] | None = getattr(
    agents.model_settings, "_TRACEABLE_MODEL_SETTING_FIELDS", None
)
# Distinct values kept at most: a run has a few; past this the oldest half is let go.
_KEPT = 64
_made: dict[tuple[Any, ...], dict[str, Any]] = {}


def settings_json(settings: ModelSettings) -> dict[str, Any]:
    """The model settings the SDK sends, as it traces them (its set fields, as JSON): not
    the provider extras (headers, query, body), where a key could be. A dict of the
    caller's own (made once for each value of the settings, and copied)."""
    key = _key(settings)
    if key is _NOTHING_SET:
        return {}
    if key is None:
        return _made_now(settings)
    made = _made.get(key)
    if made is None:
        made = _kept(_made, key, _made_now(settings))
    return dict(made)  # flat: a key is made only of plain values


def _made_now(settings: ModelSettings) -> dict[str, Any]:
    return _present(settings.to_traceable_dict())


# The values a key holds as they are: immutable, and equal only to what serialises alike
# once their type is part of the key.
_PLAIN = frozenset({type(None), bool, int, str})


# The traced fields' values of a settings object as one tuple, read in one call: a request
# asks for its settings' key, and reading twenty fields one by one cost more than the rest
# of the adapter's work on a request.
_TRACED_VALUES = operator.attrgetter(*_TRACED) if _TRACED and len(_TRACED) > 1 else None
# Every traced field unset: what the SDK serialises as nothing at all (`_present` of all
# None), known without a look-up; `_key`'s answer for such settings of the SDK's own type
# (a subclass may serialise itself otherwise).
_UNSET = (None,) * len(_TRACED) if _TRACED else ()
_NOTHING_SET: tuple[Any, ...] = ("nothing set",)


def _key(settings: ModelSettings) -> tuple[Any, ...] | None:
    """The settings' value as a key: each field's value with its type (1, 1.0 and True are
    equal in Python, not in JSON), a float by its exact spelling (-0.0 is not 0.0); None
    when a value is anything else (a dict, a list, a model, an object of the user's), whose
    value a key cannot hold for certain."""
    if _TRACED_VALUES is not None:
        read: tuple[Any, ...] | None
        try:
            read = _TRACED_VALUES(settings)
        except AttributeError:  # a field the SDK lists but this object lacks: read each
            read = None
        if read is not None:
            if read == _UNSET and type(settings) is ModelSettings:
                return _NOTHING_SET
            kinds = tuple(map(type, read))
            # Values that are themselves keys (no float, nothing mutable), with their types:
            # the common case, a key in one step. It starts with a string where the
            # field-by-field key below starts with the settings' type: never equal to it.
            if _PLAIN.issuperset(kinds):
                return ("plain", type(settings), kinds, read)
    names = _TRACED or tuple(f.name for f in dataclasses.fields(settings))
    values: list[Any] = [type(settings)]
    for name in names:
        value: Any = getattr(settings, name, None)
        kind = type(value)
        if kind is float:
            values.append(value.hex())
        elif kind in _PLAIN:
            values.append((kind, value))
        else:
            return None
    return tuple(values)


def _present(value: dict[str, Any]) -> dict[str, Any]:
    """`value` without its unset (None) fields, a nested object's (`reasoning`) too."""
    return {k: _present(v) if isinstance(v, dict) else v for k, v in value.items() if v is not None}


# For each model type: the agent built once, and its fields holding a list, a dict or
# settings, which each copy gets a copy of (a fresh agent's are its own).
_built: dict[type[Model], tuple[Agent[Any], tuple[str, ...]]] = {}


def built_in_agent(name: str, model: Model, tools: list[Tool]) -> Agent[Any]:
    """`Agent(name=name, model=model, tools=tools)`, as a copy of one built once for the
    model's type: every field as a fresh one would have it, each list or dict of its own."""
    kind = type(model)
    built = _built.get(kind)
    if built is None:
        template: Agent[Any] = Agent(name=name, model=model, tools=[])
        owned = tuple(
            field.name
            for field in dataclasses.fields(template)
            if isinstance(getattr(template, field.name), (list, dict, ModelSettings))
        )
        # It keeps no case's model (and through it the case's boundary) alive.
        template.model = None
        built = _built[kind] = (template, owned)
    template, owned = built
    # What `copy.copy` does for a dataclass without copy hooks (a new object given the
    # template's attributes), without its generic dispatch, and the fields set in the new
    # object's own dict: `Agent.__setattr__` would take a lock to look for runs sharing
    # the agent's tools, and no run holds an agent made just now. Those were three
    # quarters of the copy's cost (a copy took 23 us, hot; 1.6 now).
    agent: Agent[Any] = object.__new__(Agent)
    state = agent.__dict__
    state.update(template.__dict__)
    for field in owned:
        state[field] = _shallow(state[field])
    state["name"], state["model"], state["tools"] = name, model, tools
    return agent


def _shallow(value: Any) -> Any:
    """`copy.copy(value)` for a field of the template: a list or dict by its own `copy`, the
    settings (a plain dataclass, with no copy hooks) as `copy.copy` makes one, a new object
    given its attributes; anything else through `copy.copy`."""
    kind = type(value)
    if kind is list or kind is dict:
        return value.copy()
    if kind is ModelSettings:
        copied = object.__new__(ModelSettings)
        copied.__dict__.update(value.__dict__)
        return copied
    return copy.copy(value)


# The registry of the case whose turn runs: the built-in agent's tools dispatch through it.
# Set by the session around each of its runs; the SDK runs a tool in the turn's task or a
# task it starts from it, which sees the value (another case's turn, on the same loop, its
# own).
CASE_TOOLS: ContextVar[ToolRegistry | None] = ContextVar("zeroclaw_sdk_case_tools", default=None)
# For each registry tool (by identity: the built-in tools are the same objects every case),
# the SDK tool made for it, with the tool kept so that its id is never another's.
_tools: dict[int, tuple[RegistryTool, FunctionTool]] = {}


def function_tools(registry: ToolRegistry) -> list[Tool]:
    """The registry's tools as SDK function tools, in its order: each made once (a list of
    the case's own), each dispatching through `CASE_TOOLS`' registry when the SDK runs it."""
    made: list[Tool] = []
    for tool in registry.tools.values():
        kept = _tools.get(id(tool))
        if kept is None:
            kept = _kept(_tools, id(tool), (tool, _function_tool(tool)))
        made.append(kept[1])
    return made


# The schemas of each list of function tools a request offered, by what each schema is
# made of: its name, its description and its JSON schema's identity (the cached schema
# holds that object, so no other can take its id while the entry is kept).
_schemas: dict[tuple[Any, ...], tuple[ToolSchema, ...]] = {}


def tool_schemas(tools: list[Tool]) -> tuple[ToolSchema, ...]:
    """The function tools of `tools` as the model boundary shows them, in order: the same
    tuple for every request offering tools of the same names, descriptions and schemas
    (the SDK lists an agent's tools anew for each request, the same objects)."""
    key: list[Any] = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            key += (tool.name, tool.description, id(tool.params_json_schema))
    found = tuple(key)
    made = _schemas.get(found)
    if made is None:
        schemas: list[ToolSchema] = []
        for tool in tools:
            if isinstance(tool, FunctionTool):
                schemas.append(ToolSchema(tool.name, tool.description, tool.params_json_schema))
        made = _kept(_schemas, found, tuple(schemas))
    return made


def _function_tool(tool: RegistryTool) -> FunctionTool:
    name = tool.name

    async def invoke(_context: Any, arguments: str) -> str:
        registry = CASE_TOOLS.get()
        if registry is None:  # the agent run outside its case's turn: no case to record in
            raise HarnessError(f"tool {name!r} was called outside a case's turn")
        return (await registry.dispatch(name, arguments)).result

    return FunctionTool(
        name=name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def _kept(cache: dict[K, V], key: K, value: V) -> V:
    """`value` kept in `cache` under `key`, the older half of a full cache let go first."""
    if len(cache) >= _KEPT:
        for old in list(cache)[: _KEPT // 2]:
            cache.pop(old, None)  # another thread may have let it go
    cache[key] = value
    return value
