"""The fixture schema (`LlmTrace`) and the parsing of one fixture's text.

Parsing is strict: duplicate keys, unknown keys, wrong types and missing keys are refused,
each at the JSON path of its field (found from the schema's own type information). What
the schema cannot say (blank inputs, ids, tools, vacuous expectations) is `admission`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from typing import Annotated, Any

import msgspec

from harness.defaults import MAX_REPEAT, MAX_STEP_TOKENS
from harness.expectations.base import NonNegative, Strict
from harness.expectations.registry import Expects
from harness.json_paths import child_path, json_path_lines, nearest_line
from harness.problems import AdmissionError, Problem
from harness.validation import SchemaFaults, convert

# Tokens of one scripted step: as many as one model call may answer with.
Tokens = Annotated[int, NonNegative, msgspec.Meta(le=MAX_STEP_TOKENS)]


class ToolCallSpec(Strict):
    id: str
    name: str
    arguments: dict[str, Any]


class TextResponse(Strict, tag_field="type", tag="text"):
    content: str
    input_tokens: Tokens = 0
    output_tokens: Tokens = 0


class ToolCallsResponse(Strict, tag_field="type", tag="tool_calls"):
    tool_calls: list[ToolCallSpec]
    input_tokens: Tokens = 0
    output_tokens: Tokens = 0


Response = TextResponse | ToolCallsResponse


class Step(Strict):
    response: Response


class Turn(Strict):
    user_input: str
    # UNSET when the key is absent: a live case must not carry the key at all, not even
    # `[]` or `null`, so its presence has to be visible.
    steps: list[Step] | msgspec.UnsetType | None = msgspec.UNSET


class Setup(Strict):
    workspace_files: dict[str, str] = {}


class LlmTrace(Strict):
    model_name: str
    turns: list[Turn]
    id: str | None = None
    description: str | None = None
    expects: Expects | None = None
    setup: Setup | None = None
    tools: list[str] | None = None
    repeat: Annotated[int, msgspec.Meta(ge=1, le=MAX_REPEAT)] | None = None
    cluster: str | None = None
    # With repeats: the share of runs that must pass (default: every run, pass^n).
    min_pass_rate: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None

    @property
    def case_id(self) -> str:
        return self.id if self.id is not None else self.model_name


def json_schema() -> dict[str, Any]:
    """The fixture format as a JSON Schema (draft 2020-12), for editors and other tools.

    msgspec's schema of `LlmTrace`, post-processed for plain JSON Schema consumers: the
    root is the fixture object itself (not a bare `$ref`), every struct refuses unknown
    keys, the tagged response union is a `oneOf` (its `discriminator` kept for OpenAPI-style
    tools), and the top-level keys are described. It says what the schema walk of
    `parse_fixture` refuses, no more: the semantic rules are `admission`'s."""
    generated: dict[str, Any] = msgspec.json.schema(LlmTrace)
    defs: dict[str, Any] = generated["$defs"]
    root: dict[str, Any] = defs.pop(generated["$ref"].rsplit("/", 1)[-1])

    def tidy(node: Any) -> None:
        """Fix one schema node and the schema nodes below it."""
        if isinstance(node, list):
            for item in node:
                tidy(item)
            return
        if not isinstance(node, dict):
            return
        if "discriminator" in node and "anyOf" in node:
            # The tags are disjoint, so exactly one member fits: a `oneOf`.
            node["oneOf"] = node.pop("anyOf")
            node["discriminator"] = node.pop("discriminator")
        if "properties" in node:  # a struct: every one of them forbids unknown fields
            node["additionalProperties"] = False
            if not node.get("required", True):
                del node["required"]
        for key, value in node.items():
            if key == "properties":  # names -> schemas, not a schema itself
                for member in value.values():
                    tidy(member)
            elif key not in ("discriminator", "default", "enum", "const"):
                tidy(value)

    tidy(root)
    for definition in defs.values():
        tidy(definition)
    described = {
        "model_name": "The case id, unless `id` is given.",
        "turns": "The user turns, in order; at least one.",
        "id": "A stable case id overriding `model_name`.",
        "description": "What the case proves, and whether it is positive or negative.",
        "expects": "The checks the run is graded against; at least one effective check.",
        "setup": "The case workspace before the agent starts.",
        "tools": 'Names of the tools the case may use, e.g. ["echo"].',
        "repeat": "Live mode: run the case this many times (1..50), each run isolated.",
        "cluster": "Live mode: a label shared by correlated cases; the suite's interval counts "
        "a cluster as one unit.",
        "min_pass_rate": "Live mode, with repeats: the share of runs that must pass "
        "(default: every run).",
    }
    for name, text in described.items():
        root["properties"][name]["description"] = text  # KeyError: a field was renamed
    defs["Turn"]["properties"]["user_input"]["description"] = "The user's message; not blank."
    defs["Turn"]["properties"]["steps"]["description"] = (
        "The scripted model responses of this turn, consumed in order. Replay: required and "
        "non-empty (end the turn with a `text` step). Live: the key must be absent (not even "
        "[] or null)."
    )
    defs["Setup"]["properties"]["workspace_files"]["description"] = (
        "Relative path -> UTF-8 text: files written into the case workspace."
    )
    root.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "zeroclaw-eval fixture (LlmTrace)",
        "description": (
            "One eval case of `zeroclaw eval`: a conversation and the expectations its run "
            "is graded against. Admission also applies rules this schema cannot express "
            "(see evals/README.md)."
        ),
        **root,
        "$defs": defs,
    }


