"""The built-in deterministic tools (`echo`, `fail`, and file tools confined to the case
workspace), their names, and the tool names that are never allowed at all."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.tool_registry import Tool, ToolFailure
from harness.workspace import (
    current_workspace,
    list_regular_files,
    read_file_bytes,
    write_text_file,
)

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
        relative = _path_argument(arguments)
        data = read_file_bytes(root(), relative, MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise ToolFailure(f"{relative} is larger than {MAX_READ_BYTES} bytes")
        return data.decode("utf-8", errors="replace")

    def write_file(arguments: dict[str, Any]) -> str:
        relative = _path_argument(arguments)
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ToolFailure("content must be a string")
        write_text_file(root(), relative, content)
        return f"wrote {len(content.encode('utf-8'))} bytes to {relative}"

    def list_files(arguments: dict[str, Any]) -> str:
        relative = arguments.get("path") or "."
        if not isinstance(relative, str):
            raise ToolFailure("path must be a string")
        names = list_regular_files(root(), relative, MAX_LISTED)
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
# admitted: not in a case's `tools`, not in `live_allowed_tools`. The rule is written here
# once; the refusal states it, and the documentation repeats that statement word for word.
# It errs toward refusing: `exec_sql` or `executive_summary` is refused with `python_exec`,
# because no list of ordinary names can tell a query tool from a way to run programs.
_COMMAND_NAMES = ("sh",)
_COMMAND_FRAGMENTS = (
    "exec",
    "command",
    "cmd",
    "shell",
    "bash",
    "zsh",
    "spawn",
    "subprocess",
    "terminal",
    "python",
    "runcode",
    "runscript",
    "runprocess",
)
# Removed before matching, so `run-code`, `Run Code` and `runCode` are all `runcode`.
_SEPARATORS = re.compile(r"[\s_.\-]+")


def _quoted(words: tuple[str, ...]) -> str:
    quoted = [f"`{word}`" for word in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


COMMAND_TOOL_RULE = (
    "a tool name is refused when, ignoring case and any `_`, `-`, `.` or whitespace in it, "
    f"it is {_quoted(_COMMAND_NAMES)} or contains {_quoted(_COMMAND_FRAGMENTS)}"
)
COMMAND_TOOL_REFUSAL = (
    "a shell or command-running tool would let the model run anything on this machine; "
    f"it is never available ({COMMAND_TOOL_RULE})"
)


def runs_commands(name: str) -> bool:
    """True for a tool name that COMMAND_TOOL_RULE refuses."""
    squeezed = _SEPARATORS.sub("", name).lower()
    return squeezed in _COMMAND_NAMES or any(word in squeezed for word in _COMMAND_FRAGMENTS)
