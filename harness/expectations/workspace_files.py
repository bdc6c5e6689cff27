"""Expectations on the files a run leaves in (or keeps out of) its case workspace."""

from __future__ import annotations

from collections.abc import Iterator

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, Strict, clip, q
from harness.io.json_paths import child_path
from harness.io.validation import Fault
from harness.workspace import NO_WORKSPACE, Unreadable, normal_path, path_problem

AT = f"{EXPECTS}.workspace"


class WorkspaceExpects(Strict):
    """Files the run must leave in (or keep out of) the case workspace; paths relative to it."""

    file_exists: list[str] = []
    file_absent: list[str] = []
    file_contains: dict[str, list[str]] = {}


def workspace_path_problem(relative: str) -> str | None:
    """Why `relative` cannot name a file of the workspace (setup files use this too)."""
    problem = path_problem(relative)
    if problem is not None:
        return f"workspace path {relative!r} refused: {problem}"
    if normal_path(relative) == ".":
        return f"workspace path {relative!r} names the workspace itself, not a file"
    return None


class WorkspaceFiles(Kind):
    """`workspace`: `file_exists`, `file_absent`, `file_contains` (path -> needles)."""

    order = 50
    workspace: WorkspaceExpects | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        ws = self.workspace
        if ws is None:
            return
        if not (ws.file_exists or ws.file_absent or ws.file_contains):
            yield Fault(
                AT,
                "declares no checks: an empty block asserts nothing; add file_exists, "
                "file_absent or file_contains entries, or remove it",
            )
        present: dict[str, str] = {}  # normalised path -> the entry that expects a file there
        for i, relative in enumerate(ws.file_exists):
            problem = workspace_path_problem(relative)
            if problem is not None:
                yield Fault(f"{AT}.file_exists[{i}]", problem)
            else:
                present.setdefault(normal_path(relative), f"file_exists[{i}]")
        for relative, needles in ws.file_contains.items():
            where = child_path(f"{AT}.file_contains", relative)
            problem = workspace_path_problem(relative)
            if problem is not None:
                yield Fault(where, problem)
            else:
                present.setdefault(normal_path(relative), child_path("file_contains", relative))
            if not needles:
                yield Fault(where, "no needles: an empty list asserts nothing")
            for j, needle in enumerate(needles):
                if not needle.strip():
                    yield Fault(f"{where}[{j}]", "empty or whitespace-only needle asserts nothing")
        for i, relative in enumerate(ws.file_absent):
            where = f"{AT}.file_absent[{i}]"
            problem = workspace_path_problem(relative)
            if problem is not None:
                yield Fault(where, problem)
                continue
            other = present.get(normal_path(relative))
            if other is not None:
                yield Fault(where, f"{relative!r} must also exist ({other}): no run can pass")

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        ws = self.workspace
        if ws is None:
            return
        view = evidence.workspace
        for i, relative in enumerate(ws.file_exists):
            check, field = f"file_exists({q(relative)})", f"{AT}.file_exists[{i}]"
            kind = view.kind(relative) if view is not None else Unreadable(NO_WORKSPACE)
            if isinstance(kind, Unreadable):
                yield Grade(check, False, kind.reason, "side_effect", field)
            elif kind == "file":
                yield Grade(check, True, "present", "side_effect", field)
            elif kind == "other":
                yield Grade(check, False, "present but not a regular file", "side_effect", field)
            else:
                yield Grade(check, False, "missing", "side_effect", field)
        for i, relative in enumerate(ws.file_absent):
            check, field = f"file_absent({q(relative)})", f"{AT}.file_absent[{i}]"
            there = view.present(relative) if view is not None else Unreadable(NO_WORKSPACE)
            if isinstance(there, Unreadable):
                yield Grade(check, False, there.reason, "side_effect", field)
                continue
            detail = "unexpectedly present" if there else "absent"
            yield Grade(check, not there, detail, "side_effect", field)
        for relative, needles in ws.file_contains.items():
            where = child_path(f"{AT}.file_contains", relative)
            text = view.read_text(relative) if view is not None else Unreadable(NO_WORKSPACE)
            for j, needle in enumerate(needles):
                check = f"file_contains({q(relative)}, {q(needle)})"
                field = f"{where}[{j}]"
                if isinstance(text, Unreadable):
                    yield Grade(check, False, text.reason, "side_effect", field)
                    continue
                ok = needle in text
                detail = "found" if ok else f"not found in file: {q(clip(text))}"
                yield Grade(check, ok, detail, "side_effect", field)
