"""Whether the harness owns the process it runs in.

Its command line does (`zeroclaw …`, and every worker forked from it): nothing else runs
there, so the harness may set what is the process's own for its run's sake. Where the
harness is called by another program (the pytest plugin, `run_suite` in a user's test
session) it does not, and it leaves the process as it found it for whatever runs after.
"""

from __future__ import annotations

_OWNED = [False]


def take() -> None:
    """The process is the harness's (its command line says so as it starts)."""
    _OWNED[0] = True


def owned() -> bool:
    """Whether `take` was called in this process or the one it was forked from."""
    return _OWNED[0]
