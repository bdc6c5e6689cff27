"""The vocabulary of run modes and suite kinds, and what a suite directory's name implies.

Importable without any dependency.
"""

from __future__ import annotations

import os
from typing import Literal

Mode = Literal["replay", "live"]
MODES: tuple[Mode, ...] = ("replay", "live")

SuiteKind = Literal["regression", "capability", "live"]
SUITE_KINDS: tuple[SuiteKind, ...] = ("regression", "capability", "live")


def _directory_name(suite: str | os.PathLike[str]) -> str:
    """The suite directory's own name; a single fixture file's suite is its directory."""
    parts = os.fspath(suite).rstrip("/\\").replace("\\", "/").rsplit("/", 2)
    if len(parts) > 1 and parts[-1].endswith(".json"):
        return parts[-2]
    return parts[-1]


def kind_of_directory(suite: str | os.PathLike[str]) -> SuiteKind:
    """The suite kind a directory's name implies: its name when it is a kind, else
    regression (the gated kind: an unknown suite is held to the strictest gate)."""
    name = _directory_name(suite)
    for kind in SUITE_KINDS:
        if name == kind:
            return kind
    return "regression"


def mode_of_directory(suite: str | os.PathLike[str], default: Mode) -> Mode:
    """The mode a directory's name implies: a directory named `live` holds live cases
    (replaying it could only be refused); any other gets `default`."""
    return "live" if _directory_name(suite) == "live" else default


def resolve_kind(explicit: str | None, suite: str | os.PathLike[str]) -> SuiteKind:
    """`explicit` (a `--suite-kind`), else the kind the directory's name implies."""
    if explicit is None:
        return kind_of_directory(suite)
    for kind in SUITE_KINDS:
        if explicit == kind:
            return kind
    raise ValueError(f"unknown suite kind {explicit!r} (expected {', '.join(SUITE_KINDS)})")
