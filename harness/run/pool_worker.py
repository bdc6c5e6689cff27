"""What crosses to a worker process, and what runs there.

A worker resolves the agent itself from its `agent` setting (or unpickles the adapter
object), gets cases by their place in the suite with their fixture text (admission already
happened in the harness: the worker parses the same text with the same parser, so it runs
the same case), runs them through the same watched runner with one job (the per-case
timeout and the watchdog hold in there), and sends each `CaseReport` back encoded with
msgspec, as it finishes; a plain pass, when all the harness's reporters write of it is what
the worker rendered for them (`Prerendering`), is spooled as it finishes and sent as those
parts alone with the passes after it, a run at once (`_Sender`, `Spools`). It never
outlives the harness (`orphans`). A worker started early may first be sent parts of a large suite to
admit (`run/worker_admission.py`), which it does as the harness would, before it is told
what to run.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from harness.agents.registry import resolve_within
from harness.errors import describe
from harness.fixtures.schema import parse_admitted
from harness.fixtures.suite import (
    AdmittedCases,
    Case,
    FixtureChanged,
    admit_slice,
    hold_parsed,
    ids_of,
)
from harness.io.text import encoded_json
from harness.run.runner import CasePlan, replay_backend
from harness.run.spools import Spool, Streams, kinds_record, packed, record, rendered
from harness.runtime.collector import freeze_for_good
from harness.runtime.orphans import die_with_the_fork_server
from harness.verdict.kept import SCORES, Prerendering
from harness.verdict.reports import CaseReport

RunCases = Callable[[Sequence[Case], CasePlan, Callable[[CaseReport], None] | None], Any]
# How long past a case's whole allowance (its wall clock, and the agent's start) a worker
# may stay silent before it is taken for stuck beyond its own watchdog and stopped.
STALL_GRACE_SECS = 5.0
# How long a worker may hold plain passes done before it sends them (spooled meanwhile):
# what the harness hears of a run of quick cases comes a batch at once (on a loaded machine
# too, where a batch takes several times as long), a slow case's soon.
FLUSH_SECS = 0.1


class Item(NamedTuple):
    """One case as a worker gets it: its place in the suite, its file, and the digests of
    the bytes admitted (the worker reads the file itself) and of their canonical form
    (None: not made yet) or, for a case that keeps its text, the text."""

    place: int
    path: str
    case_id: str
    digest: bytes | None
    text: str | None
    canonical: bytes | None

    @classmethod
    def of(cls, place: int, case: Case) -> Item:
        digest = case.digest
        text = case.text if digest is None else None
        return cls(place, case.where, case.id, digest, text, case.canonical)

    @classmethod
    def at(cls, place: int, cases: Sequence[Case]) -> Item:
        """The case at `place` of `cases`; of an admitted suite, without making the case."""
        return cls._make(cls.all_at([place], cases)[0])

    @staticmethod
    def all_at(places: Sequence[int], cases: Sequence[Case]) -> list[Sent]:
        """`at` of each of `places`, as plain tuples: what crosses to a worker (pickled as
        a quarter of what an `Item` costs), an `Item` again there."""
        found: list[Sent] = []
        if not isinstance(cases, AdmittedCases):
            for place in places:
                made = Item.of(place, cases[place])
                found.append((place, *made[1:]))
            return found
        held = cases.held_at
        for place in places:
            where, case_id, digest, canonical = held(place)
            found.append((place, where, case_id, digest, None, canonical))
        return found

    def case(self) -> Case:
        if self.digest is not None:
            return Case.dropped(self.case_id, self.path, self.digest, self.canonical)
        assert self.text is not None
        return Case(parse_admitted(self.text), Path(self.path), self.text)


# An `Item` as it is sent: a plain tuple of its fields, in order.
Sent = tuple[int, str, str, "bytes | None", "str | None", "bytes | None"]

# What a worker builds its plan from as it is; the rest it makes itself (the adapter and
# backend from their pickles, one job, nothing prepared) or has no use for.
_SENT = (
    "allowed_tools",
    "timeout",
    "root",
    "agent_tools",
    "case_wall_clock",
    "max_model_calls_per_turn",
    "max_tool_calls_per_step",
    "keep_transcripts",
    "setup",  # sent as its two settings, resolved again by the worker
    "snapshots",
    "prerender",  # by reference: classes of the harness's, as `run` is
)


class Prerender(Protocol):
    """Parts of a report this process's reporters would render, rendered by the worker
    beside its case (`render`) and sent with the report, which this process hands to
    its reporters (`hold`) before the report; `drop` lets go of what is held for a report
    once every reporter has been told it (taken or not: a reporter that is off, or broken,
    or renders that case itself takes none), `release` of all that is left. What
    the parts are is the reporters' own business: a part is only ever used for the very
    report it was rendered from, and a reporter that finds none renders it itself."""

    @staticmethod
    def render(report: CaseReport) -> object: ...

    @staticmethod
    def hold(report: CaseReport, parts: object) -> None: ...

    @staticmethod
    def drop(report: CaseReport) -> None: ...

    @staticmethod
    def release() -> None: ...


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to run cases as this process would: the runner (by reference),
    the agent, the plan's settings, and the environment the cases run in."""

    run: RunCases
    agent_spec: str | None
    adapter: bytes | None  # the pickled adapter, when there is no `agent_spec`
    backend: bytes | None  # the pickled backend factory; None: the replay backend
    settings: dict[str, Any]  # the plan's fields named in `_SENT`
    cwd: str
    sys_path: list[str]
    environ: dict[str, str]
    # A judge waits in the harness: a case with rubrics is handed back to run there.
    hand_back_judged: bool = False
    # The file a worker spools its plain passes in (`_Sender`); None: it sends each. And
    # where the files it writes parts into begin (`_Streams`); None: beside the spool.
    spool: str | None = None
    streams: str | None = None
    # The admitted suite's columns (`AdmittedCases`), pickled once for every worker: its
    # cases are then sent by their places alone (`crossing`), not each as an `Item`.
    suite: bytes | None = None

    @property
    def stall(self) -> float:
        settings = self.settings
        return float(settings["timeout"] + settings["case_wall_clock"]) + STALL_GRACE_SECS


