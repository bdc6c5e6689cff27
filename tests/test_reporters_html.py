"""The HTML report (`--html`, `zeroclaw eval report`): its structure and escaping read with
the standard library's parser, the trend over a history directory, and the page as a real
browser shows it (Debian's Chromium, headless, driven by Selenium): the verdict, failing
cases first with their transcripts, the filter, the page with scripts off, injected markup
that never runs, no network request, and a screenshot of what rendered.

The browser tests fail, never skip, when Chromium is missing: `nox -s tests` installs it
(noxfile.py) or says the command that does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    Cli,
    call,
    errored_report,
    failing_report,
    fixture,
    passing_report,
    project,
    red_project,
    says,
    suite_report,
    text_step,
    tool_step,
    turn,
    two_agent_project,
    write_fixture,
)
from test_reporters_case_view import assert_details_have_lines, dropping_project

from harness.expectations.base import Grade
from harness.model_boundary import Message, ModelStep, ToolCall
from harness.reporters import html as html_report
from harness.reporters import registry
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.tracking import history as history_store
from harness.transcript import TranscriptStep
from harness.verdict.reports import CaseReport, ErrorFrame, SuiteReport

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = (
    "install Debian's Chromium to run the browser tests: "
    "sudo apt-get install -y chromium chromium-driver (`nox -s tests` does so as root)"
)
INJECTED = "<script>alert(1)</script><img src=x onerror=\"alert(2);document.title='pwned'\">"


# --- parsing the page ---------------------------------------------------------------------


class Page(HTMLParser):
    """What a parser reads from the report: elements with their attributes, the text."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]

    @property
    def shown(self) -> str:
        return "".join(self.text)

    def case_ids(self) -> list[str | None]:
        return [a.get("data-id") for a in self.all("li") if "data-verdict" in a]

    def cases_open(self) -> list[bool]:
        """Whether each case's `<details>` (the tag right after its `<li>`) is open."""
        return [
            "open" in self.tags[i + 1][1]
            for i, (tag, attrs) in enumerate(self.tags)
            if tag == "li" and "data-verdict" in attrs
        ]


def hostile_report() -> SuiteReport:
    """A report whose model text, tool result and case id hold markup and CI commands."""
    record = RunRecord(
        final_response=INJECTED,
        turn_responses=[INJECTED],
        calls=[RecordedCall("echo", '{"message":"</pre><b>x</b>"}', "::error::owned", True, 1.5)],
        model_calls=2,
        transcript=[
            TranscriptStep(
                turn=0,
                step=0,
                sent=[Message(role="user", content="say </textarea>")],
                tools_offered=["echo"],
                answer=ModelStep(
                    tool_calls=(ToolCall("c1", "echo", {"message": "</pre><b>x</b>"}),)
                ),
            ),
            TranscriptStep(
                turn=0,
                step=1,
                sent=[Message(role="tool", content="::error::owned", tool_call_id="c1")],
                answer=ModelStep(text=INJECTED + "\n##[group]hidden\n::warning::x"),
            ),
        ],
    )
    grade = Grade(
        'response_contains("ok")', False, f"not found in response: {INJECTED!r}", "response"
    )
    hostile = CaseReport.graded('<i id="x">case</i>', "evals/regression/h.json", [grade], record)
    return suite_report("regression", passing_report("fine"), hostile, errored_report("boom"))


def test_every_case_is_listed_failing_first_with_one_script_the_policy_allows() -> None:
    report = suite_report(
        "regression",
        passing_report("a"),
        failing_report("b"),
        errored_report("c"),
        passing_report("d"),
    )
    page = Page(html_report.render_html(report).decode("utf-8"))
    assert page.case_ids() == ["c", "b", "a", "d"]  # run errors, then failures, then passes
    assert [a.get("data-verdict") for a in page.all("li") if "data-id" in a] == [
        "error",
        "failed",
        "passed",
        "passed",
    ]
    # Failing cases' transcripts open, passing ones collapsed: complete without scripts.
    assert page.cases_open() == [True, True, False, False]
    assert "FAILED" in page.shown and "exit 1" in page.shown
    assert "not called; tools called: []" in page.shown  # what a check observed
    assert "turn 0 requested more model responses" in page.shown  # the run error
    (script,) = page.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    (policy,) = [a["content"] for a in page.all("meta") if a.get("http-equiv")]
    assert policy == (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )
    # Nothing to load: no link, image, frame or external script.
    assert not page.all("link") and not page.all("img") and not page.all("iframe")
    assert all("src" not in attrs for attrs in page.all("script"))


