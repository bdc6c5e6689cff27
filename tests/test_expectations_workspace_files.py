"""`harness.expectations.workspace_files`: the `workspace` expectation: admitted only when it
can fail, and graded against a real temporary workspace, never following a path out of it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    EMPTY_RUN,
    MODES,
    NO_ASSERTION,
    admit,
    base,
    expects,
    lines,
    live_trace,
    only,
    record,
    refusal,
    refuse_one,
    refused,
    setup,
    shape_at,
    with_expects,
    write_fixture,
)

from harness.expectations.base import Grade
from harness.expectations.registry import Expects, grade
from harness.expectations.workspace_files import WorkspaceExpects

NO_WORKSPACE = "no workspace to inspect"
ESCAPES = "path escapes workspace"
SYMLINK_ESCAPES = "path escapes workspace: a symlink leads outside the workspace"


def ws(**block: Any) -> Expects:
    return expects(workspace=block)


# --- admission: expects.workspace -----------------------------------------------------------------


@MODES
def test_empty_workspace_block_is_refused(tmp_path: Path, mode: str) -> None:
    for i, block in enumerate([{}, {"file_exists": [], "file_absent": [], "file_contains": {}}]):
        data = with_expects(mode, {"workspace": block})
        path = write_fixture(tmp_path, f"case{i}.json", data)
        assert lines(refusal(path, mode)) == [  # type: ignore[arg-type]
            f"{path}: $.expects.workspace: declares no checks: an empty block asserts nothing; "
            "add file_exists, file_absent or file_contains entries, or remove it"
        ]


def test_empty_workspace_block_alone_is_also_no_assertion(tmp_path: Path) -> None:
    path, found = refused(tmp_path, live_trace(expects={"workspace": {}}), "live")
    assert found == [
        f"{path}: $.expects: {NO_ASSERTION}",
        f"{path}: $.expects.workspace: declares no checks: an empty block asserts nothing; "
        "add file_exists, file_absent or file_contains entries, or remove it",
    ]


@MODES
def test_file_contains_with_no_needles_is_refused(tmp_path: Path, mode: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"workspace": {"file_contains": {"out.txt": ["a"], "b.md": []}}}),
        '$.expects.workspace.file_contains["b.md"]',
        "no needles: an empty list asserts nothing",
        mode,
    )


@MODES
@pytest.mark.parametrize("blank", ["", " ", "\n\t"])
def test_blank_needle_is_refused(tmp_path: Path, mode: str, blank: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"workspace": {"file_contains": {"out.txt": ["ok", blank]}}}),
        '$.expects.workspace.file_contains["out.txt"][1]',
        "empty or whitespace-only needle asserts nothing",
        mode,
    )


BAD_PATHS = [
    ("/etc/passwd", "refused: absolute path escapes the workspace"),
    ("../outside.txt", "refused: '..' escapes the workspace"),
    ("a/../../outside.txt", "refused: '..' escapes the workspace"),
    ("", "refused: empty path"),
    (" ", "refused: empty path"),
    (".", "names the workspace itself, not a file"),
]


@MODES
@pytest.mark.parametrize("family", ["file_exists", "file_absent"])
@pytest.mark.parametrize(("relative", "reason"), BAD_PATHS)
def test_workspace_list_path_outside_is_refused(
    tmp_path: Path, mode: str, family: str, relative: str, reason: str
) -> None:
    data = with_expects(mode, {"workspace": {family: ["fine.txt", relative]}})
    refuse_one(
        tmp_path,
        data,
        f"$.expects.workspace.{family}[1]",
        f"workspace path {relative!r} {reason}",
        mode,
    )


@MODES
@pytest.mark.parametrize(("relative", "reason"), BAD_PATHS)
def test_file_contains_path_outside_is_refused(
    tmp_path: Path, mode: str, relative: str, reason: str
) -> None:
    data = with_expects(mode, {"workspace": {"file_contains": {relative: ["root:"]}}})
    refuse_one(
        tmp_path,
        data,
        f"$.expects.workspace.file_contains[{json.dumps(relative)}]",
        f"workspace path {relative!r} {reason}",
        mode,
    )


@pytest.mark.parametrize(
    ("present", "other"),
    [
        ({"file_exists": ["out.txt"]}, "file_exists[0]"),
        ({"file_contains": {"out.txt": ["x"]}}, 'file_contains["out.txt"]'),
    ],
)
def test_file_absent_contradicting_a_file_expected_to_exist(
    tmp_path: Path, present: dict[str, Any], other: str
) -> None:
    block = {**present, "file_absent": ["./out.txt"]}
    refuse_one(
        tmp_path,
        live_trace(expects={"workspace": block}),
        "$.expects.workspace.file_absent[0]",
        f"'./out.txt' must also exist ({other}): no run can pass",
        "live",
    )


def test_workspace_unknown_key_and_wrong_types(tmp_path: Path) -> None:
    cases = [
        ({"file_exist": ["a"]}, "$.expects.workspace.file_exist", "unknown key (did you mean "),
        ({"file_exists": "a"}, "$.expects.workspace.file_exists", "Expected `array`, got `str`"),
        (
            {"file_contains": {"a.txt": ["x"], "b.txt": "x"}},
            '$.expects.workspace.file_contains["b.txt"]',
            "Expected `array`, got `str`",
        ),
        (
            {"file_contains": {"a.txt": ["x", 3]}},
            '$.expects.workspace.file_contains["a.txt"][1]',
            "Expected `str`, got `int`",
        ),
    ]
    for i, (block, field, message) in enumerate(cases):
        path = write_fixture(tmp_path, f"c{i}.json", live_trace(expects={"workspace": block}))
        [line] = lines(refusal(path, "live"))
        assert line.startswith(f"{path}: {field}: {message}"), line


@MODES
@pytest.mark.parametrize(
    "block",
    [
        {"file_exists": ["out.txt"]},
        {"file_exists": ["sub/dir/out.txt", "./b.txt"]},
        {"file_contains": {"out.txt": ["hello", "world"]}},
        {"file_exists": ["out.txt"], "file_absent": ["tmp.txt"]},
    ],
)
def test_workspace_block_alone_is_admitted(
    tmp_path: Path, mode: str, block: dict[str, Any]
) -> None:
    data = base(mode, expects={"workspace": block})
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.expects is not None
    ws = case.trace.expects.workspace
    assert isinstance(ws, WorkspaceExpects)
    assert ws.file_exists == block.get("file_exists", [])
    assert ws.file_contains == block.get("file_contains", {})


def test_file_absent_alone_passes_an_empty_run_and_is_refused(tmp_path: Path) -> None:
    data = live_trace(expects={"workspace": {"file_absent": ["secret.txt"]}})
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN, "live")


def test_file_absent_of_a_setup_file_fails_an_empty_run_and_is_admitted(tmp_path: Path) -> None:
    # The harness writes setup files whatever the agent does: the empty run still has them.
    data = live_trace(
        setup=setup(**{"draft.txt": "x"}), expects={"workspace": {"file_absent": ["draft.txt"]}}
    )
    admit(write_fixture(tmp_path, "case.json", data), "live")


@pytest.mark.parametrize(
    "block",
    [
        {"file_exists": ["notes.txt"]},
        {"file_contains": {"./notes.txt": ["hello"]}},
    ],
)
def test_check_a_setup_file_satisfies_alone_is_refused(
    tmp_path: Path, block: dict[str, Any]
) -> None:
    data = live_trace(setup=setup(**{"notes.txt": "hello"}), expects={"workspace": block})
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN, "live")


# --- grading: workspace: file_exists --------------------------------------------------------------


def test_file_exists_passes_for_a_regular_file(workspace: Path) -> None:
    (workspace / "out.txt").write_text("x", encoding="utf-8")
    g = only(grade(ws(file_exists=["out.txt"]), record(), workspace))
    assert shape_at(g) == (
        'file_exists("out.txt")',
        True,
        "present",
        "side_effect",
        "$.expects.workspace.file_exists[0]",
    )


def test_file_exists_in_a_sub_directory(workspace: Path) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "c.txt").write_text("", encoding="utf-8")
    grades = grade(ws(file_exists=["a/b/c.txt", "./a//b/c.txt"]), record(), workspace)
    assert [g.passed for g in grades] == [True, True]


def test_file_exists_fails_when_missing(workspace: Path) -> None:
    g = only(grade(ws(file_exists=["out.txt"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "missing")


def test_file_exists_fails_for_a_directory(workspace: Path) -> None:
    (workspace / "out").mkdir()
    g = only(grade(ws(file_exists=["out"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "present but not a regular file")


def test_file_exists_follows_a_symlink_that_stays_inside(workspace: Path) -> None:
    (workspace / "real.txt").write_text("x", encoding="utf-8")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert only(grade(ws(file_exists=["alias.txt"]), record(), workspace)).passed


# --- grading: workspace: file_absent --------------------------------------------------------------


def test_file_absent_passes_when_nothing_is_there(workspace: Path) -> None:
    g = only(grade(ws(file_absent=["secret.txt"]), record(), workspace))
    assert shape_at(g) == (
        'file_absent("secret.txt")',
        True,
        "absent",
        "side_effect",
        "$.expects.workspace.file_absent[0]",
    )


@pytest.mark.parametrize("kind", ["file", "directory", "dangling-symlink"])
def test_file_absent_fails_when_anything_is_there(workspace: Path, kind: str) -> None:
    target = workspace / "secret.txt"
    if kind == "file":
        target.write_text("x", encoding="utf-8")
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to("nowhere.txt")
    g = only(grade(ws(file_absent=["secret.txt"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "unexpectedly present")


# --- grading: workspace: file_contains ------------------------------------------------------------


def test_file_contains_one_grade_per_needle(workspace: Path) -> None:
    (workspace / "notes.md").write_text("alpha beta ☃\n", encoding="utf-8")
    grades = grade(ws(file_contains={"notes.md": ["alpha", "gamma", "☃"]}), record(), workspace)
    assert [shape_at(g) for g in grades] == [
        (
            'file_contains("notes.md", "alpha")',
            True,
            "found",
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][0]',
        ),
        (
            'file_contains("notes.md", "gamma")',
            False,
            'not found in file: "alpha beta ☃\\n"',
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][1]',
        ),
        (
            'file_contains("notes.md", "☃")',
            True,
            "found",
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][2]',
        ),
    ]


def test_file_contains_is_case_sensitive(workspace: Path) -> None:
    (workspace / "a.txt").write_text("Hello", encoding="utf-8")
    assert not only(grade(ws(file_contains={"a.txt": ["hello"]}), record(), workspace)).passed


def test_file_contains_identifier_path_uses_a_dot_segment(workspace: Path) -> None:
    (workspace / "README").write_text("ok", encoding="utf-8")
    g = only(grade(ws(file_contains={"README": ["ok"]}), record(), workspace))
    assert g.field == "$.expects.workspace.file_contains.README[0]"


@pytest.mark.parametrize(
    ("make", "detail"),
    [
        (lambda p: None, "cannot read file: missing"),
        (lambda p: p.mkdir(), "cannot read file: not a regular file"),
        (
            lambda p: p.write_bytes(b"ok \xff\xfe"),
            "cannot read file: not UTF-8 (invalid byte at offset 3)",
        ),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_file_contains_unreadable_fails_with_the_reason(
    workspace: Path, make: Any, detail: str
) -> None:
    make(workspace / "data")
    grades = grade(ws(file_contains={"data": ["ok", "x"]}), record(), workspace)
    assert [(g.passed, g.detail) for g in grades] == [(False, detail), (False, detail)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_file_contains_never_opens_a_fifo(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    g = only(grade(ws(file_contains={"pipe": ["x"]}), record(), workspace))
    assert (g.passed, g.detail) == (False, "cannot read file: not a regular file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_file_contains_permission_denied(workspace: Path) -> None:
    target = workspace / "locked.txt"
    target.write_text("secret", encoding="utf-8")
    target.chmod(0)
    try:
        g = only(grade(ws(file_contains={"locked.txt": ["secret"]}), record(), workspace))
    finally:
        target.chmod(0o600)
    assert (g.passed, g.detail) == (False, "cannot read file: Permission denied")


# --- grading: workspace: escapes and no workspace -------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a file the grader must never read."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    return directory


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_symlinked_directory_leading_out_fails_every_check(workspace: Path, outside: Path) -> None:
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    e = ws(
        file_exists=["link/secret.txt"],
        file_absent=["link/secret.txt"],
        file_contains={"link/secret.txt": ["TOP SECRET", "nothing"]},
    )
    grades = grade(e, record(), workspace)
    assert [(g.check, g.passed, g.detail) for g in grades] == [
        ('file_exists("link/secret.txt")', False, SYMLINK_ESCAPES),
        ('file_absent("link/secret.txt")', False, SYMLINK_ESCAPES),
        ('file_contains("link/secret.txt", "TOP SECRET")', False, SYMLINK_ESCAPES),
        ('file_contains("link/secret.txt", "nothing")', False, SYMLINK_ESCAPES),
    ]
    assert all("TOP SECRET" not in g.detail for g in grades)
    assert snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlinked_file_leading_out_is_never_read(workspace: Path, outside: Path) -> None:
    (workspace / "notes.txt").symlink_to(outside / "secret.txt")
    g = only(grade(ws(file_contains={"notes.txt": ["TOP"]}), record(), workspace))
    assert (g.passed, g.detail) == (False, SYMLINK_ESCAPES)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_symlink_to_an_outside_fifo_neither_blocks_nor_opens_it(
    workspace: Path, outside: Path
) -> None:
    # Opening the FIFO for reading would block until a writer came: the grade must be
    # decided from the path alone.
    os.mkfifo(outside / "pipe")
    (workspace / "pipe").symlink_to(outside / "pipe")
    result: list[Grade] = []
    worker = threading.Thread(
        target=lambda: result.extend(
            grade(ws(file_contains={"pipe": ["x"]}, file_exists=["pipe"]), record(), workspace)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "grading blocked on a FIFO outside the workspace"
    assert [(g.passed, g.detail) for g in result] == [(False, SYMLINK_ESCAPES)] * 2


@pytest.mark.parametrize("relative", ["../outside/secret.txt", "/etc/passwd", "", "a/../../x"])
def test_lexically_escaping_paths_fail_without_touching_anything(
    workspace: Path, outside: Path, relative: str
) -> None:
    # Admission refuses these; graded directly through the API they still fail closed.
    e = ws(file_exists=[relative], file_absent=[relative], file_contains={relative: ["TOP"]})
    grades = grade(e, record(), workspace)
    assert [(g.passed, g.detail) for g in grades] == [(False, ESCAPES)] * 3


def test_without_a_workspace_every_workspace_check_fails(outside: Path) -> None:
    e = ws(file_exists=["a"], file_absent=["b"], file_contains={"c": ["x", "y"]})
    grades = grade(e, record())
    assert [(g.check, g.passed, g.detail, g.category) for g in grades] == [
        ('file_exists("a")', False, NO_WORKSPACE, "side_effect"),
        ('file_absent("b")', False, NO_WORKSPACE, "side_effect"),
        ('file_contains("c", "x")', False, NO_WORKSPACE, "side_effect"),
        ('file_contains("c", "y")', False, NO_WORKSPACE, "side_effect"),
    ]
    assert [g.field for g in grades] == [
        "$.expects.workspace.file_exists[0]",
        "$.expects.workspace.file_absent[0]",
        "$.expects.workspace.file_contains.c[0]",
        "$.expects.workspace.file_contains.c[1]",
    ]
    assert grade(e, record(), None) == grades


def test_repeated_workspace_entries_get_unique_names(workspace: Path) -> None:
    (workspace / "a").write_text("x", encoding="utf-8")
    grades = grade(ws(file_exists=["a", "a"], file_contains={"a": ["x", "x"]}), record(), workspace)
    assert [g.check for g in grades] == [
        'file_exists("a")',
        'file_exists("a") #2',
        'file_contains("a", "x")',
        'file_contains("a", "x") #2',
    ]
    assert all(g.passed for g in grades)