def worker_spec(
    plan: CasePlan,
    run: RunCases,
    hand_back_judged: bool = False,
    cases: Sequence[Case] = (),
) -> WorkerSpec | str:
    """The spec of workers running `plan`'s cases, or why they cannot (then the cases run
    in this process); with `hand_back_judged`, they run none that has rubrics. `cases`, an
    admitted suite's, go with it whole (`WorkerSpec.suite`)."""
    if plan.mode != "replay":
        return "live cases share one provider limiter, which only one process can hold"
    if plan.prepare is not None:
        return "cases prepared in this process (mutation testing) cannot cross processes"
    if plan.judge is not None:
        return "the judge's replies and its provider's limiter are held by this process"
    adapter = None
    if plan.agent_spec is None:
        try:
            adapter = pickle.dumps(plan.adapter)
        except Exception as exc:  # whatever the adapter's state refuses
            return f"the agent adapter cannot be sent to a worker process ({describe(exc)})"
    backend = None
    if plan.backend is not replay_backend:
        try:
            backend = pickle.dumps(plan.backend)
        except Exception as exc:
            return f"the backend factory cannot be sent to a worker process ({describe(exc)})"
    return WorkerSpec(
        run=run,
        agent_spec=plan.agent_spec,
        adapter=adapter,
        backend=backend,
        settings={name: getattr(plan, name) for name in _SENT},
        cwd=os.getcwd(),
        sys_path=list(sys.path),
        environ=dict(os.environ),
        hand_back_judged=hand_back_judged,
        suite=(
            pickle.dumps(cases, pickle.HIGHEST_PROTOCOL)
            if isinstance(cases, AdmittedCases)
            else None
        ),
    )


def crossing(spec: WorkerSpec, places: list[int], cases: Sequence[Case]) -> list[Any]:
    """What is sent to a worker of `spec` for the cases at `places` of `cases`: the places
    alone when it holds the suite (`WorkerSpec.suite`), else each case as an `Item`."""
    return places if spec.suite is not None else Item.all_at(places, cases)


