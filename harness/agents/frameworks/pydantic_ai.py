"""The pydantic-ai adapter: pydantic-ai's own agent graph, with the harness as its model.

`agent = "pydantic-ai"` runs a fresh `pydantic_ai.Agent` per case with the registry's
tools; `agent = "pydantic-ai:mypkg.agents:build_agent"` runs the user's own agent, keeping
its instructions, tools and settings, swapping only the model and recording each of its
function tools' dispatches at the tool boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_ai import (
    Agent,
    AgentRunResult,
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ToolDenied,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import ModelRequest as PaiRequest
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool as PaiTool
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.usage import RequestUsage, UsageLimits
from pydantic_core import to_json, to_jsonable_python

from harness.agents.case_context import ContextError
from harness.agents.protocol import AgentContext, AgentGraph, FrameworkAdapter
from harness.agents.pydantic_ai_graph import (
    GraphAgent,
    agent_graph,
    agents_run_by_tools,
    function_tool_names,
)
from harness.agents.pydantic_ai_guardrails import (
    LIMITS,
    note_validators,
    tripwires,
    validator_names,
)
from harness.agents.pydantic_ai_mcp import CaseToolsets
from harness.agents.pydantic_ai_mcp import list_tools as mcp_tools
from harness.agents.structured_output import output_text
from harness.model_boundary import (
    Message,
    ModelBoundary,
    ModelRequest,
    OutputSchema,
    ToolCall,
    ToolSchema,
    check_offered,
)
from harness.tool_registry import Tool, ToolRegistry, canonical_arguments


class PydanticAIAdapter(FrameworkAdapter[Agent[Any, Any]]):
    """`pydantic-ai`, or `pydantic-ai:module:factory` for the user's own agent."""

    framework = "pydantic-ai"
    agent_type = Agent
    agent_label = "a pydantic_ai.Agent"

    def walk(self, agent: Agent[Any, Any]) -> AgentGraph:
        # Every agent of the graph: a fixture scripts the delegates' steps too.
        graph = self._graph_of(agent)
        # Usage limits are the run's, not an agent's: named under the agent a run starts at.
        guardrails = {node.name: frozenset(validator_names(node.agent)) for node in graph}
        guardrails[graph[0].name] = guardrails[graph[0].name] | LIMITS
        # MCP toolsets' tools are listed by entering the toolsets (within a bound).
        listed = mcp_tools(graph)
        return AgentGraph(
            {
                node.name: frozenset(function_tool_names(node.agent))
                | output_tool_names(node.agent)
                | frozenset(listed.get(node.name, ()))
                for node in graph
            },
            agents_run_by_tools(graph),
            guardrails=guardrails,
            instructed=frozenset(n.name for n in graph if declares_instructions(n.agent)),
        )

    def _graph_of(self, agent: Agent[Any, Any]) -> list[GraphAgent]:
        # An unnamed agent the factory returns goes by the factory's name in the spec.
        return agent_graph(agent, self.name.rpartition(":")[2] or "agent")

    def start(self, context: AgentContext) -> _Session:
        if self._factory is None:
            agent: Agent[Any, Any] = Agent(
                # One name for every case: pydantic-ai builds an agent's graph once per name
                # (a few milliseconds of CPU), so a name per case would build one per case.
                name="zeroclaw-eval",
                tools=[_pai_tool(tool, context.tools) for tool in context.tools.tools.values()],
            )
            return _Session(agent, context, graph=None)
        agent = self.build()
        return _Session(agent, context, graph=self._graph_of(agent))


def declares_instructions(agent: Agent[Any, Any]) -> bool:
    """Whether the agent declares instructions or system prompts (`instructions=`,
    `system_prompt=`, their decorators), which pydantic-ai keeps with the agent and exposes
    no other way."""
    held = ("_instructions", "_system_prompts", "_system_prompt_functions")
    return any(getattr(agent, name, None) for name in held)


def output_tool_names(agent: Agent[Any, Any]) -> frozenset[str]:
    """The output tools pydantic-ai offers the agent's model (`final_result`, the name a
    `ToolOutput(name=…)` gives, one per member of a union): a fixture scripts the agent's
    final answer as a call to one. pydantic-ai builds them with the agent and keeps them in
    its output toolset, which it exposes no other way."""
    processors = getattr(getattr(agent, "_output_toolset", None), "processors", None)
    return frozenset(processors) if isinstance(processors, dict) else frozenset()


