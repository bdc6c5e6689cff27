"""The case workspace: one private directory per case, its path safety, the file
operations the file tools do in it, and the read-only view graders inspect.

Every path a fixture or a model names is relative to the case's workspace. An absolute
path, a `..` component, or a symlink that resolves outside is refused before anything
outside is touched; for a tool call that refusal is a failed call the model sees.

The file tools never open a path by its name from the top: whatever a model (or code
running beside it) does to the tree between a check and an open, each operation starts
from a descriptor of the workspace directory and walks one component at a time without
following a symlink, and it touches only regular files with a single link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
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
            write_text_file(self.root, relative, text)

    def view(self) -> WorkspaceView:
        """What graders see: the directory as the run left it, read-only."""
        return DirectoryView(self.root)

    def remove(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)


# The running case's workspace. The runner sets it per case; frameworks run tools in tasks
# (and worker threads) that inherit it.
_CURRENT: ContextVar[Workspace | None] = ContextVar("zeroclaw_workspace", default=None)


def set_current_workspace(workspace: Workspace | None) -> None:
    _CURRENT.set(workspace)


def current_workspace() -> Path:
    workspace = _CURRENT.get()
    if workspace is None:
        raise ToolFailure("no case workspace: file tools run only inside a case")
    return workspace.root


# --- what the file tools do -----------------------------------------------------------------

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put where a file was expected must fail or open at once, never hang.
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def read_file_bytes(root: Path, relative: str, limit: int) -> bytes:
    """Up to `limit` bytes of the regular, singly linked file at `relative`."""
    *parents, name = _checked_parts(root, relative) or ["."]
    try:
        with _directory(root, relative, parents) as directory:
            fd = _open_plain(directory, name, os.O_RDONLY, relative)
            with os.fdopen(fd, "rb") as handle:
                return handle.read(limit)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise ToolFailure(f"no such file: {relative}") from None
    except OSError as exc:
        raise ToolFailure(f"cannot read {relative}: {_os_reason(exc)}") from None


def write_text_file(root: Path, relative: str, text: str) -> None:
    """Create or replace the file at `relative` with `text` (UTF-8), creating directories
    as needed; an existing file must be regular and singly linked."""
    data = text.encode("utf-8")  # before anything is truncated: unencodable text changes nothing
    parts = _checked_parts(root, relative)
    if not parts:
        raise ToolFailure(f"{relative} is a directory")
    *parents, name = parts
    try:
        with _directory(root, relative, parents, create=True) as directory:
            fd = _open_plain(directory, name, os.O_WRONLY | os.O_CREAT, relative)
            # Truncated only now: O_TRUNC would have emptied a file before it was checked.
            with os.fdopen(fd, "wb") as handle:
                handle.truncate(0)
                handle.write(data)
    except IsADirectoryError:
        raise ToolFailure(f"{relative} is a directory") from None
    except NotADirectoryError:
        raise ToolFailure(f"cannot write {relative}: a parent is not a directory") from None
    except OSError as exc:
        raise ToolFailure(f"cannot write {relative}: {_os_reason(exc)}") from None


def list_regular_files(root: Path, relative: str, limit: int) -> list[str]:
    """The first `limit` regular files below the directory `relative`, sorted, as paths
    relative to the workspace; symlinks are neither listed nor followed."""
    parts = _checked_parts(root, relative)
    try:
        with _directory(root, relative, parts) as directory:
            found = _files_below(directory)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"no such directory: {relative}") from None
    except OSError as exc:
        raise ToolFailure(f"cannot list {relative}: {_os_reason(exc)}") from None
    return ["/".join((*parts, *below)) for below in sorted(found)[:limit]]


def _checked_parts(root: Path, relative: str) -> list[str]:
    """The components of `relative`, once it passed the checks that give a refusal its
    reason. Only a reason: the walk that follows refuses every symlink on its own."""
    # A symlink loop or an unreadable directory has no reason to give here: the walk says.
    with contextlib.suppress(OSError, RuntimeError):
        resolve_inside(root, relative)
    return [part for part in normal_path(relative).split("/") if part not in ("", ".")]


@contextlib.contextmanager
def _directory(
    root: Path, relative: str, parts: Sequence[str], *, create: bool = False
) -> Iterator[int]:
    """A descriptor of the directory `parts` names below `root`."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = _descend(top, parts, relative, create=create)
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)


def _descend(start: int, parts: Sequence[str], relative: str, *, create: bool = False) -> int:
    """A new descriptor of the directory `parts` lead to from the directory `start`,
    opened one component at a time, each relative to the one before and never through a
    symlink: a component swapped for a symlink after any check cannot redirect the walk."""
    fd = os.dup(start)
    try:
        for depth, name in enumerate(parts, 1):
            if create:
                # Exists already (a directory, a file, a symlink): the open below decides.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            try:
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as exc:
                _refuse_a_symlink(fd, name, "/".join(parts[:depth]), relative, exc)
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_plain(directory: int, name: str, flags: int, relative: str) -> int:
    """`name` in `directory`, opened with `flags`, refused unless a regular file with one
    link; it is looked at before it is opened (opening a device can itself act) and after."""
    try:
        _refuse_unless_plain(os.stat(name, dir_fd=directory, follow_symlinks=False), relative)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    try:
        fd = os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=directory)
    except OSError as exc:
        _refuse_a_symlink(directory, name, relative, relative, exc)
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, swapped in after the look
            raise WorkspacePathError(f"refused {relative!r}: not a regular file") from None
        raise
    try:
        _refuse_unless_plain(os.fstat(fd), relative)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_unless_plain(status: os.stat_result, relative: str) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    if stat.S_ISLNK(status.st_mode):
        raise WorkspacePathError(_symlink_refusal(relative, relative))
    if not stat.S_ISREG(status.st_mode):
        raise WorkspacePathError(f"refused {relative!r}: not a regular file")
    if status.st_nlink > 1:
        # Another name for the same file may sit outside the workspace: writing or reading
        # it here would write or read that file.
        raise WorkspacePathError(
            f"refused {relative!r}: the file has {status.st_nlink} hard links, and the file "
            "tools touch only a file with one"
        )


def _refuse_a_symlink(directory: int, name: str, shown: str, relative: str, exc: OSError) -> None:
    """Raise the refusal when opening `name` failed because it is a symlink."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return
    if is_link:
        raise WorkspacePathError(_symlink_refusal(shown, relative)) from None


def _symlink_refusal(shown: str, relative: str) -> str:
    return f"refused {relative!r}: {shown!r} is a symlink, and the file tools never follow one"


def _files_below(top: int) -> list[tuple[str, ...]]:
    """Every regular file below the directory `top`, as components relative to it."""
    found: list[tuple[str, ...]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        below = pending.pop()
        try:
            # Walked again from `top` for each directory, so a wide or deep tree never holds
            # more than a few descriptors open at once.
            fd = _descend(top, below, "")
        except (OSError, ToolFailure):  # removed or swapped for a symlink while listed
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append((*below, entry.name))
                    elif entry.is_file(follow_symlinks=False):
                        found.append((*below, entry.name))
        finally:
            os.close(fd)
    return found


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


def restore_cwd(cwd: str) -> None:
    """Back in `cwd`, whatever the agent did to the working directory (if it still exists)."""
    try:
        if os.getcwd() == cwd:
            return
    except OSError:  # the agent removed the directory it moved to
        pass
    # The original may be gone too: then there is nothing to restore (the paths are absolute).
    with contextlib.suppress(OSError):
        os.chdir(cwd)
