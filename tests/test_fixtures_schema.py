"""The fixture JSON Schema: the committed file is what `zeroclaw eval schema` prints, every
committed fixture fits it and parses, and on schema-level faults the schema and the
harness's own parsing agree (both refuse, the harness at the mutated field's path)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from conftest import BUILTIN_SURFACE, REPO, SHARED_FIXTURES
from jsonschema import Draft202012Validator, validators

from harness.cli import main
from harness.fixtures.schema import LlmTrace, json_schema, parse_fixture
from harness.fixtures.suite import load_case
from harness.io.json_paths import child_path
from harness.io.problems import AdmissionError

SCHEMA_FILE = REPO / "evals" / "fixture.schema.json"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
Key = str | int  # one step of a JSON path: a member name or an array index

# The committed fixtures, by group: each group must hold some, or its glob has gone wrong.
COMMITTED = {
    "evals/regression": sorted((REPO / "evals" / "regression").glob("*.json")),
    "evals/capability": sorted((REPO / "evals" / "capability").glob("*.json")),
    "evals/live": sorted((REPO / "evals" / "live").glob("*.json")),
    "examples/*/evals": sorted((REPO / "examples").glob("*/evals/*.json")),
}
# Read in place beside the repository; empty (the test collects as skipped) when absent.
SHARED = sorted(SHARED_FIXTURES.glob("*.json"))


def committed_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def validator() -> Draft202012Validator:
    return Draft202012Validator(committed_schema())


def json_path(keys: Iterable[Key]) -> str:
    """The JSON path of `keys`, spelled as the harness spells a problem's field."""
    path = "$"
    for key in keys:
        path = f"{path}[{key}]" if isinstance(key, int) else child_path(path, key)
    return path


def schema_errors(data: Any) -> list[str]:
    return [f"{json_path(e.absolute_path)}: {e.message}" for e in validator().iter_errors(data)]


def param(path: Path) -> Any:
    return pytest.param(path, id="/".join(path.parts[-3:]))


# --- the committed file ---------------------------------------------------------------------


def test_committed_schema_is_what_eval_schema_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "schema"]) == 0
    printed = capsys.readouterr().out
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    # Byte for byte (pretty, trailing newline): regenerate with
    # `zeroclaw eval schema > evals/fixture.schema.json`.
    assert committed == printed
    assert committed.endswith("}\n")
    assert json.loads(committed) == json_schema()


def test_schema_file_is_no_suite_fixture() -> None:
    """It sits directly in `evals/`, never among a suite's `*.json` cases."""
    assert SCHEMA_FILE.parent == REPO / "evals"
    for paths in COMMITTED.values():
        assert SCHEMA_FILE not in paths


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = committed_schema()
    assert schema["$schema"] == DRAFT_2020_12
    Draft202012Validator.check_schema(schema)
    assert validators.validator_for(schema) is Draft202012Validator
    # The root is the fixture object itself, so a consumer sees its keys directly.
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {f.encode_name for f in msgspec.structs.fields(LlmTrace)}
    assert sorted(schema["required"]) == ["model_name", "turns"]


def test_every_top_level_key_is_described() -> None:
    properties = committed_schema()["properties"]
    assert [k for k, v in properties.items() if not v.get("description", "").strip()] == []


def _structs(info: Any, seen: dict[str, Any]) -> None:
    """Every struct type reachable from `info`, by name."""
    if isinstance(info, mi.StructType):
        if info.cls.__name__ in seen:
            return
        seen[info.cls.__name__] = info
        for field in info.fields:
            _structs(field.type, seen)
    elif isinstance(info, mi.UnionType):
        for member in info.types:
            _structs(member, seen)
    elif isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType)):
        _structs(info.item_type, seen)
    elif isinstance(info, mi.DictType):
        _structs(info.value_type, seen)


