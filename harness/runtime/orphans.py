"""A worker process never outlives the harness that started it.

A worker notices the harness's end by the end of its pipe, but only between cases: one
whose case holds the interpreter (a C call that keeps the GIL, a regular expression
backtracking for ever) notices nothing, and would run on at full CPU after the harness
was killed (`kill -9`, the OOM killer, a CI job cancelled). Only the kernel can stop it
then, so the worker asks it to (`PR_SET_PDEATHSIG`): killed once its parent, the fork
server, ends. The fork server ends when the harness does, but only once no worker holds
its "alive" pipe: every worker inherits one end of it, so each closes its copy first. (A
server an agent stopped ends with nothing: the pool kills one it finds so, `fork_server`.)
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

# From <linux/prctl.h>.
_PR_SET_PDEATHSIG = 1


def die_with_the_fork_server() -> bool:
    """In a worker the fork server started: let the fork server's end (the harness's)
    kill this process. False where it cannot be asked (not Linux, not a fork server's
    child), and nothing is changed."""
    if sys.platform != "linux":
        return False
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is None:
        return False  # spawned: its parent is the harness itself, which may have threads
    import ctypes  # here, not at import: the harness's process never asks, a worker once

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    # This process starts no worker of its own through the server: its end of the pipe
    # would only keep the server (and so this process) alive after the harness is gone.
    os.close(alive)
    server._forkserver_alive_fd = None
    if os.getppid() != parent:  # the server ended before the kernel was asked
        os._exit(1)
    return True
