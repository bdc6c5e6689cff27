"""`harness.judge.label_page`: `zeroclaw eval calibrate label --html` and `calibrate import`,
in real headless Chromium on replies recorded from a real HTTP server on loopback playing
the judge: items labeled in the page, downloaded, imported strictly and counted by
finalize; the judge's verdict nowhere in the page; a hostile response inert."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _judge_server import fair
from conftest import Cli
from test_judge_calibrate import JUDGE, labels, recorded_suite
from test_reporters_html import CHROMEDRIVER, INJECTED, _browser_options

from harness.judge import label_page


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, downloads: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = _browser_options(tmp_path_factory.mktemp("chromium"), scripts=True)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": "window.__alerts = []; window.alert = (m) => __alerts.push(String(m));"},
    )
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    yield driver
    driver.quit()


def page_of(run_cli: Cli, root: Path, *args: str) -> Path:
    page = root / "labeling.html"
    made = run_cli("eval", "calibrate", "label", "--html", page, *args, cwd=root)
    assert made.returncode == 0, made.stderr
    assert "label them in a browser" in made.stdout
    return page


def downloaded(folder: Path) -> Path:
    found = folder / label_page.DOWNLOAD
    deadline = time.monotonic() + 20
    while not found.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found.is_file(), f"nothing downloaded: {list(folder.iterdir())}"
    return found


def test_two_items_labeled_in_the_page_are_imported_and_counted_by_finalize(
    tmp_path: Path, run_cli: Cli, browser: Any, downloads: Path
) -> None:
    from selenium.webdriver.common.by import By

    root = recorded_suite(tmp_path, run_cli, fair, right=2, wrong=1)
    page = page_of(run_cli, root)
    browser.get(page.as_uri())
    sections = browser.find_elements(By.CSS_SELECTOR, "section.item")
    assert len(sections) == 3
    source = browser.page_source
    # Blind: the judge's verdict (its score and reason) is nowhere in the page.
    assert "0.90" not in source and "names the capital." not in source
    assert "The answer names the capital city." in sections[0].text
    assert "What is the capital of France?" in sections[0].text
    assert "Paris (0)." in sections[0].text and "Lyon. (0)" in sections[2].text
    sections[0].find_element(By.CSS_SELECTOR, "button[data-label=pass]").click()
    sections[2].find_element(By.CSS_SELECTOR, "button[data-label=fail]").click()
    assert browser.find_element(By.ID, "status").text == "2 of 3 labeled"
    browser.find_element(By.ID, "download").click()
    file = downloaded(downloads)
    given = [json.loads(line) for line in file.read_text("utf-8").splitlines()]
    assert [(g["case"], g["label"]) for g in given] == [("right-00", "pass"), ("wrong-00", "fail")]

    imported = run_cli("eval", "calibrate", "import", file, cwd=root)
    assert imported.returncode == 0, imported.stderr
    assert "right-00: you: pass. The judge passed it (score 0.90)" in imported.stdout
    assert "[agrees]" in imported.stdout and "imported 2 label(s)" in imported.stdout
    # The same labels file as the terminal's: byte for byte the line `label` writes.
    assert labels(root) == given
    done = run_cli("eval", "calibrate", "finalize", cwd=root)
    assert "2 label(s): 1 human pass, 1 human fail" in done.stdout
    # A second page holds only the item still unlabeled.
    browser.get(page_of(run_cli, root).as_uri())
    assert len(browser.find_elements(By.CSS_SELECTOR, "section.item")) == 1

    # Imported twice: refused, naming the file and line, and nothing is added.
    again = run_cli("eval", "calibrate", "import", file, cwd=root)
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert f"{label_page.DOWNLOAD}:1: item" in again.stderr and "labeled already" in again.stderr
    assert len(labels(root)) == 2
    file.unlink()


def test_import_refuses_an_unknown_or_changed_item_naming_the_line(
    tmp_path: Path, run_cli: Cli
) -> None:
    from harness.judge.labels import LABEL_SCHEMA

    root = recorded_suite(tmp_path, run_cli, fair, right=2, wrong=0)
    html = page_of(run_cli, root).read_text("utf-8")
    key, other = (part.split('"', 1)[0] for part in html.split('data-item="')[1:])
    setup = html.split('data-setup="', 1)[1].split('"', 1)[0]
    good = {"item": key, "case": "right-00", "rubric": "names-capital", "setup": setup,
            "label": "pass", "schema": LABEL_SCHEMA}  # fmt: skip
    first = dict(good, item=other, case="right-01")
    body = root / label_page.DOWNLOAD
    for line, error in (
        (dict(good, item="0" * 64), "is no recorded verdict"),
        (dict(good, case="wrong-00"), "not the item it was given on"),
        ({"item": key, "label": "maybe"}, "not a label"),
    ):
        # Line 1 is good: nothing is added unless every line is.
        body.write_text(json.dumps(first) + "\n" + json.dumps(line) + "\n", "utf-8")
        refused = run_cli("eval", "calibrate", "import", body, cwd=root)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert f"{label_page.DOWNLOAD}:2: " in refused.stderr and error in refused.stderr
    assert not (root / JUDGE / "labels.jsonl").exists()


def test_a_hostile_response_cannot_inject_markup_or_script(
    tmp_path: Path, run_cli: Cli, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    attack = f'Lyon.{INJECTED}" data-item="forged\n::set-output name=x::y'
    root = recorded_suite(tmp_path, run_cli, fair, right=0, wrong=1, wrong_answer=attack)
    page = page_of(run_cli, root)
    raw = page.read_text("utf-8")
    assert "<script>alert" not in raw and "<img" not in raw and "\n::set-output" not in raw
    assert "script-src 'sha256-" in raw and "default-src 'none'" in raw
    browser.get(page.as_uri())
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 1
    assert browser.execute_script("return window.__alerts") == []
    assert browser.title.startswith("zeroclaw-eval: label 1")
    [section] = browser.find_elements(By.CSS_SELECTOR, "section.item")
    assert INJECTED in section.text  # shown as text, whole
    assert section.get_attribute("data-item") != "forged"
