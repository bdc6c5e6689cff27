"""Loading a suite (SPEC section 4, rules 8 and 9): enumeration, file checks, identity."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BUILTIN_SURFACE,
    SHARED_FIXTURES,
    Cli,
    echo_fixture,
    finishes_within,
    lines,
    project,
    replay_trace,
    run_process,
    write_fixture,
    write_suite,
)

from harness import run_suite
from harness.fixtures import schema as fixture_module
from harness.fixtures import suite as suite_module
from harness.fixtures.schema import fixture_hash
from harness.fixtures.suite import MAX_FIXTURE_BYTES, Case, fixture_paths, load_suite
from harness.io.problems import AdmissionError, Problem

NOT_ROOT = pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")


def load(directory: Path) -> list[Case]:
    return load_suite(directory, "replay", BUILTIN_SURFACE)


def refused(directory: Path) -> list[str]:
    """Every problem of a refused suite, as `file: field: message` lines."""
    with pytest.raises(AdmissionError) as caught:
        load(directory)
    assert str(caught.value) == "\n".join(lines(caught.value.problems))
    return lines(caught.value.problems)


# --- the suite directory -------------------------------------------------------------------


def test_missing_suite_directory(tmp_path: Path) -> None:
    missing = tmp_path / "evals" / "regression"
    assert refused(missing) == [f"{missing}: suite: suite directory does not exist"]


def test_file_instead_of_a_directory(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "regression", replay_trace())
    assert refused(path) == [f"{path}: suite: not a directory"]


@NOT_ROOT
def test_unreadable_suite_directory(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    write_fixture(suite, "a.json", replay_trace())
    suite.chmod(0)
    try:
        assert refused(suite) == [f"{suite}: suite: cannot read suite directory: Permission denied"]
    finally:
        suite.chmod(0o700)


def test_empty_directory(tmp_path: Path) -> None:
    assert refused(tmp_path) == [
        f"{tmp_path}: suite: no *.json fixtures: an empty suite tests nothing"
    ]


def test_directory_without_json_fixtures(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not a case")
    (tmp_path / "case.json.bak").write_text("{")
    (tmp_path / "case.jsonl").write_text("{")
    (tmp_path / ".json").write_text("{")
    (tmp_path / "sub").mkdir()
    write_fixture(tmp_path / "sub", "nested.json", replay_trace())
    assert refused(tmp_path) == [
        f"{tmp_path}: suite: no *.json fixtures: an empty suite tests nothing"
    ]


# --- entries that are not small regular files ---------------------------------------------


def test_directory_named_like_a_fixture(tmp_path: Path) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="a"))
    (tmp_path / "b.json").mkdir()
    assert refused(tmp_path) == [f"{tmp_path / 'b.json'}: $: not a regular file (directory)"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_named_like_a_fixture_is_refused_without_blocking(tmp_path: Path) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="a"))
    fifo = tmp_path / "b.json"
    os.mkfifo(fifo)
    try:

        def attempt() -> list[str]:
            try:
                load(tmp_path)
            except AdmissionError as exc:
                return lines(exc.problems)
            return []

        assert finishes_within(5, attempt) == [f"{fifo}: $: not a regular file (FIFO)"]
    finally:
        # If a reader did block in open(), a writer end lets it return; then it reads EOF.
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs unix sockets")
def test_socket_named_like_a_fixture(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            server.bind(str(path))
        except OSError as exc:  # e.g. a temporary path longer than sun_path allows
            pytest.skip(f"cannot bind a unix socket here: {exc}")
        assert refused(tmp_path) == [f"{path}: $: not a regular file (socket)"]
    finally:
        server.close()


def test_dangling_symlink_cannot_be_read(tmp_path: Path) -> None:
    link = tmp_path / "gone.json"
    link.symlink_to(tmp_path / "nowhere.json")
    assert refused(tmp_path) == [f"{link}: $: cannot stat: No such file or directory"]


@NOT_ROOT
def test_unreadable_fixture_file(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "a.json", replay_trace())
    path.chmod(0)
    try:
        assert refused(tmp_path) == [f"{path}: $: cannot read: Permission denied"]
    finally:
        path.chmod(0o600)


def _padded_to(size: int) -> bytes:
    raw = json.dumps(replay_trace()).encode("utf-8")
    assert len(raw) < size
    return raw + b" " * (size - len(raw))


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "big.json", _padded_to(MAX_FIXTURE_BYTES + 1))
    assert refused(tmp_path) == [
        f"{path}: $: {MAX_FIXTURE_BYTES + 1} bytes exceeds the {MAX_FIXTURE_BYTES}-byte limit"
    ]


def test_file_at_the_size_limit_is_admitted(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "big.json", _padded_to(MAX_FIXTURE_BYTES))
    [case] = load(tmp_path)
    assert case.path == path
    assert len(case.text) == MAX_FIXTURE_BYTES


# --- enumeration ----------------------------------------------------------------------------


def test_loading_is_not_recursive(tmp_path: Path) -> None:
    top = write_fixture(tmp_path, "top.json", replay_trace(model_name="top"))
    (tmp_path / "nested").mkdir()
    write_fixture(tmp_path / "nested", "inner.json", replay_trace(model_name="inner"))
    # A broken fixture below the suite would refuse the suite if it were read.
    write_fixture(tmp_path / "nested", "broken.json", "{")
    cases = load(tmp_path)
    assert [(c.id, c.path) for c in cases] == [("top", top)]


def test_cases_come_in_sorted_file_name_order(tmp_path: Path) -> None:
    for name in ["b.json", "10.json", "a.json", "9.json", "A.json"]:
        write_fixture(tmp_path, name, replay_trace(model_name=f"case-{name}"))
    cases = load(tmp_path)
    assert [c.path.name for c in cases] == ["10.json", "9.json", "A.json", "a.json", "b.json"]
    assert [c.id for c in cases] == [f"case-{c.path.name}" for c in cases]
    assert fixture_paths(tmp_path) == [c.path for c in cases]


def test_non_json_files_are_ignored(tmp_path: Path) -> None:
    good = write_fixture(tmp_path, "good.json", replay_trace())
    for name in ["notes.txt", "README.md", "good.json.bak", "case.jsonl", "CASE.JSON", ".json"]:
        (tmp_path / name).write_text("{ not json")
    cases = load(tmp_path)
    assert [c.path for c in cases] == [good]


def test_admitted_case_keeps_trace_path_and_text(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "a.json", replay_trace(id="stable"))
    [case] = load(tmp_path)
    assert case.id == "stable"
    assert case.path == path
    assert case.text == path.read_text(encoding="utf-8")
    assert case.trace.model_name == "echo-hello"


def test_shared_fixtures_load_as_one_suite() -> None:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} does not exist")
    expected = sorted(SHARED_FIXTURES.glob("*.json"))
    cases = load(SHARED_FIXTURES)
    assert [c.path for c in cases] == expected
    assert len({c.id for c in cases}) == len(cases)


# --- identity --------------------------------------------------------------------------------

MASK = "one case's result would mask the other's"


def test_duplicate_explicit_ids_name_both_paths(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(model_name="a", id="dup"))
    b = write_fixture(tmp_path, "b.json", replay_trace(model_name="b", id="dup"))
    assert refused(tmp_path) == [f"{b}: $.id: duplicate case id 'dup', also used by {a}: {MASK}"]


def test_duplicate_model_names_without_ids(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(model_name="same"))
    b = write_fixture(tmp_path, "b.json", replay_trace(model_name="same"))
    assert refused(tmp_path) == [
        f"{b}: $.model_name: duplicate case id 'same', also used by {a}: {MASK}"
    ]


def test_id_of_one_equals_model_name_of_another(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(model_name="shared"))
    b = write_fixture(tmp_path, "b.json", replay_trace(model_name="other", id="shared"))
    assert refused(tmp_path) == [f"{b}: $.id: duplicate case id 'shared', also used by {a}: {MASK}"]


def test_model_name_of_one_equals_id_of_another(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(model_name="other", id="shared"))
    b = write_fixture(tmp_path, "b.json", replay_trace(model_name="shared"))
    assert refused(tmp_path) == [
        f"{b}: $.model_name: duplicate case id 'shared', also used by {a}: {MASK}"
    ]


def test_same_model_name_with_distinct_ids_is_admitted(tmp_path: Path) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="same", id="one"))
    write_fixture(tmp_path, "b.json", replay_trace(model_name="same", id="two"))
    assert [c.id for c in load(tmp_path)] == ["one", "two"]


def test_three_fixtures_with_one_id_report_each_repeat(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(id="x"))
    b = write_fixture(tmp_path, "b.json", replay_trace(id="x"))
    c = write_fixture(tmp_path, "c.json", replay_trace(id="x"))
    assert refused(tmp_path) == [
        f"{b}: $.id: duplicate case id 'x', also used by {a}: {MASK}",
        f"{c}: $.id: duplicate case id 'x', also used by {a}: {MASK}",
    ]


@pytest.mark.parametrize(
    ("top_level", "field"),
    [
        ({"id": ""}, "$.id"),
        ({"id": "   "}, "$.id"),
        ({"model_name": ""}, "$.model_name"),
        ({"model_name": " \t"}, "$.model_name"),
    ],
)
def test_empty_case_id(tmp_path: Path, top_level: dict[str, str], field: str) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="fine"))
    bad = write_fixture(tmp_path, "b.json", replay_trace(**top_level))
    assert refused(tmp_path) == [f"{bad}: {field}: empty case id"]


def test_two_empty_ids_are_each_empty_not_duplicates(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(id=""))
    b = write_fixture(tmp_path, "b.json", replay_trace(id=""))
    assert refused(tmp_path) == [f"{a}: $.id: empty case id", f"{b}: $.id: empty case id"]


# --- every problem of every fixture is listed; nothing is admitted ---------------------------


def test_one_good_and_two_bad_fixtures_report_both_bad_ones(tmp_path: Path) -> None:
    bad_key = replay_trace(model_name="a")
    bad_key["expects"]["respose_contains"] = ["hello"]
    a = write_fixture(tmp_path, "a.json", bad_key)
    write_fixture(tmp_path, "b.json", replay_trace(model_name="b"))
    bad_rules = replay_trace(model_name="c", expects={"tools_used": [""], "min_tool_calls": 0})
    c = write_fixture(tmp_path, "c.json", bad_rules)
    with pytest.raises(AdmissionError) as caught:
        load(tmp_path)
    assert caught.value.problems == [
        Problem(
            str(a), "$.expects.respose_contains", "unknown key (did you mean response_contains?)"
        ),
        Problem(
            str(c), "$.expects.tools_used[0]", "empty or whitespace-only entry asserts nothing"
        ),
        Problem(
            str(c), "$.expects.min_tool_calls", "0 is vacuous: every run makes at least 0 calls"
        ),
    ]


def test_every_kind_of_bad_entry_is_listed_together(tmp_path: Path) -> None:
    (tmp_path / "a.json").mkdir()
    b = write_fixture(tmp_path, "b.json", b'{"model_name": "\xff"}')
    c = write_fixture(tmp_path, "c.json", "[1, 2]")
    write_fixture(tmp_path, "d.json", replay_trace(model_name="d"))
    e = write_fixture(
        tmp_path, "e.json", replay_trace(model_name="e", expects={"max_tool_calls": 0})
    )
    assert refused(tmp_path) == [
        f"{tmp_path / 'a.json'}: $: not a regular file (directory)",
        f"{b}: $: not UTF-8: invalid byte at offset 16",
        f"{c}: $: expected a JSON object, got list",
        f"{e}: $.expects: every check passes against an empty run (no response, no tool calls): "
        "add a check only a working agent satisfies",
    ]


def test_duplicate_ids_are_reported_with_other_problems(tmp_path: Path) -> None:
    a = write_fixture(tmp_path, "a.json", replay_trace(id="same"))
    b = write_fixture(tmp_path, "b.json", "{")
    c = write_fixture(tmp_path, "c.json", replay_trace(id="same"))
    assert refused(tmp_path) == [
        f"{b}: $: not valid JSON: Expecting property name enclosed in double quotes "
        "(line 1, column 2)",
        f"{c}: $.id: duplicate case id 'same', also used by {a}: {MASK}",
    ]


def test_live_mode_suite_refuses_scripted_steps(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "a.json", replay_trace())
    with pytest.raises(AdmissionError) as caught:
        load_suite(tmp_path, "live", BUILTIN_SURFACE)
    assert lines(caught.value.problems) == [
        f"{path}: $.turns[0].steps: a live case must not script model steps: the real model answers"
    ]


# --- names that would forge, hide or reorder what reports show --------------------------------

UNSAFE = "holds control or format characters"


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),
        ("\n", "\\x0a"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\u2028", "\\u2028"),
        ("\u202e", "\\u202e"),
        ("\u2067", "\\u2067"),
    ],
)
def test_fixture_file_name_with_a_control_character_is_refused_unread(
    tmp_path: Path, char: str, shown: str
) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="a"))
    write_fixture(tmp_path, f"b{char}.json", replay_trace(model_name="b"))
    with pytest.raises(AdmissionError) as caught:
        load(tmp_path)
    [problem] = caught.value.problems
    escaped_path = f"{tmp_path}{os.sep}b{shown}.json"
    assert (problem.file, problem.field) == (escaped_path, "$")
    assert problem.message == (
        f"file name 'b{shown}.json' {UNSAFE} ({shown}): they can forge, hide or reorder what "
        "reports and terminals show"
    )
    assert str(problem).isprintable()


def test_case_ids_equal_once_normalised_are_duplicates(tmp_path: Path) -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"  # both read "café"
    a = write_fixture(tmp_path, "a.json", replay_trace(id=composed))
    b = write_fixture(tmp_path, "b.json", replay_trace(id=decomposed))
    assert refused(tmp_path) == [
        f"{b}: $.id: duplicate case id 'cafe\\u0301' (the same as 'caf\\xe9' once normalised "
        f"to NFC), also used by {a}: {MASK}"
    ]


def test_case_ids_that_differ_beyond_normalisation_are_admitted(tmp_path: Path) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(id="caf\u00e9"))
    write_fixture(tmp_path, "b.json", replay_trace(id="cafe"))
    assert [c.id for c in load(tmp_path)] == ["caf\u00e9", "cafe"]


# --- through the command line: no hang, no silent default ---------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("run", "--annotations", "github"), {}),
        (("check",), {"GITHUB_ACTIONS": "true"}),
    ],
    ids=["run", "check"],
)
def test_fifo_fixture_with_annotations_is_refused_without_blocking(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    root = project(tmp_path, {"a.json": replay_trace(model_name="a")})
    os.mkfifo(root / "evals" / "regression" / "b.json")
    result = run_process("eval", *args, cwd=root, env=env, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "evals/regression/b.json: $: not a regular file (FIFO)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("action", ["run", "check"])
def test_empty_suite_flag_is_refused_not_the_default_suite(
    run_cli: Cli, tmp_path: Path, action: str
) -> None:
    root = project(tmp_path, {"a.json": replay_trace(model_name="a")})
    result = run_cli("eval", action, "--suite", "", cwd=root)
    assert result.returncode == 1
    assert result.stderr == (
        "zeroclaw eval: --suite: empty path: name the suite directory, or leave --suite out\n"
    )
    assert result.stdout == ""  # nothing admitted, nothing run


@pytest.mark.parametrize("action", ["run", "check", "list"])
def test_a_suite_holding_a_nul_is_refused_naming_where_it_was_given(
    run_cli: Cli, tmp_path: Path, action: str
) -> None:
    root = project(tmp_path, {"a.json": replay_trace(model_name="a")})
    given = run_cli("eval", action, "--suite", "evals/re\0gression", cwd=root)
    assert (given.returncode, given.stdout) == (2, "")
    assert given.stderr == "zeroclaw eval: --suite: holds a NUL character, which no path can\n"
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.zeroclaw.eval]\nsuite_dir = "evals/re\\u0000gression"\n', "utf-8")
    configured = run_cli("eval", action, cwd=root)
    assert (configured.returncode, configured.stdout) == (1, "")
    assert configured.stderr == (
        f"zeroclaw eval: {pyproject}: [tool.zeroclaw.eval]: suite_dir: holds a NUL character, "
        "which no path can\n"
    )


def test_a_suite_s_cases_keep_neither_text_nor_trace_and_read_them_again(tmp_path: Path) -> None:
    """A run keeps its cases to the end: each holds the digest of its bytes, and reads
    its file again when asked for its text or trace (the same trace admission parsed); a
    case built with its trace and text keeps them."""
    import dataclasses

    from harness.fixtures.schema import parse_fixture

    path = write_fixture(tmp_path, "a.json", replay_trace(id="stable"))
    [case] = load(tmp_path)
    assert not hasattr(case, "__dict__")  # slots only: a small object per case
    for field in ("trace", "text"):  # dropped: the slots underneath hold nothing
        assert suite_module.__dict__[f"_{field.upper()}_SLOT"].__get__(case) is None
    assert case.digest is not None and case.text == path.read_text("utf-8")
    assert case.trace == parse_fixture(case.text, str(path))
    moved = dataclasses.replace(case, path=tmp_path / "b.json")
    assert moved.id == "stable" and moved.trace == case.trace and moved.text == case.text
    assert moved.digest is None  # built with its trace and text: it holds them
    built = Case(case.trace, path, case.text)
    assert built == case and built.trace is built.trace  # held, not parsed again
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.text = ""  # type: ignore[misc]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("change", ["edited", "removed", "fifo"])
def test_a_fixture_changed_after_admission_is_that_case_s_run_error(
    tmp_path: Path, change: str, jobs: int
) -> None:
    # Admission vouched for the bytes it read: a case never runs others (in this process
    # or in a worker), whoever changed the file in between.
    from harness.agents.registry import resolve_agent
    from harness.pipeline import run_cases

    for name in ("a", "b", "c"):
        write_fixture(tmp_path, f"{name}.json", replay_trace(id=name))
    cases = load(tmp_path)
    target = tmp_path / "b.json"
    if change == "edited":
        target.write_text(target.read_text("utf-8").replace('"b"', '"b2"'), "utf-8")
    else:
        target.unlink()
    if change == "fifo":  # read at once as a fixture is: neither blocking nor taken for it
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs os.mkfifo")
        os.mkfifo(target)
    adapter = resolve_agent("openai-agents")
    report = run_cases(cases, adapter, suite="s", jobs=jobs, root=tmp_path)
    assert [c.passed for c in report.cases] == [True, False, True]
    error = report.cases[1].error
    said = "changed after it was admitted" if change == "edited" else "can no longer be read"
    assert error is not None and f"b.json: the {'' if change == 'edited' else 'admitted '}" in error
    if change == "fifo":
        assert error.endswith("can no longer be read: not a regular file (FIFO)")
    assert said in error and "internal error" not in error and report.cases[1].traceback is None
    assert int(report.exit_code()) == 1


def _with_a_float(model_name: str) -> dict[str, Any]:
    data = echo_fixture(model_name)
    # A float literal anywhere (here a scripted call's argument): msgspec spells floats
    # otherwise than `json`, so its canonical hash is made from the text, as before.
    data["turns"][0]["steps"][0]["response"]["tool_calls"][0]["arguments"]["weight"] = 0.5
    return data


def test_admission_makes_each_case_s_canonical_hash_as_it_parses(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", {"a.json": echo_fixture("a"), "b.json": _with_a_float("b")})
    a, b = load(suite)
    texts = [(suite / name).read_text("utf-8") for name in ("a.json", "b.json")]
    assert a.canonical is not None and a.canonical.hex() == fixture_hash(texts[0])
    assert b.canonical is None  # made from its text when asked for
    assert [a.fixture_sha256, b.fixture_sha256] == [fixture_hash(t) for t in texts]
    built = Case(a.trace, a.path, a.text)  # built from its text: nothing made yet
    assert built.canonical is None and built.fixture_sha256 == a.fixture_sha256


def test_a_run_hashes_no_admitted_fixture_again(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A third decoding of every fixture (after admission's and the run's) was 8 us a case:
    # only the one holding a float is hashed from its text, for every report and receipt.
    root = project(tmp_path, {"a.json": echo_fixture("a"), "b.json": _with_a_float("b")})
    suite = root / "evals" / "regression"
    texts = [(suite / name).read_text("utf-8") for name in ("a.json", "b.json")]
    hashes = [fixture_hash(t) for t in texts]
    hashed: list[str | bytes] = []
    real = fixture_module.canonical_json

    def counted_canonical(text: str | bytes) -> bytes | None:
        hashed.append(text)
        return real(text)

    # Every hash made from a text goes through this, whichever module asks.
    monkeypatch.setattr(fixture_module, "canonical_json", counted_canonical)
    report = run_suite(suite, agent="openai-agents", root=root)
    assert report.exit_code() == 0
    assert [c.fixture_sha256 for c in report.cases] == hashes
    assert hashed == [texts[1]]
    hashed.clear()
    # A selection's receipt names the whole suite by every fixture's path and hash.
    result = run_cli("eval", "run", "--case", "a", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [c["fixture_sha256"] for c in document["cases"]] == hashes[:1]
    whole = b"".join(
        f"evals/regression/{name}".encode() + b"\0" + sha256.encode() + b"\n"
        for name, sha256 in zip(("a.json", "b.json"), hashes, strict=True)
    )
    assert document["receipt"]["suite_sha256"] == hashlib.sha256(whole).hexdigest()
    assert hashed == [texts[1]]


def test_a_run_holds_the_traces_of_the_cases_in_flight_not_of_every_case_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every trace read again stayed held until 256 more were: a hundred objects or so
    # each, which the collector walked on and on (a third of what it spent in a worker).
    import functools
    import gc

    from harness.fixtures.schema import LlmTrace

    fresh = functools.lru_cache(maxsize=16)(suite_module._reread.__wrapped__)
    monkeypatch.setattr(suite_module, "_reread", fresh)  # as a process starts with it
    for n in range(40):
        write_fixture(tmp_path, f"{n:02}.json", replay_trace(id=f"held-{n}"))
    report = run_suite(tmp_path, agent="openai-agents", root=tmp_path)
    assert report.exit_code() == 0 and len(report.cases) == 40
    gc.collect()
    ids = {f"held-{n}" for n in range(40)}
    held = sum(isinstance(o, LlmTrace) and o.case_id in ids for o in gc.get_objects())
    assert 0 < held <= 16
