"""An orchestrator on the OpenAI Agents SDK that uses two other agents as tools (the SDK's
"agents as tools" pattern): a weather agent with a function tool of its own, and a
translator. The orchestrator keeps the conversation; each nested agent runs on the input
the orchestrator's model gives it and hands back its final answer as the tool's result.

Run its evals with `--agent openai-agents:travel_desk:build_agent` (see README.md). The
harness keeps every agent's instructions and tools and swaps only the model.
(Not named `agents.py`: that would shadow the SDK's own `agents` package.)
"""

from __future__ import annotations

from agents import Agent, function_tool

# A fixed forecast table, no I/O: the same city always gives the same answer.
FORECASTS: dict[str, str] = {
    "paris": "light rain, 14 C",
    "oslo": "sunny, 9 C",
}


@function_tool
def get_forecast(city: str) -> str:
    """Today's forecast for a city.

    Args:
        city: The city's name, like Paris.
    """
    forecast = FORECASTS.get(city.strip().lower())
    return f"{city}: {forecast or 'no forecast available'}"


def build_weather_agent() -> Agent:
    return Agent(
        name="weather_agent",
        instructions=(
            "You answer questions about today's weather. Look the city up with get_forecast "
            "and answer from its result only; never guess a forecast."
        ),
        tools=[get_forecast],
    )


def build_translator_agent() -> Agent:
    return Agent(
        name="translator_agent",
        instructions=(
            "You translate the text you are given into French. Answer with the translation only."
        ),
    )


def build_agent() -> Agent:
    """A fresh orchestrator and the agents it uses; the harness calls this once per case."""
    weather_agent = build_weather_agent()
    translator_agent = build_translator_agent()
    return Agent(
        name="orchestrator",
        instructions=(
            "You are a travel desk. Never answer weather questions or translate yourself: "
            "ask the weather agent with ask_weather, and the translator with "
            "translate_to_french, then answer the traveller from what they said."
        ),
        tools=[
            weather_agent.as_tool(
                tool_name="ask_weather",
                tool_description="Ask the weather agent about today's weather in a city.",
            ),
            translator_agent.as_tool(
                tool_name="translate_to_french",
                tool_description="Have the translator put a text into French.",
            ),
        ],
    )