def test_untrusted_text_is_escaped_and_no_line_is_a_workflow_command() -> None:
    document = html_report.render_html(hostile_report()).decode("utf-8")
    page = Page(document)
    assert len(page.scripts) == 1 and not page.all("img") and not page.all("i")
    assert not page.all("b") and not page.all("textarea")
    assert all(not k.startswith("on") for _, attrs in page.tags for k in attrs)
    shown = page.shown
    assert INJECTED in shown  # shown literally, as the model wrote it
    assert '<i id="x">case</i>' in page.case_ids()
    assert '"message": "</pre><b>x</b>"' in shown  # the arguments, indented JSON
    assert "::error::owned" in shown and "##[group]hidden" in shown
    for line in document.splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line


def test_a_record_without_a_transcript_shows_its_responses_and_calls() -> None:
    record = RunRecord(
        final_response="second",
        turn_responses=["first", "second"],
        calls=[RecordedCall("echo", '{"message":"hi"}', "hi", True, 2.25)],
    )
    case = CaseReport.graded("old", "evals/regression/old.json", [], record)
    shown = Page(html_report.render_html(suite_report("regression", case)).decode()).shown
    assert "No transcript was kept" in shown
    assert "Turn 0: response" in shown and "Turn 1: response" in shown
    assert '"message": "hi"' in shown and "2.25 ms" in shown


def test_tool_calls_sit_under_the_answer_that_asked_for_them() -> None:
    document = html_report.render_html(hostile_report()).decode("utf-8")
    request, answered = document.split('<div class="request">')[1:3]
    assert "call <code>echo</code>" in request and "1.50 ms" in request
    assert "1.50 ms" not in answered and "Tool calls no model answer asked for" not in document


class Turns(HTMLParser):
    """The transcript as a parser reads it: each turn's section by its heading, each
    request in it by its label, with the text each holds."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.turns: list[dict[str, Any]] = []
        self._open: list[str] = []  # what the next text belongs to: heading, label or body
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        css = dict(attrs).get("class")
        if tag == "section" and css == "turn":
            self.turns.append({"heading": "", "requests": []})
        elif self.turns and tag == "div" and css == "request":
            self.turns[-1]["requests"].append({"label": "", "text": ""})
        self._open.append(tag + ("." + css if css else ""))

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop().split(".")[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if not self.turns or "section.turn" not in self._open:
            return
        turn = self.turns[-1]
        if self._open[-1] == "h4" and not turn["requests"]:
            turn["heading"] += data
        elif turn["requests"]:
            request = turn["requests"][-1]
            if self._open[-1] == "p.sub" and not request["label"]:
                request["label"] = data
            request["text"] += data


def test_the_transcript_numbers_turns_and_requests_as_the_checks_do(
    run_cli: Cli, tmp_path: Path
) -> None:
    # Checks and fixtures count turns and requests from 0 (`$.turns[1]` is `turn 1`); the
    # section a check points at must carry the number the check names.
    data = fixture(
        "numbered",
        [
            turn("Remember nothing", text_step("ok")),
            turn(
                "Echo zircon-42",
                tool_step(call("c1", message="zircon-42")),
                text_step("zircon-42"),
            ),
        ],
        {"request_not_contains": [{"turn": 1, "role": "user", "needle": "zircon-42"}]},
    )
    root = project(tmp_path, {"a.json": data})
    assert run_cli("eval", "run", "--html", "r.html", cwd=root).returncode == 1
    document = (root / "r.html").read_text("utf-8")
    shown = Page(document).shown
    assert 'request_not_contains(turn 1, "user", "zircon-42")' in shown
    found = re.search(r"unexpectedly present in turn (\d+), request (\d+)", shown)
    assert found is not None, shown
    turn_no, request_no = found.groups()
    assert turn_no == "1"
    sections = {t["heading"].strip(): t for t in Turns(document).turns}
    assert sorted(sections) == ["Turn 0", "Turn 1"]
    assert "zircon-42" not in str(sections["Turn 0"])
    requests = {
        re.search(r"request (\d+)", r["label"]).group(1): r  # type: ignore[union-attr]
        for r in sections[f"Turn {turn_no}"]["requests"]
    }
    assert sorted(requests) == ["0", "1"]
    assert "Echo zircon-42" in requests[request_no]["text"]


class Rows(HTMLParser):
    """Every table row as a parser reads it: the text of each of its cells."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td" and self.rows:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_the_observed_column_shows_the_harnesss_multi_line_details_as_lines(
    run_cli: Cli, tmp_path: Path
) -> None:
    root, agent = dropping_project(tmp_path)
    assert run_cli("eval", "run", "--agent", agent, "--html", "r.html", cwd=root).returncode == 1
    document = (root / "r.html").read_text("utf-8")
    [observed] = [row[2] for row in Rows(document).rows if row[1:2] == ["loop(tool_results)"]]
    assert observed.startswith("turn 0, request 1: no tool result for c1 (echo)")
    assert_details_have_lines(observed)
    # Shown as lines, indents kept: the cell's text is in an element that keeps white space.
    assert '<span class="lines">turn 0, request 1: no tool result' in document
    assert ".lines{white-space:pre-wrap}" in document
    for line in document.splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line


