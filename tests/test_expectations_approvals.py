"""Human approval of tool calls, through the real frameworks: the SDK's `needs_approval`
and pydantic-ai's deferred tools requiring approval, decided from the fixture's turn and
resumed as each framework documents; `approvals_requested`, and the checks every case
gets: a request left undecided, a decision for a call that never asked, a rejected call
dispatched all the same. Each runs the refund example's agents (`examples/approval_refunds`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Cli, call, fixture, text_step, tool_step, write_module, write_suite

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

EXAMPLE = REPO / "examples" / "approval_refunds"
SDK = "openai-agents:sdk_refunds:build_agent"
PAI = "pydantic-ai:pydantic_refunds:build_agent"
BOTH = pytest.mark.parametrize("agent", [SDK, PAI], ids=["openai-agents", "pydantic-ai"])


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """The refund example's modules in a directory of their own."""
    root = tmp_path / "desk"
    root.mkdir()
    for name in ("refund_desk.py", "sdk_refunds.py", "pydantic_refunds.py"):
        shutil.copy(EXAMPLE / name, root)
    return root


def refunds(*decisions: tuple[str, dict[str, Any]], expects: dict[str, Any]) -> dict[str, Any]:
    """One turn refunding A-1003 (call c1) and A-1005 (call c2) in one answer, then a text;
    `decisions` are the turn's approvals."""
    step = tool_step(
        call("c1", "refund_order", order_id="A-1003", reason="torn"),
        call("c2", "refund_order", order_id="A-1005", reason="changed my mind"),
    )
    data = fixture("refunds", [{"user_input": "Refund A-1003 and A-1005."}], expects)
    data["turns"][0]["steps"] = [step, text_step("Done what I could.")]
    if decisions:
        data["turns"][0]["approvals"] = dict(decisions)
    return data


def run(run_cli: Cli, root: Path, data: dict[str, Any], agent: str, *extra: str) -> Any:
    write_suite(root / "evals", {"f.json": data})
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", *extra,
        cwd=root,
    )  # fmt: skip


def case_of(root: Path) -> dict[str, Any]:
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return dict(case)


def failed(case: dict[str, Any]) -> dict[str, str]:
    return {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]}


APPROVED = ("c1", {"approve": True})
REJECTED = ("c2", {"approve": False, "reason": "over 100 EUR: a manager decides"})


@BOTH
def test_an_approved_call_runs_and_a_rejected_one_does_not_the_model_hears_the_reason(
    run_cli: Cli, desk: Path, agent: str
) -> None:
    expects = {
        "approvals_requested": ["refund_order", "refund_order"],
        "exact_tool_calls": 1,
        "tool_arguments_contain": [{"tool": "refund_order", "needle": '"order_id":"A-1003"'}],
        "request_contains": [
            {"turn": 0, "step": 1, "role": "tool", "needle": "over 100 EUR: a manager decides"}
        ],
    }
    result = run(run_cli, desk, refunds(APPROVED, REJECTED, expects=expects), agent)
    case = case_of(desk)
    assert result.returncode == 0, json.dumps(case, indent=2)
    record = case["record"]
    assert [(c["name"], json.loads(c["arguments"])["order_id"]) for c in record["calls"]] == [
        ("refund_order", "A-1003")
    ]
    # Recorded in the order the model asked, whatever order the framework held them in.
    assert record["approvals"] == [
        {"turn": 0, "call_id": "c1", "tool": "refund_order", "approved": True},
        {
            "turn": 0,
            "call_id": "c2",
            "tool": "refund_order",
            "approved": False,
            "reason": "over 100 EUR: a manager decides",
        },
    ]


@BOTH
def test_a_request_the_fixture_does_not_decide_is_a_failed_check_naming_the_call(
    run_cli: Cli, desk: Path, agent: str
) -> None:
    expects = {"approvals_requested": ["refund_order", "refund_order"]}
    result = run(run_cli, desk, refunds(APPROVED, expects=expects), agent)
    case = case_of(desk)
    assert result.returncode == 1
    assert case["error"] is None  # not a run error, and no hang
    assert failed(case) == {
        "approval(undecided)": (
            "turn 0: c2 (refund_order) asked for approval, but the fixture gives no decision "
            'for it (so it was rejected, and did not run): add "c2": {"approve": true} or '
            '{"approve": false, "reason": …} to $.turns[0].approvals'
        )
    }
    # Undecided is rejected: only the approved refund ran.
    assert [c["arguments"] for c in case["record"]["calls"]] == [
        '{"order_id":"A-1003","reason":"torn"}'
    ]
    assert case["record"]["approvals"][1]["decided"] is False


