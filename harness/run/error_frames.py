"""Where a run error was raised in the user's code: the frames of the exception's
traceback that are the user's, as `file:line in function`, for `-v`, `show` and the reports.

A frame is the user's when its file is a file (not `<frozen …>` or an `exec`'d `<string>`)
outside the harness package, outside every installed-packages directory (`site-packages`,
`dist-packages`: the agent frameworks) and outside the standard library. The traceback
walked is the one Python prints: the causes first (`raise … from`, or the exception being
handled when it was raised), then the exception itself, then the first exception of a group.
The innermost `MAX_FRAMES` of the user's frames are kept; when none is the user's (the
harness or a framework failed by itself), the innermost `FALLBACK_FRAMES` of all.

The frames are bounded whatever the exception: so many exceptions walked, so many frames
kept, each value clipped. They are kept as they are (a file name is any text): every
report cleans them as it cleans the rest of the run's text.
"""

from __future__ import annotations

import builtins
import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from types import TracebackType

from harness.errors import RAISED_BY_AGENT_CODE
from harness.verdict.reports import ErrorFrame

MAX_FRAMES = 8
FALLBACK_FRAMES = 3
MAX_EXCEPTIONS = 8  # of one chain of causes and groups
FILE_LIMIT = 300  # characters
FUNCTION_LIMIT = 120

Raw = tuple[str, int, str]  # file, line, function


def error_frames(exc: BaseException, shown: Callable[[str], str] = str) -> list[ErrorFrame]:
    """The frames of `exc` a person reading its run error wants, innermost last; each file
    as `shown` says it (e.g. from the project root). Never raises: an exception whose
    traceback cannot be walked has no frames."""
    try:
        every = [frame for each in _chain(exc) for frame in _frames(each.__traceback__)]
        users = [frame for frame in every if _is_users(frame[0])]
        chosen = users[-MAX_FRAMES:] if users else every[-FALLBACK_FRAMES:]
        return [
            ErrorFrame(
                file=_clip(shown(file), FILE_LIMIT),
                line=line,
                function=_clip(function, FUNCTION_LIMIT),
            )
            for file, line, function in chosen
        ]
    except RAISED_BY_AGENT_CODE:  # e.g. a group's `exceptions` that is a raising property
        return []


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what Python prints with it, in its order, at most `MAX_EXCEPTIONS`."""
    found: list[BaseException] = []
    seen: set[int] = set()
    pending = [exc]
    while pending and len(found) < MAX_EXCEPTIONS:
        causes: list[BaseException] = []
        current: BaseException | None = pending.pop()
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            causes.append(current)
            cause = current.__cause__
            context = None if current.__suppress_context__ else current.__context__
            current = cause if cause is not None else context
        found += reversed(causes[: MAX_EXCEPTIONS - len(found)])
        first = _first_of_group(causes[0]) if causes else None
        if first is not None:
            pending.append(first)
    return found


def _first_of_group(exc: BaseException) -> BaseException | None:
    group = getattr(builtins, "BaseExceptionGroup", None)
    if group is None:  # Python 3.10: the backport's, when something brought it
        group = getattr(sys.modules.get("exceptiongroup"), "BaseExceptionGroup", None)
    if group is None or not isinstance(exc, group):
        return None
    inner = exc.exceptions
    return inner[0] if inner and isinstance(inner[0], BaseException) else None


def _frames(tb: TracebackType | None) -> Iterator[Raw]:
    # Read from the frames themselves: no source file is opened (as `extract_tb` would).
    for frame, line in traceback.walk_tb(tb):
        code = frame.f_code
        yield code.co_filename, line or 0, code.co_name


def _is_users(file: str) -> bool:
    if not file or file.startswith("<"):
        return False
    path = os.path.abspath(file)
    if path.startswith(_not_users()):
        return False
    parts = path.split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


@functools.cache
def _not_users() -> tuple[str, ...]:
    """The directories no user's frame is in: the harness package and the interpreter's
    libraries (the standard library, and where packages are installed)."""
    # Imported here: sysconfig works out its install schemes as it imports, and a run
    # asks for them only if a case fails with an exception.
    import sysconfig

    paths = sysconfig.get_paths()
    found = {
        paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths
    }
    # The whole package, every room of it: this module sits one folder down.
    found.add(os.path.dirname(os.path.dirname(__file__)))
    return tuple(os.path.join(os.path.abspath(path), "") for path in sorted(found))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