def _pass_rate_cell(document: str) -> str:
    """The summary table's pass-rate cell."""
    [totals] = [row for row in Rows(document).rows if len(row) == 7]
    return totals[6]


@pytest.mark.parametrize(("passed", "failed"), [(21, 0), (2, 1)])
def test_a_deterministic_replay_shows_no_interval(passed: int, failed: int) -> None:
    cases = [passing_report(f"p{i}") for i in range(passed)]
    cases += [failing_report(f"f{i}") for i in range(failed)]
    document = html_report.render_html(suite_report("regression", *cases)).decode("utf-8")
    rate = _pass_rate_cell(document)
    share = passed / (passed + failed) * 100
    assert rate == f"{share:.1f}% (no interval: a deterministic replay samples nothing)"
    assert "CI" not in Page(document).shown and "interval over" not in Page(document).shown


def test_a_live_run_says_what_its_intervals_are() -> None:
    from test_reporters_github import live_suite, repeated_report

    report = live_suite(
        repeated_report("flaky", "PPFPPPPFPPPPPPPPPPFP", min_pass_rate=0.8),
        repeated_report("steady", "PPPPP"),
    )
    document = html_report.render_html(report).decode("utf-8")
    stats = report.statistics
    assert stats.low is not None and stats.high is not None
    assert _pass_rate_cell(document) == (
        f"{stats.pass_rate * 100:.1f}% ({stats.low * 100:.1f} to {stats.high * 100:.1f}%: "
        "95% CI over 2 independent units (2 cases, 0 clusters))"
    )
    shown = Page(document).shown
    assert (
        "17 of 20 completed run(s) passed (20 asked for): 85.0%, "
        "95% Wilson interval 64.0 to 94.8% over 20 run(s)"
    ) in shown


# --- the trend ----------------------------------------------------------------------------


def _case(case_id: str, passed: bool) -> CaseReport:
    return passing_report(case_id) if passed else failing_report(case_id)


def _history(directory: Path, *runs: dict[str, bool]) -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for minute, verdicts in enumerate(runs):
        report = suite_report("regression", *(_case(i, p) for i, p in verdicts.items()))
        entry = history_store.entry_of(report, start + timedelta(minutes=minute))
        history_store.write(directory, entry)


def test_the_trend_shows_every_run_this_one_last_and_the_cases_that_flipped(
    tmp_path: Path,
) -> None:
    _history(tmp_path, {"a": True, "b": True}, {"a": True, "b": False}, {"a": True, "b": True})
    now = suite_report("regression", _case("a", False), _case("b", True))
    page = Page(html_report.render_html(now, tmp_path).decode("utf-8"))
    circles = page.all("circle")
    assert len(circles) == 4 and circles[-1]["class"] == "dot now"
    assert [c["cy"] for c in circles] == ["12.0", "91.0", "12.0", "91.0"]  # 100, 50, 100, 50%
    assert "Pass rate over the last 4 run(s)" in page.shown
    assert "Cases that flipped since" in page.shown
    flipped = page.shown.split("Cases that flipped since")[1]
    assert re.search(r"a\s*passed\s*failed", flipped)
    assert "b" not in flipped.split("this run", 1)[1].split("Cases (")[0]


