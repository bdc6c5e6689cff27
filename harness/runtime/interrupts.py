"""SIGINT and SIGTERM: both stop a run as an `Interrupted` exception in the main thread, a
few steps that must not be cut in half (renaming report files into place) hold them off
until they are done, and the tidying up after an interruption ignores another.

Cases run on a worker thread, which signals never reach (the main thread only watches),
so an interruption stops the run promptly, also while a case is being graded.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from harness.errors import ExitCode

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The harness was sent SIGINT or SIGTERM. A `KeyboardInterrupt`, so code that stops
    on Ctrl-C stops on either."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        # 128 + the signal's number, as a shell reports a process a signal stopped.
        return ExitCode.INTERRUPTED if self.signum == signal.SIGINT else 128 + self.signum


def signal_of(exc: KeyboardInterrupt) -> str:
    """The name of the signal that raised `exc` (SIGINT: Python's own KeyboardInterrupt)."""
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


def exit_code_of(exc: KeyboardInterrupt) -> int:
    """The exit code of a process `exc` ends (`Interrupted.exit_code`; else a Ctrl-C's)."""
    return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def install() -> None:
    """Make SIGINT and SIGTERM raise `Interrupted` (the command line's entry point)."""
    for signum in SIGNALS:
        signal.signal(signum, _raise)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block whole: a SIGINT or SIGTERM arriving meanwhile is delivered after it.

    Only the main thread handles signals, so elsewhere there is nothing to hold."""
    pending: list[int] = []

    def defer(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    try:
        with _handled_by(defer):
            yield
    finally:
        if pending:
            # Delivered again to the handler the block held it from (which may raise).
            signal.raise_signal(pending[0])


@contextlib.contextmanager
def ignored() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM ignored: what an interruption still has to do
    (removing staged files, saying what was written, ending the process), which another
    signal must not cut short (a CI runner follows its SIGINT with a SIGTERM). The process
    is stopping already: the signal has nothing left to ask for, and is not delivered."""
    with _handled_by(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _handled_by(handler: Callable[[int, FrameType | None], Any] | int) -> Iterator[None]:
    """SIGINT and SIGTERM go to `handler` for the block, then back to what had them; only
    in the main thread, the one signals reach (elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        previous[signum] = signal.SIG_DFL if current is None else current
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, restored in previous.items():
            signal.signal(signum, restored)
