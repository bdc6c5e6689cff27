"""The expectation kinds of this package, found and put in grading order; `Expects`, the
`expects` block of a fixture, composed of their fields; grading and the vacuity rules.

A kind is a `Kind` subclass in any module of this package: adding one is adding a module.
"""

from __future__ import annotations

import importlib
import inspect
import operator
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from itertools import compress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    JudgeNote,
    Kind,
    Strict,
    compose,
)
from harness.io.validation import Fault
from harness.run_record import RunRecord
from harness.transcript import Conversation
from harness.workspace import DirectoryView, FilesView, WorkspaceView

_NOT_KINDS = frozenset({"base", "registry", "conformance", "plain_conformance"})


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


if TYPE_CHECKING:

    class Expects(Strict):
        """What a case asserts: the fields of every kind (see `KINDS`)."""

        def __getattr__(self, name: str) -> Any: ...

else:
    Expects = compose("Expects", KINDS, __name__)
    Expects.__doc__ = "What a case asserts: the fields of every expectation kind."


EMPTY_RUN = RunRecord()


class _Span(NamedTuple):
    """Where one kind's fields sit in `Expects`, and the kind as it is with none set."""

    kind: type[Kind]
    names: tuple[str, ...]
    start: int
    end: int
    defaults: tuple[Any, ...]
    unset: Kind
    # Unset, it asserts nothing against the empty run (without setup files) and refuses
    # nothing: admission need not ask it (every kind so far; one that did is asked).
    inert: bool
    # The kind built from the values of an `Expects` (`msgspec.structs.astuple`).
    build: Callable[[tuple[Any, ...]], Kind]


def _builder(kind: type[Kind], names: tuple[str, ...], start: int) -> Callable[..., Kind]:
    """`kind` built from its span of an `Expects`'s values, keywords spelt out: a dict of
    them unpacked into the call costs several times the call, and a view is built for
    every kind set in every fixture admitted."""
    built: Callable[..., Kind] = eval(
        f"lambda values: {_call('kind', names, start)}", {"kind": kind}
    )
    return built


def _call(callee: str, names: tuple[str, ...], start: int) -> str:
    """The text of a call of `callee` with each of `names` given its value at its place
    from `start` in `values`, for `eval`."""
    assert all(name.isidentifier() for name in names)  # field names: nothing else is run
    arguments = ", ".join(f"{name}=values[{start + i}]" for i, name in enumerate(names))
    return f"{callee}({arguments})"


def _layout() -> tuple[_Span, ...]:
    """Each kind's span of `Expects` (composed kind by kind, in order)."""
    spans: list[_Span] = []
    start = 0
    empty = Evidence(EMPTY_RUN, FilesView({}))
    for kind in KINDS:
        names, unset = kind.__struct_fields__, kind()
        end = start + len(names)
        inert = not any(unset.grades(empty)) and not any(unset.problems(Context()))
        defaults = msgspec.structs.astuple(unset)
        build = _builder(kind, names, start)
        spans.append(_Span(kind, names, start, end, defaults, unset, inert, build))
        start = end
    assert start == len(Expects.__struct_fields__)
    return tuple(spans)


_LAYOUT = _layout()
# Per field of `Expects`: its default, and the index of its kind's span.
_DEFAULTS = tuple(default for span in _LAYOUT for default in span.defaults)
_FIELD_SPANS = tuple(i for i, span in enumerate(_LAYOUT) for _ in span.names)
_ALL_INERT = all(span.inert for span in _LAYOUT)
# The spans of the kinds that grade every case, set or not (`Kind.graded_unset`).
_GRADED_UNSET = frozenset(i for i, span in enumerate(_LAYOUT) if span.kind.graded_unset)


def views(expects: Expects) -> list[Kind]:
    """Each kind's part of `expects`, as that kind (no copying, no validation). A kind a
    fixture leaves unset is one shared instance: most fixtures use a few kinds, and views
    are only ever read."""
    values = msgspec.structs.astuple(expects)
    return [
        span.unset if values[span.start : span.end] == span.defaults else span.build(values)
        for span in _LAYOUT
    ]


def _changed(values: tuple[Any, ...]) -> dict[int, None]:
    """The spans holding a field off its default, in order (keys of a dict: a set that
    keeps them so), found in C, field by field."""
    return dict.fromkeys(compress(_FIELD_SPANS, map(operator.ne, values, _DEFAULTS)))


def _asked(expects: Expects, setup: bool) -> list[Kind]:
    """The views admission asks: all but the unset, inert ones (those with setup files
    too: an unset kind is known inert only for a workspace holding nothing)."""
    values = msgspec.structs.astuple(expects)
    changed = _changed(values)
    if _ALL_INERT and not setup:
        return [_LAYOUT[i].build(values) for i in changed]
    return [
        span.build(values) if i in changed else span.unset
        for i, span in enumerate(_LAYOUT)
        if i in changed or setup or not span.inert
    ]


def all_grades(expects: Expects | list[Kind], evidence: Evidence) -> Iterator[Grade]:
    """Every grade of `expects` (or of its `views`, when already taken apart)."""
    for view in expects if isinstance(expects, list) else views(expects):
        yield from view.grades(evidence)


