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
    pydantic-ai's native and prompted output): `native` is sent as the request's response
    format, `prompted` only in the instructions, which hold it already."""

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
    # The instructions the agent declared for this request, as its framework resolved them
    # and handed them to its model (the SDK's `instructions`, static or dynamic;
    # pydantic-ai's `instructions` and the system prompts its history holds): each must
    # reach `messages` as a system message. Told by the framework adapters; () where a loop
    # declares none (an own loop), and then nothing is checked.
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


def handed(step: ModelStep) -> ModelStep:
    """`step` as the agent gets it: its calls' arguments copies of their own, so that an
    agent changing them in place (and with them the history it sends back) changes neither
    the step recorded as its model's answer nor, in replay, the script its requests are
    held to and the fixture's parse."""
    calls = step.tool_calls
    if not calls:
        return step
    copies = tuple([ToolCall(c.id, c.name, _copied(c.arguments)) for c in calls])
    return msgspec.structs.replace(step, tool_calls=copies)


def _copied(value: dict[str, Any]) -> dict[str, Any]:
    """A copy of JSON `value` (objects and arrays copied, the rest shared: immutable),
    made without recursion: arguments may nest as deep as a fixture's JSON does."""
    root: dict[str, Any] = {}
    pending: list[tuple[Any, Any]] = [(value, root)]
    while pending:
        source, target = pending.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (dict, list)):  # a subclass's copy is a plain one
                made: Any = {} if isinstance(item, dict) else []
                pending.append((item, made))
            else:
                made = item
            if type(target) is dict:
                target[key] = made
            else:
                target.append(made)
    return root


class RequestCheck:
    """A case's model requests, checked as each crosses the boundary: every field of the type
    it is declared, each dict a JSON object (text keys; text, numbers, true, false, null,
    arrays and objects within: what every report and page writes it as). What its requests
    share and cannot change (a message, whose calls are a tuple; a tuple of tools; the calls
    its model handed it) is checked once: held here, so that an id seen stays its own."""

    def __init__(self) -> None:
        # What passed, by id, each kind apart (an object that passed as one kind is
        # checked again as any other).
        self._messages: dict[int, object] = {}
        self._tools: dict[int, object] = {}
        self._outputs: dict[int, object] = {}
        self._calls: dict[int, object] = {}
        self._arguments: dict[int, object] = {}

    def given(self, step: ModelStep) -> None:
        """The calls of a step the agent was handed: a message passing them back is fine."""
        calls = step.tool_calls
        if calls:
            self._calls[id(calls)] = calls

    def problem(self, request: object) -> str | None:
        """What makes `request` no model request, said to follow "the agent's model request
        in turn N"; None: it is one."""
        if type(request) is not ModelRequest:
            return f"is {kind_of(request)}, not a ModelRequest"
        messages = request.messages
        if not _sequence(messages):
            return f"holds messages that are {kind_of(messages)}, not a sequence of Message"
        seen = self._messages
        for at, message in enumerate(messages):
            if id(message) not in seen:
                said = self._message_problem(message)
                if said is not None:
                    return f"holds message {at} {said}"
                if type(message.tool_calls) is tuple:  # a list of its calls could change
                    seen[id(message)] = message
        tools = request.tools
        if tools and id(tools) not in self._tools:
            said = _tools_problem(tools)
            if said is not None:
                return f"offers {said}"
            if type(tools) is tuple:
                self._tools[id(tools)] = tools
        if request.agent is not None and type(request.agent) is not str:
            return f"names its agent with {kind_of(request.agent)}, not text"
        output = request.output_schema
        if output is not None and id(output) not in self._outputs:
            said = _output_problem(output)
            if said is not None:
                return f"asks for an output_schema that {said}"
            self._outputs[id(output)] = output
        return _request_rest(request)

    def _message_problem(self, message: object) -> str | None:
        if type(message) is not Message:
            return f"that is {kind_of(message)}, not a Message"
        role = message.role
        if type(role) is not str or role not in ROLES:
            return f"with the role {_shown(role)}, which no message has ({_ROLES_SAID})"
        if type(message.content) is not str:
            return f"whose content is {kind_of(message.content)}, not text ({_NO_TEXT})"
        if message.tool_call_id is not None and type(message.tool_call_id) is not str:
            kind = kind_of(message.tool_call_id)
            return f"whose tool_call_id is {kind}, not text (the id of the call it answers)"
        calls = message.tool_calls
        if calls and id(calls) not in self._calls:
            if not _sequence(calls):
                return f"whose tool_calls are {kind_of(calls)}, not a sequence of ToolCall"
            for i, call in enumerate(calls):
                said = _call_problem(call, self._arguments)
                if said is not None:
                    return f"whose tool_calls[{i}] {said}"
        return None


