"""OpenTelemetry evaluation events: `--otel-events PATH`.

Each case's grades sent back to the tracing world, as OpenTelemetry GenAI
`gen_ai.evaluation.result` events (log records with that `eventName`) in OTLP JSON, the
format the Collector's file exporter writes and its OTLP JSON receivers read: one
`{"resourceLogs": [...]}` document a line, a line per case. Every case gets one event for
its verdict (`gen_ai.evaluation.name` `zeroclaw.case`: the score of its gating checks, the
label `pass` / `fail` / `error` / `not_run`, the first failure as the explanation) and one
per check (named by the check's kind, `tool_results_contain`, the whole check in
`zeroclaw.check`: score 1 or 0, label `pass` / `fail` / `warn`, its detail as the
explanation; a judge's grade gives the judge's score).

A case imported from a trace carries the fixture's `origin`: its trace id and span id,
when they are OTLP ids (32 and 16 hex digits), are the records' `traceId` and `spanId`,
so a tracing backend shows the grades beside the trace they came from; any other id (a
GenAI conversation id, a logged history's) is the `gen_ai.conversation.id` attribute. The
file is written whole with the run's other reports; the run's text in it (case ids,
details, errors) is JSON-escaped data, with nothing a terminal or a CI runner would act on.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.io.text import encoded_json, json_safe
from harness.reporters.base import FILES, Document, Output, Rendered, Reporter
from harness.reporters.flags import GATED
from harness.reporters.flags import OTEL_EVENTS as OPTION

if TYPE_CHECKING:
    from harness.expectations.base import Grade
    from harness.verdict.reports import CaseReport, SuiteReport


EVENT = "gen_ai.evaluation.result"
CASE_EVALUATION = "zeroclaw.case"
SCOPE = "zeroclaw-eval"
_SEVERITY_INFO = 9  # OTLP SeverityNumber INFO
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _attribute(key: str, value: str | float | int | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # 64-bit integers: strings
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _evaluation(
    name: str, label: str, score: float | None, explanation: str, extra: dict[str, Any]
) -> list[dict[str, Any]]:
    attributes = [
        _attribute("gen_ai.evaluation.name", name),
        _attribute("gen_ai.evaluation.score.label", label),
    ]
    if score is not None:
        attributes.append(_attribute("gen_ai.evaluation.score.value", float(score)))
    if explanation:
        attributes.append(_attribute("gen_ai.evaluation.explanation", explanation))
    attributes += [_attribute(k, v) for k, v in extra.items() if v is not None]
    return attributes


def _case_label(case: CaseReport) -> str:
    if case.not_run is not None:
        return "not_run"
    if case.error is not None:
        return "error"
    return "pass" if case.passed else "fail"


def _case_explanation(case: CaseReport) -> str:
    if case.not_run is not None:
        return case.not_run
    if case.error is not None:
        return case.error.splitlines()[0] if case.error.strip() else case.error
    failed = next((g for g in case.grades if g.fails), None)
    return "" if failed is None else f"{failed.check}: {failed.detail}"


def _grade_score(grade: Grade) -> float | None:
    if grade.judge is not None:
        return grade.judge.score
    return 1.0 if grade.passed else 0.0


def _kind(check: str) -> str:
    """A check's kind, its stable name: `tool_results_contain("t", "x")` is
    `tool_results_contain`."""
    match = _KIND.match(check)
    return match.group() if match else "check"


def case_records(case: CaseReport, now: int, context: dict[str, Any]) -> list[dict[str, Any]]:
    """The log records of one case: its verdict, then each check."""
    ids: dict[str, str] = {}
    extra: dict[str, Any] = {**context, "zeroclaw.case.id": case.id}
    extra["zeroclaw.fixture"] = case.fixture
    origin = case.origin
    if origin is not None:
        extra["zeroclaw.origin.source"] = origin.source
        extra["zeroclaw.origin.trace_id"] = origin.trace_id
        trace_id = origin.trace_id.lower()
        if _TRACE_ID.fullmatch(trace_id):
            ids["traceId"] = trace_id
            if origin.span_id is not None and _SPAN_ID.fullmatch(origin.span_id.lower()):
                ids["spanId"] = origin.span_id.lower()
        else:
            extra["gen_ai.conversation.id"] = origin.trace_id
    evaluations = [
        _evaluation(CASE_EVALUATION, _case_label(case), case.score, _case_explanation(case), extra)
    ]
    for grade in case.grades:
        label = "warn" if grade.warn and not grade.passed else ("pass" if grade.passed else "fail")
        evaluations.append(
            _evaluation(
                _kind(grade.check),
                label,
                _grade_score(grade),
                grade.detail,
                {**extra, "zeroclaw.check": grade.check},
            )
        )
    stamp = str(now)
    return [
        {
            "timeUnixNano": stamp,
            "observedTimeUnixNano": stamp,
            "severityNumber": _SEVERITY_INFO,
            "severityText": "INFO",
            "eventName": EVENT,
            "attributes": attributes,
            **ids,
        }
        for attributes in evaluations
    ]


def render_events(report: SuiteReport) -> bytes:
    """The run's events, a line per case (nothing for a run of no case)."""
    from harness.verdict.receipts import harness_version

    now = time.time_ns()
    resource = {
        "attributes": [
            _attribute("service.name", SCOPE),
            _attribute("zeroclaw.suite", report.suite),
            _attribute("zeroclaw.agent", report.agent),
        ]
    }
    scope = {"name": SCOPE, "version": harness_version()}
    context = {"zeroclaw.suite.kind": report.kind, "zeroclaw.mode": report.mode}
    lines: list[bytes] = []
    for case in report.cases:
        document = {
            "resourceLogs": [
                {
                    "resource": resource,
                    "scopeLogs": [{"scope": scope, "logRecords": case_records(case, now, context)}],
                }
            ]
        }
        encoded = encoded_json(document)
        lines.append(json_safe(encoded.decode("utf-8")).encode("utf-8") + b"\n")
    return b"".join(lines)


class _Spec:
    name, options, stdout_format = GATED["otel_events"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        path = output.values.get(OPTION.dest)
        if path is None:
            return []
        return [Document(Rendered(render_events), path=Path(path), order=FILES, files=output.files)]


REPORTER = _Spec()
