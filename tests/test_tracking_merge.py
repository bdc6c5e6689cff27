"""Sharding and `zeroclaw eval merge`: the shards of the repository's regression suite,
merged, are the unsharded run (timings aside); a missing, doubled or foreign shard is
refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Cli, echo_fixture, one_passing_run, restated, write_fixture

SHARDS = 3


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    """The repository's regression suite in a project of its own."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "evals" / "regression", root / "evals" / "regression")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\nsuite_dir = "evals/regression"\n',
        encoding="utf-8",
    )
    return root


def timeless(document: dict[str, Any]) -> dict[str, Any]:
    """The document without what differs between any two runs: timings."""
    for case in document["cases"]:
        case["duration_ms"] = 0
        if case.get("record"):
            case["record"]["duration_ms"] = 0
            for call in case["record"]["calls"]:
                call["duration_ms"] = 0
    document["duration_ms"] = 0
    return document


def run_shards(run_cli: Cli, root: Path, *args: str) -> list[str]:
    names = []
    for index in range(1, SHARDS + 1):
        name = f"shard-{index}.json"
        result = run_cli(
            "eval", "run", "--shard", f"{index}/{SHARDS}", "--json-report", name, *args,
            cwd=root,
        )  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        assert "PARTIAL run (--shard" in result.stdout
        names.append(name)
    return names