def _object_nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema node that describes a struct (it has `properties`)."""
    if isinstance(node, list):
        for item in node:
            yield from _object_nodes(item)
    elif isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            yield node
            for member in node["properties"].values():
                yield from _object_nodes(member)
        for key, value in node.items():
            if key not in ("properties", "default", "discriminator"):
                yield from _object_nodes(value)


def test_every_struct_refuses_unknown_keys_in_schema_and_parser() -> None:
    """`additionalProperties: false` on every object of the schema, and it is no lie: every
    struct of the fixture schema forbids unknown fields in the parser too."""
    schema = committed_schema()
    nodes = list(_object_nodes(schema))
    assert nodes and all(n.get("additionalProperties") is False for n in nodes)
    structs: dict[str, Any] = {}
    _structs(mi.type_info(LlmTrace), structs)
    assert all(s.forbid_unknown_fields for s in structs.values()), sorted(structs)
    assert set(schema["$defs"]) | {"LlmTrace"} == set(structs)


def test_response_is_a_one_of_keyed_by_its_type() -> None:
    defs = committed_schema()["$defs"]
    response = defs["Step"]["properties"]["response"]
    assert "anyOf" not in response
    refs = [m["$ref"] for m in response["oneOf"]]
    assert response["discriminator"]["propertyName"] == "type"
    assert sorted(response["discriminator"]["mapping"].values()) == sorted(refs)
    for tag, ref in response["discriminator"]["mapping"].items():
        member = defs[ref.rsplit("/", 1)[-1]]
        assert member["properties"]["type"] == {"enum": [tag]}
        assert "type" in member["required"]


def test_steps_is_an_optional_array_of_steps_or_null() -> None:
    turn = committed_schema()["$defs"]["Turn"]
    assert turn["required"] == ["user_input"]  # absent in a live case
    steps = turn["properties"]["steps"]
    assert steps["anyOf"] == [
        {"type": "array", "items": {"$ref": "#/$defs/Step"}},
        {"type": "null"},
    ]
    assert "default" not in steps  # msgspec's UNSET has no JSON spelling


# --- committed fixtures fit the schema and parse ----------------------------------------------


@pytest.mark.parametrize("group", sorted(COMMITTED))
def test_fixture_group_is_not_empty(group: str) -> None:
    assert COMMITTED[group], f"no fixtures found in {group}"


@pytest.mark.parametrize("path", [param(p) for paths in COMMITTED.values() for p in paths])
def test_committed_fixture_fits_schema_and_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "$schema" not in json.loads(text)  # admission refuses it: map the schema instead
    assert schema_errors(json.loads(text)) == []
    parse_fixture(text, str(path))


@pytest.mark.parametrize("path", [param(p) for p in SHARED])
def test_shared_fixture_fits_schema_and_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert schema_errors(json.loads(text)) == []
    parse_fixture(text, str(path))


def test_shared_fixtures_are_read_when_present() -> None:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} is absent")
    assert SHARED, f"{SHARED_FIXTURES} holds no fixtures"


# --- schema-level faults: the schema and the parser agree -------------------------------------


def valid_fixture() -> dict[str, Any]:
    """A replay case using every block a mutation below reaches; fully admitted."""
    return {
        "model_name": "schema-agreement",
        "description": "Positive. One echo call, then an answer.",
        "tools": ["echo"],
        "origin": {"source": "openai-agents-jsonl/1", "trace_id": "trace_1"},
        "setup": {"workspace_files": {"notes.txt": "hello"}},
        "turns": [
            {
                "user_input": "Echo hello.",
                "steps": [
                    {
                        "response": {
                            "type": "tool_calls",
                            "tool_calls": [
                                {"id": "call_1", "name": "echo", "arguments": {"message": "hello"}}
                            ],
                            "input_tokens": 50,
                            "output_tokens": 10,
                        }
                    },
                    {
                        "response": {
                            "type": "text",
                            "content": "Echoed: hello.",
                            "input_tokens": 80,
                            "output_tokens": 5,
                        }
                    },
                ],
            }
        ],
        "expects": {
            "response_contains": ["Echoed: hello"],
            "exact_tool_calls": 1,
            "tool_arguments_contain": [{"tool": "echo", "needle": "hello", "call_index": 0}],
            "tool_results_contain": [{"tool": "echo", "needle": "hello", "call_index": 0}],
            "all_tools_succeeded": True,
            "workspace": {"file_exists": ["notes.txt"]},
            "budget": {"max_llm_calls": 2, "max_total_tokens": 1000},
        },
    }


DELETE = object()

# (what, where, the new value or DELETE)
MUTATIONS: list[tuple[str, tuple[Key, ...], Any]] = [
    # unknown keys, at every level
    ("unknown key at top level", ("modle_name",), "x"),
    ("unknown key in a turn", ("turns", 0, "user_inptu"), "x"),
    ("unknown key in a step", ("turns", 0, "steps", 0, "reponse"), {}),
    ("unknown key in a tool_calls response", ("turns", 0, "steps", 0, "response", "calls"), []),
    ("unknown key in a text response", ("turns", 0, "steps", 1, "response", "contnet"), "x"),
    (
        "unknown key in a tool call",
        ("turns", 0, "steps", 0, "response", "tool_calls", 0, "args"),
        {},
    ),
    ("unknown key in expects", ("expects", "respose_contains"), ["x"]),
    ("unknown key in budget", ("expects", "budget", "max_tokens"), 5),
    ("unknown key in tool_results_contain[0]", ("expects", "tool_results_contain", 0, "idx"), 0),
    ("unknown key in workspace", ("expects", "workspace", "file_exist"), ["a"]),
    ("unknown key in setup", ("setup", "workspace_file"), {}),
    # wrong types
    ("model_name not a string", ("model_name",), 5),
    ("turns not an array", ("turns",), {"user_input": "x"}),
    ("user_input not a string", ("turns", 0, "user_input"), ["Echo hello."]),
    ("input_tokens a string", ("turns", 0, "steps", 0, "response", "input_tokens"), "50"),
    ("input_tokens a fraction", ("turns", 0, "steps", 1, "response", "input_tokens"), 1.5),
    ("steps an object", ("turns", 0, "steps"), {}),
    ("arguments an array", ("turns", 0, "steps", 0, "response", "tool_calls", 0, "arguments"), []),
    ("response_contains a string", ("expects", "response_contains"), "Echoed"),
    ("all_tools_succeeded a string", ("expects", "all_tools_succeeded"), "yes"),
    ("call_index a bool", ("expects", "tool_arguments_contain", 0, "call_index"), True),
    ("workspace file not text", ("setup", "workspace_files", "notes.txt"), 1),
    ("expects an array", ("expects",), []),
    ("tools a string", ("tools",), "echo"),
    ("origin a string", ("origin",), "trace_1"),
    ("origin's trace a number", ("origin", "trace_id"), 7),
    # missing required keys
    ("missing model_name", ("model_name",), DELETE),
    ("missing turns", ("turns",), DELETE),
    ("missing user_input", ("turns", 0, "user_input"), DELETE),
    ("missing response", ("turns", 0, "steps", 0, "response"), DELETE),
    ("missing response type", ("turns", 0, "steps", 1, "response", "type"), DELETE),
    ("missing content", ("turns", 0, "steps", 1, "response", "content"), DELETE),
    ("missing tool call id", ("turns", 0, "steps", 0, "response", "tool_calls", 0, "id"), DELETE),
    ("missing needle", ("expects", "tool_results_contain", 0, "needle"), DELETE),
    ("missing origin trace", ("origin", "trace_id"), DELETE),
    # bad tags and out-of-range numbers
    ("response type txt", ("turns", 0, "steps", 1, "response", "type"), "txt"),
    ("response type not a string", ("turns", 0, "steps", 1, "response", "type"), 1),
    ("negative output_tokens", ("turns", 0, "steps", 1, "response", "output_tokens"), -1),
    (
        "input_tokens over the cap",
        ("turns", 0, "steps", 0, "response", "input_tokens"),
        1_000_000_001,
    ),
    ("repeat 0", ("repeat",), 0),
    ("repeat 51", ("repeat",), 51),
    ("repeat a bool", ("repeat",), True),
    ("exact_tool_calls -1", ("expects", "exact_tool_calls"), -1),
    ("call_index -1", ("expects", "tool_results_contain", 0, "call_index"), -1),
    ("negative budget bound", ("expects", "budget", "max_llm_calls"), -1),
]


def mutated(keys: tuple[Key, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(valid_fixture())
    parent: Any = data
    for key in keys[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[keys[-1]]
    else:
        parent[keys[-1]] = value
    return data


def test_valid_fixture_fits_schema_and_is_admitted(tmp_path: Path) -> None:
    """The base of every mutation is clean, so a refusal below is the mutation's."""
    data = valid_fixture()
    assert schema_errors(data) == []
    path = tmp_path / "schema_agreement.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_case(path, "replay", BUILTIN_SURFACE).id == "schema-agreement"