@BOTH
def test_a_tool_that_no_longer_asks_fails_naming_the_call_it_ran_unasked(
    run_cli: Cli, desk: Path, agent: str
) -> None:
    asking = {
        "sdk_refunds.py": "needs_approval=True",
        "pydantic_refunds.py": "requires_approval=True",
    }
    for name, marker in asking.items():
        module = desk / name
        text = module.read_text(encoding="utf-8")
        assert marker in text
        module.write_text(text.replace(f"({marker})", ""), encoding="utf-8")
    expects = {"approvals_requested": ["refund_order", "refund_order"]}
    result = run(run_cli, desk, refunds(APPROVED, REJECTED, expects=expects), agent)
    case = case_of(desk)
    assert result.returncode == 1
    assert case["error"] is None
    details = failed(case)
    assert details.pop('approvals_requested(["refund_order", "refund_order"])') == (
        'approvals requested: expected ["refund_order", "refund_order"], the run asked for []'
    )
    assert details.pop("approval(never_asked)") == (
        "turn 0: the fixture decides c1 (refund_order), but the agent never held it for "
        "approval; it was dispatched without asking"
    )
    assert details.pop("approval(never_asked) #2").startswith("turn 0: the fixture decides c2")
    # Nothing held, so nothing rejected: both refunds ran, as the script has the model ask.
    assert details == {}
    assert len(case["record"]["calls"]) == 2


@BOTH
def test_approvals_requested_is_the_exact_ordered_list(
    run_cli: Cli, desk: Path, agent: str
) -> None:
    expects = {"approvals_requested": ["refund_order"]}
    result = run(run_cli, desk, refunds(APPROVED, REJECTED, expects=expects), agent)
    assert result.returncode == 1
    assert failed(case_of(desk)) == {
        'approvals_requested(["refund_order"])': (
            'approvals requested: expected ["refund_order"], the run asked for '
            '["refund_order", "refund_order"]'
        )
    }


# A loop of its own that asks the desk, then dispatches whatever it was told.
CARELESS_LOOP = """
from harness import Message, ModelRequest, ToolSchema


class Session:
    def __init__(self, context):
        self.context = context
        self.messages = []
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in context.tools.tools.values()
        )

    async def run_turn(self, user_input):
        self.messages.append(Message(role="user", content=user_input))
        while True:
            step = await self.context.model.respond(
                ModelRequest(messages=tuple(self.messages), tools=self.tools)
            )
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                decision = self.context.approvals.decide(call.id, call.name)
                if HONOURS and not decision.approved:
                    content = decision.reason or "rejected"
                else:
                    content = (await self.context.tools.dispatch(call.name, call.arguments)).result
                self.messages.append(Message(role="tool", content=content, tool_call_id=call.id))


def factory(context):
    return Session(context)
"""


@pytest.mark.parametrize("honours", [True, False])
def test_a_rejected_call_dispatched_all_the_same_fails_naming_it(
    run_cli: Cli, tmp_path: Path, honours: bool
) -> None:
    root = tmp_path / "loop"
    root.mkdir()
    loop = write_module(root, CARELESS_LOOP.replace("HONOURS", str(honours)), "careless")
    data = fixture(
        "echoes",
        [
            {
                "user_input": "Echo a and b.",
                "steps": [
                    tool_step(call("c1", message="a"), call("c2", message="b")),
                    text_step("a echoed; b was not allowed."),
                ],
                "approvals": {"c1": {"approve": True}, "c2": {"approve": False, "reason": "no"}},
            }
        ],
        {"approvals_requested": ["echo", "echo"]},
    )
    result = run(run_cli, root, data, f"{loop}:factory")
    case = case_of(root)
    if honours:
        assert result.returncode == 0, json.dumps(case, indent=2)
        return
    assert result.returncode == 1
    assert failed(case) == {
        "approval(rejected_dispatched)": (
            "turn 0: c2 (echo) was rejected, but the agent dispatched it all the same"
        ),
        "loop(dispatches)": (
            "turn 0, step 0: the script called [echo], the agent dispatched [echo, echo]"
        ),
    }
    assert case["grades"][-2]["field"] == "$.turns[0].approvals.c2"


@BOTH
def test_reports_show_each_decision_under_its_call(run_cli: Cli, desk: Path, agent: str) -> None:
    expects = {"approvals_requested": ["refund_order"], "exact_tool_calls": 1}
    result = run(
        run_cli, desk, refunds(APPROVED, REJECTED, expects=expects), agent, "-v",
        "--html", "r.html",
    )  # fmt: skip
    assert result.returncode == 1
    out = result.stdout
    at = out.index("← model calls refund_order(")
    assert out.index("      approval of refund_order c1: approved", at) < out.index(
        "      tool refund_order(", at
    )
    assert "      approval of refund_order c2: rejected: over 100 EUR: a manager decides" in out
    shown = run_cli("eval", "show", "refunds", cwd=desk)
    assert "approval of refund_order c2: rejected: over 100 EUR: a manager decides" in (
        shown.stdout
    )
    page = (desk / "r.html").read_text(encoding="utf-8")
    assert (
        '<p class="approval sub fail">approval of <code>refund_order</code> c2: '
        "rejected: over 100 EUR: a manager decides</p>"
    ) in page
    assert '<p class="approval sub pass">approval of <code>refund_order</code> c1: approved' in (
        page
    )
