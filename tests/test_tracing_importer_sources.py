"""`zeroclaw eval import` on the sources other than the SDK's own traces: OTLP JSON from a
real pydantic-ai run exported by the OpenTelemetry SDK, and a logged pydantic-ai message
history. Each writes a fixture that replays green through the agent that produced the
trace, and that fails once the agent is broken (its status tool answers from the wrong
table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _imported import CONTEXT, exported, run_shop, shop_module
from conftest import Cli, write_module

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

# The deps the traced runs had: a fixture imported from a trace holds none, so the suite
# names the function that makes them, as an app's suite does (`--context`).
CONTEXT_MODULE = """
import importlib


def shop_context(data):
    shop = importlib.import_module({module!r})
    return shop.ShopDeps(**{context!r})
"""


def imported_then_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Cli, trace: Path, shop: str
) -> None:
    source = CONTEXT_MODULE.format(module=shop, context=CONTEXT)
    context = write_module(tmp_path, source, prefix="shop_context")
    suite = tmp_path / "evals" / "regression"
    agent = f"pydantic-ai:{shop}:build_agent"
    common = ("--agent", agent, "--context", f"{context}:shop_context")
    done = run_cli(
        "eval", "import", trace, "--suite", suite, *common, "--expect", "all", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    (fixture,) = sorted(suite.glob("*.json"))
    written = json.loads(fixture.read_text("utf-8"))
    assert [t["user_input"] for t in written["turns"]][-1] == "Then cancel A-200, please."
    assert written["origin"]["trace_id"]

    green = run_cli("eval", "run", "--suite", suite, *common, cwd=tmp_path)
    assert green.returncode == 0, green.stdout + green.stderr

    (tmp_path / "broken").mkdir()
    broken = shop_module(tmp_path / "broken", monkeypatch, broken=True)
    red = run_cli(
        "eval", "run", "--suite", suite, "--agent", f"pydantic-ai:{broken}:build_agent",
        "--context", f"{context}:shop_context", "--snapshots", "off", cwd=tmp_path,
    )  # fmt: skip
    assert red.returncode == 1, red.stdout + red.stderr
    assert "lost in transit" in red.stdout


def test_otlp_json_from_a_real_pydantic_ai_run_imports_green_and_fails_when_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Cli
) -> None:
    shop = shop_module(tmp_path, monkeypatch)
    trace = exported(tmp_path / "spans.jsonl", shop)
    imported_then_replayed(tmp_path, monkeypatch, run_cli, trace, shop)


def test_a_logged_pydantic_ai_history_imports_green_and_fails_when_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Cli
) -> None:
    shop = shop_module(tmp_path, monkeypatch)
    _, second = run_shop(shop)
    trace = tmp_path / "history.json"
    trace.write_bytes(second.all_messages_json())
    imported_then_replayed(tmp_path, monkeypatch, run_cli, trace, shop)