@pytest.mark.parametrize(
    ("keys", "value"), [pytest.param(k, v, id=what) for what, k, v in MUTATIONS]
)
def test_schema_and_parser_refuse_the_same_fault(keys: tuple[Key, ...], value: Any) -> None:
    data = mutated(keys, value)
    field = json_path(keys)
    errors = list(validator().iter_errors(data))
    assert errors, f"the schema admits {field} = {value!r}"
    # The schema's complaint is at the field or at an object holding it, never elsewhere.
    for error in errors:
        at = tuple(error.absolute_path)
        assert keys[: len(at)] == at, (json_path(at), error.message)
    with pytest.raises(AdmissionError) as refused:
        parse_fixture(json.dumps(data), "mutated.json")
    assert [p.field for p in refused.value.problems] == [field]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        # JSON Schema's data model has one number type: 50.0 is an integer to it.
        pytest.param(
            json.dumps(valid_fixture()).replace('"input_tokens": 50', '"input_tokens": 50.0'),
            "$.turns[0].steps[0].response.input_tokens",
            id="integral float",
        ),
        # A validator sees the parsed document, in which the last duplicate won.
        pytest.param(
            json.dumps(valid_fixture()).replace(
                '"model_name": "schema-agreement"',
                '"model_name": "a", "model_name": "schema-agreement"',
            ),
            "$.model_name",
            id="duplicate key",
        ),
    ],
)
def test_schema_admits_what_only_the_parser_refuses(text: str, field: str) -> None:
    """Where the schema is weaker than the parser's schema walk (documented, so that closing
    the gap updates the docs): the schema admits, the parser refuses at the field."""
    assert schema_errors(json.loads(text)) == []
    with pytest.raises(AdmissionError) as refused:
        parse_fixture(text, "gap.json")
    assert [p.field for p in refused.value.problems] == [field]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": ":", "b": {"c": 1, "c": ":"}}',
        '{"a" : 1, "b":{"x":1,"x" :2}}',
        '{"a\\u003a": 1, "a\\u003a": 2}',
        '{"\\u003ab": 1, "c": 2, "c": 3}',
        '{"a": "x\\":y", "a": 1}',
        '{"a": "\\\\", "b": "\\\\\\"", "b": 1}',
        '{"\\u0030": 1, "0": 2}',  # an escape of a digit, which nothing writes
        '{"model_name": "a\ud800", "turns": []}',  # a lone surrogate: no UTF-8 holds it
        '{"n": NaN}',
        '{"n": 1e999}',
        '{"n": ' + "1" * 5000 + "}",
        '{"s": "\\ud800"}',
        "[" * 600 + "]" * 600,
    ],
)
def test_the_one_pass_decoding_refuses_what_the_exact_parser_refuses(text: str) -> None:
    """The quick path (msgspec, counting members against a re-encoding) never admits a
    document the exact parser (`json` with a hook per object) would refuse or read
    otherwise: it steps aside, and the exact parser says what is wrong."""
    from harness.fixtures.schema import _parse_fast

    assert _parse_fast(text) is None
    assert _parse_fast(text.encode("utf-8", "surrogatepass")) is None  # as read from a file


