"""What every expectation kind is built from: the grade it yields, the evidence it reads,
and the base class that makes one struct both the schema and the check."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import msgspec

from harness.io.problems import escaped, unsafe_name_problem
from harness.io.validation import Fault, closest, did_you_mean
from harness.modes import Mode
from harness.run_record import RunRecord
from harness.transcript import Conversation, quick_init
from harness.workspace import WorkspaceView

Category = Literal[
    "response",
    "tool",
    "agent",
    "guardrail",
    "side_effect",
    "budget",
    "request",
    "run",
    "loop",
    "judge",
    "snapshot",
]
EXPECTS = "$.expects"


class JudgeNote(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What an LLM judge's grade adds to its check: the score against the rubric's
    threshold, the judge's reason, whether the grade gates the case and why (or why it
    is only diagnostic), the hash of the judge setup it was made under, and the judge's own
    tokens (never counted as the agent's)."""

    rubric: str
    threshold: float
    # None: no verdict was had (the reply was not recorded, the judge failed or answered
    # something unparseable); `reason` says which.
    score: float | None
    unknown: bool = False  # the judge said the transcript lacks the evidence
    reason: str = ""
    gated: bool = False
    why: str = ""  # why the grade gates the case, or why it stays diagnostic
    setup: str = ""  # content hash of the judge setup (`harness.judge`)
    replay: str = ""  # the key of the reply the verdict came from (what the judge was sent)
    # Whether the judge was asked in this run (its tokens spent now); else the verdict was
    # replayed from a recorded reply, and cost nothing.
    live: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    # A rubric asking k samples: each sample's score (None: a failed sample, a failed vote).
    samples: list[float | None] | None = None


