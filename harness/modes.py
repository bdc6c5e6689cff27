"""The vocabulary of run modes and suite kinds, importable without any dependency."""

from __future__ import annotations

from typing import Literal

Mode = Literal["replay", "live"]
MODES: tuple[Mode, ...] = ("replay", "live")

SuiteKind = Literal["regression", "capability", "live"]
SUITE_KINDS: tuple[SuiteKind, ...] = ("regression", "capability", "live")
