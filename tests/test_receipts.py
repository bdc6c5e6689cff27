"""`harness.receipts`: each case's fixture hash and the suite's receipt, in the JSON
report of a real run."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import Cli, echo_fixture, green_project

from harness.receipts import fixture_hash, git_state, provider_ref


def test_the_fixture_hash_ignores_layout_and_sees_every_value() -> None:
    compact = '{"b":1,"a":[1,2],"c":"é"}'
    spaced = '{\n  "a": [1, 2],\n  "c": "\\u00e9",\n  "b": 1\n}'
    assert fixture_hash(compact) == fixture_hash(spaced)
    assert fixture_hash(compact) != fixture_hash('{"b":2,"a":[1,2],"c":"é"}')
    assert len(fixture_hash(compact)) == 64


def test_a_lone_surrogate_still_hashes() -> None:
    assert fixture_hash('{"a": "\\ud800"}') == fixture_hash('{"a":"\\ud800"}')


def test_provider_references_name_host_and_model_only() -> None:
    assert provider_ref("https://user:sk-secret@api.example.com/v1?key=x", "m1") == (
        "api.example.com/m1"
    )
    assert provider_ref("http://127.0.0.1:8080/v1", "tiny") == "127.0.0.1:8080/tiny"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_report_carries_hashes_and_the_receipt(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "fixtures")
    result = run_cli("eval", "run", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    for case in document["cases"]:
        text = (root / case["fixture"]).read_text(encoding="utf-8")
        assert case["fixture_sha256"] == fixture_hash(text)
    receipt = document["receipt"]
    commit, dirty = git_state(root)
    assert receipt == {
        "harness_version": version("zeroclaw-eval"),
        "agent": "openai-agents",
        "framework": "openai-agents",
        "framework_version": version("openai-agents"),
        "provider": "scripted",
        "python": platform.python_version(),
        "git_commit": commit,
        "git_dirty": False,
        "policy": {
            "kind": "regression",
            "gates_checks": True,
            "summary": "gated: exit 0 iff every case passed",
        },
        # The whole suite ran: no selection, no shard.
        "selection": None,
        "shard": None,
        "suite_sha256": None,
    }
    assert commit is not None and len(commit) == 40 and dirty is False
    (root / "evals" / "regression" / "a_echo.json").write_text(
        json.dumps(echo_fixture("echo-case", "changed")), encoding="utf-8"
    )
    assert git_state(root) == (commit, True)


def test_outside_a_git_work_tree_the_commit_is_unknown(tmp_path: Path) -> None:
    assert git_state(tmp_path) == (None, None)


@pytest.mark.parametrize("agent", ["pydantic-ai"])
def test_the_framework_version_is_the_installed_one(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "--agent", agent, "--format", "json", cwd=root)
    receipt = json.loads(result.stdout)["receipt"]
    assert receipt["framework"] == "pydantic-ai"
    assert receipt["framework_version"] == version("pydantic-ai-slim")  # what the extra installs