def _deps(agent: Agent[Any, Any], context: AgentContext) -> Any:
    """The case's deps (`ctx.deps` in its tools): the `context` setting's, else its
    `setup.context` validated into the agent's `deps_type` when it declares one, as is when
    it does not."""
    declared = agent.deps_type
    if declared in (object, type(None), Any):
        return context.context_for_run()

    def validated(data: dict[str, Any]) -> Any:
        try:
            return TypeAdapter(declared).validate_python(data)
        except (ValidationError, PydanticSchemaGenerationError) as exc:
            name = getattr(declared, "__name__", repr(declared))
            raise ContextError(
                f"setup.context does not fit the agent's deps_type {name}: {_validation_said(exc)}"
            ) from None

    return context.context_for_run(validated)


def _validation_said(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc).partition("\n")[0]
    said = []
    for error in exc.errors(include_url=False):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        said.append(f"$.setup.context{where}: {error['msg']}")
    return "; ".join(said)


class _Wired:
    """One agent of the graph as a case runs it: its model the harness's, speaking as the
    agent, and every toolset it configured wrapped so its dispatches are recorded as its."""

    def __init__(self, node: GraphAgent, context: AgentContext, named: bool) -> None:
        self.agent = node.agent
        # One agent alone keeps the single-agent record: no agent named anywhere.
        name = node.name if named else None
        self.model = FunctionModel(_respond_with(context.model, name), model_name="zeroclaw-eval")
        self.toolsets = [_RecordingToolset(ts, context.tools, name) for ts in node.agent.toolsets]
        note_validators(node.agent, name)


class _Session:
    def __init__(
        self, agent: Agent[Any, Any], context: AgentContext, graph: list[GraphAgent] | None
    ) -> None:
        self._agent = agent
        self._model = FunctionModel(_respond_with(context.model, None), model_name="zeroclaw-eval")
        self._wired = (
            None if graph is None else [_Wired(node, context, len(graph) > 1) for node in graph]
        )
        # pydantic-ai's own request limit (50 by default) counts model calls per run, that
        # is per turn here; set one above the boundary's, so the harness's limit is the one
        # that applies, with the same run error as every other agent.
        self._limits = UsageLimits(request_limit=context.model.max_calls_per_turn + 1)
        self._history: list[ModelMessage] = []
        self._boundary = context.model
        self._deps = _deps(agent, context)
        # The MCP servers the user's code leaves to the runner: held for this case only.
        self._servers = CaseToolsets(graph or [])
        self._approvals = context.approvals
        # The agent whose calls are held, named only in a graph of several.
        self._root = graph[0].name if graph is not None and len(graph) > 1 else None

    async def aclose(self) -> None:
        """Once the case is over, whatever happened: its MCP servers closed."""
        await self._servers.close()

    async def run_turn(self, user_input: str) -> str:
        # Entered in the first turn's task and time, before the agent lists their tools.
        await self._servers.open()
        with tripwires(self._boundary) as tripped:
            return await self._run(user_input)
        assert tripped[0]
        # A tripwire ended the run as pydantic-ai ends it, with no output: the turn answers
        # "", and the conversation goes on with the input it stopped and nothing the
        # stopped run made.
        self._history = [*self._history, PaiRequest(parts=[UserPromptPart(content=user_input)])]
        return ""

    async def _run(self, user_input: str) -> str:
        with ExitStack() as overrides:
            # Every agent of the graph, delegates included, answered by the script. The
            # overrides are context variables: set and reset in this turn's task, they
            # reach the tasks pydantic-ai starts for tools (and so the delegates' runs)
            # and never another case's, even where a delegate is one module-level agent
            # every case shares. tools=[] drops each agent's own function tools from the
            # run; its wrapped toolsets (which include them) put them back, recorded.
            for wired in self._wired or ():
                overrides.enter_context(
                    wired.agent.override(model=wired.model, tools=[], toolsets=wired.toolsets)
                )
            result = await self._run_once(user_input, self._history, None)
            while isinstance(result.output, DeferredToolRequests):
                # pydantic-ai's deferred tools: the run ends with the calls held for
                # approval, and a new run over its messages carries the decisions.
                messages = result.all_messages()
                decided = self._decide(result.output, messages)
                result = await self._run_once(None, messages, decided)
        # pydantic-ai carries a conversation as the previous run's full message list.
        self._history = result.all_messages()
        # A structured output is graded, and shown, as its JSON (pydantic's own).
        return output_text(result.output)

    async def _run_once(
        self,
        prompt: str | None,
        history: list[ModelMessage],
        decided: DeferredToolResults | None,
    ) -> AgentRunResult[Any]:
        if self._wired is None:
            return await self._agent.run(
                prompt,
                model=self._model,
                message_history=history,
                deps=self._deps,
                usage_limits=self._limits,
                deferred_tool_results=decided,
            )
        return await self._agent.run(
            prompt,
            message_history=history,
            deps=self._deps,
            usage_limits=self._limits,
            infer_name=False,
            deferred_tool_results=decided,
        )

    def _decide(
        self, requests: DeferredToolRequests, messages: list[ModelMessage]
    ) -> DeferredToolResults:
        if requests.calls:
            names = ", ".join(sorted({c.tool_name for c in requests.calls}))
            raise RuntimeError(
                f"the agent deferred calls to {names} for an external result (CallDeferred, "
                "an external tool): only calls held for approval are decided in a replay"
            )
        # In the order the model asked for them (pydantic-ai groups them by how each asks).
        order = _call_order(messages)
        held = sorted(requests.approvals, key=lambda c: order.get(c.tool_call_id, len(order)))
        decided = DeferredToolResults()
        for call in held:
            made = self._approvals.decide(call.tool_call_id, call.tool_name, self._root)
            if made.approved:
                decided.approvals[call.tool_call_id] = True
            elif made.reason is not None:
                decided.approvals[call.tool_call_id] = ToolDenied(made.reason)
            else:  # pydantic-ai's own denial text
                decided.approvals[call.tool_call_id] = False
        return decided


