"""What the OpenAI Agents SDK adapter would make again for every case or request, made once:
the built-in agent, and the model settings a request is sent with as the model boundary keeps
them (`ModelRequest.settings`: the SDK's traceable fields that are set, as JSON).

Building an SDK `Agent` evaluates its dataclass's type hints again (a third of a replayed
case's own cost), and the SDK serialises settings through a pydantic `TypeAdapter` it builds
on every call (more than the rest of a replayed request). A case's built-in agent is a copy
of one built once, with lists of its own; each distinct value of the settings is serialised
once, and every request gets a dict of its own."""

from __future__ import annotations

import copy
import dataclasses
import operator
from typing import Any

import agents.model_settings
from agents import Agent, Model, ModelSettings, Tool

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
    if key is None:
        return _made_now(settings)
    made = _made.get(key)
    if made is None:
        if len(_made) >= _KEPT:
            for old in list(_made)[: _KEPT // 2]:
                _made.pop(old, None)  # another thread may have let it go
        made = _made[key] = _made_now(settings)
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
    agent = copy.copy(template)
    for field in owned:
        setattr(agent, field, copy.copy(getattr(template, field)))
    agent.name, agent.model, agent.tools = name, model, tools
    return agent