def test_the_trend_of_a_first_run_and_of_another_agent(tmp_path: Path) -> None:
    other = SuiteReport(
        suite="evals/regression", kind="regression", mode="replay", agent="pydantic-ai", cases=[]
    )
    history_store.write(tmp_path, history_store.entry_of(other))
    page = Page(
        html_report.render_html(suite_report("regression", _case("a", True)), tmp_path).decode()
    )
    assert len(page.all("circle")) == 1  # another agent's runs are another trend
    assert "nothing to compare with" in page.shown


# --- `run --html` and `zeroclaw eval report` ---------------------------------------------


def _hostile_project(tmp_path: Path) -> Path:
    root = red_project(tmp_path)
    write_fixture(root / "evals/regression", "d_hostile.json", says("hostile", INJECTED, ["ok"]))
    return root


def _run_twice(run_cli: Cli, root: Path) -> Path:
    """Two runs into one history, the echo case failing in the second: the second's HTML."""
    args = ("eval", "run", "--history-dir", "history", "--json-report", "report.json")
    assert run_cli(*args, cwd=root).returncode == 1
    fixture = root / "evals/regression/a_echo.json"
    data = json.loads(fixture.read_text("utf-8"))
    data["expects"]["response_contains"] = ["goodbye"]
    fixture.write_text(json.dumps(data), "utf-8")
    result = run_cli(*args, "--html", "report.html", cwd=root)
    assert result.returncode == 1, result.stderr
    return root / "report.html"


def test_report_rebuilds_the_run_html_from_the_json_report_and_history(
    tmp_path: Path, run_cli: Cli
) -> None:
    root = _hostile_project(tmp_path)
    written = _run_twice(run_cli, root)
    result = run_cli(
        "eval",
        "report",
        "--report",
        "report.json",
        "--history-dir",
        "history",
        "--html",
        "again.html",
        cwd=root,
    )
    assert (result.returncode, result.stdout) == (0, "wrote again.html\n"), result.stderr
    # The same page: this run is in the history now, and shown once, as the last point.
    assert (root / "again.html").read_bytes() == written.read_bytes()
    assert len(Page(written.read_text("utf-8")).all("circle")) == 2


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "report.json: not a JSON report"),
        (b'{"schema": "zeroclaw-eval/report/v2"}', "report.json: not a zeroclaw-eval JSON report"),
        (
            json.dumps(
                {
                    "schema": "x",
                    "suite": "s",
                    "kind": "regression",
                    "mode": "replay",
                    "agent": "a",
                    "cases": [],
                }
            ).encode(),
            "(schema 'x')",
        ),
    ],
)
def test_report_refuses_what_is_not_a_json_report(
    tmp_path: Path, run_cli: Cli, content: bytes, said: str
) -> None:
    (tmp_path / "report.json").write_bytes(content)
    result = run_cli("eval", "report", "--report", "report.json", "--html", "r.html", cwd=tmp_path)
    assert result.returncode == 1 and said in result.stderr, result.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("proportion", [7.0, -0.5])
