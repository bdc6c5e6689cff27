"""Declared options: each setting's flag, configuration key, help and parser in one place
(in the spirit of nox's option declarations). The command line is built from these
declarations, and a value is resolved from them: the flag, else the configuration key,
else the declared default."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from harness.defaults import MAX_JOBS, MAX_REPEAT


class Option(msgspec.Struct, frozen=True):
    """One setting of the command line."""

    flag: str
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    default: Any = None
    action: str | None = None
    required: bool = False
    # The `[tool.zeroclaw.eval]` key this flag overrides, when it has one.
    config_key: str | None = None
    aliases: tuple[str, ...] = ()  # other spellings of the flag (`-x` for `--exitfirst`)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        kwargs: dict[str, Any] = {"help": self.help}
        if self.flag.startswith("-"):  # a positional's name is its dest already
            kwargs["dest"] = self.dest
        if self.action is not None:
            kwargs["action"] = self.action
        if self.action in (None, "append"):  # the actions that take a value
            kwargs.update(metavar=self.metavar, type=self.type, choices=self.choices)
            kwargs["default"] = self.default
        if self.required:
            kwargs["required"] = True
        parser.add_argument(
            self.flag, *self.aliases, **{k: v for k, v in kwargs.items() if v is not None}
        )

    def value(self, args: argparse.Namespace, config: object | None = None) -> Any:
        """The flag's value, else the configuration's, else the default. An empty flag
        (`--agent "$UNSET"`) counts as not given."""
        given = getattr(args, self.dest, None)
        if given is not None and given != "":
            return given
        if self.config_key is not None and config is not None:
            return getattr(config, self.config_key)
        return self.default


def seconds(text: str) -> float:
    """A positive, finite number of seconds that the platform can wait for."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds: {text}")
    return value


def percent(text: str) -> float:
    """A percentage from 0 to 100 (a trailing `%` allowed)."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100: {text}")
    return value


def share(text: str) -> float:
    """A share of a baseline figure: `0.2` or `20%` (0 or more, finite)."""
    spelt = text.strip()
    try:
        value = float(spelt.rstrip("%")) / (100 if spelt.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a share: {text!r} (e.g. 0.2 or 20%)") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite share of 0 or more: {text}")
    return value


def count(text: str) -> int:
    """A whole number, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def jobs_count(text: str) -> int:
    """A number of cases at once: 1 to `MAX_JOBS`."""
    return _count_up_to(text, MAX_JOBS)


def repeat_count(text: str) -> int:
    """A number of runs of one case: 1 to `MAX_REPEAT`."""
    return _count_up_to(text, MAX_REPEAT)


def _count_up_to(text: str, limit: int) -> int:
    value = count(text)
    if value > limit:
        raise argparse.ArgumentTypeError(f"must be at most {limit}: {text}")
    return value
