"""A hand-written agent loop, no framework: the `module:factory` protocol in one file.

Run its evals from this directory with `zeroclaw eval run --suite evals --agent loop:factory`.

The harness calls `factory(context)` once per case and then `run_turn(user_input)` once per
user turn. The loop talks to the model only through `context.model.respond(...)` and runs
tools only through `context.tools.dispatch(...)`, so in replay the model is the fixture's
script and every dispatch is recorded for grading.
"""

from __future__ import annotations

from harness import AgentContext, Message, ModelRequest, ToolSchema

SYSTEM_PROMPT = (
    "You are a careful assistant. Use the echo tool when the user asks you to echo "
    "something; report tool failures plainly and never retry a failed call unasked."
)

# A model that keeps calling tools must not spin forever: after this many model calls in
# one turn the loop gives up (a real loop's guard; the replay script ends turns sooner).
MAX_STEPS_PER_TURN = 8


class OwnLoop:
    """One conversation: the message list grows over the turns of a case."""

    def __init__(self, context: AgentContext) -> None:
        self.context = context
        self.messages: list[Message] = [Message(role="system", content=SYSTEM_PROMPT)]
        # The schemas the model is shown: the tools the harness registered for this case.
        self.tools = tuple(
            ToolSchema(tool.name, tool.description, tool.parameters)
            for tool in context.tools.tools.values()
        )

    async def run_turn(self, user_input: str) -> str:
        self.messages.append(Message(role="user", content=user_input))
        for _ in range(MAX_STEPS_PER_TURN):
            step = await self.context.model.respond(
                ModelRequest(messages=tuple(self.messages), tools=self.tools)
            )
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            # Every call of a step is dispatched, in the order the model gave them.
            for call in step.tool_calls:
                outcome = await self.context.tools.dispatch(call.name, call.arguments)
                content = outcome.result if outcome.success else f"error: {outcome.result}"
                self.messages.append(Message(role="tool", content=content, tool_call_id=call.id))
        raise RuntimeError(f"no final answer after {MAX_STEPS_PER_TURN} model calls")


def factory(context: AgentContext) -> OwnLoop:
    """The entry point named by `--agent loop:factory`."""
    return OwnLoop(context)