def _call_order(messages: list[ModelMessage]) -> dict[str, int]:
    """Each tool call of the model's last answer, by its place in it."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            return {part.tool_call_id: i for i, part in enumerate(calls)}
    return {}


def _respond_with(boundary: ModelBoundary, agent: str | None) -> Callable[..., Any]:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # Output tools are offered as pydantic-ai offers them, beside the function tools: a
        # scripted call to one becomes a ToolCallPart like any other, which pydantic-ai
        # validates (and its output validators check) as the final answer.
        tools = tuple(
            ToolSchema(t.name, t.description or "", t.parameters_json_schema)
            for t in info.function_tools
        ) + tuple(
            ToolSchema(t.name, t.description or "", t.parameters_json_schema, output=True)
            for t in info.output_tools
        )
        request = ModelRequest(
            messages=to_messages(messages, info.instructions),
            tools=tools,
            agent=agent,
            output_schema=_output_schema(info),
            declared_instructions=declared_instructions(messages, info.instructions),
            settings=_settings(info.model_settings),
        )
        step = await boundary.respond(request)
        check_offered(step, request)
        usage = RequestUsage(input_tokens=step.input_tokens, output_tokens=step.output_tokens)
        if step.tool_calls:
            parts: list[Any] = [
                ToolCallPart(tool_name=c.name, args=c.arguments, tool_call_id=c.id)
                for c in step.tool_calls
            ]
        else:
            parts = [TextPart(content=step.text)]
        return ModelResponse(parts=parts, usage=usage, model_name="zeroclaw-eval")

    return respond


def declared_instructions(messages: list[ModelMessage], sent: str | None) -> tuple[str, ...]:
    """What pydantic-ai made of the agent's declarations for this request, each of which must
    reach the model: the system prompts (`system_prompt=`, `@agent.system_prompt`) it put in
    the first request of the history, sent again with the history every time, and the
    instructions (`instructions=`, `@agent.instructions`) it resolved for this request."""
    prompts = tuple(
        part.content
        for message in messages
        if isinstance(message, PaiRequest)
        for part in message.parts
        if isinstance(part, SystemPromptPart)
    )
    return (*prompts, sent) if sent else prompts


def _settings(settings: Any) -> dict[str, Any]:
    """The run's model settings pydantic-ai hands the model, as JSON, without the extras a
    provider's key could be among (`extra_headers`, `extra_body`)."""
    if not isinstance(settings, dict):
        return {}
    return {
        name: to_jsonable_python(value, fallback=str)
        for name, value in settings.items()
        if value is not None and not name.startswith("extra_")
    }


