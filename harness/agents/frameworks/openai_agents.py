"""The OpenAI Agents SDK adapter: the SDK's own `Runner` loop, with the harness as its model.

`agent = "openai-agents"` runs a fresh SDK `Agent` per case with the registry's tools;
`agent = "openai-agents:mypkg.agents:build_agent"` runs the user's own agent, keeping its
instructions, tools and settings, swapping only the model (for the whole run, handoffs and
agents used as tools included) and recording each function tool's dispatches, of every
agent of its graph, at the tool boundary (`harness.agents.sdk_graph`); agents the user's
code runs itself run the same way (`harness.agents.sdk_runs`); its MCP servers are connected
per case and their tools' calls recorded too (`harness.agents.sdk_mcp`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from agents import (
    Agent,
    Handoff,
    Model,
    ModelBehaviorError,
    ModelResponse,
    ModelSettings,
    RunConfig,
    Runner,
    RunResult,
    Session,
    Usage,
)
from agents.agent_output import AgentOutputSchemaBase
from agents.items import TResponseInputItem
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from harness.agents.protocol import AgentContext, AgentGraph, FrameworkAdapter
from harness.agents.sdk_approvals import resumed
from harness.agents.sdk_cache import (
    CASE_TOOLS,
    built_in_agent,
    function_tools,
    settings_json,
    tool_schemas,
)
from harness.agents.sdk_graph import (
    ACTIVE_AGENT,
    GraphCopy,
    agent_handoffs,
    agent_tools,
    agents_run_by_tools,
    note_agent,
    reachable,
    tool_text,
)
from harness.agents.sdk_guardrails import TRIPWIRES, guardrail_names
from harness.agents.sdk_mcp import CaseServers, servers_of
from harness.agents.sdk_mcp import list_tools as mcp_tools
from harness.agents.sdk_runs import case_running, install, offline_tracing
from harness.agents.structured_output import output_text
from harness.errors import HarnessError
from harness.model_boundary import (
    Divergence,
    Message,
    ModelBoundary,
    ModelRequest,
    ModelStep,
    OutputSchema,
    Role,
    ToolCall,
    ToolSchema,
    check_offered,
)


class OpenAIAgentsAdapter(FrameworkAdapter[Agent[Any]]):
    """`openai-agents`, or `openai-agents:module:factory` for the user's own agent."""

    framework = "openai-agents"
    agent_type = Agent
    agent_label = "an agents.Agent"
    # Set by `walk`: whether an agent of the user's graph has MCP servers.
    _serves = False

    def walk(self, agent: Agent[Any]) -> AgentGraph:
        # Every agent of the graph: a fixture scripts the specialists' steps too.
        graph = reachable(agent)
        # Whether a case has servers to connect: only then is its agent walked again.
        self._serves = bool(servers_of(graph))
        tools = agent_tools(graph)
        # MCP servers' tools are listed by connecting to the servers (within a bound).
        for name, names in mcp_tools(graph).items():
            tools[name] = tools.get(name, frozenset()) | names
        return AgentGraph(
            tools,
            agents_run_by_tools(graph),
            agent_handoffs(graph),
            guardrail_names(graph),
            frozenset(a.name for a in graph if a.instructions is not None),
        )

    def start(self, context: AgentContext) -> _Session:
        offline_tracing()
        registry = context.tools
        if self._factory is None:
            model = HarnessModel(context.model)
            # The tools are made once for the run; each dispatches through the registry
            # of the case whose turn runs it (`CASE_TOOLS`, set by the session).
            agent = built_in_agent(
                f"zeroclaw-eval:{context.case_id}", model, function_tools(registry)
            )
            return _Session(agent, _RUN_CONFIG, context, model, None).within(context)
        user = self.build()
        # The graph admission walked, kept: the case's agents are copied, not walked again.
        known = frozenset(self.user_graph().agents)
        several = len(known) > 1
        model = HarnessModel(context.model, attribute=several, known=known)
        # RunConfig.model replaces the model of every agent in the run, handoffs included;
        # an agent run as a tool inherits the run configuration (or keeps its own, whose
        # model the copy replaces too), and so does one the user's code runs itself (the
        # case runner). The input filter tells the model who asks.
        config = RunConfig(model=model, tracing_disabled=True, call_model_input_filter=note_agent)
        graph = GraphCopy(registry, context.model, config, attribute=several, known=known)
        install()
        session = _Session(
            graph.copy(user), config, context, model, graph, attribute=several
        ).within(context)
        if self._serves:
            # The servers the user's code leaves to the runner: connected for this case only
            # (this case's agents hold them: the factory may make them anew per case).
            session.servers = CaseServers(servers_of(reachable(user)))
        session.continue_at_last = context.next_turn_agent == "last"
        return session


