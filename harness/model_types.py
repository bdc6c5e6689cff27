"""The neutral types an agent and its model exchange (`ModelRequest` and its `Message`s,
`ToolSchema`s and `OutputSchema`, `ModelStep` and its `ToolCall`s), and what a request must
be to cross the model boundary (`RequestCheck`).

A struct is not checked as it is made: an own loop can build a `Message` whose id is a number,
whose calls are dicts, or whose arguments hold an object no JSON can carry. Recorded as it
was, such a request failed the harness as it wrote the run's transcripts, or made the file
one `show` refuses; the boundary refuses it instead, as the case's run error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

import msgspec

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[object] = frozenset(get_args(Role))
_ROLES_SAID = "assistant, system, tool or user: a developer message is a 'system' one"
_NO_TEXT = "'' for none, as in an assistant's message that only calls tools"


OutputMode = Literal["native", "prompted"]
_MODES: frozenset[object] = frozenset(get_args(OutputMode))


class ToolCall(msgspec.Struct, frozen=True):
    id: str
    name: str
    arguments: dict[str, Any]


class Message(msgspec.Struct, frozen=True, kw_only=True):
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


class ToolSchema(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, Any]
    # An output tool (pydantic-ai's tool output, `final_result`): a call to it is the
    # agent's final answer, which the framework validates itself, never a dispatch.
    output: bool = False


class OutputSchema(msgspec.Struct, frozen=True, kw_only=True):
    """The JSON the agent asks its model to answer with in text (the SDK's `output_type`,
    pydantic-ai's native and prompted output): `native` goes as the response format."""

    name: str
    schema: dict[str, Any]
    strict: bool = False
    mode: OutputMode = "native"


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    # The agent of a multi-agent graph that asks (a specialist handed to, an agent used as a
    # tool); None: the agent under test, or a loop that has only one.
    agent: str | None = None
    # The structured answer asked for in text; None: plain text, or an output tool's call.
    output_schema: OutputSchema | None = None
    # The instructions the agent declared, as its framework handed them to its model (the
    # SDK's `instructions`; pydantic-ai's, and the system prompts its history holds): each must
    # reach `messages` as a system message. () where a loop declares none: nothing is checked.
    declared_instructions: tuple[str, ...] = ()
    # The model settings the framework sends with the request (temperature, max_tokens,
    # tool_choice, ...), its non-empty fields by name; {} for a provider's defaults.
    settings: dict[str, Any] = {}


class ModelStep(msgspec.Struct, frozen=True, kw_only=True):
    """One model response: final text, or tool calls to dispatch."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0


class RequestCheck:
    """A case's model requests, checked as each crosses the boundary: every field of the type
    it is declared, each dict one JSON can carry (a lone surrogate in its text aside: that is
    written as U+FFFD, as in every report). What its requests share (the messages of its
    history, the tools it offers, the calls its model handed it) is checked once: held here,
    so that an id seen stays the object's own."""

    def __init__(self) -> None:
        self._seen: dict[int, object] = {}  # what passed, by id (held: the id stays its own)

    def given(self, step: ModelStep) -> None:
        """The calls of a step the agent was handed: a message passing them back is fine."""
        calls = step.tool_calls
        if calls:
            self._seen[id(calls)] = calls

    def problem(self, request: object) -> str | None:
        """What makes `request` no model request, said to follow "the agent's model request
        in turn N"; None: it is one."""
        if type(request) is not ModelRequest:
            return f"is {kind_of(request)}, not a ModelRequest"
        seen = self._seen
        messages = request.messages
        if not _sequence(messages):
            return f"holds messages that are {kind_of(messages)}, not a sequence of Message"
        for at, message in enumerate(messages):
            if id(message) not in seen:
                said = self._message_problem(message)
                if said is not None:
                    return f"holds message {at} {said}"
                seen[id(message)] = message
        tools = request.tools
        if tools and id(tools) not in seen:
            said = _tools_problem(tools)
            if said is not None:
                return f"offers {said}"
            seen[id(tools)] = tools
        if request.agent is not None and type(request.agent) is not str:
            return f"names its agent with {kind_of(request.agent)}, not text"
        output = request.output_schema
        if output is not None and id(output) not in seen:
            said = _output_problem(output)
            if said is not None:
                return f"asks for an output_schema that {said}"
            seen[id(output)] = output
        return _request_rest(request)

    def _message_problem(self, message: object) -> str | None:
        if type(message) is not Message:
            return f"that is {kind_of(message)}, not a Message"
        role = message.role
        if type(role) is not str or role not in ROLES:
            return f"with the role {role!r}, which no message has ({_ROLES_SAID})"
        if type(message.content) is not str:
            return f"whose content is {kind_of(message.content)}, not text ({_NO_TEXT})"
        if message.tool_call_id is not None and type(message.tool_call_id) is not str:
            kind = kind_of(message.tool_call_id)
            return f"whose tool_call_id is {kind}, not text (the id of the call it answers)"
        calls = message.tool_calls
        if calls and id(calls) not in self._seen:
            if not _sequence(calls):
                return f"whose tool_calls are {kind_of(calls)}, not a sequence of ToolCall"
            for i, call in enumerate(calls):
                said = _call_problem(call)
                if said is not None:
                    return f"whose tool_calls[{i}] {said}"
        return None


def _call_problem(call: object) -> str | None:
    if type(call) is not ToolCall:
        return f"is {kind_of(call)}, not a ToolCall"
    for field, value in (("an id", call.id), ("a name", call.name)):
        if type(value) is not str:
            return f"has {field} that is {kind_of(value)}, not text"
    said = _json_problem(call.arguments)
    return None if said is None else f"has arguments that {said}"


def _tools_problem(tools: Sequence[object]) -> str | None:
    if not _sequence(tools):
        return f"tools that are {kind_of(tools)}, not a sequence of ToolSchema"
    for i, tool in enumerate(tools):
        if type(tool) is not ToolSchema:
            return f"tools[{i}] that is {kind_of(tool)}, not a ToolSchema"
        for name in ("name", "description"):
            if type(getattr(tool, name)) is not str:
                return f"tools[{i}] whose {name} is {kind_of(getattr(tool, name))}, not text"
        said = _json_problem(tool.parameters)
        if said is not None:
            return f"tools[{i}] whose parameters {said}"
        if type(tool.output) is not bool:
            return f"tools[{i}] whose output is {kind_of(tool.output)}, not true or false"
    return None


def _output_problem(output: object) -> str | None:
    if type(output) is not OutputSchema:
        return f"is {kind_of(output)}, not an OutputSchema"
    if type(output.name) is not str:
        return f"has a name that is {kind_of(output.name)}, not text"
    said = _json_problem(output.schema)
    if said is not None:
        return f"has a schema that {said}"
    if type(output.strict) is not bool:
        return f"has strict as {kind_of(output.strict)}, not true or false"
    if type(output.mode) is not str or output.mode not in _MODES:
        return f"has the mode {output.mode!r}, not 'native' or 'prompted'"
    return None


def _request_rest(request: ModelRequest) -> str | None:
    """The request's own fields past its messages, tools, agent and output schema."""
    declared = request.declared_instructions
    if declared:
        if not _sequence(declared):
            return f"declares instructions that are {kind_of(declared)}, not a sequence of text"
        for i, text in enumerate(declared):
            if type(text) is not str:
                return f"declares instructions[{i}] that is {kind_of(text)}, not text"
    settings = request.settings
    if type(settings) is not dict or settings:
        said = _json_problem(settings)
        if said is not None:
            return f"sends settings that {said}"
    return None


def _json_problem(value: object) -> str | None:
    """Why `value` is no JSON object one can write; None: it is one."""
    if type(value) is not dict:
        return f"are {kind_of(value)}, not a JSON object"
    if not value or id(value) in _JSON_OBJECTS:
        return None
    try:
        msgspec.json.encode(value)
    except UnicodeEncodeError:  # a lone surrogate: written as U+FFFD, as every report does
        pass
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        return f"hold a value no JSON can carry ({exc})"
    if len(_JSON_OBJECTS) >= _JSON_HELD:
        _JSON_OBJECTS.clear()
    _JSON_OBJECTS[id(value)] = value
    return None


# The dicts found to be JSON objects lately, by id (held: the id stays its own): the same
# schemas are offered in every case (a registry's tools), and the same arguments passed
# back in every request after the one they were made for.
_JSON_OBJECTS: dict[int, object] = {}
_JSON_HELD = 256


def _sequence(value: object) -> bool:
    """A tuple, as declared, or a list: both are written as the same JSON array."""
    return type(value) is tuple or type(value) is list


def kind_of(value: object) -> str:
    """What `value` is, as a refusal says it: `int`, `dict`, `None`."""
    return "None" if value is None else type(value).__name__