def test_report_refuses_a_pass_proportion_no_share_can_be(
    tmp_path: Path, run_cli: Cli, proportion: float
) -> None:
    from conftest import case_of, live_trace

    from harness.reporters.json_report import render_json
    from harness.run.repeats import combine

    runs = [passing_report("a"), failing_report("a")]
    report = suite_report("regression", combine(case_of(live_trace(repeat=2)), runs))
    document = json.loads(render_json(report))
    assert document["cases"][0]["repeat"]["proportion"] == 0.5  # the field a damaged one holds
    document["cases"][0]["repeat"]["proportion"] = proportion
    (tmp_path / "report.json").write_text(json.dumps(document), "utf-8")
    result = run_cli("eval", "report", "--report", "report.json", "--html", "r.html", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr == (
        "zeroclaw eval: report.json: not a zeroclaw-eval JSON report: "
        f"$.cases[0].repeat.proportion: {proportion!r} is no pass proportion (0 to 1)\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_report_refuses_a_report_nested_too_deeply(tmp_path: Path, run_cli: Cli) -> None:
    # Where the schema takes any JSON, a tool call's arguments: no type stops the nesting.
    deep = "[" * 100_000 + "]" * 100_000
    call = '{"id": "c", "name": "echo", "arguments": {"x": ' + deep + "}}"
    case = '{"id": "a", "fixture": "a.json", "passed": false, "record": {"steps": [[{'
    case += '"tool_calls": [' + call + "]}]]}}"
    document = '{"schema": "zeroclaw-eval/report/v2", "suite": "s", "kind": "regression", '
    document += '"mode": "live", "agent": "a", "cases": [' + case + "]}"
    (tmp_path / "report.json").write_text(document, "utf-8")
    result = run_cli("eval", "report", "--report", "report.json", "--html", "r.html", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr == (
        "zeroclaw eval: report.json: not a JSON report: JSON nested too deeply to be read\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_report_refuses_a_missing_report_or_history_and_its_own_input(
    tmp_path: Path, run_cli: Cli
) -> None:
    base = ("eval", "report", "--report", "report.json")
    result = run_cli(*base, "--html", "r.html", cwd=tmp_path)
    assert result.returncode == 1 and "report.json: cannot read the JSON report" in result.stderr
    (tmp_path / "report.json").write_text("{}", "utf-8")
    result = run_cli(*base, "--html", "r.html", "--history-dir", "nowhere", cwd=tmp_path)
    assert result.returncode == 1 and "nowhere: cannot read the history" in result.stderr
    result = run_cli(*base, "--html", "report.json", cwd=tmp_path)
    assert result.returncode == 1 and "is the JSON report itself" in result.stderr


def test_html_is_a_report_option_of_run() -> None:
    assert "--html" in [option.flag for option in registry.options()]


# --- in a real browser --------------------------------------------------------------------


def _browser_options(tmp: Path, scripts: bool) -> Any:
    try:
        from selenium import webdriver
    except ImportError:
        pytest.fail("selenium is not installed: it is in the `test` dependency group")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} is missing: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1600",
        "--force-device-scale-factor=1",
        f"--user-data-dir={tmp}",
    ):
        options.add_argument(flag)
    if not scripts:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return options


def _driver(tmp: Path, scripts: bool) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(
        options=_browser_options(tmp, scripts), service=Service(executable_path=str(CHROMEDRIVER))
    )
    if scripts:
        # Before any page script: record every alert instead of showing it.
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument",
            {"source": "window.__alerts = []; window.alert = (m) => __alerts.push(String(m));"},
        )
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = _driver(tmp_path_factory.mktemp("chromium"), scripts=True)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def scriptless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = _driver(tmp_path_factory.mktemp("chromium-noscript"), scripts=False)
    yield driver
    driver.quit()


@pytest.fixture
def page_file(tmp_path: Path, run_cli: Cli) -> Path:
    return _run_twice(run_cli, _hostile_project(tmp_path))


def _cases(driver: Any) -> dict[str, Any]:
    from selenium.webdriver.common.by import By

    return {
        li.get_attribute("data-id"): li
        for li in driver.find_elements(By.CSS_SELECTOR, "#cases > li")
    }


def test_the_browser_shows_the_verdict_and_failing_cases_first_with_transcripts(
    browser: Any, page_file: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page_file.as_uri())
    assert browser.find_element(By.ID, "verdict").text.startswith("FAILED (exit 1): 0 of 4 case(s)")
    cases = _cases(browser)
    assert list(cases) == ["under-scripted", "wrong-answer", "hostile", "echo-case"]
    wrong = cases["wrong-answer"].text
    assert 'response_contains("hi")' in wrong and 'not found in response: "I said bye"' in wrong
    assert '"message": "hi"' in wrong  # the tool call's arguments, as dispatched
    assert re.search(r"echo\s*\{\s*\"message\": \"hi\"\s*\}\s*hi\s*ok\s*[\d.]+ ms", wrong)
    error = cases["under-scripted"].text
    assert "turn 0 requested more model responses" in error and "[0] user:" in error
    assert "Not answered: the run stopped at this request" in error
    trend = browser.find_element(By.ID, "trend").text
    assert "Pass rate over the last 2 run(s)" in trend and "echo-case" in trend
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []  # no script or style refused by the policy: the hash is right


