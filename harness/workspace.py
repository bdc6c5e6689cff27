"""The case workspace: one private directory per case, its path safety, and the read-only
view graders inspect.

Every path a fixture or a model names is relative to the case's workspace. An absolute
path, a `..` component, or a symlink that resolves outside is refused before anything
outside is touched; for a tool call that refusal is a failed call the model sees.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

import msgspec

from harness.tool_registry import ToolFailure

# A file graded by `file_contains` is read up to this size; a larger one fails the check.
MAX_INSPECTED_BYTES = 4 * 1024 * 1024
NO_WORKSPACE = "no workspace to inspect"


class WorkspacePathError(ToolFailure):
    """A path names something outside the workspace; a tool reports it as its failure."""


def path_problem(relative: str) -> str | None:
    """Why `relative` cannot name a file inside a workspace, or None when it can."""
    if not relative.strip():
        return "empty path"
    if "\x00" in relative:
        return "path contains a NUL character"
    normalized = relative.replace("\\", "/")
    if normalized.startswith("/") or PurePosixPath(normalized).is_absolute():
        return "absolute path escapes the workspace"
    if len(normalized) > 1 and normalized[1] == ":":
        return "drive path escapes the workspace"
    if any(part == ".." for part in normalized.split("/")):
        return "'..' escapes the workspace"
    return None


def normal_path(relative: str) -> str:
    """`relative` as the workspace sees it: `/`-separated, without `.` or repeated `/`."""
    return PurePosixPath(relative.replace("\\", "/")).as_posix()


def resolve_inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing anything that is or leads outside `root`."""
    problem = path_problem(relative)
    if problem is not None:
        raise WorkspacePathError(f"refused {relative!r}: {problem}")
    base = root.resolve()
    target = base / relative.replace("\\", "/")
    # resolve() follows every symlink on the way, including ones created by the model.
    resolved = target.resolve()
    if resolved != base and base not in resolved.parents:
        raise WorkspacePathError(f"refused {relative!r}: a symlink leads outside the workspace")
    return resolved


class Workspace:
    """The private temporary directory of one case: created on first use (most replay
    cases never touch it), removed by the runner once the case is graded."""

    def __init__(self) -> None:
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="zeroclaw-eval-"))
        return self._root

    def write_setup_files(self, files: Mapping[str, str]) -> None:
        """Write a case's `setup.workspace_files` (admission has already checked the paths)."""
        for relative, text in sorted(files.items()):
            target = resolve_inside(self.root, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def view(self) -> WorkspaceView:
        """What graders see: the directory as the run left it, read-only."""
        return DirectoryView(self.root)

    def remove(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)


# The running case's workspace. The runner sets it per case; frameworks run tools in tasks
# (and worker threads) that inherit it.
_CURRENT: ContextVar[Workspace | None] = ContextVar("zeroclaw_workspace", default=None)


def set_current_workspace(workspace: Workspace) -> None:
    _CURRENT.set(workspace)


def current_workspace() -> Path:
    workspace = _CURRENT.get()
    if workspace is None:
        raise ToolFailure("no case workspace: file tools run only inside a case")
    return workspace.root


# --- what graders see ----------------------------------------------------------------------


class Unreadable(msgspec.Struct, frozen=True):
    """Why a path could not be inspected; a check on it fails with this reason."""

    reason: str


EntryKind = Literal["file", "other", "missing"]


class WorkspaceView(Protocol):
    """A read-only look at a case workspace, for the workspace checks."""

    def kind(self, relative: str) -> EntryKind | Unreadable:
        """A regular file, something else (a directory…), or nothing, at `relative`."""
        ...

    def present(self, relative: str) -> bool | Unreadable:
        """Whether anything, a dangling symlink included, has the name `relative`."""
        ...

    def read_text(self, relative: str) -> str | Unreadable:
        """The UTF-8 text of the regular file at `relative`, up to MAX_INSPECTED_BYTES."""
        ...


class DirectoryView:
    """A workspace directory on disk, as the run left it."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _locate(self, relative: str) -> Path | Unreadable:
        if path_problem(relative) is not None:
            return Unreadable("path escapes workspace")
        try:
            return resolve_inside(self._root, relative)
        except WorkspacePathError:
            return Unreadable("path escapes workspace: a symlink leads outside the workspace")
        except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable directory
            return Unreadable(f"cannot inspect path: {_os_reason(exc)}")

    def kind(self, relative: str) -> EntryKind | Unreadable:
        found = self._locate(relative)
        if isinstance(found, Unreadable):
            return found
        if found.is_file():
            return "file"
        return "other" if found.exists() else "missing"

    def present(self, relative: str) -> bool | Unreadable:
        found = self._locate(relative)
        if isinstance(found, Unreadable):
            return found
        # A dangling symlink is something, too: check the name itself, not only its target.
        return os.path.lexists(found) or os.path.lexists(self._root / relative.replace("\\", "/"))

    def read_text(self, relative: str) -> str | Unreadable:
        found = self._locate(relative)
        if isinstance(found, Unreadable):
            return found
        if not found.exists():
            return Unreadable("cannot read file: missing")
        if not found.is_file():  # never open a FIFO or a device: it could block or never end
            return Unreadable("cannot read file: not a regular file")
        try:
            with open(found, "rb") as handle:
                data = handle.read(MAX_INSPECTED_BYTES + 1)
        except OSError as exc:
            return Unreadable(f"cannot read file: {_os_reason(exc)}")
        if len(data) > MAX_INSPECTED_BYTES:
            return Unreadable(f"cannot read file: larger than {MAX_INSPECTED_BYTES} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Unreadable(f"cannot read file: not UTF-8 (invalid byte at offset {exc.start})")


class FilesView:
    """A workspace that holds exactly `files` (relative path to text), in memory: the
    workspace of a run that did nothing but have its setup files written."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = {
            normal_path(path): text for path, text in files.items() if path_problem(path) is None
        }
        self._directories = {
            parent.as_posix() for path in self._files for parent in PurePosixPath(path).parents
        }

    def kind(self, relative: str) -> EntryKind | Unreadable:
        if path_problem(relative) is not None:
            return Unreadable("path escapes workspace")
        normal = normal_path(relative)
        if normal in self._files:
            return "file"
        # The workspace itself always exists, as a directory, even holding nothing.
        return "other" if normal in self._directories or normal == "." else "missing"

    def present(self, relative: str) -> bool | Unreadable:
        kind = self.kind(relative)
        return kind if isinstance(kind, Unreadable) else kind != "missing"

    def read_text(self, relative: str) -> str | Unreadable:
        kind = self.kind(relative)
        if isinstance(kind, Unreadable):
            return kind
        if kind == "missing":
            return Unreadable("cannot read file: missing")
        if kind == "other":
            return Unreadable("cannot read file: not a regular file")
        return self._files[normal_path(relative)]


def _os_reason(exc: BaseException) -> str:
    # The reason without the absolute path: details go into reports, which stay portable.
    return getattr(exc, "strerror", None) or type(exc).__name__
