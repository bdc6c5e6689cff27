"""The `zeroclaw` process around the command line: stdout kept for the harness alone,
SIGINT and SIGTERM as clean interruptions, and an exit no thread an agent left can hold.

* Whatever the agent writes to stdout (`print()`, a write to file descriptor 1, a child
  process) goes to stderr: the harness writes its documents to a private copy of the
  original stdout, so `--format json|junit` output is the document alone.
* A thread the agent started and never stopped (not a daemon, a thread pool's worker, a
  child process it never joined) would keep the process alive after the reports were
  written: exit handlers get `EXIT_HANDLERS_SECS`, then the process ends without waiting.
* An interruption outside the command (as its modules import, or as the process exits
  after the run) is said, and ends the process at once: no traceback, no wait for what
  the agent left.
"""

from __future__ import annotations

import atexit
import errno
import io
import os
import sys

# Nothing else at the top: `zeroclaw --version` is answered before any of the command's
# modules (typing, contextlib, signal: each a few milliseconds) is imported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from types import TracebackType
    from typing import NoReturn, TextIO

# How long the interpreter's exit handlers (the agent's own among them) may take: they are
# where thread pools and child processes are joined, which a stuck agent never lets end.
EXIT_HANDLERS_SECS = 5.0


def main() -> NoReturn:
    """The console script: `zeroclaw …`."""
    if sys.argv[1:] == ["--version"] and sys.stdout is not None:
        from harness import __version__

        # What argparse's version action prints, without building the parser.
        sys.stdout.write(f"zeroclaw-eval {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    import gc

    # The start-up (the command's modules imported, its arguments parsed) makes objects
    # that live as long as the process and no garbage: the collector would walk them again
    # and again for nothing. The command resumes it as its work begins (`cli.main`).
    gc.disable()
    from harness.runtime import interrupts, owner

    interrupts.install()
    owner.take()
    code = None
    try:
        from harness import cli  # after the handlers: an interrupt while it imports is said

        with private_stdout() as out:
            code = cli.main(sys.argv[1:], stdout=out, collector_paused=True)
        leave(code)
    except KeyboardInterrupt as exc:  # outside the command, which says its own
        _cut_short(exc, code)


def _cut_short(exc: KeyboardInterrupt, code: int | None) -> NoReturn:
    """An interruption before the command began, or once it had ended with `code` (its
    reports written, or said not to be): said, and the process ends at once, waiting for
    nothing the agent left."""
    import contextlib

    from harness.runtime import interrupts

    with interrupts.ignored():
        said = f"zeroclaw eval: interrupted by {interrupts.signal_of(exc)}"
        if code is None:
            said += "; no report was written"
        else:
            said += f" as it exited, after the run (exit code {code}): not waiting for the agent"
        with contextlib.suppress(OSError, ValueError, AttributeError):
            print(said, file=sys.stderr)
        _flush()
        os._exit(interrupts.exit_code_of(exc))


def private_stdout() -> _PrivateStdout:
    """A stream on the original stdout for the harness; file descriptor 1 (and with it
    `sys.stdout`, and every child process) goes to stderr meanwhile."""
    return _PrivateStdout()


class _PrivateStdout:
    """`private_stdout`, as a class: `contextlib` is not imported to make it."""

    def __enter__(self) -> TextIO:
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
            self._original = os.dup(1)
        except (OSError, ValueError):  # no stdout at all: writing to it says so
            self._stream: io.TextIOWrapper | None = None
            return _Closed()  # type: ignore[return-value]
        os.dup2(2, 1)
        self._stream = io.TextIOWrapper(
            io.FileIO(self._original, "w", closefd=True),
            encoding=getattr(sys.stdout, "encoding", None) or "utf-8",
            errors="replace",
            line_buffering=bool(getattr(sys.stdout, "line_buffering", False)),
        )
        return self._stream

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        import contextlib

        stream = self._stream
        if stream is None:
            return
        try:
            stream.flush()
        except (OSError, ValueError):
            # A closed pipe: what is still buffered cannot go anywhere; drop it quietly.
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._original)
                os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def lingering() -> list[threading.Thread]:
    """Threads that would keep the interpreter from exiting."""
    import threading

    main_thread = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main_thread and not t.daemon]


class _Closed(io.TextIOBase):
    """The stdout of a process started without one: every write fails, so what could not
    be shown is said (on stderr) instead of vanishing."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EBADF, "stdout is closed")


def leave(code: int) -> NoReturn:
    """Exit with `code`, without waiting for threads the agent left running: the exit
    handlers run on a daemon thread for at most `EXIT_HANDLERS_SECS`, then the process
    ends whatever is still running."""
    import contextlib
    import threading

    left = lingering()
    if left:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            # Counted, not named: a thread's name is the agent's text.
            print(
                f"zeroclaw eval: not waiting for {len(left)} thread(s) the agent left running",
                file=sys.stderr,
            )
    _stop_children()
    handlers = threading.Thread(target=_exit_handlers, name="zeroclaw-eval-exit", daemon=True)
    handlers.start()
    handlers.join(EXIT_HANDLERS_SECS)
    _flush()
    os._exit(code)


def _flush() -> None:
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _stop_children() -> None:
    """Child processes the agent started and left (multiprocessing's): killed, as the
    process they would outlive ends; they would otherwise hold its pipes open."""
    import contextlib

    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return
    with contextlib.suppress(Exception):
        for child in multiprocessing.active_children():
            child.kill()
            child.join(1.0)


def _exit_handlers() -> None:
    import contextlib

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
