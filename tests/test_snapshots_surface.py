"""`harness.snapshots.surface`: what an agent shows its model, as stable text: nothing the
script decides, tools sorted, each agent of a graph under its own heading."""

from __future__ import annotations

from harness.model_boundary import Message, ModelRequest, OutputSchema, ToolSchema
from harness.snapshots.surface import AGENT_UNDER_TEST, render

ECHO = ToolSchema("echo", "Echo a message.", {"type": "object", "properties": {"m": {}}})
FAIL = ToolSchema("fail", "Fail.", {"type": "object"})


def request(
    *messages: Message, tools: tuple[ToolSchema, ...] = (), agent: str | None = None
) -> ModelRequest:
    return ModelRequest(messages=messages, tools=tools, agent=agent)


SYSTEM = Message(role="system", content="Be terse.")


def test_the_conversation_and_the_order_of_tools_change_nothing() -> None:
    first = request(SYSTEM, Message(role="user", content="hi"), tools=(ECHO, FAIL))
    later = request(
        SYSTEM,
        Message(role="user", content="something else entirely"),
        Message(role="tool", content="result", tool_call_id="c1"),
        tools=(FAIL, ECHO),
    )
    assert render([first]) == render([first, later]) == render([later])
    text = render([first])
    assert text.index("--- tool: echo") < text.index("--- tool: fail")
    assert "hi" not in text.split("\n") and "result" not in text


def test_each_agent_has_its_surfaces_and_the_agent_under_test_comes_first() -> None:
    schema = OutputSchema(name="Answer", schema={"type": "object"}, strict=True)
    text = render(
        [
            request(Message(role="system", content="Route."), tools=(ECHO,)),
            request(Message(role="system", content="Bill."), agent="billing"),
            ModelRequest(messages=(SYSTEM,), agent="billing", output_schema=schema),
        ]
    )
    headings = [line for line in text.splitlines() if line.startswith("===")]
    assert headings == [
        f"=== agent: {AGENT_UNDER_TEST}",
        "=== agent: billing (surface 1 of 2)",
        "=== agent: billing (surface 2 of 2)",
    ]
    assert "--- output schema: Answer (native, strict)" in text


def test_a_request_without_instructions_says_so_and_no_request_is_no_snapshot() -> None:
    assert "--- instructions: none" in render([request(Message(role="user", content="x"))])
    assert render([]) == ""


def test_model_settings_are_shown_only_when_the_agent_sets_some() -> None:
    plain = request(SYSTEM, tools=(ECHO,))
    assert "--- model settings" not in render([plain])
    warm = ModelRequest(messages=(SYSTEM,), tools=(ECHO,), settings={"temperature": 0.7})
    text = render([warm])
    assert text.endswith('--- model settings\n{\n  "temperature": 0.7\n}\n')
    # A change of settings alone is a surface of its own, not hidden by the cache.
    cold = ModelRequest(messages=(SYSTEM,), tools=(ECHO,), settings={"temperature": 0.0})
    assert render([warm, cold]).count("--- model settings") == 2
    # The own-loop constructor without settings keeps working, as it always did.
    assert render([plain]) == render([ModelRequest(messages=(SYSTEM,), tools=(ECHO,))])


def test_a_text_made_once_is_the_text_of_the_same_surfaces_only() -> None:
    """Texts are kept by the distinct surfaces a run showed, in order, per agent: a run
    showing what an earlier one showed gets the same text, and one whose surface differs
    (even by a schema changed in place since) gets its own, as rendering it afresh would."""
    from harness.snapshots import surface

    parameters: dict[str, object] = {"type": "object"}
    tool = ToolSchema("echo", "Echo.", parameters)
    first = request(SYSTEM, tools=(tool,))
    other = request(Message(role="system", content="Be long."), tools=(tool,))
    helper = request(SYSTEM, tools=(tool,), agent="helper")
    runs = [[first], [first, first], [first, other], [other, first], [first, helper, other]]

    def afresh(requests: list[ModelRequest]) -> str:
        surface._TEXTS.clear()
        surface._RENDERED.clear()
        return render(requests)

    expected = [afresh(run) for run in runs]
    assert [render(run) for run in runs] == expected  # from the kept texts
    assert len(set(expected)) == 4 and "(surface 2 of 2)" in expected[2]
    assert expected[2] != expected[3]  # the order first seen is the text's
    parameters["properties"] = {"message": {"type": "string"}}
    changed = render([first])
    assert changed != expected[0] and '"message"' in changed
    assert changed == afresh([first])


def test_requests_showing_the_very_same_tools_still_differ_by_what_else_they_show() -> None:
    tools = (ECHO, FAIL)
    base = ModelRequest(messages=(SYSTEM,), tools=tools)
    others = [
        ModelRequest(messages=(Message(role="system", content="Be long."),), tools=tools),
        ModelRequest(messages=(SYSTEM,), tools=tools, settings={"temperature": 0}),
        ModelRequest(
            messages=(SYSTEM,), tools=tools, output_schema=OutputSchema(name="A", schema={})
        ),
    ]
    for other in others:
        text = render([base, other, base])
        assert "(surface 2 of 2)" in text and text == render([base, other])
    assert render([base, ModelRequest(messages=(SYSTEM,), tools=tools)]) == render([base])


def test_a_run_showing_one_surface_after_another_gets_its_own_text() -> None:
    """The text of a run showing one surface is kept for the next run showing an equal
    one: a run showing other tools, the same tools under another agent, or the same tools
    changed in place since, gets the text rendering it afresh would give."""
    from harness.snapshots import surface

    def afresh(requests: list[ModelRequest]) -> str:
        surface._TEXTS.clear()
        surface._RENDERED.clear()
        return render(requests)

    parameters: dict[str, object] = {"type": "object"}
    echo = ToolSchema("echo", "Echo.", parameters)
    runs = [
        [request(SYSTEM, tools=(echo,)), request(SYSTEM, tools=(echo,))],
        [request(SYSTEM, tools=(ToolSchema("echo", "Echo.", {"type": "object"}),))],
        [request(SYSTEM, tools=(echo,), agent="helper")],
        [request(SYSTEM, tools=(echo,), agent="")],
        [request(SYSTEM, tools=(echo, FAIL))],
        [request(SYSTEM, tools=(echo,))],
    ]
    expected = [afresh(run) for run in runs]
    assert [render(run) for run in runs] == expected
    assert expected[0] == expected[1] == expected[3] == expected[5]
    assert "=== agent: helper" in expected[2] and "--- tool: fail" in expected[4]
    parameters["required"] = ["m"]
    changed = render(runs[-1])
    assert changed == afresh(runs[-1]) and '"required"' in changed
