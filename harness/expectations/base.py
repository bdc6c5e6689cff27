"""What every expectation kind is built from: the grade it yields, the evidence it reads,
and the base class that makes one struct both the schema and the check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Literal

import msgspec

from harness.modes import Mode
from harness.run_record import RunRecord
from harness.transcript import Conversation
from harness.validation import Fault
from harness.workspace import WorkspaceView

Category = Literal["response", "tool", "side_effect", "budget", "run", "loop"]
EXPECTS = "$.expects"


class Grade(msgspec.Struct, frozen=True):
    check: str
    passed: bool
    detail: str
    category: Category
    # JSON path of the expectation entry that produced this grade, for annotations.
    field: str = EXPECTS


@dataclass(frozen=True)
class Evidence:
    """What a run left for grading: its record, a read-only view of its workspace (None:
    there is none, and workspace checks fail with nothing to inspect), and the tools the
    agent registers (None: not known, as when grading through the API)."""

    record: RunRecord
    workspace: WorkspaceView | None = None
    agent_tools: frozenset[str] | None = None
    # The requests the agent made (and, in replay, what the script implies); None for the
    # empty run and when grading through the API without one.
    conversation: Conversation | None = None


@dataclass(frozen=True)
class Context:
    """What admission knows besides the fixture: the mode it runs in and the agent's tools
    (None: not known)."""

    mode: Mode = "replay"
    agent_tools: frozenset[str] | None = None
    agent: str = "the agent"


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every fixture struct refuses unknown keys: a typo must never be silently ignored."""


class Kind(Strict):
    """One expectation kind: its fields are its part of `expects`; `problems` are its
    admission rules and `grades` its checks. Kinds grade in ascending `order`.

    A subclass in a module of this package is found by the registry; its fields join
    `Expects` (so they are parsed, refused when unknown, and in the JSON Schema), and its
    grades must be derivable for an empty run (that is how assertions are counted)."""

    order: ClassVar[int]

    def problems(self, context: Context) -> Iterator[Fault]:
        """Admission problems of these fields, at paths under `$.expects`."""
        return iter(())

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        """One grade per expectation entry, each saying what was observed."""
        raise NotImplementedError


NonNegative = msgspec.Meta(ge=0)


def q(text: str) -> str:
    """A string quoted for a check name or detail, escapes visible."""
    return json.dumps(text, ensure_ascii=False)


def clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def q_list(items: list[str]) -> str:
    return "[" + ", ".join(q(clip(i, 200)) for i in items) + "]"


def blank_entries(family: str, entries: list[str]) -> Iterator[Fault]:
    """A zero-length or whitespace-only entry in a string family asserts nothing."""
    for i, entry in enumerate(entries):
        if not entry.strip():
            yield Fault(
                f"{EXPECTS}.{family}[{i}]", "empty or whitespace-only entry asserts nothing"
            )
