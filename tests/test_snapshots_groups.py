"""`harness.snapshots.groups`: one prompt change shared by many cases is said once, in the
terminal and in the Markdown summary, with the first case that shows it; the JUnit report
keeps each case's own diff (each test case is read on its own) and says each change once in
the testsuite's output; GitHub gets one annotation per change."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
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


def test_junit_says_the_changes_once_for_the_suite_and_annotations_once_per_change(
    run_cli: Cli, tmp_path: Path
) -> None:
    import junitparser
    from test_reporters_github import runner_commands
    from test_reporters_junit import assert_valid

    support = tmp_path / "support_agent"
    shutil.copytree(REPO / "examples" / "support_agent", support)
    orders = support / "support_orders.py"
    orders.write_text(orders.read_text("utf-8").replace("Never invent", "Always invent"))
    args = ("eval", "run", "--suite", "evals", "--agent", SPEC, "--jobs", "1")
    result = run_cli(*args, "--junit-xml", "junit.xml", cwd=support, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    cases = sorted(p.stem.replace("_", "-") for p in (support / "evals").glob("*.json"))
    data = (support / "junit.xml").read_bytes()
    assert_valid(data)
    suite = next(iter(junitparser.JUnitXml.fromfile(str(support / "junit.xml"))))
    # The testsuite's own output (junitparser reads a testcase's alone).
    said = ET.fromstring(data).findtext("testsuite/system-out") or ""
    assert said.startswith(
        f"request snapshots: 1 distinct change(s) across {len(cases)} case(s), each said once here"
    )
    assert said.count("+You are") == 1 and said.count("-You are") == 1
    named = said.split("\n")[2]
    assert named.startswith(f"change 1, {len(cases)} case(s): ")
    assert sorted(named.split(": ", 1)[1].split(", ")) == cases
    # Each testcase still carries its own diff: a consumer shows one testcase at a time.
    for case in suite:
        assert "Always invent" in case.result[0].text
    # GitHub: one annotation for the change, naming the cases it stands for.
    errors = [c for c in runner_commands(result.stdout) if c.name == "error"]
    assert len(errors) == 1, errors
    others = len(cases) - 1
    assert f"and {others} other case(s)" in errors[0].properties["title"]
    assert f"(the same request snapshot change in {others} other case(s): " in errors[0].message
