"""`harness.reporters.html_checks`: the HTML report shows a request snapshot change many
cases share once, with links both ways between it and the cases, its diff marked line by
line and escaped (a prompt holding markup shows as text and never runs), read with the
standard library's parser and in the real headless Chromium; and the token and cost gates'
overruns, per case and for the suite."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Cli, suite_report
from test_reporters_html import Page, _driver
from test_tracking_budget_gate import BudgetGates, against, run_of, spent

from harness.expectations.base import Grade
from harness.reporters.html import render_html
from harness.reporters.html_checks import anchor
from harness.run_record import RunRecord
from harness.snapshots.store import CHECK, unified_diff
from harness.verdict.reports import CaseReport

SPEC = "openai-agents:agents_sdk:build_agent"
HOSTILE = '</pre><script>alert(1)</script><img src=x onerror="alert(2)"> ::error::owned'


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = _driver(tmp_path_factory.mktemp("chromium"), scripts=True)
    yield driver
    driver.quit()


def changed_support(tmp_path: Path) -> Path:
    """The support agent example whose instructions now end in hostile markup."""
    support = tmp_path / "support_agent"
    shutil.copytree(REPO / "examples" / "support_agent", support)
    orders = support / "support_orders.py"
    text = orders.read_text("utf-8")
    assert text.count('Never invent order details."') == 1
    hostile = f'Always invent order details. " + {HOSTILE!r}'
    orders.write_text(text.replace('Never invent order details."', hostile))
    return support


@pytest.fixture
def page(tmp_path: Path, run_cli: Cli) -> Path:
    support = changed_support(tmp_path)
    args = ("eval", "run", "--suite", "evals", "--agent", SPEC, "--jobs", "1", "--html", "r.html")
    assert run_cli(*args, cwd=support).returncode == 1
    return support / "r.html"


def cases_of(page: Page) -> list[str]:
    return [str(a.get("data-id")) for a in page.all("li") if "data-verdict" in a]


def test_a_shared_change_is_one_diff_the_cases_link_to_and_back(page: Path) -> None:
    document = page.read_text("utf-8")
    parsed = Page(document)
    cases = cases_of(parsed)
    assert len(cases) == 5
    # The diff once, for the five cases (the transcripts show the prompt as it is now).
    assert parsed.shown.count("+You are the support agent") == 1
    assert parsed.shown.count("-You are the support agent") == 1
    assert [a["id"] for a in parsed.all("div") if a.get("class") == "change"] == [
        "snapshot-change-1"
    ]
    links = [a.get("href") for a in parsed.all("a")]
    # Each case's check links to the change, and the change to each case, whose element
    # holds that id.
    assert links.count("#snapshot-change-1") == 5
    assert sorted(h for h in links if h and h.startswith("#case-")) == sorted(
        f"#{anchor(case_id)}" for case_id in cases
    )
    assert {a.get("id") for a in parsed.all("li") if "data-verdict" in a} == {
        anchor(case_id) for case_id in cases
    }
    assert "Request snapshot changes: 1 distinct, across 5 case(s)" in parsed.shown
    # Hostile text in the prompt: escaped, no element made of it.
    assert HOSTILE in parsed.shown
    assert parsed.all("img") == [] and len(parsed.scripts) == 1
    assert "\n::error::" not in document


def test_the_browser_shows_the_diff_marked_and_follows_the_links(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    change = browser.find_element(By.ID, "snapshot-change-1")
    added = [e.text for e in change.find_elements(By.CSS_SELECTOR, ".d-add")]
    removed = [e.text for e in change.find_elements(By.CSS_SELECTOR, ".d-del")]
    assert len(added) == 1 and added[0].startswith("+You are") and added[0].endswith(HOSTILE)
    assert len(removed) == 1 and removed[0].endswith("Never invent order details.")
    colours = {
        css: change.find_element(By.CSS_SELECTOR, css).value_of_css_property("background-color")
        for css in (".d-add", ".d-del", ".d-ctx")
    }
    assert len(set(colours.values())) == 3, colours  # added, removed, unchanged: told apart
    assert browser.execute_script("return window.__alerts") == []
    assert browser.find_elements(By.TAG_NAME, "img") == []
    # From the change to a case, and from that case's check back to the change.
    first = change.find_element(By.CSS_SELECTOR, ".cases a")
    case_id = first.text
    first.click()
    assert browser.execute_script("return location.hash") == f"#{anchor(case_id)}"
    case = browser.find_element(By.ID, anchor(case_id))
    assert case.get_attribute("data-id") == case_id
    case.find_element(By.CSS_SELECTOR, "a.change-link").click()
    assert browser.execute_script("return location.hash") == "#snapshot-change-1"
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def changed(case_id: str, old: str, new: str) -> CaseReport:
    """A case whose snapshot changed from `old` to `new`, its snapshot file its own."""
    shown = f"evals/regression/__snapshots__/a/{case_id}.snap"
    # Each case's file holds more above the change, so hunk line numbers differ.
    padding = "".join(f"pad {i}\n" for i in range(len(case_id) % 7))
    detail = "what the agent shows the model changed since it was taken:\n" + unified_diff(
        f"{padding}--- instructions\n{old}\n", f"{padding}--- instructions\n{new}\n", shown
    )
    grade = Grade(CHECK, False, detail, "snapshot")
    return CaseReport.graded(case_id, f"evals/regression/{case_id}.json", [grade], RunRecord())


def test_two_hundred_cases_of_one_change_show_its_diff_once() -> None:
    cases = [changed(f"case-{i:03d}", "Be brief.", "Be a pirate.") for i in range(200)]
    cases.append(changed("other", "Be brief.", "Be verbose."))
    parsed = Page(render_html(suite_report("regression", *cases)).decode("utf-8"))
    assert parsed.shown.count("+Be a pirate.") == 1
    assert parsed.shown.count("+Be verbose.") == 1
    assert "Change 1: 200 case(s)" in parsed.shown and "Change 2: 1 case(s)" in parsed.shown
    links = [a.get("href") for a in parsed.all("a")]
    assert links.count("#snapshot-change-1") == 200 and links.count("#snapshot-change-2") == 1


def test_overruns_show_per_case_and_for_the_suite() -> None:
    before = run_of(spent("grew", 80, 20), spent("steady", 80, 20))
    gates = BudgetGates(max_token_growth=0.2, max_suite_token_growth=0.1)
    report = against(before, run_of(spent("grew", 200, 20), spent("steady", 80, 20)), gates)
    parsed = Page(render_html(report).decode("utf-8"))
    said = [a for a in parsed.all("p") if a.get("class") == "overrun"]
    assert len(said) == 2  # the head's line, and the case's
    assert (
        "Over its gate, failing it: the suite: tokens 200 -> 320 (+60.0%), over the 10.0% allowed"
        in parsed.shown
    )
    assert "1 case(s) over their token or cost gate" in parsed.shown
    assert (
        "Over its gate, failing it: case 'grew': tokens 100 -> 220 (+120.0%), over the 20.0% "
        "allowed" in parsed.shown
    )
    assert parsed.shown.count("over budget") == 1
    assert "FAILED (exit 1)" in parsed.shown


def test_a_passing_checks_row_is_its_own_whether_made_or_kept() -> None:
    from harness.reporters import html_checks
    from harness.run_record import RunRecord
    from harness.verdict.reports import CaseReport

    grades = [
        Grade("response_contains(<x>)", True, "found", "response", "$.expects.a"),
        Grade("response_contains(<x>)", True, "found it", "response", "$.expects.a"),
        Grade("response_contains(<x>)", True, "found", "tool", "$.expects.a"),
        Grade("response_contains(<x>)", True, "found", "response", "$.expects.b"),
    ]
    case = CaseReport.graded("ok", "ok.json", grades, RunRecord())
    rows = html_checks.Checks().case(case)
    html_checks._PASSED.clear()
    assert html_checks.Checks().case(case) == rows  # made again: the same
    table = rows[-1]
    assert table.count("<tr") == 5 and "response_contains(&lt;x&gt;)" in table
    for said in ("found it", "tool", "$.expects.b"):
        assert table.count(said) == 1