def test_merged_shards_are_the_unsharded_run(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    whole = run_cli("eval", "run", "--json-report", "whole.json", cwd=root)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    shards = run_shards(run_cli, root)
    sizes = [len(json.loads((root / s).read_text())["cases"]) for s in shards]
    assert sum(sizes) == 21 and all(sizes)
    merged = run_cli(
        "eval", "merge", *shards, "--json-report", "merged.json", "--junit-xml", "m.xml",
        cwd=root,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    assert "21/21 cases passed" in merged.stdout and "PARTIAL" not in merged.stdout
    expected = timeless(json.loads((root / "whole.json").read_text()))
    got = timeless(json.loads((root / "merged.json").read_text()))
    assert got["cases"] == expected["cases"]
    assert (got["totals"], got["exit_code"], got["partial"]) == (
        expected["totals"],
        expected["exit_code"],
        None,
    )
    assert got["receipt"]["selection"] is None and got["receipt"]["shard"] is None
    verified = run_cli("eval", "verify", "merged.json", cwd=root)
    assert verified.returncode == 0, verified.stderr  # the merge is the whole suite's


def test_a_failing_case_in_one_shard_fails_the_merge(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    data = json.loads((root / "evals/regression/single_echo_dispatch.json").read_text())
    data["expects"]["response_contains"] = ["never said"]
    write_fixture(root / "evals" / "regression", "single_echo_dispatch.json", data)
    shards = run_shards(run_cli, root)
    merged = run_cli("eval", "merge", *shards, cwd=root)
    assert merged.returncode == 1
    assert "20/21 cases passed" in merged.stdout


def test_a_missing_or_doubled_shard_is_refused(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    missing = run_cli("eval", "merge", shards[0], shards[2], cwd=root)
    assert missing.returncode == 1
    assert "zeroclaw eval: merge: shard(s) 2 of 3 missing" in missing.stderr
    doubled = run_cli("eval", "merge", *shards, shards[1], cwd=root)
    assert doubled.returncode == 1
    assert "shard 2/3 given more than once" in doubled.stderr


def test_shards_of_other_fixtures_or_runs_are_refused(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    write_fixture(root / "evals" / "regression", "zz_new.json", echo_fixture("newcomer"))
    result = run_cli("eval", "run", "--shard", "2/3", "--json-report", "other.json", cwd=root)
    assert result.returncode in (0, 1)
    foreign = run_cli("eval", "merge", shards[0], "other.json", shards[2], cwd=root)
    assert foreign.returncode == 1
    assert "the shards differ in fixtures (the suite's digest)" in foreign.stderr
    run_cli("eval", "run", "-k", "echo", "--json-report", "picked.json", cwd=root)
    picked = run_cli("eval", "merge", "picked.json", cwd=root)
    assert picked.returncode == 1
    assert "picked.json: not a shard's report" in picked.stderr


def test_merged_shards_keep_a_confirmed_regression_failing_the_gate(
    run_cli: Cli, suite_copy: Path
) -> None:
    from conftest import DROPPING_LOOP, write_module

    root = suite_copy
    kind = ("--suite-kind", "capability")
    written = run_cli("eval", "run", *kind, "--write-baseline", "base.json", cwd=root)
    assert written.returncode == 0, written.stderr
    module = write_module(root, DROPPING_LOOP)
    against = ("--agent", f"{module}:factory", "--baseline", "base.json", "--fail-on-regression")
    for index in range(1, SHARDS + 1):
        run_cli(
            "eval", "run", *kind, *against, "--shard", f"{index}/{SHARDS}",
            "--json-report", f"s{index}.json", cwd=root,
        )  # fmt: skip
    merged = run_cli(
        "eval", "merge", "s1.json", "s2.json", "s3.json", *kind, "--json-report", "m.json",
        cwd=root,
    )  # fmt: skip
    assert merged.returncode == 1  # the regressions still fail the merged gate
    assert "given more than once" not in merged.stderr and "differ" not in merged.stderr
    baseline = json.loads((root / "m.json").read_text())["baseline"]
    assert baseline["confirmed_regressions"]
    assert baseline["counts"]["removed"] == 0  # no shard saw another's cases as removed
    verified = run_cli("eval", "verify", "m.json", *kind, "--fail-on-regression", cwd=root)
    assert verified.returncode == 0, verified.stderr  # the merged comparison agrees with itself

    def stricter(document: dict[str, Any]) -> None:
        document["baseline"]["level"] = 0.01

    other = _tampered(root, "s2.json", stricter)
    refused = run_cli("eval", "merge", "s1.json", other, "s3.json", *kind, cwd=root)
    assert refused.returncode == 1
    assert "the shards differ in regression level" in refused.stderr
    run_cli("eval", "run", *kind, *against, "--json-report", "whole.json", cwd=root)
    whole = json.loads((root / "whole.json").read_text())["baseline"]
    # Every status counted, zeros too, as the unsharded comparison counts them.
    assert baseline["counts"] == whole["counts"]


def test_a_shard_that_holds_no_case_still_merges(run_cli: Cli, tmp_path: Path) -> None:
    from conftest import project

    root = project(tmp_path, {"a.json": echo_fixture("only")})
    names = []
    for index in range(1, 4):
        run_cli("eval", "run", "--shard", f"{index}/3", "--json-report", f"{index}.json", cwd=root)
        names.append(f"{index}.json")
    sizes = [len(json.loads((root / n).read_text())["cases"]) for n in names]
    assert sorted(sizes) == [0, 0, 1]
    merged = run_cli("eval", "merge", *names, cwd=root)
    assert merged.returncode == 0, merged.stderr


def test_verify_takes_the_bar_from_the_suite_not_the_report(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    data = json.loads((root / "evals/regression/single_echo_dispatch.json").read_text())
    data["expects"]["response_contains"] = ["never said"]
    write_fixture(root / "evals" / "regression", "single_echo_dispatch.json", data)
    run_cli("eval", "run", "--json-report", "r.json", cwd=root)
    document = json.loads((root / "r.json").read_text())
    document["kind"] = "capability"
    document["receipt"]["policy"] = {
        "kind": "capability",
        "gates_checks": False,
        "summary": "tracked, not gated: failed checks do not fail the run; run errors do",
    }
    document["exit_code"] = 0
    (root / "forged.json").write_text(json.dumps(document), encoding="utf-8")
    result = run_cli("eval", "verify", "forged.json", "--suite", "evals/regression", cwd=root)
    assert result.returncode == 1
    assert "judged as a capability suite, but this suite is regression" in result.stderr


def test_a_case_moved_into_another_shards_report_is_refused(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    first = json.loads((root / shards[0]).read_text())
    second = json.loads((root / shards[1]).read_text())
    second["cases"].append(first["cases"].pop())
    (root / shards[0]).write_text(json.dumps(first), encoding="utf-8")
    (root / shards[1]).write_text(json.dumps(second), encoding="utf-8")
    result = run_cli("eval", "merge", *shards, cwd=root)
    assert result.returncode == 1
    assert "is not of shard 2/3" in result.stderr


def _tampered(root: Path, name: str, change: Any) -> str:
    """A copy of the shard report `name`, changed by `change(document)`."""
    document = json.loads((root / name).read_text())
    change(document)
    copy = f"tampered-{name}"
    (root / copy).write_text(json.dumps(document))
    return copy


def _drop_first_case(document: dict[str, Any]) -> None:
    del document["cases"][0]
    restated(document)


def _case_twice(document: dict[str, Any]) -> None:
    document["cases"].append(document["cases"][0])
    restated(document)


def _flip_a_grade(document: dict[str, Any]) -> None:
    document["cases"][0]["grades"][0]["passed"] = False


def _other_commit(document: dict[str, Any]) -> None:
    document["receipt"]["git_commit"] = "0" * 40


def _repeated_replay(document: dict[str, Any]) -> None:
    document["receipt"]["repeat"] = 3


def _no_shard_count(document: dict[str, Any]) -> None:
    document["receipt"]["shard"] = [1, 0]
    document["receipt"]["selection"] = "--shard 1/0"


# What each tampering of the second shard's report (in tests below) is refused for.
TAMPERINGS = {
    "a case dropped, the rest restated": (_drop_first_case, "a case is missing from a shard's"),
    "a case listed twice": (_case_twice, "is in it twice"),
    "a verdict its grades do not give": (_flip_a_grade, "but its grades say not passed"),
    "a shard run on another commit": (_other_commit, "the shards differ in git commit"),
    "a shard count of 0": (_no_shard_count, "$.receipt.shard: 1/0 is no shard"),
    "a replay said to be repeated": (_repeated_replay, "$.receipt.repeat: 3, but a replay"),
}


def test_a_tampered_shard_report_is_refused_for_what_was_done_to_it(
    run_cli: Cli, suite_copy: Path
) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    honest = run_cli("eval", "merge", *shards, cwd=root)
    assert honest.returncode == 0, honest.stderr
    for what, (change, reason) in TAMPERINGS.items():
        second = _tampered(root, shards[1], change)
        result = run_cli("eval", "merge", shards[0], second, shards[2], cwd=root)
        assert result.returncode == 1, what
        assert reason in result.stderr, (what, result.stderr)
        assert "Traceback" not in result.stderr, what


def test_every_unreadable_report_is_named_and_none_crashes_the_merge(
    run_cli: Cli, suite_copy: Path
) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "cut.json").write_text((root / shards[1]).read_text()[:100])
    result = run_cli("eval", "merge", shards[0], "deep.json", "cut.json", cwd=root)
    assert result.returncode == 1
    assert "deep.json: not JSON that can be read: nested too deeply" in result.stderr
    assert "cut.json: not JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_shards_of_another_count_are_refused_for_that_alone(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    run_cli("eval", "run", "--shard", "1/4", "--json-report", "four.json", cwd=root)
    result = run_cli("eval", "merge", *shards, "four.json", cwd=root)
    assert result.returncode == 1
    assert "the shards differ in shard count" in result.stderr
    # Coverage is not told against a count the shards do not share.
    assert "given more than once" not in result.stderr


def test_the_merged_report_may_not_overwrite_a_shard_s(run_cli: Cli, suite_copy: Path) -> None:
    root = suite_copy
    shards = run_shards(run_cli, root)
    before = (root / shards[0]).read_bytes()
    result = run_cli("eval", "merge", *shards, "--json-report", f"./{shards[0]}", cwd=root)
    assert result.returncode == 2
    assert "names a shard's report being merged" in result.stderr
    assert (root / shards[0]).read_bytes() == before


@pytest.mark.parametrize("shard", ["1/1001", "1/100000000", "\u0661/\u0663"])
def test_a_shard_count_past_any_matrix_or_not_in_ascii_digits_is_a_usage_error(
    run_cli: Cli, suite_copy: Path, shard: str
) -> None:
    result = run_cli("eval", "run", "--shard", shard, cwd=suite_copy)
    assert result.returncode == 2
    assert "expected I/N with 1 <= I <= N <= 1000" in result.stderr


def _break_single_echo(root: Path) -> None:
    """Make the suite's `single_echo_dispatch` case fail its checks."""
    data = json.loads((root / "evals/regression/single_echo_dispatch.json").read_text())
    data["expects"]["response_contains"] = ["never said"]
    write_fixture(root / "evals" / "regression", "single_echo_dispatch.json", data)


def test_shards_judged_as_another_kind_than_the_suite_s_are_refused(
    run_cli: Cli, suite_copy: Path
) -> None:
    root = suite_copy
    _break_single_echo(root)
    shards = run_shards(run_cli, root, "--suite-kind", "capability")
    merged = run_cli("eval", "merge", *shards, cwd=root)
    assert merged.returncode == 1, merged.stdout
    assert (
        "$.kind: the report was judged as a capability suite, but this suite is regression"
    ) in merged.stderr
    assert merged.stderr.count("$.kind: ") == SHARDS
    # The suite's kind said where the merge runs is the merged gate's, as for a run.
    said = run_cli("eval", "merge", *shards, "--suite-kind", "capability", cwd=root)
    assert said.returncode == 0, said.stderr
    assert "20/21 cases passed" in said.stdout
    held = run_cli("eval", "merge", *shards, "--suite-kind", "regression", cwd=root)
    assert held.returncode == 1 and "$.kind: " in held.stderr


def test_a_failing_case_forged_green_in_its_shard_is_refused(
    run_cli: Cli, suite_copy: Path
) -> None:
    root = suite_copy
    _break_single_echo(root)
    shards = run_shards(run_cli, root)
    [holder] = [
        name
        for name in shards
        if any(not c["passed"] for c in json.loads((root / name).read_text())["cases"])
    ]

    def forge(document: dict[str, Any]) -> None:
        for case in document["cases"]:
            if not case["passed"]:  # its failing grade left in place
                case.update(passed=True, line=None, repeat=one_passing_run())
        restated(document)
        assert document["exit_code"] == 0

    forged = _tampered(root, holder, forge)
    result = run_cli("eval", "merge", *[forged if n == holder else n for n in shards], cwd=root)
    assert result.returncode == 1, result.stdout
    assert "].repeat: a replay runs each case once" in result.stderr
    assert "].repeat.requested: 1 run, but a repeat block is of 2 runs or more" in result.stderr
    assert "Traceback" not in result.stderr
