"""`harness.reporters.otel_events`: `--otel-events PATH`, each case's grades as
OpenTelemetry `gen_ai.evaluation.result` events in OTLP JSON, parsed back by the real
opentelemetry-proto (`json_format` into `ExportLogsServiceRequest`); an imported case's
events carry the trace and span of its origin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _otlp_receiver import base64_ids
from conftest import (
    Cli,
    call,
    errored_report,
    failing_report,
    fixture,
    passing_report,
    suite_report,
    text_step,
    tool_step,
    turn,
    write_suite,
)
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from harness.reporters.otel_events import render_events
from harness.verdict.reports import CaseOrigin, CaseReport

TRACE = "5136183bf715ff95607f9c17477156bb"
SPAN = "1a1dcb618a30fb6f"


def parsed(data: bytes) -> list[ExportLogsServiceRequest]:
    """Each line as the OTLP receiver reads it: the OTLP JSON encoding (hex ids) into the
    protobuf messages, by protobuf's own JSON parser."""
    requests = []
    for line in data.decode("utf-8").splitlines():
        request = ExportLogsServiceRequest()
        json_format.ParseDict(base64_ids(json.loads(line)), request)
        requests.append(request)
    return requests


def records(request: ExportLogsServiceRequest) -> list[LogRecord]:
    return [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]


def attributes(record: LogRecord) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind)
    return values


def imported(case: CaseReport, trace_id: str = TRACE, span_id: str | None = SPAN) -> CaseReport:
    origin = CaseOrigin(source="otlp-genai/1.37", trace_id=trace_id, span_id=span_id)
    return msgspec.structs.replace(case, origin=origin)


def test_each_case_is_a_line_of_evaluation_events_beside_its_trace() -> None:
    report = suite_report("regression", imported(failing_report("bad")), passing_report("ok"))
    bad, ok = parsed(render_events(report))
    verdict, *checks = records(bad)
    assert verdict.event_name == "gen_ai.evaluation.result"
    assert verdict.trace_id == bytes.fromhex(TRACE)
    assert verdict.span_id == bytes.fromhex(SPAN)
    assert verdict.time_unix_nano > 0
    assert attributes(verdict) == {
        "gen_ai.evaluation.name": "zeroclaw.case",
        "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.score.value": pytest.approx(1 / 3),
        "gen_ai.evaluation.explanation": 'tools_used("echo"): not called; tools called: []',
        "zeroclaw.case.id": "bad",
        "zeroclaw.fixture": "evals/regression/bad.json",
        "zeroclaw.suite.kind": "regression",
        "zeroclaw.mode": "replay",
        "zeroclaw.origin.source": "otlp-genai/1.37",
        "zeroclaw.origin.trace_id": TRACE,
    }
    assert [
        (
            a["gen_ai.evaluation.name"],
            a["gen_ai.evaluation.score.label"],
            a["gen_ai.evaluation.score.value"],
            a["zeroclaw.check"],
        )
        for a in map(attributes, checks)
    ] == [
        ("response_contains", "pass", 1.0, 'response_contains("hello")'),
        ("tools_used", "fail", 0.0, 'tools_used("echo")'),
        ("exact_tool_calls", "fail", 0.0, "exact_tool_calls(1)"),
    ]
    assert {r.trace_id for r in checks} == {bytes.fromhex(TRACE)}
    (resource_logs,) = bad.resource_logs
    resource = {kv.key: kv.value.string_value for kv in resource_logs.resource.attributes}
    assert resource == {
        "service.name": "zeroclaw-eval",
        "zeroclaw.suite": "evals/regression",
        "zeroclaw.agent": "openai-agents",
    }
    assert resource_logs.scope_logs[0].scope.name == "zeroclaw-eval"
    (ok_verdict, _) = records(ok)
    assert ok_verdict.trace_id == b"" and ok_verdict.span_id == b""  # not imported
    assert attributes(ok_verdict)["gen_ai.evaluation.score.label"] == "pass"
    assert "gen_ai.evaluation.explanation" not in attributes(ok_verdict)


def test_a_run_error_and_an_origin_that_is_no_otlp_trace() -> None:
    case = imported(errored_report("err"), trace_id="01a243da-0b32-7293-9181-302b127961e8")
    (request,) = parsed(render_events(suite_report("regression", case)))
    (verdict,) = records(request)
    assert verdict.trace_id == b""
    values = attributes(verdict)
    assert values["gen_ai.evaluation.score.label"] == "error"
    assert "gen_ai.evaluation.score.value" not in values
    assert values["gen_ai.evaluation.explanation"] == (
        "case 'err': turn 0 requested more model responses than the trace scripts"
    )
    assert values["gen_ai.conversation.id"] == "01a243da-0b32-7293-9181-302b127961e8"


def test_hostile_text_stays_data() -> None:
    hostile = "\n::error::pwned\r##[warning]x \x1b[31mred\ud800"
    case = msgspec.structs.replace(failing_report(hostile), error=None)
    case = msgspec.structs.replace(
        case, grades=[msgspec.structs.replace(case.grades[1], detail=hostile)]
    )
    data = render_events(suite_report("regression", case))
    text = data.decode("utf-8")
    assert "##[" not in text and "\x1b" not in text
    assert all(not line.lstrip().startswith("::") for line in text.splitlines())
    (request,) = parsed(data)
    verdict, check = records(request)
    assert attributes(verdict)["zeroclaw.case.id"] == hostile.replace("\ud800", "\ufffd")
    assert attributes(check)["gen_ai.evaluation.explanation"] == hostile.replace("\ud800", "\ufffd")


def test_run_writes_the_events_with_the_other_reports(run_cli: Cli, tmp_path: Path) -> None:
    data = fixture(
        "imported-echo",
        [turn("Echo hi", tool_step(call("c1", message="hi")), text_step("hi"))],
        {"tools_used": ["echo"], "response_contains": ["hi"]},
        origin={"source": "otlp-genai/1.37", "trace_id": TRACE, "span_id": SPAN},
    )
    write_suite(tmp_path / "evals" / "regression", {"echo.json": data})
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals/regression",
        "--otel-events",
        "out/events.jsonl",
        "--json-report",
        "out/report.json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    (request,) = parsed((tmp_path / "out" / "events.jsonl").read_bytes())
    verdict, *checks = records(request)
    assert attributes(verdict)["gen_ai.evaluation.score.label"] == "pass"
    assert len(checks) == 2
    assert {r.trace_id for r in records(request)} == {bytes.fromhex(TRACE)}
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cases"][0]["origin"] == {
        "source": "otlp-genai/1.37",
        "trace_id": TRACE,
        "span_id": SPAN,
    }


def test_an_unwritable_path_is_refused_before_any_case_runs(run_cli: Cli, tmp_path: Path) -> None:
    write_suite(tmp_path / "evals" / "regression", {})
    (tmp_path / "blocked").write_text("a file, not a directory", encoding="utf-8")
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals/regression",
        "--otel-events",
        "blocked/events.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert "blocked/events.jsonl" in result.stderr
    assert not (tmp_path / "blocked").is_dir()
