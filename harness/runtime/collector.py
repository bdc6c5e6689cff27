"""What the garbage collector walks while a run goes on: not what the process held as the
run started."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Whether this module froze the heap (for good, or for the block it is in), asked instead
# of `gc.get_freeze_count()`, which counts the frozen objects one by one: in a worker
# forked with a framework loaded, ~20 ms for each batch of cases. Whoever thaws the heap
# meanwhile only makes the next blocks slower: they do not freeze it again.
_held = [False]
# What the interpreter keeps frozen of its own: nothing, but 3.12 puts its immortal tuples
# there (hundreds, and back again after any collection): more than this is a freeze. A
# caller's freeze made before the harness was imported is counted in it, so a run thaws
# that one as it ends (a caller freezing at start-up imports the harness first).
_OWN = gc.get_freeze_count()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector not run while the block makes objects that live on and no garbage
    cycles (an import, an admission): it would walk them again and again as they are made.
    It runs again as the block ends, if it ran before it, whichever thread the block left
    behind still works (the block ends in the thread that entered it)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def freeze_for_good() -> None:
    """Leave every object alive now to the collector's frozen generation for the rest of
    the process (a worker, whose heap is its fork server's)."""
    gc.freeze()
    _held[0] = True


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """The objects alive now left alone by the collector until the block ends.

    What a process holds as a run starts (the agent framework's imports, the admitted
    suite) is not the run's garbage, yet the first full collection of a run walks all of
    it: about 90 ms, 2% of 1,000 replayed cases, for a heap the run never frees. A worker
    process freezes its heap for good as it starts (`freeze_for_good`); this is the same
    for the run's own process, for the run only. Objects that die meanwhile are still
    freed (reference counting); only a cycle among them waits for the block to end.
    Nothing is done when the heap is frozen already (a worker, an enclosing block, or
    whoever called the harness)."""
    if _held[0] or gc.get_freeze_count() > _OWN:
        yield
        return
    gc.freeze()
    _held[0] = True
    try:
        yield
    finally:
        _held[0] = False
        gc.unfreeze()
