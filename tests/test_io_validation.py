"""The schema walk agrees with msgspec on what a schema accepts, and says where and why.

Admission builds its paths from the schema's type information, not from msgspec's error
text: whatever a msgspec release words, the walk must accept exactly what `convert` does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.config import EvalConfig
from harness.fixtures.schema import LlmTrace
from harness.io.validation import faults, known_keys, unknown_key_message

REPO = Path(__file__).resolve().parents[1]
FIXTURES = sorted((REPO / "evals").glob("*/*.json"))
REPLACEMENTS: list[Any] = [None, -1, 2.5, True, "x", [1], {"zz": 1}]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def _delete(document: Any, path: tuple[Any, ...]) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return changed


def _mutations(document: dict[str, Any]) -> Iterator[Any]:
    for path in _paths(document):
        for value in REPLACEMENTS:
            yield _set(document, path, value)
        if path:
            yield _delete(document, path)


def _accepted_by_msgspec(data: Any, schema: type) -> bool:
    try:
        msgspec.convert(data, schema, strict=True)
    except msgspec.ValidationError:
        return False
    return True


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_walk_accepts_exactly_what_msgspec_accepts(fixture: Path) -> None:
    document = json.loads(fixture.read_text("utf-8"))
    disagreements = []
    checked = 0
    for mutated in _mutations(document):
        checked += 1
        walk_ok = not faults(mutated, LlmTrace)
        if walk_ok != _accepted_by_msgspec(mutated, LlmTrace):
            disagreements.append((walk_ok, json.dumps(mutated)[:300]))
    assert checked > 50
    assert disagreements == []


def test_configuration_values_agree_too() -> None:
    base = {"suite_dir": "evals", "mode": "live", "case_timeout_secs": 5, "live_allowed_tools": []}
    cases = [base, *_mutations(base), {**base, "mode": "lve"}, {**base, "unknown": 1}]
    for table in cases:
        assert (not faults(table, EvalConfig)) == _accepted_by_msgspec(table, EvalConfig), table


def test_faults_name_the_path_and_say_what_was_expected() -> None:
    data = {
        "model_name": "m",
        "turns": [{"user_input": 1, "steps": [{"response": {"type": "txt"}}]}],
        "expects": {"budget": {"max_llm_calls": -1}, "respose_contains": []},
    }
    assert [(f.path, f.message) for f in faults(data, LlmTrace)] == [
        ("$.turns[0].user_input", "Expected `str`, got `int`"),
        (
            "$.turns[0].steps[0].response.type",
            "Invalid value 'txt'; a response's type is 'text' or 'tool_calls'",
        ),
        ("$.expects.budget.max_llm_calls", "Expected `int` >= 0"),
        ("$.expects.respose_contains", "unknown key (did you mean response_contains?)"),
    ]


def test_map_entries_are_named_by_their_key_not_an_ellipsis() -> None:
    data = {"model_name": "m", "turns": [], "setup": {"workspace_files": {"a b.txt": 3}}}
    [fault] = faults(data, LlmTrace)
    assert fault.path == '$.setup.workspace_files["a b.txt"]'
    assert fault.message == "Expected `str`, got `int`"


def test_unknown_keys_get_a_hint_or_the_known_keys() -> None:
    known = known_keys(EvalConfig)
    assert unknown_key_message("agnet", known) == "unknown key (did you mean agent?)"
    assert unknown_key_message("zzz", known) == f"unknown key (known keys: {', '.join(known)})"
