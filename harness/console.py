"""The `zeroclaw` process around the command line: stdout kept for the harness alone,
SIGINT and SIGTERM as clean interruptions, and an exit no thread an agent left can hold.

* Whatever the agent writes to stdout (`print()`, a write to file descriptor 1, a child
  process) goes to stderr: the harness writes its documents to a private copy of the
  original stdout, so `--format json|junit` output is the document alone.
* A thread the agent started and never stopped (not a daemon) would keep the process
  alive after the reports were written; the process ends without waiting for it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn, TextIO

from harness import cli, interrupts


def main() -> NoReturn:
    """The console script: `zeroclaw …`."""
    interrupts.install()
    with private_stdout() as out:
        code = cli.main(sys.argv[1:], stdout=out)
    leave(code)


@contextlib.contextmanager
def private_stdout() -> Iterator[TextIO]:
    """A stream on the original stdout for the harness; file descriptor 1 (and with it
    `sys.stdout`, and every child process) goes to stderr meanwhile."""
    try:
        sys.stdout.flush()
        original = os.dup(1)
    except (OSError, ValueError):  # no stdout at all: nothing to keep apart
        yield sys.stdout
        return
    os.dup2(2, 1)
    stream = io.TextIOWrapper(
        io.FileIO(original, "w", closefd=True),
        encoding=sys.stdout.encoding or "utf-8",
        errors="replace",
        line_buffering=bool(getattr(sys.stdout, "line_buffering", False)),
    )
    try:
        yield stream
    finally:
        try:
            stream.flush()
        except (OSError, ValueError):
            # A closed pipe: what is still buffered cannot go anywhere; drop it quietly.
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, original)
                os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def lingering() -> list[threading.Thread]:
    """Threads that would keep the interpreter from exiting."""
    main_thread = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main_thread and not t.daemon]


def leave(code: int) -> NoReturn:
    """Exit with `code`, without waiting for threads the agent left running."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    left = lingering()
    if not left:
        sys.exit(code)
    with contextlib.suppress(OSError, ValueError):
        # Counted, not named: a thread's name is the agent's text.
        print(
            f"zeroclaw eval: not waiting for {len(left)} thread(s) the agent left running",
            file=sys.stderr,
        )
        sys.stderr.flush()
    os._exit(code)
