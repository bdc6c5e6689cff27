"""`harness.snapshots.groups`: one prompt change shared by many cases is said once, in the
terminal and in the Markdown summary, with the first case that shows it; the JUnit report
keeps each case's own diff (each test case is read on its own)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import REPO, Cli

SPEC = "openai-agents:agents_sdk:build_agent"


def test_a_prompt_change_shared_by_every_case_is_shown_once(run_cli: Cli, tmp_path: Path) -> None:
    support = tmp_path / "support_agent"
    shutil.copytree(REPO / "examples" / "support_agent", support)
    orders = support / "support_orders.py"
    orders.write_text(orders.read_text("utf-8").replace("Never invent", "Always invent"))
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals",
        "--agent",
        SPEC,
        "--jobs",
        "1",
        "--summary",
        "summary.md",
        "--junit-xml",
        "junit.xml",
        cwd=support,
    )
    assert result.returncode == 1
    out = result.stdout
    cases = len(list((support / "evals").glob("*.json")))
    added = [line for line in out.splitlines() if line.strip().startswith("+You are")]
    assert len(added) == 1, out  # the diff once ...
    assert out.count("(the same change as case lookup-shipped-order, shown there)") == cases - 1
    assert (
        f"request snapshots: 1 distinct change(s) across {cases} case(s), each diff shown once"
        in out
    )
    summary = (support / "summary.md").read_text("utf-8")
    assert summary.count("Always invent") == 1
    assert summary.count("(the same change as case ") == cases - 1
    # JUnit: every failing test case carries its own diff.
    assert (support / "junit.xml").read_text("utf-8").count("Always invent") >= cases
