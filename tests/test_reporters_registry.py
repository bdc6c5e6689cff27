"""`harness.reporters.registry`: a reporter that writes nothing unless one of its flags is
given is offered from its gate (`reporters.flags`), its module imported only for a run
that gives one; a default `eval run` imports none of them."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from conftest import own_loop_case_run

from harness.reporters import registry
from harness.reporters.base import Output
from harness.reporters.flags import GATED

# What only the gated reporters import: no default run has a use for any of it.
GATED_MACHINERY = {f"harness.reporters.{name}" for name in GATED} | {
    "harness.reporters.html_checks",
    "harness.reporters.html_transcript",
    "harness.reporters.html_page",
}


@pytest.mark.parametrize("module", sorted(GATED))
def test_a_gate_says_what_its_module_declares(module: str) -> None:
    spec = importlib.import_module(f"harness.reporters.{module}").REPORTER
    gated = next(s for s in registry.SPECS if isinstance(s, registry.Gated) and s.name == spec.name)
    assert gated.module == f"harness.reporters.{module}"
    assert gated.options == spec.options  # the very declarations: one help text each
    assert all(a is b for a, b in zip(gated.options, spec.options, strict=True))
    assert gated.stdout_format == spec.stdout_format


@pytest.mark.parametrize("module", sorted(GATED))
def test_a_reporter_not_asked_for_builds_nothing_either_way(module: str) -> None:
    # What the gate skips is what the module's own spec would have built: nothing.
    spec = importlib.import_module(f"harness.reporters.{module}").REPORTER
    gated = next(s for s in registry.SPECS if isinstance(s, registry.Gated) and s.name == spec.name)
    for output in (
        Output({}, "table", sys.stdout, sys.stderr, environ={}),
        Output({"verbose": False}, None, sys.stdout, sys.stderr, environ={}),
        Output({"junit_xml": None, "html": None}, "json", sys.stdout, sys.stderr, environ={}),
    ):
        assert not gated.asked(output)
        assert gated.build(output) == spec.build(output) == []


def test_a_flag_given_or_a_format_chosen_builds_the_module_s_reporters(tmp_path: Path) -> None:
    specs = {spec.name: spec for spec in registry.SPECS}
    html = Output({"html": tmp_path / "r.html"}, None, sys.stdout, sys.stderr, environ={})
    assert [type(r).__name__ for r in specs["html"].build(html)] == ["Document"]
    junit = Output({}, "junit", sys.stdout, sys.stderr, environ={})
    assert len(specs["junit"].build(junit)) == 1
    verbose = Output({"verbose": True}, "table", sys.stdout, sys.stderr, environ={})
    assert [type(r).__name__ for r in specs["verbose"].build(verbose)] == ["VerboseReporter"]
    # On GitHub Actions with a step summary, the Markdown summary is written without a flag.
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    step = Output({}, "table", sys.stdout, sys.stderr, environ=github)
    assert [type(r).__name__ for r in specs["markdown"].build(step)] == ["StepSummary"]
    # What else the spec offers is its module's (`zeroclaw eval report`'s renderer).
    html_module = importlib.import_module("harness.reporters.html")
    assert specs["html"].write_from_json is html_module.REPORTER.write_from_json


def _modules_of_run(tmp_path: Path, *flags: str) -> set[str]:
    """The modules a one-case own-loop `eval run` with `flags` imported (in a fresh process)."""
    return set(own_loop_case_run(tmp_path, *flags, then="print(' '.join(sys.modules))").split())


def test_a_default_run_imports_no_reporter_it_was_not_asked_for(tmp_path: Path) -> None:
    loaded = _modules_of_run(tmp_path)
    assert "harness.reporters.table" in loaded and "harness.reporters.json_report" in loaded
    assert not loaded & GATED_MACHINERY
    asked = _modules_of_run(tmp_path, "--html", str(tmp_path / "r.html"), "-v")
    assert {"harness.reporters.html", "harness.reporters.verbose"} <= asked
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_gated_spec_copies_as_any_object_does() -> None:
    # A copy looks up its attributes before `__init__` ran: none of them is the spec's.
    import copy

    gated = next(s for s in registry.SPECS if isinstance(s, registry.Gated))
    twin = copy.copy(gated)
    assert (twin.module, twin.name, twin.options) == (gated.module, gated.name, gated.options)