def _output_schema(info: AgentInfo) -> OutputSchema | None:
    """The structured answer asked for in text: native output (the request's response
    format) or prompted output (the instructions carry the schema)."""
    parameters = info.model_request_parameters
    wanted = parameters.output_object
    mode = parameters.output_mode
    if wanted is None or mode not in ("native", "prompted"):
        return None
    return OutputSchema(
        name=wanted.name or "output",
        schema=wanted.json_schema,
        strict=bool(wanted.strict),
        mode="native" if mode == "native" else "prompted",
    )


def _pai_tool(tool: Tool, registry: ToolRegistry) -> PaiTool[Any]:
    async def invoke(**arguments: Any) -> str:
        return (await registry.dispatch(tool.name, arguments)).result

    wrapped: PaiTool[Any] = PaiTool.from_schema(
        invoke, tool.name, tool.description, tool.parameters
    )
    return wrapped


class _RecordingToolset(WrapperToolset[Any]):
    """Records every call into the wrapped toolset at the tool boundary, as its agent's."""

    def __init__(self, wrapped: Any, registry: ToolRegistry, agent: str | None) -> None:
        super().__init__(wrapped)
        self._registry = registry
        self._agent = agent

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        registry, agent = self._registry, self._agent

        async def run() -> Any:
            registry.agent = agent
            try:
                return await super(_RecordingToolset, self).call_tool(name, tool_args, ctx, tool)
            finally:
                # A delegate run by this tool set its own agent; this call is recorded as
                # this agent's, and `recorded` records it with no await after this line, so
                # no call running beside it can set another agent in between.
                registry.agent = agent

        # A call held for approval (ApprovalRequired) or deferred did not run: unrecorded.
        return await registry.recorded(
            name, canonical_arguments(tool_args), run, text=_result_text, unrun=_UNRUN
        )


_UNRUN = (ApprovalRequired, CallDeferred)


def _result_text(result: Any) -> str:
    # What pydantic-ai tells the model (`ToolReturnPart.model_response_str`): compact JSON.
    if result is None:
        return ""
    return result if isinstance(result, str) else to_json(result, fallback=str).decode()


def to_messages(history: list[ModelMessage], sent: str | None = None) -> tuple[Message, ...]:
    """pydantic-ai messages as neutral messages (system, user, assistant, tool results);
    `sent`: the instructions the model is sent now (pydantic-ai's `AgentInfo.instructions`,
    a prompted output's schema included), else the latest the history holds."""
    out: list[Message] = []
    instructions: str | None = None
    for message in history:
        if isinstance(message, PaiRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append(Message(role="system", content=part.content))
                elif isinstance(part, UserPromptPart):
                    content = part.content if isinstance(part.content, str) else str(part.content)
                    out.append(Message(role="user", content=content))
                elif isinstance(part, ToolReturnPart):
                    out.append(
                        Message(
                            role="tool",
                            content=part.model_response_str(),
                            tool_call_id=part.tool_call_id,
                        )
                    )
                elif isinstance(part, RetryPromptPart) and part.tool_name:
                    out.append(
                        Message(
                            role="tool",
                            content=part.model_response(),
                            tool_call_id=part.tool_call_id,
                        )
                    )
                elif isinstance(part, RetryPromptPart):
                    out.append(Message(role="user", content=part.model_response()))
            instructions = message.instructions or instructions
        elif isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = tuple(
                ToolCall(p.tool_call_id, p.tool_name, p.args_as_dict())
                for p in message.parts
                if isinstance(p, ToolCallPart)
            )
            out.append(Message(role="assistant", content=text, tool_calls=calls))
    # The latest instructions are what the model sees now, as the system message.
    instructions = sent or instructions
    if instructions:
        out.insert(0, Message(role="system", content=instructions))
    return tuple(out)


# What the agent registry looks up in every module of this package.
Adapter = PydanticAIAdapter