def _call_problem(call: object, held: dict[int, object]) -> str | None:
    if type(call) is not ToolCall:
        return f"is {kind_of(call)}, not a ToolCall"
    for field, value in (("an id", call.id), ("a name", call.name)):
        if type(value) is not str:
            return f"has {field} that is {kind_of(value)}, not text"
    said = _json_problem(call.arguments, held)
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
        said = _json_problem(tool.parameters, _SCHEMAS)
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
    said = _json_problem(output.schema, _SCHEMAS)
    if said is not None:
        return f"has a schema that {said}"
    if type(output.strict) is not bool:
        return f"has strict as {kind_of(output.strict)}, not true or false"
    if type(output.mode) is not str or output.mode not in _MODES:
        return f"has the mode {_shown(output.mode)}, not 'native' or 'prompted'"
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


def _json_problem(value: object, held: dict[int, object] | None = None) -> str | None:
    """Why `value` is no JSON object; None: it is one. One found to be is `held`, when
    given, and not walked again: a case's arguments (an adapter builds its history again
    for each request, from the very same dicts), the schemas of every case (`_SCHEMAS`)."""
    if type(value) is not dict:
        return f"are {kind_of(value)}, not a JSON object"
    if not value or (held is not None and id(value) in held):
        return None
    said = _not_json(value)
    if said is None and held is not None:
        if held is _SCHEMAS and len(_SCHEMAS) >= _SCHEMAS_HELD:
            _SCHEMAS.clear()
        held[id(value)] = value
    return said


def _not_json(value: dict[object, object]) -> str | None:
    """What in `value` no JSON has (a key that is no text, a set, bytes, an object of the
    agent's, an object or array inside itself); None: nothing. Walked without recursion,
    so that no nesting is too deep to be told, and each array or object once however often
    it is held (a shared one is no cycle)."""
    inside: set[int] = set()  # the arrays and objects the walk is in
    done: set[int] = set()  # those walked whole
    pending: list[tuple[object, bool]] = [(value, False)]
    while pending:
        node, leaving = pending.pop()
        if leaving:
            inside.discard(id(node))
            done.add(id(node))
            continue
        if isinstance(node, (dict, list, tuple)):
            if id(node) in done:
                continue
            if id(node) in inside:
                return f"hold {'an object' if isinstance(node, dict) else 'an array'} inside itself"
            inside.add(id(node))
            pending.append((node, True))
            if isinstance(node, dict):
                for key, item in node.items():
                    if type(key) is not str and not (
                        isinstance(key, str) and _writes(key, key=True)
                    ):
                        return f"hold a key that is {kind_of(key)}, not text"
                    pending.append((item, False))
            else:
                pending.extend((item, False) for item in node)
        elif not (node is None or type(node) in _SCALARS or _writes(node)):
            return f"hold {kind_of(node)}, which no JSON has"
    return None


# The values JSON has, by their exact type; a subclass (an enum's member) is asked of the
# encoder itself, which writes some (enums) and refuses the rest.
_SCALARS = frozenset((str, int, float, bool))


def _writes(value: object, *, key: bool = False) -> bool:
    """Whether the reports' encoder writes `value` (a key: as one) as it is."""
    if not isinstance(value, (str, int, float)):
        return False
    try:
        msgspec.json.encode({value: None} if key else value)
    except (TypeError, ValueError):
        return False
    return True


# The schemas found to be JSON objects lately, by id (held: the id stays its own).
_SCHEMAS: dict[int, object] = {}
_SCHEMAS_HELD = 256


def _shown(value: object) -> str:
    """`value` as a refusal quotes it: its `repr`, clipped (one that raises said by kind)."""
    try:
        text = repr(value)
    except Exception:  # the agent's own object, whose repr fails
        text = f"a {kind_of(value)}"
    return text if len(text) <= 80 else text[:79] + "…"


def _sequence(value: object) -> bool:
    """A tuple, as declared, or a list: both are written as the same JSON array."""
    return type(value) is tuple or type(value) is list


def kind_of(value: object) -> str:
    """What `value` is, as a refusal says it: `int`, `dict`, `None`."""
    return "None" if value is None else type(value).__name__
