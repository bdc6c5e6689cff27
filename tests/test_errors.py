"""`harness.errors`: the exit codes are numbers wherever they are shown."""

from __future__ import annotations

from harness.errors import ExitCode, HarnessError


def test_exit_codes_print_as_their_numbers() -> None:
    assert [str(code) for code in ExitCode] == ["0", "1", "2", "130"]
    assert f"exit {ExitCode.FAILED}" == "exit 1"
    assert ExitCode.USAGE == 2 and int(ExitCode.INTERRUPTED) == 130


def test_a_harness_error_prints_as_one_line_by_default() -> None:
    assert HarnessError("bad setting").lines() == ["zeroclaw eval: bad setting"]