def test_the_filter_shows_only_the_cases_asked_for(browser: Any, page_file: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page_file.as_uri())

    def shown() -> list[str]:
        return [case_id for case_id, li in _cases(browser).items() if li.is_displayed()]

    bar = browser.find_element(By.ID, "filters")
    assert bar.is_displayed() and shown() == list(_cases(browser))
    bar.find_element(By.CSS_SELECTOR, "[data-filter=failing]").click()
    assert shown() == ["under-scripted", "wrong-answer", "hostile", "echo-case"]
    bar.find_element(By.CSS_SELECTOR, "[data-filter=errors]").click()
    assert shown() == ["under-scripted"]
    bar.find_element(By.CSS_SELECTOR, "[data-filter=passing]").click()
    assert shown() == []
    assert browser.find_element(By.ID, "shown").text == "0 of 4 case(s) shown"
    bar.find_element(By.CSS_SELECTOR, "[data-filter=all]").click()
    browser.find_element(By.ID, "filter-id").send_keys("WRONG")
    assert shown() == ["wrong-answer"]


def test_failing_hides_the_passing_cases(browser: Any, tmp_path: Path, run_cli: Cli) -> None:
    from selenium.webdriver.common.by import By

    root = red_project(tmp_path)
    assert run_cli("eval", "run", "--html", "r.html", cwd=root).returncode == 1
    browser.get((root / "r.html").as_uri())
    browser.find_element(By.CSS_SELECTOR, "[data-filter=failing]").click()
    assert [i for i, li in _cases(browser).items() if li.is_displayed()] == [
        "under-scripted",
        "wrong-answer",
    ]
    assert not _cases(browser)["echo-case"].is_displayed()
    browser.find_element(By.CSS_SELECTOR, "[data-filter=passing]").click()
    assert [i for i, li in _cases(browser).items() if li.is_displayed()] == ["echo-case"]


def test_injected_markup_never_runs_and_shows_as_text(browser: Any, page_file: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page_file.as_uri())
    assert browser.execute_script("return window.__alerts") == []
    assert browser.title == "zeroclaw-eval: evals/regression failed"
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 1
    assert INJECTED in _cases(browser)["hostile"].text


def test_with_scripts_off_every_case_is_listed_and_readable(
    scriptless: Any, page_file: Path
) -> None:
    from selenium.webdriver.common.by import By

    scriptless.get(page_file.as_uri())
    cases = _cases(scriptless)
    assert list(cases) == ["under-scripted", "wrong-answer", "hostile", "echo-case"]
    assert all(li.is_displayed() for li in cases.values())
    assert not scriptless.find_element(By.ID, "filters").is_displayed()  # needs the script
    assert scriptless.find_element(By.ID, "shown").text == ""  # the script never ran
    assert 'not found in response: "I said bye"' in cases["wrong-answer"].text


# --- the screenshot -------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a whole, valid 8-bit RGB or RGBA PNG (what Chromium writes)."""
    width, height, _ = png_pixels(data, decode=False)
    return width, height


def png_colours(data: bytes) -> set[tuple[int, int, int]]:
    _, _, rows = png_pixels(data)
    return {(row[x], row[x + 1], row[x + 2]) for row in rows for x in range(0, len(row), 3)}


