"""`harness.reporters.atomic`: report files are written whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.reporters import atomic
from harness.reporters.atomic import ReportWriteError, write_atomic

# --- atomic report files --------------------------------------------------------------------


def test_write_atomic_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "deep" / "report.json"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]


def test_write_atomic_refuses_when_parent_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "reports"
    blocker.write_text("not a directory")
    with pytest.raises(ReportWriteError, match="cannot write report"):
        write_atomic(blocker / "junit.xml", b"<x/>")
    assert blocker.read_text() == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_write_atomic_leaves_no_partial_file_when_target_is_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.mkdir()
    with pytest.raises(ReportWriteError, match=r"junit\.xml"):
        write_atomic(target, b"<x/>")
    assert target.is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"old, complete")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(ReportWriteError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old, complete"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
