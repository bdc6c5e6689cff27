"""Picking cases: `-k` (pytest's keyword expressions), `--case`, a single fixture file as
`--suite`, `zeroclaw eval list`; an empty selection is an error, and a partial run is
marked partial in every report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import Cli, green_project, red_project

from harness.fixtures.selection import MAX_NESTING, SelectionError, keyword_matcher, shard_of


@pytest.mark.parametrize(
    ("expression", "names", "expected"),
    [
        ("echo", ("echo-case", "a_echo.json"), True),
        ("ECHO", ("echo-case", "a.json"), True),  # ignoring case, as pytest does
        ("a_echo", ("x", "a_echo.json"), True),  # the file name counts too
        ("echo and not slow", ("echo-slow", "x.json"), False),
        ("echo and not slow", ("echo-fast", "x.json"), True),
        ("hi or echo", ("hi", "b.json"), True),
        ("not (hi or echo)", ("hi", "b.json"), False),
        ("(a or b) and c", ("bc", "x.json"), True),
        ("(a or b) and c", ("ab", "x.json"), False),
        ("not not a", ("a", "x"), True),
    ],
)
def test_keyword_expressions(expression: str, names: tuple[str, str], expected: bool) -> None:
    assert keyword_matcher(expression)(names) is expected


@pytest.mark.parametrize("expression", ["", "and", "a and", "(a", "a)", "not", "a b", "a or or b"])
def test_a_malformed_expression_is_refused(expression: str) -> None:
    with pytest.raises(SelectionError):
        keyword_matcher(expression)


def test_an_expression_as_deep_as_allowed_still_matches() -> None:
    deepest = "(" * (MAX_NESTING - 1) + "not echo" + ")" * (MAX_NESTING - 1)
    assert keyword_matcher(deepest)(("hi", "b.json")) is True
    assert keyword_matcher(deepest)(("echo", "b.json")) is False
    nots = "not " * MAX_NESTING + "echo"  # an even number of them: as the word alone
    assert keyword_matcher(nots)(("echo", "a.json")) is True


@pytest.mark.parametrize(
    "expression",
    [
        "(" * (MAX_NESTING + 1) + "echo" + ")" * (MAX_NESTING + 1) + " or hi",
        "not " * (MAX_NESTING + 1) + "echo",
        "(not " * 300 + "echo" + ")" * 300,
    ],
)
def test_an_expression_nested_too_deeply_is_refused(expression: str) -> None:
    with pytest.raises(SelectionError, match=f"nested more than {MAX_NESTING} deep"):
        keyword_matcher(expression)


@pytest.mark.parametrize("action", ["run", "list"])
@pytest.mark.parametrize(
    "expression", ["(" * 300 + "echo" + ")" * 300, "not " * 1000 + "echo"], ids=["parens", "nots"]
)
def test_a_k_nested_too_deeply_is_a_usage_error(
    run_cli: Cli, tmp_path: Path, action: str, expression: str
) -> None:
    root = green_project(tmp_path)
    report = ["--json-report", "r.json"] if action == "run" else []
    code, out, err = run_cli("eval", action, "-k", expression, *report, cwd=root)
    assert (code, out) == (2, ""), err
    assert err.startswith("zeroclaw eval: -k '")
    assert err.endswith(
        f"': nested more than {MAX_NESTING} deep (parentheses and 'not'): write it flatter\n"
    )
    assert len(err) < 300  # the expression is shown clipped, not a thousand words long
    assert not (root / "r.json").exists()


def test_k_runs_the_matching_cases_and_marks_the_run_partial(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "-k", "echo", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [c["id"] for c in document["cases"]] == ["echo-case"]
    assert document["partial"] == "-k 'echo'"
    assert document["receipt"]["selection"] == "-k 'echo'"
    assert document["receipt"]["suite_sha256"]


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_k_filters_nothing_as_pytest_s(run_cli: Cli, tmp_path: Path, blank: str) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "-k", blank, "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [c["id"] for c in document["cases"]] == ["echo-case", "hi"]
    assert document.get("partial") is None  # the whole suite: its gate is the suite's


def test_every_report_says_a_selection_is_partial(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_cli(
        "eval", "run", "--case", "hi", "--junit-xml", "j.xml", "--html", "r.html",
        "--annotations", "github", cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "PARTIAL run (--case 'hi'): this gate is not the suite's" in result.stdout
    assert "::notice title=zeroclaw-eval[openai-agents]::partial run (--case 'hi')" in (
        result.stdout
    )
    properties = {p.get("name"): p.get("value") for p in ET.parse(root / "j.xml").iter("property")}
    assert properties["zeroclaw.partial"] == "--case 'hi'"
    assert 'id="partial"' in (root / "r.html").read_text(encoding="utf-8")


def test_an_empty_selection_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    nothing = run_cli("eval", "run", "-k", "no-such-case", cwd=root)
    assert nothing.returncode == 1
    assert "selects none of the suite's 2 case(s)" in nothing.stderr
    unknown = run_cli("eval", "run", "--case", "nope", cwd=root)
    assert unknown.returncode == 1 and "--case 'nope': no such case" in unknown.stderr
    bad = run_cli("eval", "run", "-k", "a and", cwd=root)
    assert bad.returncode == 2


def test_a_single_fixture_file_is_a_suite_of_one(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    result = run_cli(
        "eval", "run", "--suite", "evals/regression/b_wrong.json", "--format", "json", cwd=root
    )
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert [c["id"] for c in document["cases"]] == ["wrong-answer"]
    assert document["kind"] == "regression"


def test_list_shows_ids_files_and_kinds_of_checks(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    result = run_cli("eval", "list", cwd=root)
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [r[0] for r in rows] == ["echo-case", "wrong-answer", "under-scripted"]
    assert rows[1][1] == "evals/regression/b_wrong.json"
    assert "response_contains" in rows[1][2].split(",")
    picked = run_cli("eval", "list", "-k", "wrong", cwd=root)
    assert [line.split("\t")[0] for line in picked.stdout.splitlines()] == ["wrong-answer"]


def test_shards_are_stable_when_cases_come_and_go() -> None:
    ids = [f"case-{n}" for n in range(1000)]
    before = {i: shard_of(i, 4) for i in ids}
    assert set(before.values()) == {1, 2, 3, 4}
    counts = [list(before.values()).count(s) for s in (1, 2, 3, 4)]
    assert min(counts) > 200  # roughly even
    more = ids + [f"new-{n}" for n in range(50)]
    assert all(shard_of(i, 4) == before[i] for i in ids if i in more)


def test_the_summary_says_a_selection_is_partial(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "--shard", "1/2", "--summary", "s.md", cwd=root)
    assert result.returncode in (0, 1), result.stderr
    summary = (root / "s.md").read_text(encoding="utf-8")
    assert summary.splitlines()[0].endswith("— PARTIAL")
    assert "**Partial run** (<code>--shard 1/2</code>)" in summary


def test_a_single_fixture_file_is_a_partial_run(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_cli(
        "eval", "run", "--suite", "evals/regression/a_echo.json", "--format", "json", cwd=root
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["partial"] == "--suite evals/regression/a_echo.json"


def test_a_partial_run_is_never_a_point_of_the_history(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    picked = run_cli("eval", "run", "-k", "echo", "--history-dir", "h", cwd=root)
    assert "history entry not written: a partial run" in picked.stderr
    assert not list((root / "h").glob("*/*.json"))
    run_cli("eval", "run", "--history-dir", "h", cwd=root)
    assert len(list((root / "h").glob("*/*.json"))) == 1


def test_a_partial_run_is_never_a_line_of_the_history_file(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    picked = run_cli("eval", "run", "-k", "echo", "--history", "h.jsonl", cwd=root)
    assert picked.returncode == 0, picked.stderr
    assert "history entry not written: a partial run (-k 'echo')" in picked.stderr
    assert not (root / "h.jsonl").exists()
    run_cli("eval", "run", "--history", "h.jsonl", cwd=root)
    assert len((root / "h.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def test_a_partial_run_writes_no_baseline_and_says_why(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    picked = run_cli(
        "eval", "run", "-k", "echo", "--write-baseline", "b.json", "--json-report", "r.json",
        cwd=root,
    )  # fmt: skip
    assert picked.returncode == 1
    assert "b.json: baseline not written: a partial run (-k 'echo')" in picked.stderr
    assert not (root / "b.json").exists()
    assert (root / "r.json").exists()  # the other reports are written all the same
    whole = run_cli("eval", "run", "--write-baseline", "b.json", cwd=root)
    assert whole.returncode == 0, whole.stderr
    assert (root / "b.json").exists()


def test_a_shard_that_holds_no_case_says_why_it_is_not_green(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    empty = next(
        f"{i}/9"
        for i in range(1, 10)
        if run_cli("eval", "list", "--shard", f"{i}/9", cwd=root).stdout == ""
    )
    result = run_cli("eval", "run", "--shard", empty, cwd=root)
    assert result.returncode == 1
    assert "0/0 cases passed  (no case ran: a run of nothing is never green)" in result.stdout
    assert "✓" not in result.stdout