def png_pixels(data: bytes, decode: bool = True) -> tuple[int, int, list[bytes]]:
    """Width, height and (when `decode`) the RGB rows of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, at = {}, 8
    idat = b""
    while at < len(data):
        (size,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + size]
        idat += body if kind == b"IDAT" else b""
        chunks.setdefault(kind, body)
        at += 12 + size
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, interlace) == (8, 0) and colour in (2, 6), (depth, colour, interlace)
    step = 4 if colour == 6 else 3
    raw, stride = zlib.decompress(idat), width * step
    assert len(raw) == height * (stride + 1), "the image data does not fill the image"
    rows: list[bytes] = []
    if not decode:
        return width, height, rows
    previous = bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - step] if i >= step else 0
            b, c = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(b for i, b in enumerate(line) if i % step < 3))
        previous = line
    return width, height, rows


def test_a_screenshot_shows_the_rendered_verdict_and_trend(browser: Any, page_file: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page_file.as_uri())
    width, height = png_size(browser.get_screenshot_as_png())
    assert (width, height) == tuple(browser.execute_script("return [innerWidth, innerHeight]"))
    # Where the report is, what rendered: the failed banner, styled, with text on it…
    header = png_colours(browser.find_element(By.TAG_NAME, "header").screenshot_as_png)
    assert (255, 235, 233) in header and (207, 34, 46) in header and len(header) > 2
    # …and the trend: the earlier run's point, and this run's.
    chart = png_colours(browser.find_element(By.ID, "trend-chart").screenshot_as_png)
    assert (9, 105, 218) in chart and (188, 76, 0) in chart


def test_the_html_report_keeps_passing_cases_transcripts(run_cli: Cli, tmp_path: Path) -> None:
    from conftest import green_project

    root = green_project(tmp_path)
    assert run_cli("eval", "run", "--html", "r.html", cwd=root).returncode == 0
    page = (root / "r.html").read_text(encoding="utf-8")
    assert "No transcript was kept" not in page


def test_a_run_errors_frames_are_shown_under_it() -> None:
    frames = [ErrorFrame(file="agent.py", line=14, function="run_turn")]
    frames.append(ErrorFrame(file="</pre><b>x</b>\n::error::y.py", line=2, function="f"))
    case = msgspec.structs.replace(errored_report("boom"), error_frames=frames)
    document = html_report.render_html(suite_report("regression", case)).decode("utf-8")
    page = Page(document)
    assert "Raised at (innermost last)" in page.shown
    assert "agent.py:14 in run_turn\n</pre><b>x</b>\\u000a::error::y.py:2 in f" in page.shown
    assert not page.all("b")
    for line in document.splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line


class Spoken(HTMLParser):
    """Who spoke, in the order the transcript shows it: each request's label up to the
    tools it was offered, each handoff, and the tool cell of each recorded call."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.said: list[tuple[str, str]] = []
        self._open: list[str] = []  # the kind of what each open element's text is
        self._cells = 0  # the cell of the calls table's row
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        css = dict(attrs).get("class") or ""
        kind = ""
        if tag == "p" and css == "sub" and self._open[-1:] == ["request"]:
            kind = "label"
        elif tag == "div" and css == "request":
            kind = "request"
        elif tag == "p" and "handoff" in css.split():
            kind = "handoff"
        elif tag == "tr":
            self._cells = 0
        elif tag == "td":
            self._cells += 1
            kind = "tool" if self._cells == 1 and "calls" in self._open else ""
        elif tag == "table" and css == "calls":
            kind = "calls"
        if kind in ("label", "handoff", "tool"):
            self.said.append((kind, ""))
        self._open.append(kind)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self.said and self.said[-1][0] in self._open[-3:]:
            kind, text = self.said[-1]
            self.said[-1] = (kind, text + data)

    def shown(self) -> list[tuple[str, str]]:
        return [
            (kind, " ".join(text.split(" (tools offered")[0].split())) for kind, text in self.said
        ]


def test_the_transcript_says_which_agent_asked_called_and_handed_off(
    run_cli: Cli, tmp_path: Path
) -> None:
    root, agent = two_agent_project(tmp_path)
    result = run_cli("eval", "run", "--agent", agent, "--html", "r.html", cwd=root)
    assert result.returncode == 0, result.stderr
    assert Spoken((root / "r.html").read_text("utf-8")).shown() == [
        ("label", "model request 0 by triage"),
        ("handoff", "handoff: triage → billing"),
        ("label", "model request 1 by billing"),
        ("tool", "echo by billing"),
        ("label", "model request 2 by billing"),
    ]


def test_a_hostile_agent_name_is_shown_as_text_and_forges_no_command(
    run_cli: Cli, tmp_path: Path
) -> None:
    hostile = "tri<b>x</b>\n::error::forged ##[error]y"
    root, agent = two_agent_project(tmp_path, hostile, "bill<i>ing</i>")
    assert run_cli("eval", "run", "--agent", agent, "--html", "r.html", cwd=root).returncode == 0
    document = (root / "r.html").read_text("utf-8")
    page = Page(document)
    assert not page.all("b") and not page.all("i")
    shown = Spoken(document).shown()
    escaped = "tri<b>x</b>\\u000a::error::forged ##[error]y"
    assert ("handoff", f"handoff: {escaped} → bill<i>ing</i>") in shown
    assert ("label", f"model request 0 by {escaped}") in shown
    assert ("tool", "echo by bill<i>ing</i>") in shown
    for line in document.splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line
