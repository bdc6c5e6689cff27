"""The expectation kinds of this package, found and put in grading order; `Expects`, the
`expects` block of a fixture, composed of their fields; grading and the vacuity rules.

A kind is a `Kind` subclass in any module of this package: adding one is adding a module.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, Strict
from harness.run_record import RunRecord
from harness.transcript import Conversation
from harness.validation import Fault
from harness.workspace import DirectoryView, FilesView, WorkspaceView

_NOT_KINDS = frozenset({"base", "registry"})


def _discover() -> tuple[type[Kind], ...]:
    found: list[type[Kind]] = []
    package = importlib.import_module(__package__ or "harness.expectations")
    for module_info in pkgutil.iter_modules(package.__path__):
        if module_info.name in _NOT_KINDS:
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        found.extend(
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Kind)
            and value is not Kind
            and value.__module__ == module.__name__
        )
    orders = [k.order for k in found]
    if len(set(orders)) != len(orders):
        raise RuntimeError(f"expectation kinds share a grading order: {sorted(orders)}")
    return tuple(sorted(found, key=lambda k: k.order))


KINDS: tuple[type[Kind], ...] = _discover()


def _compose() -> Any:
    fields: list[tuple[str, Any, Any]] = []
    for kind in KINDS:
        for f in msgspec.structs.fields(kind):
            if f.default is not msgspec.NODEFAULT:
                default = f.default
            else:
                default = msgspec.field(default_factory=f.default_factory)
            fields.append((f.name, f.type, default))
    return msgspec.defstruct(
        "Expects",
        fields,
        bases=(Strict,),
        module=__name__,
        kw_only=True,
        forbid_unknown_fields=True,
    )


if TYPE_CHECKING:

    class Expects(Strict):
        """What a case asserts: the fields of every kind (see `KINDS`)."""

        def __getattr__(self, name: str) -> Any: ...

else:
    Expects = _compose()
    Expects.__doc__ = "What a case asserts: the fields of every expectation kind."


def views(expects: Expects) -> Iterator[Kind]:
    """Each kind's part of `expects`, as that kind (no copying, no validation)."""
    for kind in KINDS:
        yield kind(**{name: getattr(expects, name) for name in kind.__struct_fields__})


def all_grades(expects: Expects, evidence: Evidence) -> Iterator[Grade]:
    for view in views(expects):
        yield from view.grades(evidence)


def grade(
    expects: Expects,
    record: RunRecord,
    workspace: Path | WorkspaceView | None = None,
    agent_tools: frozenset[str] | None = None,
    conversation: Conversation | None = None,
) -> list[Grade]:
    """Grade a run against `expects`, one grade per entry, kind by kind in grading order.
    `workspace` is the case's workspace as the run left it (None: workspace checks fail,
    having nothing to inspect)."""
    view = DirectoryView(workspace) if isinstance(workspace, Path) else workspace
    evidence = Evidence(record, view, agent_tools, conversation)
    grades = _unique_checks(all_grades(expects, evidence))
    if not grades:
        # Admission refuses such cases; this backstop keeps a case that asserts nothing from
        # ever passing even when graded directly through the API.
        grades.append(
            Grade("declared_assertions", False, "the case declares no effective check", "run")
        )
    return grades


def _unique_checks(grades: Iterator[Grade]) -> list[Grade]:
    """Grades with unique check names: a repeated entry's check gets ` #2`, ` #3`, ..."""
    seen: dict[str, int] = {}
    out: list[Grade] = []
    for g in grades:
        seen[g.check] = n = seen.get(g.check, 0) + 1
        out.append(g if n == 1 else msgspec.structs.replace(g, check=f"{g.check} #{n}"))
    return out


EMPTY_RUN = RunRecord()


def assertion_count(expects: Expects) -> int:
    """How many grades `expects` produces: those of a run that did nothing."""
    return sum(1 for _ in all_grades(expects, Evidence(EMPTY_RUN)))


def expects_problems(expects: Expects | None, context: Context | None = None) -> Iterator[Fault]:
    """Admission of an `expects` block: present, asserting something, every kind's rules."""
    if expects is None:
        yield Fault(EXPECTS, "missing: a case that asserts nothing would pass vacuously")
        return
    if assertion_count(expects) == 0:
        yield Fault(
            EXPECTS,
            "declares no effective assertion: a case that asserts nothing would pass vacuously",
        )
    for view in views(expects):
        yield from view.problems(context or Context())


def passes_empty_run(expects: Expects | None, setup_files: Mapping[str, str]) -> bool:
    """True when `expects` passes against a run that did nothing: it cannot tell a working
    agent from a dead one.

    The empty run has no response, no calls, no tokens, and a workspace holding only the
    case's setup files (the harness writes those whatever the agent does). Graded in
    memory, stopping at the first check that fails; no grades never pass."""
    if expects is None:
        return True
    evidence = Evidence(EMPTY_RUN, FilesView(setup_files))
    graded = False
    for g in all_grades(expects, evidence):
        if not g.passed:
            return False
        graded = True
    return graded
