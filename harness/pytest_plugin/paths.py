"""Where the pytest plugin's suites go among the paths pytest collects (`route`): a suite
named or configured is collected beside what pytest is given, once, and never silently
left out.

Imports nothing of the harness: the plugin loads it in every pytest run.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest


def route(config: pytest.Config, named: list[Path], configured: list[Path]) -> None:
    """Put the suites among the paths pytest collects.

    `--zeroclaw` without file arguments collects the named suites alone: `testpaths` (or
    the working directory) would drag the project's own tests into an eval run. With file
    arguments, the suites are collected beside them. The ini suites join what pytest
    collects when it is given no file arguments, as `testpaths` do (so only when started
    in the root directory), and are left out when files are named."""
    given = config.args_source == pytest.Config.ArgsSource.ARGS
    if named and not given:
        config.args = [str(path) for path in named]
        # The header would otherwise announce `testpaths` that are not collected.
        config.args_source = pytest.Config.ArgsSource.ARGS
        return
    if given and not named:
        return
    invoked = config.invocation_params.dir
    if not named and invoked != config.rootpath:
        return  # pytest reads `testpaths` only when started there too
    wanted = named or configured
    arguments = [real(invoked / arg.split("::")[0]) for arg in config.args]
    config.args = [
        *config.args,
        *(str(path) for path in wanted if not _reached(config, path, arguments)),
    ]


def _reached(config: pytest.Config, path: Path, arguments: list[Path]) -> bool:
    """Whether pytest collects the suite at `path` (or the part of it asked for) from
    `arguments` already: an argument inside it (a fixture, a case's node id) picks from
    it, and one that holds it reaches it by recursion. A suite that is not there, or that
    it would not reach, under a directory it skips on its own (`norecursedirs`, a
    virtualenv), is a usage error: pytest drops an argument that lies inside another, so
    naming the suite too would not make it run, and a gate must never vanish from a green
    session. One the user left out (`--ignore`, `--ignore-glob`) stays out."""
    suite = real(path)
    invoked = config.invocation_params.dir
    if not suite.exists():
        raise pytest.UsageError(f"zeroclaw: suite {os.path.relpath(suite, invoked)}: not found")
    for argument in arguments:
        if _within(argument, suite):
            return True
        if suite == argument or argument not in suite.parents:
            continue
        below = [suite, *suite.parents[: suite.parents.index(argument)]]
        ignored = config.hook.pytest_ignore_collect
        skipped = next(
            (d for d in reversed(below) if ignored(collection_path=d, config=config)), None
        )
        if skipped is None or _left_out(config, skipped):
            return True
        shown = [os.path.relpath(p, invoked) for p in (suite, argument, skipped)]
        raise pytest.UsageError(
            f"zeroclaw: suite {shown[0]} would not run: pytest collects {shown[1]} without "
            f"walking into {shown[2]} (norecursedirs or a virtualenv), and drops a path "
            "given inside another; name paths that do not hold it (testpaths, file "
            "arguments), or move the suite out of what is skipped"
        )
    return False


def _left_out(config: pytest.Config, directory: Path) -> bool:
    """Whether the user's own `--ignore` or `--ignore-glob` leaves `directory` out."""
    ignore = [real(Path(p)) for p in config.getoption("ignore") or ()]
    globs = [os.path.abspath(p) for p in config.getoption("ignore_glob") or ()]
    return directory in ignore or any(fnmatch.fnmatch(str(directory), g) for g in globs)


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