def parse_fixture(text: str, file: str) -> LlmTrace:
    """Parse fixture text into a `LlmTrace`, raising `AdmissionError` with every schema
    fault (nothing later can be trusted then); semantic rules are `admission`'s."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the exact path reads it
        return _parse_exact(text, file)
    return parse_fixture_bytes(data, text, file)[0]


def parse_fixture_bytes(data: bytes, text: str, file: str) -> tuple[LlmTrace, bool, bytes | None]:
    """`parse_fixture(text, file)` of the `text` that the UTF-8 `data` decodes to, read
    from the bytes (msgspec reads them without making a UTF-8 copy of the text first);
    whether msgspec read it (then it holds no number JSON has not: NaN, the infinities,
    which the exact parser reads and admission must look for and refuse); and the SHA-256
    digest whose hex `fixture_hash` gives, made from the same decoding where that spells
    the document as `json` does (no float in it), else None."""
    fast = _parse_fast(data)
    if fast is not None:
        return fast[0], True, fast[1]
    return _parse_exact(text, file), False, None


def _parse_exact(text: str, file: str) -> LlmTrace:
    data = _decode(text, file)
    if not isinstance(data, dict):
        kind = type(data).__name__ if data is not None else "null"
        raise AdmissionError([Problem(file, "$", f"expected a JSON object, got {kind}", 1)])
    try:
        return convert(data, LlmTrace)
    except SchemaFaults as exc:
        problems = [Problem(file, f.path, f.message) for f in exc.faults]
        raise AdmissionError(located(problems, text)) from None


def parse_admitted(text: str) -> LlmTrace:
    """The trace of a fixture's text that admission parsed already, decoded again in one
    pass: what admission refuses (a repeated key, what JSON has no number for) cannot be
    in it, so msgspec reads it as admission did; anything it reads otherwise takes the
    parser admission used."""
    try:
        return _TRACE.decode(text)
    except msgspec.DecodeError:
        return parse_fixture(text, "")


_TRACE = msgspec.json.Decoder(LlmTrace, strict=True)


class _HoldsFloat(Exception):
    pass


def _no_float(literal: str) -> float:
    raise _HoldsFloat


# msgspec spells a document sorted as `json` does (the canonical form) in a quarter of
# the time, but for floats (`1e-05` against `0.00001`): this decoder refuses them.
_NO_FLOAT = msgspec.json.Decoder(float_hook=_no_float)
_ANY = msgspec.json.Decoder()
# A document with more brackets than this may nest deeper than `json` can read: the exact
# path below decides it. Real fixtures hold a few dozen.
_FAST_BRACKETS = 400
_NOT_MARKS = bytes(set(range(256)) - set(b"{[:"))


def fixture_hash(text: str) -> str:
    """SHA-256 of the fixture's canonical JSON: keys sorted, compact, UTF-8. Formatting,
    key order and escapes do not change it; any value does. Admission makes the same
    digest as it parses (`parse_fixture_bytes`)."""
    canonical = canonical_json(text)
    if canonical is None:
        spelt = json.dumps(
            json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        # surrogatepass: a lone surrogate escaped in the JSON still hashes, deterministically.
        canonical = spelt.encode("utf-8", "surrogatepass")
    return hashlib.sha256(canonical).hexdigest()


def canonical_json(text: str | bytes) -> bytes | None:
    """The canonical form as `json` spells it, made by msgspec; None where the two may
    differ: a document holding a float, told by the decoder as it meets one, and what
    msgspec refuses but `json` reads (NaN, lone surrogates)."""
    try:
        return msgspec.json.encode(_NO_FLOAT.decode(text), order="sorted")
    except (msgspec.DecodeError, msgspec.EncodeError, _HoldsFloat):
        return None


def _parse_fast(text: bytes | str) -> tuple[LlmTrace, bytes | None] | None:
    """The trace of a fixture that is valid and repeats no key, decoded by msgspec in C,
    and the digest of its canonical form where msgspec spells that (`fixture_hash`);
    None whenever anything may be wrong (the exact path then says what).

    msgspec refuses what `json` reads but JSON has not (NaN, Infinity, 1e999, lone
    surrogates, integers past the digit limit), so those take the exact path. What it reads
    differently is only a repeated key (the last wins, the others are dropped): each member
    has one colon outside strings and keeps the colons of its strings when re-encoded, so
    a document whose colons fall in number on re-encoding repeated a key, unless an escape
    spelt a colon (so the exact path decides for any `\\u003X`: digits and `:;<=>?`, which
    nothing writes as escapes). Counted in the UTF-8 bytes: no byte of a multi-byte
    character is ASCII, so they hold the same brackets and colons as the text. The
    re-encoding is the sorted one, the canonical form itself when there is no float."""
    if isinstance(text, str):
        try:
            text = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    marks = text.translate(None, _NOT_MARKS)  # the brackets and colons, in one pass
    colons = marks.count(b":")
    if len(marks) - colons > _FAST_BRACKETS:
        return None
    canonical = True
    try:
        data = _NO_FLOAT.decode(text)
    except _HoldsFloat:
        canonical = False
        try:
            data = _ANY.decode(text)
        except msgspec.DecodeError:
            return None
    except msgspec.DecodeError:
        return None
    if type(data) is not dict or b"\\u003" in text:
        return None
    encoded = msgspec.json.encode(data, order="sorted")
    if encoded.count(b":") != colons:
        return None
    try:
        trace = msgspec.convert(data, LlmTrace, strict=True)
    except msgspec.ValidationError:
        return None
    return trace, hashlib.sha256(encoded).digest() if canonical else None


def _decode(text: str, file: str) -> Any:
    """The JSON document of `text`; refused at the path of every repeated key and of every
    integer too long for Python to convert."""
    marks = _Marks()
    try:
        data = marks.read(text)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise AdmissionError([Problem(file, "$", msg, exc.lineno)]) from None
    except RecursionError:
        raise AdmissionError([Problem(file, "$", "not valid JSON: nested too deeply")]) from None
    if marks.found:  # only then is the document walked to name where
        raise AdmissionError(located(_marked_problems(data, file), text))
    return data


class _TooLong:
    """An integer literal Python refuses to convert, kept in its place to be named there."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


