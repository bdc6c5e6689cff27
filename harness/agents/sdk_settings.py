"""The model settings an OpenAI Agents SDK request is sent with, as the model boundary keeps
them (`ModelRequest.settings`): the SDK's traceable fields that are set, as JSON.

The SDK serialises them through a pydantic `TypeAdapter` it builds on every call, which costs
more than the rest of a replayed request; the settings of a run seldom change, so each
distinct value is serialised once and every request gets a copy of its own."""

from __future__ import annotations

import dataclasses
from typing import Any

import agents.model_settings
from agents import ModelSettings

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


def _key(settings: ModelSettings) -> tuple[Any, ...] | None:
    """The settings' value as a key: each field's value with its type (1, 1.0 and True are
    equal in Python, not in JSON), a float by its exact spelling (-0.0 is not 0.0); None
    when a value is anything else (a dict, a list, a model, an object of the user's), whose
    value a key cannot hold for certain."""
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
