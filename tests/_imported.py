"""What the trace source tests share: a pydantic-ai agent written as pydantic-ai's docs
write one (deps, tools, a `ModelRetry`), run for real against the loopback OpenAI server,
and a fixture made from an imported conversation, to replay through that same agent.

`fixture_of` is the tests' own minimal writer (the turns and scripted steps of the
conversation, with expectations the trace proves): enough to show that what a source read
replays, without the import command's writer.
"""

from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from _openai_server import OpenAIServer, text_reply, tool_reply
from _otlp_receiver import OtlpFileReceiver
from conftest import write_module, write_suite
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from harness import run_suite
from harness.tracing.conversation import ImportedConversation
from harness.verdict.reports import CaseReport

SHOP_AGENT = '''
from dataclasses import dataclass, field

from pydantic_ai import Agent, ModelRetry, RunContext

ORDERS = {"A-100": "shipped on Monday", "A-200": "waiting for stock"}


@dataclass
class ShopDeps:
    customer: str
    cancelled: list[str] = field(default_factory=list)


def build_agent(capabilities=()):
    agent = Agent(
        deps_type=ShopDeps,
        name="shop",
        instructions="You are the shop's support agent. Look orders up; never guess.",
        capabilities=list(capabilities),
    )

    @agent.instructions
    def who(ctx: RunContext[ShopDeps]) -> str:
        return f"The customer is {ctx.deps.customer}."

    @agent.tool
    def order_status(ctx: RunContext[ShopDeps], order_id: str) -> str:
        """The status of one of the customer's orders.

        Args:
            order_id: The order's id, like A-100.
        """
        if order_id not in ORDERS:
            raise ModelRetry(f"there is no order {order_id}: order ids look like A-100")
        return f"order {order_id} for {ctx.deps.customer}: {ORDERS[order_id]}"

    @agent.tool
    def cancel_order(ctx: RunContext[ShopDeps], order_id: str) -> str:
        """Cancel one of the customer's orders that has not shipped."""
        ctx.deps.cancelled.append(order_id)
        return f"order {order_id} cancelled"

    return agent
'''

# The agent broken as a regression would break it: the status tool answers from the wrong
# table, so what the trace proves the tool returned no longer comes back.
BROKEN = ('"A-100": "shipped on Monday"', '"A-100": "lost in transit"')

# What the loopback model answers, in order: a wrong order id (the tool's ModelRetry), the
# right one, an answer; then, in the second conversation turn, a cancellation and an answer.
FIRST_RUN = [
    tool_reply([("call_1", "order_status", {"order_id": "100"})], prompt_tokens=120),
    tool_reply([("call_2", "order_status", {"order_id": "A-100"})], prompt_tokens=160),
    text_reply("Your order A-100 shipped on Monday.", prompt_tokens=200, completion_tokens=9),
]
SECOND_RUN = [
    tool_reply([("call_3", "cancel_order", {"order_id": "A-200"})], prompt_tokens=230),
    text_reply("Order A-200 is cancelled.", prompt_tokens=260, completion_tokens=7),
]
PROMPTS = ("Where is my order 100?", "Then cancel A-200, please.")
CONTEXT = {"customer": "Grace"}


def shop_module(directory: Path, monkeypatch: pytest.MonkeyPatch, broken: bool = False) -> str:
    """The shop agent's module written into `directory` (on sys.path); its name."""
    source = SHOP_AGENT.replace(*BROKEN) if broken else SHOP_AGENT
    monkeypatch.syspath_prepend(str(directory))
    return write_module(directory, source, prefix="shop_agent")


def run_shop(module: str, capabilities: tuple[Any, ...] = ()) -> list[Any]:
    """The shop agent run for real over two turns (the second with the first's history)
    against the loopback OpenAI-compatible server, with `capabilities` (pydantic-ai's
    `Instrumentation`, for one); each run's result."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    shop = importlib.import_module(module)
    agent = shop.build_agent(capabilities)
    with OpenAIServer([*FIRST_RUN, *SECOND_RUN]) as server:
        provider = OpenAIProvider(base_url=server.base_url, api_key="sk-loopback")
        model = OpenAIChatModel("shop-model", provider=provider)
        deps = shop.ShopDeps(**CONTEXT)
        first = agent.run_sync(PROMPTS[0], deps=deps, model=model)
        second = agent.run_sync(
            PROMPTS[1], deps=deps, model=model, message_history=first.all_messages()
        )
        server.assert_drained()
    return [first, second]


def fixture_of(
    conversation: ImportedConversation, context: dict[str, Any] | None = CONTEXT
) -> dict[str, Any]:
    """A replay fixture of the conversation, asserting what its trace proves; `context`
    the deps the run had."""
    turns = []
    for turn in conversation.turns:
        steps = []
        for step in turn.steps:
            if step.calls:
                calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.calls]
                response: dict[str, Any] = {"type": "tool_calls", "tool_calls": calls}
            else:
                response = {"type": "text", "content": step.text}
            if step.input_tokens:
                response["input_tokens"] = step.input_tokens
            if step.output_tokens:
                response["output_tokens"] = step.output_tokens
            several = len(conversation.agents) > 1
            steps.append(
                {"agent": step.agent, "response": response} if several else {"response": response}
            )
        turns.append({"user_input": turn.user_input, "steps": steps})
    results = [
        {"tool": c.name, "needle": c.result}
        for c in conversation.calls()
        if c.result is not None and not c.failed
    ]
    final = conversation.turns[-1].steps[-1].text
    return {
        "id": conversation.name,
        "model_name": conversation.model_name or conversation.name,
        **({"setup": {"context": context}} if context is not None else {}),
        "turns": turns,
        "expects": {
            "tools_used": conversation.tools_used(),
            "exact_tool_calls": len(conversation.calls()),
            "tool_results_contain": results,
            "response_contains": [final],
        },
    }


def replay(
    directory: Path,
    conversation: ImportedConversation,
    module: str,
    agent: str = "build_agent",
    context: dict[str, Any] | None = CONTEXT,
) -> CaseReport:
    """The conversation written as a fixture and replayed through `module`'s `agent`."""
    suite = write_suite(directory, {"imported.json": fixture_of(conversation, context)})
    (case,) = run_suite(suite, agent=f"pydantic-ai:{module}:{agent}", root=directory).cases
    return case


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def dumped(conversation: ImportedConversation) -> str:
    """The conversation as text, for an assertion's message."""
    return json.dumps(fixture_of(conversation), indent=1)


def exported(path: Path, module: str, **settings: Any) -> Path:
    """The shop agent's two runs, instrumented as pydantic-ai's docs instrument an agent,
    exported through the real OTLP/HTTP exporter into `path`."""
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings

    with OtlpFileReceiver(path) as receiver:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(receiver.traces_url)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecated format versions say so
            instrumentation = InstrumentationSettings(tracer_provider=provider, **settings)
        run_shop(module, (Instrumentation(settings=instrumentation),))
        provider.shutdown()
        assert receiver.requests >= 1
    return path