def grade(
    expects: Expects,
    record: RunRecord,
    workspace: Path | WorkspaceView | None = None,
    agent_tools: frozenset[str] | None = None,
    conversation: Conversation | None = None,
    judged: Mapping[str, JudgeNote] | None = None,
) -> list[Grade]:
    """Grade a run against `expects`, one grade per entry, kind by kind in grading order.
    `workspace` is the case's workspace as the run left it (None: workspace checks fail,
    having nothing to inspect). Check names are unique: a repeated entry's check gets
    ` #2`, ` #3`, .... `judged` holds the judge's verdict on each rubric (None: no judge
    was asked, and every rubric's check fails)."""
    view = DirectoryView(workspace) if isinstance(workspace, Path) else workspace
    evidence = Evidence(record, view, agent_tools, conversation, judged)
    grades: list[Grade] = []
    for kind in _graded(expects):
        grades += kind.grades(evidence)
    if len({g.check for g in grades}) < len(grades):
        grades = _numbered(grades)
    if not grades:
        # Admission refuses such cases; this backstop keeps a case that asserts nothing from
        # ever passing even when graded directly through the API.
        grades.append(
            Grade("declared_assertions", False, "the case declares no effective check", "run")
        )
    return grades


def _graded(expects: Expects) -> list[Kind]:
    """The views of `expects` a run is graded by, in grading order: the kinds it sets, and
    those that grade every case (`Kind.graded_unset`); an unset kind of any other grades
    nothing, and is not asked."""
    values = msgspec.structs.astuple(expects)
    # The spans of the fields off their default (a span once per field): a suite's
    # fixtures set a few shapes of `expects`, each worked out once.
    key = tuple(_changed(values))
    views = _ORDERS.get(key)
    if views is None:
        views = _order(key)
    return views(values)


# Per set of spans an `expects` changes: the views it is graded by, in order, made from
# its values in one call. Bounded: a suite of every shape there is forgets them now and
# then, and works them out again.
_ORDERS: dict[tuple[int, ...], Callable[[tuple[Any, ...]], list[Kind]]] = {}
_MAX_ORDERS = 4096


def _order(key: tuple[int, ...]) -> Callable[[tuple[Any, ...]], list[Kind]]:
    """The views graded for `key`, the spans of the fields off their default: those of the
    kinds it sets built from its values, the shared unset one of each kind that grades every
    case (`Kind.graded_unset`) it leaves unset, in grading order. One list display of them
    all, keywords spelt out (`_call`, as `_builder`'s): a call for each view built cost as much as
    building it."""
    changed = set(key)
    parts: list[str] = []
    names: dict[str, Any] = {}
    for i in sorted(changed | _GRADED_UNSET):
        span = _LAYOUT[i]
        if i in changed:
            names[f"kind_{i}"] = span.kind
            parts.append(_call(f"kind_{i}", span.names, span.start))
        else:
            names[f"unset_{i}"] = span.unset
            parts.append(f"unset_{i}")
    views: Callable[[tuple[Any, ...]], list[Kind]] = eval(
        f"lambda values: [{', '.join(parts)}]", names
    )
    if len(_ORDERS) >= _MAX_ORDERS:
        _ORDERS.clear()
    _ORDERS[key] = views
    return views


def _numbered(grades: list[Grade]) -> list[Grade]:
    """`grades` with a repeated check's name numbered: ` #2`, ` #3`, ...."""
    numbered: list[Grade] = []
    seen: dict[str, int] = {}
    for g in grades:
        seen[g.check] = n = seen.get(g.check, 0) + 1
        numbered.append(g if n == 1 else msgspec.structs.replace(g, check=f"{g.check} #{n}"))
    return numbered


def assertion_count(expects: Expects) -> int:
    """How many grades `expects` produces: those of a run that did nothing."""
    return sum(1 for _ in all_grades(expects, Evidence(EMPTY_RUN)))


def expects_problems(
    expects: Expects | None,
    context: Context | None = None,
    empty: EmptyRun | None = None,
) -> list[Fault]:
    """Admission of an `expects` block: present, asserting something, every kind's rules.
    `empty` is the block's `empty_run`, when the caller graded it already."""
    if expects is None:
        return [Fault(EXPECTS, "missing: a case that asserts nothing would pass vacuously")]
    if empty is None:
        empty = empty_run(expects, {})
    faults = []
    if not empty.declares:
        faults.append(
            Fault(
                EXPECTS,
                "declares no effective assertion: a case that asserts nothing would pass vacuously",
            )
        )
    context = context or Context()
    for view in empty.views:
        faults += view.problems(context)
    return faults


class EmptyRun:
    """An `expects` block taken apart (the views admission asks: its kinds set, and any
    that would answer unset) and graded against the empty run: whether it declares an
    assertion (a grade, whatever the workspace holds) and whether a dead agent would pass
    it. Admission grades it once for both questions.

    Graded no further than its first failing check, which answers both: an admitted
    fixture fails one, mostly its first, and the details of the rest would be thrown
    away unread."""

    __slots__ = ("declares", "passes", "views")

    def __init__(self, kinds: list[Kind], evidence: Evidence) -> None:
        self.views = kinds
        self.declares = False
        # Every check passed (and there was one): the block cannot tell a working agent
        # from a dead one.
        self.passes = False
        for view in kinds:
            for g in view.grades(evidence):
                self.declares = True
                if not g.passed:
                    return
        self.passes = self.declares


def empty_run(expects: Expects, setup_files: Mapping[str, str]) -> EmptyRun:
    """`expects` graded against a run that did nothing: no response, no calls, no tokens,
    and a workspace holding only the case's setup files (the harness writes those whatever
    the agent does), in memory."""
    kinds = _asked(expects, bool(setup_files))
    evidence = Evidence(EMPTY_RUN, FilesView(setup_files)) if setup_files else _NOTHING
    return EmptyRun(kinds, evidence)


# The empty run of a case without setup files, shared (graders only read it).
_NOTHING = Evidence(EMPTY_RUN, FilesView({}))


def passes_empty_run(expects: Expects | None, setup_files: Mapping[str, str]) -> bool:
    """True when `expects` passes against a run that did nothing (`empty_run`): it cannot
    tell a working agent from a dead one. No grades never pass."""
    return expects is None or empty_run(expects, setup_files).passes