class Grade(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One check's outcome. Untracked by the garbage collector (data only): a run keeps
    every case's. Written without its defaults: a judge's block only on a judge's grade."""

    check: str
    passed: bool
    detail: str
    category: Category
    # JSON path of the expectation entry that produced this grade, for annotations.
    field: str = EXPECTS
    # An LLM judge's grade: its figures, and whether it gates (None: any other check).
    judge: JudgeNote | None = None
    # A warning: shown with the case, never deciding it (a changed request snapshot of a
    # suite whose setting makes it a warning).
    warn: bool = False

    @property
    def gates(self) -> bool:
        """Whether this grade decides its case: every check does but a judge's grade that
        is diagnostic (its rubric's calibration is missing, stale or short of a bound)."""
        return not self.warn and (self.judge is None or self.judge.gated)

    @property
    def fails(self) -> bool:
        """A failing grade that decides its case."""
        return not self.passed and self.gates


@quick_init
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
    # The judge's verdict on each rubric of the case, by rubric name; None: no judge was
    # asked (the empty run, grading through the API), and every rubric's check fails.
    judged: Mapping[str, JudgeNote] | None = None


class Context(msgspec.Struct, frozen=True):
    """What admission knows besides an expectation's own fields: the mode it runs in, the
    agent's tools (None: not known), and the fixture's script (None: not known)."""

    mode: Mode = "replay"
    agent_tools: frozenset[str] | None = None
    agent: str = "the agent"
    # One entry per turn of the fixture: how many steps it scripts, or None for a turn the
    # real model answers (live), whose requests cannot be counted in advance.
    turn_steps: tuple[int | None, ...] | None = None
    # Each agent of a multi-agent graph and its tools; empty: the graph is not known (one
    # agent, or an own loop), and any agent name is taken as it is.
    agents: Mapping[str, frozenset[str]] = msgspec.field(default_factory=dict)
    # The guardrails of the agent's graph, by name; None: not known (an own loop), and any
    # name is taken as it is.
    guardrails: frozenset[str] | None = None


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every fixture struct refuses unknown keys: a typo must never be silently ignored."""


class Kind(Strict):
    """One expectation kind: its fields are its part of `expects`; `problems` are its
    admission rules and `grades` its checks. Kinds grade in ascending `order`.

    A subclass in a module of this package is found by the registry; its fields join
    `Expects` (so they are parsed, refused when unknown, and in the JSON Schema), and its
    grades must be derivable for an empty run (that is how assertions are counted)."""

    order: ClassVar[int]
    # Whether the kind grades a run even when a fixture sets none of its fields (checks
    # every case gets: replay conformance, approvals, unexpected tripwires). A kind that
    # does not is not asked at all for a case that leaves it unset.
    graded_unset: ClassVar[bool] = False

    def problems(self, context: Context) -> Iterator[Fault]:
        """Admission problems of these fields, at paths under `$.expects`."""
        return iter(())

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        """One grade per expectation entry, each saying what was observed."""
        raise NotImplementedError


def compose(name: str, kinds: Iterable[type[Kind]], module: str) -> Any:
    """A `Strict` struct named `name` holding the fields of `kinds`, in order, with their
    defaults: how `Expects` and an agent's block are made of the kinds they hold."""
    fields: list[tuple[str, Any, Any]] = []
    for kind in kinds:
        for f in msgspec.structs.fields(kind):
            if f.default is not msgspec.NODEFAULT:
                default = f.default
            else:
                default = msgspec.field(default_factory=f.default_factory)
            fields.append((f.name, f.type, default))
    return msgspec.defstruct(name, fields, bases=(Strict,), module=module, kw_only=True)


NonNegative = msgspec.Meta(ge=0)


# A string quoted for a check name or detail, escapes visible: what
# `json.dumps(text, ensure_ascii=False)` writes, without building an encoder per call (nor
# a call of ours around it: every grade quotes something).
q: Callable[[str], str] = json.encoder.encode_basestring


def clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def q_list(items: list[str]) -> str:
    if not items:  # what the empty run shows, for every fixture admitted
        return "[]"
    if max(map(len, items)) <= 200:  # mostly: each as it is, quoted in C
        return "[" + ", ".join(map(q, items)) + "]"
    return "[" + ", ".join([q(clip(i, 200)) for i in items]) + "]"


def finite_json(value: Any) -> bool:
    """Whether no number in the JSON value `value` is NaN or an infinity (which no JSON
    document holds, and which never equal themselves): walked without recursion, so a
    hostile nesting depth costs no stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def is_blank(text: str) -> bool:
    """Zero-length or whitespace-only: `not text.strip()`, without copying a long text to
    find out."""
    return not text or text.isspace()


def blank_entries(family: str, entries: list[str]) -> Iterable[Fault]:
    """A zero-length or whitespace-only entry in a string family asserts nothing."""
    # Admission asks it of every family of every fixture, and they hold no blank entry:
    # that is found in C (`strip` hands back an entry with nothing to strip, uncopied),
    # and only a family holding one is walked to say where.
    if all(map(str.strip, entries)):
        return ()
    return _blank_entries(family, entries)


def _blank_entries(family: str, entries: list[str]) -> Iterator[Fault]:
    for i, entry in enumerate(entries):
        if not entry.strip():
            yield Fault(
                f"{EXPECTS}.{family}[{i}]", "empty or whitespace-only entry asserts nothing"
            )


def misspelt_absent_tools(
    family: str,
    names: list[str],
    context: Context,
    why: str = "a check on a tool it does not have can never fail in replay",
) -> Iterable[Fault]:
    """A name in a list of tools that must be absent (`tools_not_used`, `tools_not_offered`)
    that the agent does not have can never be violated by the agent's own tools, so a typo
    of one it has (`ecoh` for `echo`) would silently certify nothing: refused, saying `why`.
    A name far from all of them stays: it guards against a tool that is not the agent's
    known ones (a model inventing `shell`, a toolset only known at run time)."""
    tools = context.agent_tools
    if not tools or tools.issuperset(names):  # mostly the agent's own tools, seen in C
        return ()
    return _misspelt(family, names, tools, context.agent, why)


def _misspelt(
    family: str, names: list[str], tools: frozenset[str], agent: str, why: str
) -> Iterator[Fault]:
    for i, name in enumerate(names):
        if not name.strip() or name in tools:
            continue
        close = closest(name, tools, MISSPELT)
        if close is not None:
            yield Fault(
                f"{EXPECTS}.{family}[{i}]",
                f"{name!r} is not a tool of {agent} (did you mean {close}?): {why}",
            )


# How alike (difflib's ratio) a name must be to one of the agent's tools to be taken for a
# misspelling of it: `ecoh`/`echo` and `read_flie`/`read_file` are; `shell`, `search` or
# `http_request` against the built-in tools are not.
MISSPELT = 0.75


def agent_name_problem(name: str, context: Context) -> str | None:
    """Why `name` cannot name an agent of the graph under test, or None when it can. An
    unknown name is refused only when the graph is known: a check on an agent that never
    runs could never hold, and a step for one could never be asked for."""
    if is_blank(name):
        return "empty or whitespace-only agent name"
    unsafe = unsafe_name_problem("agent name", name)
    if unsafe is not None:
        return unsafe
    known = context.agents
    if not known or name in known:
        return None
    # Looser than for tools: agents are few, and `faq` for `faq_agent` is meant.
    hint = did_you_mean(name, known, cutoff=0.5)
    agents = ", ".join(escaped(a) for a in sorted(known))
    return f"{name!r} is not an agent of {context.agent}{hint}; its agents: {agents}"
