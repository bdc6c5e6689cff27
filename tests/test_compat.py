"""The original harness's fixtures load and pass unchanged through the default agent.

They are read in place from the shared folder beside the repository, never copied in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES

from harness import SuiteReport, empty_run_passes, parse_fixture, run_suite

# Empty when the folder is absent: the parametrized tests then collect as skipped.
FIXTURE_NAMES = sorted(p.name for p in SHARED_FIXTURES.glob("*.json"))


@pytest.fixture(scope="module")
def report() -> SuiteReport:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} is absent")
    return run_suite(SHARED_FIXTURES, agent="openai-agents", root=SHARED_FIXTURES.parent)


def test_every_shared_fixture_is_a_case(report: SuiteReport) -> None:
    assert FIXTURE_NAMES, "the shared fixture folder holds no fixtures"
    assert sorted(Path(c.fixture).name for c in report.cases) == FIXTURE_NAMES
    assert report.agent == "openai-agents"
    assert report.exit_code() == 0


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_shared_fixture_passes_unchanged(report: SuiteReport, name: str) -> None:
    (case,) = [c for c in report.cases if Path(c.fixture).name == name]
    assert case.error is None, case.error
    failed = {g.check: g.detail for g in case.grades if not g.passed}
    assert failed == {}
    assert case.passed
    assert case.grades
    data = json.loads((SHARED_FIXTURES / name).read_text(encoding="utf-8"))
    assert case.id == data.get("id", data["model_name"])
    record = case.record
    assert record is not None
    steps = [s for t in data["turns"] for s in t["steps"]]
    assert record.model_calls == len(steps)
    assert record.input_tokens == sum(s["response"].get("input_tokens", 0) for s in steps)
    assert record.output_tokens == sum(s["response"].get("output_tokens", 0) for s in steps)
    scripted_calls = [c for s in steps for c in s["response"].get("tool_calls", [])]
    assert [c.name for c in record.calls] == [c["name"] for c in scripted_calls]
    last_turn_steps = data["turns"][-1]["steps"]
    assert record.final_response == last_turn_steps[-1]["response"]["content"]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_shared_fixture_cannot_pass_an_empty_run(name: str) -> None:
    text = (SHARED_FIXTURES / name).read_text(encoding="utf-8")
    assert not empty_run_passes(parse_fixture(text, name))
