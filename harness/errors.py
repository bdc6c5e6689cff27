"""What the harness raises on purpose, and the exit codes of the command line."""

from __future__ import annotations

import enum


class HarnessError(Exception):
    """Base of every error the harness raises on purpose: a refused fixture, a bad setting,
    an agent that cannot be resolved, a report that cannot be written, a provider that
    failed. The command line catches this one class; anything else is a bug."""

    def lines(self) -> list[str]:
        """What the command line prints for this error, one line each, on stderr."""
        return [f"zeroclaw eval: {self}"]


class UsageError(HarnessError):
    """The command line asks for something that cannot be: exit code 2."""

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.USAGE


class ExitCode(enum.IntEnum):
    """The process exit code of `zeroclaw eval …`."""

    PASSED = 0  # the gate passed
    FAILED = 1  # a failed check, a run error, a refused fixture or setting, an unwritable report
    USAGE = 2  # the command line itself was wrong
    INTERRUPTED = 130  # stopped by SIGINT

    def __str__(self) -> str:
        # The number, on every Python (3.10's IntEnum would say `ExitCode.PASSED`).
        return str(int(self))


# What code the harness runs (an agent, its tools) may raise besides ordinary exceptions: an
# argparse-wrapping tool's SystemExit, a KeyboardInterrupt or GeneratorExit raised by agent
# code. Cases run on a worker thread, which a real Ctrl-C never reaches, so on that thread
# each of these is the case's own failure, never a reason to stop the suite.
RAISED_BY_AGENT_CODE: tuple[type[BaseException], ...] = (
    Exception,
    SystemExit,
    KeyboardInterrupt,
    GeneratorExit,
)