def test_text_holding_a_lone_surrogate_is_parsed_and_its_id_refused() -> None:
    """Text given through the API may hold what no file's UTF-8 can: the exact parser reads
    it (never a `UnicodeEncodeError` from the quick path), and admission refuses the id."""
    from harness.fixtures.admission import check_trace

    data = {
        "model_name": "a\ud800",
        "turns": [{"user_input": "hi", "steps": [{"response": {"type": "text", "content": "x"}}]}],
        "expects": {"response_contains": ["x"]},
    }
    trace = parse_fixture(json.dumps(data, ensure_ascii=False), "a.json")
    assert trace.model_name == "a\ud800"
    [problem] = check_trace(trace, "a.json", "replay", BUILTIN_SURFACE)
    assert (problem.field, "holds control or format characters" in problem.message) == (
        "$.model_name",
        True,
    )


def test_the_one_pass_decoding_reads_every_committed_fixture_as_the_exact_parser() -> None:
    from harness.fixtures.schema import _decode, _parse_fast, fixture_hash, parse_admitted
    from harness.io.validation import convert

    paths = [p for group in COMMITTED.values() for p in group]
    assert paths
    floats: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        exact = convert(_decode(text, str(path)), LlmTrace)
        fast = _parse_fast(text)
        assert fast is not None and fast[0] == exact == parse_admitted(text), path
        assert _parse_fast(path.read_bytes()) == fast, path
        # The canonical digest made on the way is the receipts' one, or not made: only
        # for a fixture holding a float literal (a string spelling one does not count).
        floats.clear()
        json.loads(text, parse_float=floats.append)
        assert (fast[1] is None) == bool(floats), path
        assert fast[1] is None or fast[1].hex() == fixture_hash(text), path
        # As written by other tools: compact, every non-ASCII character escaped.
        compact = json.dumps(json.loads(text))
        again = _parse_fast(compact)
        assert again is None or again == fast
        assert parse_admitted(compact) == exact