class _Marks:
    """The decoding hooks of one document, and whether any of them marked something."""

    def __init__(self) -> None:
        self.found = False

    def read(self, text: str) -> Any:
        try:
            return self._loads(text)
        except json.JSONDecodeError:
            raise
        except ValueError:  # Python's integer-string digit limit: now find which literal
            return self._loads(text, parse_int=self._int)

    def _loads(self, text: str, **hooks: Any) -> Any:
        # The integer hook only once needed: on every parse it would cost each token count.
        return json.loads(text, object_pairs_hook=self._pairs, **hooks)

    def _pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        plain = dict(pairs)
        if len(plain) == len(pairs):
            return plain
        self.found = True
        return _mark_duplicate_keys(pairs)

    def _int(self, literal: str) -> int | _TooLong:
        try:
            return int(literal)
        except ValueError:
            self.found = True
            return _TooLong(len(literal.lstrip("-")))


def located(problems: list[Problem], text: str) -> list[Problem]:
    """`problems` with the line of each field in `text` (valid JSON) filled in, so an
    annotation can point at it without reopening the file."""
    if all(p.line is not None for p in problems):
        return problems
    try:
        lines = json_path_lines(text)
    except (ValueError, IndexError, RecursionError):
        return problems
    return [
        p if p.line is not None else dataclasses.replace(p, line=nearest_line(lines, p.field))
        for p in problems
    ]


class _DuplicateKeys(dict[str, Any]):
    """A parsed JSON object that repeated a key (the last value would silently win)."""

    duplicates: tuple[str, ...] = ()


def _mark_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    duplicates: list[str] = []
    for key, value in pairs:
        if key in out:
            duplicates.append(key)
        out[key] = value
    if not duplicates:
        return out
    marked = _DuplicateKeys(out)
    marked.duplicates = tuple(dict.fromkeys(duplicates))
    return marked


def _marked_problems(data: Any, file: str) -> list[Problem]:
    """One problem per repeated key and per integer too long to convert, at its JSON path,
    in document order (no recursion)."""
    problems: list[Problem] = []
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, value = stack.pop()
        children: list[tuple[str, Any]] = []
        if isinstance(value, _TooLong):
            limit = sys.get_int_max_str_digits()
            why = f"integer of {value.digits} digits: longer than the {limit}-digit limit"
            problems.append(Problem(file, path, why))
        elif isinstance(value, dict):
            for key in getattr(value, "duplicates", ()):
                problems.append(
                    Problem(
                        file,
                        child_path(path, key),
                        f"duplicate key {key!r} in one JSON object: refusing to guess which "
                        "value was meant",
                    )
                )
            children = [(child_path(path, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        stack.extend(reversed(children))
    return problems
