"""`heap_frozen`: what a process held as a run started is left alone by the collector."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from conftest import echo_fixture, write_suite

import harness.collector
import harness.runner
from harness import run_suite
from harness.collector import freeze_for_good, heap_frozen


def test_the_heap_is_frozen_for_the_block_and_thawed_after() -> None:
    assert gc.get_freeze_count() == 0
    held = [object() for _ in range(10)]  # noqa: F841 (alive across the block)
    with heap_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_heap_frozen_already_is_left_as_it_was() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with heap_frozen():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # the caller's freeze is not undone
    finally:
        gc.unfreeze()


def test_a_heap_frozen_for_good_is_not_counted_by_each_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker runs its cases in batches, each in a block; counting its frozen heap (the
    # fork server's framework) walks every object of it: 20 ms a batch, a third of its CPU.
    monkeypatch.setattr(harness.collector, "_held", [False])
    counted: list[int] = []
    real = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or real())
    try:
        freeze_for_good()
        frozen = real()
        for _ in range(3):
            with heap_frozen():
                assert real() == frozen
        assert real() == frozen  # for good: no block thawed it
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
        frozen = real()
        with heap_frozen():
            assert real() == frozen
        assert real() == frozen  # the inner block did not thaw it
    assert real() == 0
    assert counted == []


def test_the_heap_is_thawed_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), heap_frozen():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_a_run_grades_its_cases_with_the_heap_frozen_and_thaws_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first full collection of a run would otherwise walk the framework's imports and
    # the admitted suite: 2% of 1,000 replayed cases.
    seen: list[int] = []
    real = harness.runner.grade

    def grade(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(harness.runner, "grade", grade)
    suite = write_suite(tmp_path / "suite", {"a.json": echo_fixture("one", "hi")})
    report = run_suite(suite, agent="openai-agents", root=tmp_path)
    assert report.exit_code() == 0
    assert len(seen) == 1 and seen[0] > 0
    assert gc.get_freeze_count() == 0
