"""The OpenAI Agents SDK adapter: the SDK's own `Runner` loop, with the harness as its model."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from agents.items import TResponseInputItem
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from harness.agent import AgentContext
from harness.backend import Message, ModelBoundary, ModelRequest, Role, ToolCall, ToolSchema
from harness.tools import Tool, ToolRegistry, builtin_tools

# Tracing would try to export spans over the network; a harness run must stay offline.
_RUN_CONFIG = RunConfig(tracing_disabled=True)


class OpenAIAgentsAdapter:
    name = "openai-agents"

    def tools(self) -> list[Tool]:
        return builtin_tools()

    def start(self, context: AgentContext) -> _Session:
        return _Session(context)


class _Session:
    def __init__(self, context: AgentContext) -> None:
        registry = context.tools
        self._agent = Agent(
            name=f"zeroclaw-eval:{context.case_id}",
            model=HarnessModel(context.model, registry),
            tools=[_function_tool(tool, registry) for tool in registry.tools.values()],
        )
        self._history: list[TResponseInputItem] = []

    async def run_turn(self, user_input: str) -> str:
        # The SDK carries a conversation by feeding the previous run's items back in.
        items = [*self._history, {"role": "user", "content": user_input}]
        result = await Runner.run(self._agent, items, run_config=_RUN_CONFIG)  # type: ignore[arg-type]
        self._history = result.to_input_list()
        output = result.final_output
        return output if isinstance(output, str) else ("" if output is None else str(output))


def _function_tool(tool: Tool, registry: ToolRegistry) -> FunctionTool:
    async def invoke(_context: Any, arguments: str) -> str:
        return (await registry.dispatch(tool.name, arguments)).result

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


class HarnessModel(Model):
    """An SDK `Model` whose responses come from the harness's model boundary."""

    def __init__(self, boundary: ModelBoundary, registry: ToolRegistry) -> None:
        self._boundary = boundary
        self._schemas = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in registry.tools.values()
        )

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        request = ModelRequest(
            messages=to_messages(system_instructions, input), tools=self._schemas
        )
        step = await self._boundary.respond(request)
        output: list[Any] = []
        if not step.tool_calls:
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

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the harness drives the SDK with Runner.run, not streaming")


def to_messages(system: str | None, items: str | list[TResponseInputItem]) -> tuple[Message, ...]:
    """SDK input items as neutral messages (user, assistant text and calls, tool results)."""
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    if isinstance(items, str):
        messages.append(Message(role="user", content=items))
        return tuple(messages)
    for item in items:
        raw: dict[str, Any] = dict(item)
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
                    content=_text(raw.get("output")),
                    tool_call_id=str(raw.get("call_id", "")),
                )
            )
        elif (role := _ROLES.get(raw.get("role"))) is not None:
            messages.append(Message(role=role, content=_text(raw.get("content"))))
    return tuple(messages)


_ROLES: dict[Any, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