# Tracing would export spans over the network; a harness run stays offline. Shared: building
# a RunConfig costs more than a replayed turn.
_RUN_CONFIG = RunConfig(tracing_disabled=True)


class _Session:
    def __init__(
        self,
        agent: Agent[Any],
        config: RunConfig,
        context: AgentContext,
        model: HarnessModel,
        graph: GraphCopy | None,
        *,
        attribute: bool = False,
    ) -> None:
        boundary = context.model
        self._agent = agent
        self._config = config
        self._model = model
        self._boundary = boundary
        self._graph = graph
        self._approvals = context.approvals
        self._tools = context.tools
        self._attribute = attribute  # a graph of several: approvals name their agent
        # The SDK's own limit (max_turns, 10 by default) counts model calls per run, that is
        # per turn here; set one above the boundary's, so the harness's limit is the one
        # that applies, with the same run error as every other agent.
        self._max_turns = boundary.max_calls_per_turn + 1
        self._history: list[TResponseInputItem] = []
        # The last turn's run, whose items start the next turn's input: read as that turn
        # starts (the SDK serialises every item), so a case's last turn pays nothing for it.
        self._last: RunResult | None = None
        # The SDK's customer-service pattern: the next turn runs the agent handed to last
        # (the case's `next_turn_agent` "last"); else each turn starts at the first agent.
        self.continue_at_last = False
        # The user's MCP servers the case connects (None: it has none, and nothing to do).
        self.servers: CaseServers | None = None
        self._run_context: Any = None
        self._store: Session | None = None

    def within(self, context: AgentContext) -> _Session:
        """The case's run context (`RunContextWrapper.context` in its tools: the `context`
        setting's, else its `setup.context` as a dict) and, when the `session` setting asks,
        the `Session` that keeps its conversation."""
        self._run_context = context.context_for_run()
        self._store = context.sdk_session
        return self

    def aclose(self) -> Awaitable[None] | None:
        """Once the case is over, whatever happened: its MCP servers cleaned up. Nothing to
        await without servers (the runner then sets no clock on it)."""
        return None if self.servers is None else self.servers.close()

    async def run_turn(self, user_input: str) -> str:
        # Connected in the first turn's task and time, before the agent lists their tools.
        if self.servers is not None:
            await self.servers.open()
        # The SDK carries a conversation by feeding the previous run's items back in, or,
        # given a session, by the session keeping it: then the turn's input is its own.
        if self._last is not None:
            self._history, self._last = self._last.to_input_list(), None
        items = [*self._history, {"role": "user", "content": user_input}]
        try:
            if self._graph is None:
                tools = CASE_TOOLS.set(self._tools)
                try:
                    result = await self._resumed(items if self._store is None else user_input)
                finally:
                    CASE_TOOLS.reset(tools)
            else:
                with case_running(self._graph):
                    result = await self._resumed(items if self._store is None else user_input)
        except TRIPWIRES:
            # A tripwire ends the turn as the SDK ends it: no final output, so the turn
            # answers "". The conversation goes on with the input the guardrail stopped (as
            # the SDK's guardrail example keeps it), and none of what the stopped run made.
            self._boundary.halt()
            self._history = items  # type: ignore[assignment]
            return ""
        if self._attribute:  # the record names the final agent only in a graph of several
            self._model.answered(result.last_agent.name)
        self._last = result
        if self.continue_at_last:
            # An agent of the case's graph copy (each handoff returns its copy), so the next
            # turn's calls and handoffs are recorded as this turn's were.
            self._agent = result.last_agent
        # An output_type's answer is graded, and shown, as the JSON of the object.
        return output_text(result.final_output)

    async def _resumed(self, start: list[Any] | str) -> RunResult:
        result = await self._run(start)
        if not result.interruptions:
            return result
        return await resumed(self._run, result, self._approvals, attribute=self._attribute)

    async def _run(self, start: Any) -> RunResult:
        try:
            result = await Runner.run(
                self._agent,
                start,
                context=self._run_context,
                session=self._store,
                run_config=self._config,
                max_turns=self._max_turns,
            )
        except ModelBehaviorError as exc:
            self._model.raise_failure()
            why = self._model.unparsed
            if why is None:
                raise
            # The SDK's own error, with what its redaction leaves out.
            raise ModelBehaviorError(f"{exc}: {why}") from exc
        except Exception:
            self._model.raise_failure()
            raise
        self._model.raise_failure()
        return result


