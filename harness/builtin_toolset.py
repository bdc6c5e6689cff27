"""The built-in deterministic tools (`echo`, `fail`, and file tools confined to the case
workspace), their names, and the tool names that are never allowed at all."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.tool_registry import Tool, ToolFailure
from harness.workspace import current_workspace, resolve_inside

MAX_READ_BYTES = 256 * 1024
MAX_LISTED = 500


def _echo(arguments: dict[str, Any]) -> str:
    message = arguments.get("message")
    return message if isinstance(message, str) else "(empty)"


def _fail(arguments: dict[str, Any]) -> str:
    reason = arguments.get("reason")
    raise ToolFailure(reason if isinstance(reason, str) and reason else "(no reason given)")


ECHO = Tool(
    name="echo",
    description="Echoes the input message back as output.",
    parameters={"type": "object", "properties": {"message": {"type": "string"}}},
    function=_echo,
)
FAIL = Tool(
    name="fail",
    description="Always fails with the given reason.",
    parameters={"type": "object", "properties": {"reason": {"type": "string"}}},
    function=_fail,
)


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


# Built once: the file tools find the running case's workspace when called, so the same
# Tool objects serve every case (each case still gets its own registry).
_BUILTIN_TOOLS: tuple[Tool, ...] = (ECHO, FAIL, *workspace_tools())

# The names, derived from the tools themselves: the one place they are spelled is above.
BUILTIN_TOOL_NAMES = frozenset(t.name for t in _BUILTIN_TOOLS)
WORKSPACE_TOOL_NAMES = frozenset(t.name for t in _BUILTIN_TOOLS[2:])
# What a live case may use unless `live_allowed_tools` says otherwise: every built-in tool
# but `fail`, which exists to script failures in replay.
LIVE_DEFAULT_TOOLS: tuple[str, ...] = tuple(t.name for t in _BUILTIN_TOOLS if t is not FAIL)


def builtin_tools() -> list[Tool]:
    """The deterministic tools every built-in agent registers: `echo`, `fail`, and the file
    tools confined to the running case's workspace."""
    return list(_BUILTIN_TOOLS)


# Tools that would let a model run commands on the machine. Never registered, never
# admitted: not in a case's `tools`, not in `live_allowed_tools`.
COMMAND_TOOL_NAMES = frozenset(
    {
        "shell",
        "bash",
        "sh",
        "zsh",
        "exec",
        "run_command",
        "execute_command",
        "terminal",
        "subprocess",
        "run_python",
        "python",
        "powershell",
        "cmd",
    }
)
COMMAND_TOOL_REFUSAL = (
    "a shell or command-running tool would let the model run anything on this machine; "
    "it is never available"
)

_COMMAND_NAME = re.compile(
    r"(^|_)(run|exec|execute|spawn)_(command|cmd|shell|code|python|bash|script|process)s?$"
)


def runs_commands(name: str) -> bool:
    """True for a tool name that asks for a shell or any command-running tool.

    Deliberately narrower than "contains exec": `execute_query` or `get_command_status`
    are a user's ordinary domain tools, not a way to run programs.
    """
    lowered = name.strip().lower()
    return (
        lowered in COMMAND_TOOL_NAMES
        or "shell" in lowered
        or _COMMAND_NAME.search(lowered) is not None
    )
