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


# What code the harness runs (an agent, its tools) may raise: anything, an argparse-wrapping
# tool's SystemExit, a KeyboardInterrupt or GeneratorExit raised by agent code, its own
# BaseException subclasses and exception groups included. Cases run on a worker thread,
# which a real Ctrl-C never reaches, so on that thread each of these is the case's own
# failure, never a reason to stop the suite. (A deadline's CancelledError is a
# BaseException too: code awaiting a tool lets it through before catching these.)
RAISED_BY_AGENT_CODE: tuple[type[BaseException], ...] = (BaseException,)


def describe(exc: BaseException) -> str:
    """`Type: message` for an exception agent code raised, even when its `__str__` raises."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except RAISED_BY_AGENT_CODE:
        return type(exc).__name__