class HarnessModel(Model):
    """An SDK `Model` whose responses come from the harness's model boundary."""

    def __init__(
        self,
        boundary: ModelBoundary,
        *,
        attribute: bool = False,
        known: frozenset[str] | None = None,
    ) -> None:
        self._boundary = boundary
        # In a graph of several agents each request names its agent, and a scripted call
        # the asking agent does not offer is a divergence naming it.
        self._attribute = attribute
        # The agents admission found (None: the default agent, one and known). Any other
        # agent asking was met only as the run went (the user's code ran it): named, and
        # no scripted call of it admitted.
        self._known = known
        self._failure: HarnessError | None = None
        # Why the last answer in text is not the asking agent's output_type, if it is not.
        self.unparsed: str | None = None

    def answered(self, agent: str) -> None:
        """The turn ended with `agent`'s final output: in a graph of several agents, the
        record's `final_agent` (a guardrail's agent may have asked after it)."""
        if self._attribute:
            self._boundary.answered_by(agent)

    def raise_failure(self) -> None:
        """Raise the first harness error of the turn's model calls, if there was one. An
        agent used as a tool runs inside the tool's failure handler, which would tell the
        outer model "An error occurred" and go on: the case's run error is the cause (the
        nested agent asked for a tool it does not offer, ran past the script), not what the
        script's leftover steps say later."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        # Loops, not generators: a request runs cold, between the SDK's own work, and every
        # code object it reaches is read again from memory.
        offered = tool_schemas(tools)
        if handoffs:
            # The SDK offers the model each handoff as a function tool of its own (made
            # anew for each request, so never among the tuples kept).
            schemas = list(offered)
            for h in handoffs:
                if isinstance(h, Handoff):
                    schemas.append(ToolSchema(h.tool_name, h.tool_description, h.input_json_schema))
            offered = tuple(schemas)
        active = ACTIVE_AGENT.get()
        late = self._known is not None and active is not None and active not in self._known
        agent = active if self._attribute or late else None
        messages = to_messages(system_instructions, input)
        request = ModelRequest(
            messages=messages,
            tools=offered,
            agent=agent,
            output_schema=None if output_schema is None else _output_schema(output_schema),
            # What the SDK resolved from the agent's `instructions` (a dynamic function was
            # called once, by the SDK, with the run context), to reach `messages`.
            declared_instructions=(system_instructions,) if system_instructions else (),
            settings=settings_json(model_settings),
        )
        try:
            step = await self._boundary.respond(request)
            if late and agent is not None:
                _refuse_calls(step, agent)
            else:
                check_offered(step, request)
        except HarnessError as exc:
            self._failure = self._failure or exc
            raise
        output: list[Any] = []
        self.unparsed = None
        if not step.tool_calls:
            if output_schema is not None and not output_schema.is_plain_text():
                self.unparsed = _unparsed_answer(step.text, output_schema)
            # A text step always yields a message, even an empty one: without it the SDK
            # would ask the model again instead of ending the turn.
            output.append(
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(type="output_text", text=step.text, annotations=[])
                    ],
                )
            )
        for call in step.tool_calls:
            output.append(
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=call.id,
                    name=call.name,
                    arguments=json.dumps(call.arguments, ensure_ascii=False),
                    status="completed",
                )
            )
        usage = Usage(
            requests=1,
            input_tokens=step.input_tokens,
            output_tokens=step.output_tokens,
            total_tokens=step.input_tokens + step.output_tokens,
        )
        return ModelResponse(output=output, usage=usage, response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The step as a stream of one event, the completed response: the harness runs
        turns with `Runner.run`, but the user's code may run an agent with
        `Runner.run_streamed` (or an `as_tool` with `on_stream`)."""
        answer = await self.get_response(*args, **kwargs)
        usage = answer.usage
        yield ResponseCompletedEvent(
            type="response.completed",
            sequence_number=0,
            response=Response(
                id="zeroclaw-eval",
                created_at=0,
                model="zeroclaw-eval",
                object="response",
                output=answer.output,
                parallel_tool_calls=True,
                tool_choice="auto",
                tools=[],
                usage=ResponseUsage(
                    input_tokens=usage.input_tokens,
                    input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                    output_tokens=usage.output_tokens,
                    output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                    total_tokens=usage.total_tokens,
                ),
            ),
        )


