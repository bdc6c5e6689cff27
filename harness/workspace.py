"""The case workspace: setup files, and file tools confined to it.

Every path a fixture or a model names is relative to the case's private workspace. An
absolute path, a `..` component, or a symlink that resolves outside is refused before
anything outside is touched; for a tool call that refusal is a failed call the model sees.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path, PurePosixPath
from typing import Any

from harness.tools import Tool, ToolFailure

MAX_READ_BYTES = 256 * 1024
MAX_LISTED = 500

# The running case's workspace (a getter: the directory is created on first use). The
# runner sets it per case; frameworks run tools in tasks that inherit it.
_CURRENT: ContextVar[Callable[[], Path] | None] = ContextVar("zeroclaw_workspace", default=None)


def set_current_workspace(getter: Callable[[], Path]) -> None:
    _CURRENT.set(getter)


def current_workspace() -> Path:
    getter = _CURRENT.get()
    if getter is None:
        raise ToolFailure("no case workspace: file tools run only inside a case")
    return getter()


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


def resolve_inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing anything that is or leads outside `root`."""
    problem = path_problem(relative)
    if problem is not None:
        raise ToolFailure(f"refused {relative!r}: {problem}")
    base = root.resolve()
    target = base / relative.replace("\\", "/")
    # resolve() follows every symlink on the way, including ones created by the model.
    resolved = target.resolve()
    if resolved != base and base not in resolved.parents:
        raise ToolFailure(f"refused {relative!r}: a symlink leads outside the workspace")
    return resolved


def write_setup_files(root: Path, files: dict[str, str]) -> None:
    """Write a case's `setup.workspace_files` (admission has already checked the paths)."""
    for relative, text in sorted(files.items()):
        target = resolve_inside(root, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def workspace_tools(root: Callable[[], Path] = current_workspace) -> list[Tool]:
    """`read_file`, `write_file` and `list_files` over the workspace `root()` returns
    (by default the running case's)."""

    def read_file(arguments: dict[str, Any]) -> str:
        path = resolve_inside(root(), _path_argument(arguments))
        if not path.is_file():
            raise ToolFailure(f"no such file: {arguments['path']}")
        data = path.read_bytes()[: MAX_READ_BYTES + 1]
        if len(data) > MAX_READ_BYTES:
            raise ToolFailure(f"{arguments['path']} is larger than {MAX_READ_BYTES} bytes")
        return data.decode("utf-8", errors="replace")

    def write_file(arguments: dict[str, Any]) -> str:
        relative = _path_argument(arguments)
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ToolFailure("content must be a string")
        path = resolve_inside(root(), relative)
        if path.is_dir():
            raise ToolFailure(f"{relative} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink planted after the check above must not redirect the write.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        return f"wrote {len(content.encode('utf-8'))} bytes to {relative}"

    def list_files(arguments: dict[str, Any]) -> str:
        relative = arguments.get("path") or "."
        if not isinstance(relative, str):
            raise ToolFailure("path must be a string")
        base = root().resolve()
        directory = base if relative in (".", "./") else resolve_inside(base, relative)
        if not directory.is_dir():
            raise ToolFailure(f"no such directory: {relative}")
        names = []
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.is_symlink():
                names.append(path.relative_to(base).as_posix())
            if len(names) >= MAX_LISTED:
                break
        return "\n".join(names) if names else "(no files)"

    return [
        Tool(
            "read_file",
            "Read a UTF-8 text file from the workspace.",
            _schema({"path": "Path relative to the workspace."}, ["path"]),
            read_file,
        ),
        Tool(
            "write_file",
            "Write a UTF-8 text file in the workspace, creating directories as needed.",
            _schema(
                {"path": "Path relative to the workspace.", "content": "The whole new text."},
                ["path", "content"],
            ),
            write_file,
        ),
        Tool(
            "list_files",
            "List the files under a workspace directory (default: the whole workspace).",
            _schema({"path": "Directory relative to the workspace."}, []),
            list_files,
        ),
    ]


WORKSPACE_TOOL_NAMES = frozenset({"read_file", "write_file", "list_files"})


def _path_argument(arguments: dict[str, Any]) -> str:
    path = arguments.get("path")
    if not isinstance(path, str):
        raise ToolFailure("path must be a string")
    return path


def _schema(properties: dict[str, str], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            name: {"type": "string", "description": text} for name, text in properties.items()
        },
        "required": required,
    }
