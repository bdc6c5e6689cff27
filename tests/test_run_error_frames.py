"""`harness.run.error_frames`: a run error's frames in the user's code (not the harness's, not
an installed package's, not the standard library's), in Python's order, bounded."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.run.error_frames import FALLBACK_FRAMES, MAX_FRAMES, error_frames

# The harness as this run imported it: the checkout, or the copy `nox -s tests` installed.
HARNESS = Path(harness.__file__).resolve().parent


def raised(work: Callable[[], Any]) -> BaseException:
    try:
        work()
    except BaseException as exc:
        return exc
    raise AssertionError("it did not raise")


def defined(source: str, file: str) -> dict[str, Any]:
    """The functions of `source`, as though they were written in `file`."""
    space: dict[str, Any] = {"json": json}
    exec(compile(source, file, "exec"), space)
    return space


def shape(exc: BaseException) -> list[tuple[str, int, str]]:
    return [(Path(f.file).name, f.line, f.function) for f in error_frames(exc)]


def test_the_standard_librarys_and_the_harnesss_frames_are_left_out(tmp_path: Path) -> None:
    harness = defined("def step(text):\n    return load(text)\n", str(HARNESS / "fake_step.py"))
    user = defined(
        "def load(text):\n    return json.loads(text)\n\ndef main(step):\n    step('{')\n",
        str(tmp_path / "agent.py"),
    )
    harness["load"] = user["load"]
    exc = raised(lambda: user["main"](harness["step"]))
    frames = shape(exc)
    assert frames[-2:] == [("agent.py", 5, "main"), ("agent.py", 2, "load")]
    # This test's own frames are the user's too: outside the harness and the libraries.
    assert {name for name, _, _ in frames[:-2]} == {"test_run_error_frames.py"}


def test_an_installed_packages_frames_are_left_out(tmp_path: Path) -> None:
    from packaging.version import Version

    user = defined("def parse():\n    Version('not a version')\n", str(tmp_path / "agent.py"))
    user["Version"] = Version
    exc = raised(user["parse"])
    assert shape(exc)[-1] == ("agent.py", 2, "parse")
    assert all("site-packages" not in frame.file for frame in error_frames(exc))
    assert any("site-packages" in file for file, _, _ in _every(exc))  # there were some


def _every(exc: BaseException) -> list[tuple[str, int, str]]:
    import traceback

    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(exc.__traceback__)]


def test_without_a_frame_of_the_users_the_innermost_frames_are_kept() -> None:
    harness = defined(
        "def fail():\n    try:\n        json.loads('{')\n    except ValueError as exc:\n"
        "        return exc\n",
        str(HARNESS / "fake_fail.py"),
    )
    exc = harness["fail"]()
    assert [Path(file).name for file, _, _ in _every(exc)][:2] == ["fake_fail.py", "__init__.py"]
    frames = error_frames(exc)
    assert len(frames) == FALLBACK_FRAMES
    assert [Path(f.file).name for f in frames] == ["__init__.py", "decoder.py", "decoder.py"]
    assert all(Path(f.file).parent.name == "json" for f in frames)


def test_a_cause_comes_first_as_python_prints_it(tmp_path: Path) -> None:
    user = defined(
        "def inner():\n    raise KeyError('k')\n\n"
        "def outer():\n    try:\n        inner()\n    except KeyError as exc:\n"
        "        raise RuntimeError('wrapped') from exc\n",
        str(tmp_path / "agent.py"),
    )
    exc = raised(user["outer"])
    assert [frame for frame in shape(exc) if frame[0] == "agent.py"] == [
        ("agent.py", 6, "outer"),
        ("agent.py", 2, "inner"),
        ("agent.py", 8, "outer"),
    ]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is built in from 3.11")
def test_a_groups_first_exception_is_walked(tmp_path: Path) -> None:
    user = defined(
        "def fails():\n    raise ValueError('v')\n\n"
        "def grouped():\n    try:\n        fails()\n    except ValueError as exc:\n"
        "        return exc\n",
        str(tmp_path / "agent.py"),
    )
    inner = user["grouped"]()
    exc = raised(lambda: _raise(ExceptionGroup("g", [inner])))  # noqa: F821
    assert shape(exc)[-2:] == [("agent.py", 6, "grouped"), ("agent.py", 2, "fails")]


def _raise(exc: BaseException) -> None:
    raise exc


def test_frames_are_bounded_in_count_and_length(tmp_path: Path) -> None:
    long_name = "f" * 5000
    user = defined(
        f"def {long_name}(n):\n    if n == 0:\n        raise ValueError('deep')\n"
        f"    return {long_name}(n - 1)\n",
        str(tmp_path / ("d" * 5000) / "agent.py"),
    )
    exc = raised(lambda: user[long_name](50))
    frames = error_frames(exc)
    assert len(frames) == MAX_FRAMES
    assert [frame.line for frame in frames] == [4] * (MAX_FRAMES - 1) + [3]  # the innermost
    assert all(len(frame.file) <= 300 and len(frame.function) <= 120 for frame in frames)
    assert frames[-1].function.endswith("…")


def test_files_are_shown_as_the_caller_says(tmp_path: Path) -> None:
    user = defined("def f():\n    raise ValueError\n", str(tmp_path / "agent.py"))
    exc = raised(user["f"])
    (frame,) = error_frames(exc, lambda file: file.replace(str(tmp_path), "<root>"))[-1:]
    assert frame.shown() == "<root>/agent.py:2 in f"


def test_a_cycle_of_causes_ends() -> None:
    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first
    assert error_frames(first) == []  # never raised: no traceback, and no endless walk