def _output_schema(schema: AgentOutputSchemaBase) -> OutputSchema | None:
    """The agent's `output_type` as the SDK's models send it: the response format of the
    request (named `final_output`, as its Chat Completions model names it)."""
    if schema.is_plain_text():
        return None
    return OutputSchema(
        name="final_output", schema=schema.json_schema(), strict=schema.is_strict_json_schema()
    )


def _unparsed_answer(text: str, schema: AgentOutputSchemaBase) -> str | None:
    """Why the SDK will refuse this answer for the agent's `output_type`, in words a fixture's
    author can act on: the SDK's own error says only "Invalid JSON when parsing model output"
    (it redacts the text), and a type the SDK wraps wants `{"response": …}`."""
    try:
        schema.validate_json(text)
    except ModelBehaviorError:
        shown = json.dumps(schema.json_schema(), ensure_ascii=False, separators=(",", ":"))
        return (
            f"the model answered {_clip(json.dumps(text, ensure_ascii=False))}, which is not "
            f"the agent's output_type ({schema.name()}); the JSON it must send: {_clip(shown)}"
        )
    return None


def _clip(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _refuse_calls(step: ModelStep, agent: str) -> None:
    if step.tool_calls:
        raise Divergence(
            f"the model called tool {step.tool_calls[0].name!r} for agent {agent!r}, which "
            "your code ran but the harness did not find at admission (reached through an "
            "attribute, a container or a call's result, not named directly by a tool, "
            "guardrail or handoff of the graph), so no tool call of it may be scripted: "
            "name the agent directly in that code, or script it a text answer only"
        )


def to_messages(system: str | None, items: str | list[TResponseInputItem]) -> tuple[Message, ...]:
    """SDK input items as neutral messages (user, assistant text and calls, tool results)."""
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    if isinstance(items, str):
        messages.append(Message(role="user", content=items))
        return tuple(messages)
    for item in items:
        # Only read: an item the SDK made as a dict is read as it is, not copied (typed
        # by annotation, not `cast`: a call for each item of each request).
        raw: Any = item if type(item) is dict else dict(item)
        kind = raw.get("type")
        if kind == "function_call":
            try:
                arguments = json.loads(raw.get("arguments") or "{}")
            except ValueError:
                arguments = {"_raw": raw.get("arguments")}
            call = ToolCall(str(raw.get("call_id", "")), str(raw.get("name", "")), arguments)
            if messages and messages[-1].role == "assistant" and not messages[-1].content:
                previous = messages.pop()
                messages.append(Message(role="assistant", tool_calls=(*previous.tool_calls, call)))
            else:
                messages.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            messages.append(
                Message(
                    role="tool",
                    content=tool_text(raw.get("output")),
                    tool_call_id=str(raw.get("call_id", "")),
                )
            )
        elif (role := _ROLES.get(raw.get("role"))) is not None:
            messages.append(Message(role=role, content=tool_text(raw.get("content"))))
    return tuple(messages)


_ROLES: dict[Any, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


# What the agent registry looks up in every module of this package.
Adapter = OpenAIAgentsAdapter