def worker_main(conn: Any, spec: WorkerSpec | None) -> None:
    """A worker: the harness's cases, one at a time, until told to stop. It never waits
    for a thread an agent left running, and leaves interruptions to the harness. Started
    before its pool (`spec` None), it is sent the spec first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_the_fork_server()  # killed, should the harness be, whatever its case does
    # What the fork server had loaded is never garbage: the collector leaves it alone, so
    # it neither spends time on it nor copies the pages it would touch.
    freeze_for_good()
    code = 0
    try:
        _serve(conn, spec)
    except (BrokenPipeError, ConnectionResetError):  # the harness is gone: no one to tell
        code = 70
    except BaseException:  # the harness sees it die: the case running gets the blame
        code = 70
        with contextlib.suppress(Exception):
            traceback.print_exc()  # a harness bug: said where the harness's errors go
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _serve(conn: Any, spec: WorkerSpec | None) -> None:
    while spec is None:
        try:
            message = conn.recv()
        except EOFError:  # no pool took it
            return
        if message[0] == "admit":  # a part of the suite, admitted here before a pool comes
            _, start, cwd, part = message
            try:
                os.chdir(cwd)  # the suite's paths are as the harness spells them
            except OSError:  # gone: this worker ends, and the harness admits the part
                return
            conn.send(("admitted", start, admit_slice(*part)))
            continue
        if message[0] != "spec":
            return
        spec = message[1]
        assert isinstance(spec, WorkerSpec)
    os.chdir(spec.cwd)
    sys.path[:] = spec.sys_path
    os.environ.clear()
    os.environ.update(spec.environ)
    try:
        plan = _plan(spec)
    except Exception as exc:  # the agent failed to resolve here: said, then this worker ends
        conn.send(("failed", describe(exc)))
        return
    conn.send(("ready",))
    send = _Sender(conn, plan.prerender, spec.spool, spec.streams)
    suite: AdmittedCases | None = None if spec.suite is None else pickle.loads(spec.suite)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] != "run":
            conn.send(("cpu", time.process_time()))
            return
        sent = message[1]
        places, cases = _batch(sent, suite)
        if spec.hand_back_judged:
            hold_parsed(len(places))  # each read to find the judged, then as it runs
            judged = [place for place, case in zip(places, cases, strict=True) if _judged(case)]
            if judged:  # said before any other case of the batch runs: none is running yet
                conn.send(("back", judged))
                back = set(judged)
                kept = [one for one, place in zip(sent, places, strict=True) if place not in back]
                places, cases = _batch(kept, suite)
        send.index_of = dict(zip(ids_of(cases), places, strict=True))
        send.batch_begins()
        spec.run(cases, plan, send)
        send.flush()  # the batch's last passes: nothing runs now


def _batch(sent: list[Any], suite: AdmittedCases | None) -> tuple[list[int], Sequence[Case]]:
    """The places of a batch's cases, and the cases as they are run: of the suite held
    (the places alone were sent), picked as this process's run holds them (each made as it
    runs, its fixture's path shown as the suite's folder is, worked out once), else made
    from their `Item`s."""
    if suite is not None:
        return list(sent), suite.picked(sent)
    return [item[0] for item in sent], [Item._make(item).case() for item in sent]


def _judged(case: Case) -> bool:
    """Whether the case has rubrics for the judge (one that cannot be read again runs here,
    where that is its run error)."""
    try:
        expects = case.trace.expects
    except FixtureChanged:
        return False
    return expects is not None and bool(expects.judge)


class _Sender:
    """Sends each report back as it is in (never held for a later case: should the next
    kill this worker, the harness has every case before it), with the case's place in the
    suite (ids are unique within a suite) and the parts of it rendered here for the
    harness's reporters (`Prerender`), one message at a time whichever thread reports it.

    A plain pass whose parts are all its reporters write of it (`Prerendering.passes`) is
    written to this worker's spool file (`WorkerSpec.spool`, `Spool`) as it is in, as its
    encoded report, where the harness finds it should this worker die, and sent with the
    passes after it, one after another in the suite, as one "run": their first place, each
    one's score as a byte (`SCORES`) and each kind's parts in a list, rendered as the run
    goes. A run goes once this worker's batch is done, before any other message, or once
    it is `FLUSH_SECS` old: the harness reads one message, not one a case. Once sent, the
    spool starts again (empty)."""

    def __init__(
        self,
        conn: Any,
        prerender: Prerendering | None,
        spool: str | None,
        streams: str | None = None,
    ) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        kinds = prerender.kinds if prerender is not None else ()
        self._renders = tuple(each.render for each in kinds)
        self._spooled: Spool | None = None
        self._streams: list[tuple[int, Streams]] = []
        # What a run's spool begins with, so that a pass it holds as its report can be
        # rendered where it is read back (`spools.spooled`); None: each is held rendered.
        self._kinds: bytes | None = None
        if spool is not None and prerender is not None and prerender.passes:
            streams = streams or spool
            try:
                self._spooled = Spool(spool)
                self._streams = [
                    (at, Streams(kind, f"{streams}.{at}"))
                    for at, kind in enumerate(kinds)
                    if getattr(kind, "streams", None)
                ]
            except OSError:  # no spool: each pass is sent with its report, as it is done
                self._spooled, self._streams = None, []
            with contextlib.suppress(Exception):  # a kind not named by reference
                self._kinds = kinds_record(kinds)
        self._run: list[_Held] = []
        # When this worker last told the harness anything: a pass done `FLUSH_SECS` after
        # that goes at once, so the harness's stall clock never hears nothing for more than
        # that and one case (a held pass must not make a slow next case look stalled).
        self._since = time.monotonic()
        self.index_of: dict[str, int] = {}

    def __call__(self, report: CaseReport) -> None:
        place = self.index_of[report.id]
        if self._spooled is not None and self._renders and report.plain and report.score in SCORES:
            held = self._held(place, report)
            if held is not None:
                self._spool(held)
                return
        message = ("report", place, encoded_json(report), self._parts(report))
        with self._lock:
            self.flush()
            self._conn.send(message)
            self._since = time.monotonic()

    def _parts(self, report: CaseReport) -> tuple[object, ...] | None:
        return rendered(self._renders, [report])[0] if self._renders else None

    def _held(self, place: int, report: CaseReport) -> _Held | None:
        """The plain pass `report` as its run holds it: its parts rendered as the run is
        sent, all of the run's at once (one at a time, between cases, each costs twice as
        much), the report spooled meanwhile; one the spool cannot name its kinds for, or
        that cannot be encoded (a lone surrogate), with its parts now. None: none."""
        if self._kinds is not None:
            with contextlib.suppress(Exception):
                payload = packed(report)
                return _Held(place, report.id, report.score, report, payload)
        parts = self._parts(report)
        return None if parts is None else _Held(place, report.id, report.score, None, parts)

    def batch_begins(self) -> None:
        """A batch came: the harness's stall clock for it starts about now, not at the
        last message (an idle worker's first pass need not go at once)."""
        self._since = time.monotonic()

    def _spool(self, held: _Held) -> None:
        with self._lock:
            if self._run and self._run[-1].place + 1 != held.place:
                self.flush()  # first: the spool then holds this pass, not the run sent
            run = self._run
            data = record((held.place, held.id, held.score, held.payload))
            if not run and self._kinds is not None:  # the spool is empty: a run begins
                data = self._kinds + data
            run.append(held)
            assert self._spooled is not None  # a pass is held only where there is a spool
            if not self._spooled.add(data):  # not spooled whole (a full disk): sent now
                self.flush()
            if time.monotonic() - self._since >= FLUSH_SECS:
                self.flush()

    def flush(self) -> None:
        """The run held, sent (the lock held, or no thread reporting): its parts rendered
        now, a pass whose parts cannot be sent with its report instead."""
        run = self._run
        if not run:
            return
        self._run = []
        passes: list[tuple[int, int, tuple[object, ...]]] = []
        made = iter(rendered(self._renders, [one.report for one in run if one.report is not None]))
        for held in run:
            parts = held.payload if held.report is None else next(made)
            if isinstance(parts, tuple):
                passes.append((held.place, SCORES[held.score], parts))
                continue
            self._send(passes)  # in their order: the passes before it, then it
            passes = []
            assert held.report is not None  # held rendered, it has its parts
            self._conn.send(("report", held.place, encoded_json(held.report), None))
        self._send(passes)
        self._since = time.monotonic()
        if self._spooled is not None:  # sent: what the spool held is the harness's
            self._spooled.clear()

    def _send(self, run: list[tuple[int, int, tuple[object, ...]]]) -> None:
        """`run` (passes one after another in the suite) sent as one message."""
        if not run:
            return
        for at, streams in self._streams:
            for _, _, parts in run:
                streams.hold(parts[at])
        codes = bytes([code for _, code, _ in run])
        try:
            spilled = {at: streams.taken() for at, streams in self._streams}
        except OSError:  # not written (a full disk): the parts go in the message
            spilled = {}
            for _, streams in self._streams:
                streams.drop()
        columns = [
            None if at in spilled else [parts[at] for _, _, parts in run]
            for at in range(len(self._renders))
        ]
        self._conn.send(("run", run[0][0], codes, columns, spilled))


class _Held(NamedTuple):
    """A plain pass its worker holds until its run is sent: its report until its parts
    are rendered (None: they are), and what the spool holds of it: the report encoded,
    or its parts."""

    place: int
    id: str
    score: float | None
    report: CaseReport | None
    payload: bytes | tuple[object, ...]


def _plan(spec: WorkerSpec) -> CasePlan:
    if spec.agent_spec is not None:
        adapter, _ = resolve_within(spec.agent_spec, spec.settings["timeout"])
    else:
        assert spec.adapter is not None
        adapter = pickle.loads(spec.adapter)
    backend = replay_backend if spec.backend is None else pickle.loads(spec.backend)
    return CasePlan(adapter, "replay", backend, jobs=1, **spec.settings)
