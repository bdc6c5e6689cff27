"""`heap_frozen`: what a process held as a run started is left alone by the collector."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from conftest import echo_fixture, write_suite

import harness.run.runner
import harness.runtime.collector
from harness import run_suite
from harness.runtime.collector import freeze_for_good, heap_frozen


def frozen() -> bool:
    """Whether anything is frozen beyond what the interpreter keeps there of its own."""
    return gc.get_freeze_count() > harness.runtime.collector._OWN


def test_the_heap_is_frozen_for_the_block_and_thawed_after() -> None:
    assert not frozen()
    held = [object() for _ in range(10)]  # noqa: F841 (alive across the block)
    with heap_frozen():
        assert frozen()
    assert not frozen()


def test_what_the_interpreter_keeps_frozen_is_not_a_caller_s_freeze(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 3.12 keeps its immortal tuples in the frozen generation (375 at start-up): taken for
    # a caller's freeze, no run would ever freeze the heap there.
    real = gc.get_freeze_count
    start = real()
    monkeypatch.setattr(harness.runtime.collector, "_OWN", start + 375)
    monkeypatch.setattr(gc, "get_freeze_count", lambda: real() + 375)
    with heap_frozen():
        assert real() > start
    assert real() <= start


def test_a_heap_frozen_already_is_left_as_it_was() -> None:
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with heap_frozen():
            pass
        assert gc.get_freeze_count() > count // 2  # the caller's freeze is not undone
    finally:
        gc.unfreeze()


def test_a_heap_frozen_for_good_is_not_counted_by_each_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker runs its cases in batches, each in a block; counting its frozen heap (the
    # fork server's framework) walks every object of it: 20 ms a batch, a third of its CPU.
    monkeypatch.setattr(harness.runtime.collector, "_held", [False])
    counted: list[int] = []
    real = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or real())
    try:
        freeze_for_good()
        count = real()
        for _ in range(3):
            with heap_frozen():
                pass
        # For good: no block thawed it (a frozen object that died meanwhile has left it).
        assert real() > count // 2 > harness.runtime.collector._OWN
    finally:
        gc.unfreeze()
    assert counted == []


def test_a_block_within_a_block_leaves_the_freeze_to_the_outer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[int] = []
    real = gc.get_freeze_count
    with heap_frozen():
        monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or real())
        count = real()
        with heap_frozen():
            pass
        assert (
            real() > count // 2 > harness.runtime.collector._OWN
        )  # the inner block did not thaw it
    assert real() <= harness.runtime.collector._OWN
    assert counted == []


def test_the_heap_is_thawed_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), heap_frozen():
        raise RuntimeError("boom")
    assert not frozen()


def test_a_run_grades_its_cases_with_the_heap_frozen_and_thaws_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first full collection of a run would otherwise walk the framework's imports and
    # the admitted suite: 2% of 1,000 replayed cases.
    seen: list[bool] = []
    real = harness.run.runner.grade

    def grade(*args: Any, **kwargs: Any) -> Any:
        seen.append(frozen())
        return real(*args, **kwargs)

    monkeypatch.setattr(harness.run.runner, "grade", grade)
    suite = write_suite(tmp_path / "suite", {"a.json": echo_fixture("one", "hi")})
    report = run_suite(suite, agent="openai-agents", root=tmp_path)
    assert report.exit_code() == 0
    assert seen == [True]
    assert not frozen()
