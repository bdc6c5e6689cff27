"""`harness.io.json_paths`: where a JSON path sits in a fixture's text, the line annotations use."""

from __future__ import annotations

import json

import pytest

from harness.io.json_paths import json_path_lines, line_of


def numbered(text: str) -> dict[int, str]:
    return dict(enumerate(text.splitlines(), start=1))


def test_nested_objects_and_arrays_map_to_their_lines() -> None:
    text = json.dumps(
        {
            "model_name": "m",
            "turns": [
                {"user_input": "hi", "steps": [{"response": {"type": "text", "content": "x"}}]},
                {"user_input": "again"},
            ],
            "expects": {"response_contains": ["a", "b"], "exact_tool_calls": 2},
        },
        indent=2,
    )
    lines = json_path_lines(text)
    src = numbered(text)
    assert lines["$"] == 1
    # An object member is found on its key's line.
    for path, needle in [
        ("$.model_name", '"model_name"'),
        ("$.turns", '"turns"'),
        ("$.turns[0].user_input", '"user_input": "hi"'),
        ("$.turns[0].steps", '"steps"'),
        ("$.turns[0].steps[0].response", '"response"'),
        ("$.turns[0].steps[0].response.type", '"type": "text"'),
        ("$.turns[0].steps[0].response.content", '"content": "x"'),
        ("$.turns[1].user_input", '"user_input": "again"'),
        ("$.expects", '"expects"'),
        ("$.expects.response_contains", '"response_contains"'),
        ("$.expects.exact_tool_calls", '"exact_tool_calls": 2'),
    ]:
        assert needle in src[lines[path]], (path, lines[path], src[lines[path]])
    # An array element is found on the line where the element starts.
    assert src[lines["$.expects.response_contains[0]"]].strip() == '"a",'
    assert src[lines["$.expects.response_contains[1]"]].strip() == '"b"'
    assert src[lines["$.turns[0]"]].strip() == "{"
    assert src[lines["$.turns[1]"]].strip() == "{"
    assert lines["$.turns[1]"] > lines["$.turns[0].steps[0].response.content"]


def test_several_values_on_one_line() -> None:
    text = '{"a": [1, 2.5e3, true, null, {"b": false}],\n "c": [[], {}, [0]]}'
    lines = json_path_lines(text)
    assert {p: lines[p] for p in ("$.a", "$.a[0]", "$.a[1]", "$.a[3]", "$.a[4]", "$.a[4].b")} == {
        "$.a": 1,
        "$.a[0]": 1,
        "$.a[1]": 1,
        "$.a[3]": 1,
        "$.a[4]": 1,
        "$.a[4].b": 1,
    }
    assert lines["$.c"] == 2
    assert lines["$.c[0]"] == lines["$.c[1]"] == lines["$.c[2]"] == lines["$.c[2][0]"] == 2
    assert "$.c[3]" not in lines


def test_top_level_array() -> None:
    text = '[\n  {"a": 1},\n  [\n    "x"\n  ]\n]'
    lines = json_path_lines(text)
    assert lines["$"] == 1
    assert lines["$[0]"] == 2
    assert lines["$[0].a"] == 2
    assert lines["$[1]"] == 3
    assert lines["$[1][0]"] == 4


def test_keys_that_need_quoting_use_json_string_syntax() -> None:
    keys = ["with space", "dash-key", "1digit", 'quo"te', "x]y", "br[", "dot.ted", "ümlaut"]
    data = {"outer": {k: {"inner": i} for i, k in enumerate(keys)}, "ok_ident": 1}
    text = json.dumps(data, indent=2, ensure_ascii=False)
    lines = json_path_lines(text)
    src = numbered(text)
    for key in keys:
        path = f"$.outer[{json.dumps(key, ensure_ascii=False)}]"
        assert path in lines, (path, sorted(lines))
        assert src[lines[path]].strip().startswith(json.dumps(key, ensure_ascii=False) + ":")
        assert lines[f"{path}.inner"] == lines[path] + 1
    assert "$.ok_ident" in lines
    assert '$["ok_ident"]' not in lines


def test_strings_containing_structure_characters_do_not_confuse_it() -> None:
    # Braces, brackets, commas, colons, escaped quotes, escaped backslashes and escaped
    # newlines inside strings, keys included: none of them opens or closes anything, and an
    # escaped newline (`\n` in the text) is not a line break.
    text = (
        "{\n"
        '  "a": "{[\\"}]\\\\",\n'  # "a": "{[\"}]\\",
        '  "b{": "x\\ny\\nz, : ]",\n'  # "b{": "x\ny\nz, : ]",
        '  "c": ["]", "[", "\\"],[\\""],\n'
        '  "d": {"e": "}"}\n'
        "}"
    )
    assert json.loads(text)  # the fixture is valid JSON
    lines = json_path_lines(text)
    assert lines["$.a"] == 2
    assert lines['$["b{"]'] == 3
    assert lines["$.c"] == 4
    assert lines["$.c[0]"] == lines["$.c[1]"] == lines["$.c[2]"] == 4
    assert "$.c[3]" not in lines
    assert lines["$.d"] == 5
    assert lines["$.d.e"] == 5
    assert set(lines) == {
        "$",
        "$.a",
        '$["b{"]',
        "$.c",
        "$.c[0]",
        "$.c[1]",
        "$.c[2]",
        "$.d",
        "$.d.e",
    }


def test_crlf_line_endings_count_once() -> None:
    text = '{\r\n  "a": 1,\r\n  "b": [\r\n    2\r\n  ]\r\n}\r\n'
    lines = json_path_lines(text)
    assert (lines["$.a"], lines["$.b"], lines["$.b[0]"]) == (2, 3, 4)


def test_duplicate_key_keeps_its_first_line() -> None:
    text = '{\n  "a": 1,\n  "a": 2\n}'
    assert json_path_lines(text)["$.a"] == 2


FIXTURE = """{
  "model_name": "m",
  "turns": [
    {
      "user_input": "hi",
      "steps": []
    }
  ],
  "expects": {
    "response_contains": [
      "hi"
    ],
    "odd key": {
      "x]y": 1
    }
  }
}"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("$.expects.response_contains[0]", 11),
        ("$.expects.response_contains", 10),
        ("$.turns[0].steps", 6),
        # absent paths fall back to their nearest present ancestor
        ("$.expects.response_contains[5]", 10),
        ("$.expects.tools_used[0]", 9),
        ("$.turns[0].steps[0].response.type", 6),
        ("$.turns[3].steps", 3),
        ('$.expects["odd key"].missing', 13),
        ('$.expects["odd key"]["x]y"]', 14),
        ('$.expects["odd key"]["no]such"]', 13),
        ('$.expects["no[such"]', 9),
        ('$.expects["a\\"]["]', 9),
        # nothing of the path is present: line 1
        ("$.nothing.here", 1),
        ("$", 1),
        ("", 1),
    ],
)
def test_line_of_with_ancestor_fallback(path: str, line: int) -> None:
    assert line_of(FIXTURE, path) == line


def test_unknown_path_in_an_unrelated_document_is_line_1() -> None:
    assert line_of('\n\n{"a": {"b": 1}}', "$.x.y.z") == 1
    assert line_of("[]", "$[0]") == 1
    assert line_of('\n\n{"a": {"b": 1}}', "$.a.c") == 3
