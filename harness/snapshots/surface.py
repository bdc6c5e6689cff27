"""What an agent shows its model, as the snapshot's text: per agent of the run (the agent
under test, a specialist handed to, an agent used as a tool), each distinct surface its
requests had, in the order first seen: the system messages (its instructions), the tools
offered sorted by name with their descriptions and JSON schemas, the output schema, the
model settings the framework sends (only when it sends any).

Nothing the script decides is in it (the messages of the conversation, the calls, the
answers), so a case's snapshot changes only when the agent's own definition does. The
text is stable (keys sorted, schemas indented) and reads as the agent's definition, so a
pull request that changes a prompt shows the change in its snapshot's diff."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec

from harness.io.text import clean_lines
from harness.model_boundary import ModelRequest, OutputSchema, ToolSchema

HEADER = (
    "# Request snapshot: what each agent of this case shows its model, whatever the script\n"
    "# answers. Checked by every replay run; written by `zeroclaw eval run --update-snapshots`.\n"
)
AGENT_UNDER_TEST = "(the agent under test)"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _tool(tool: ToolSchema) -> list[str]:
    kind = "output tool" if tool.output else "tool"
    return [
        f"--- {kind}: {tool.name}",
        f"description: {tool.description}" if tool.description else "description: (none)",
        f"parameters: {_json(tool.parameters)}",
    ]


def _output(schema: OutputSchema) -> list[str]:
    strict = ", strict" if schema.strict else ""
    return [f"--- output schema: {schema.name} ({schema.mode}{strict})", _json(schema.schema)]


def surface_lines(request: ModelRequest) -> tuple[str, ...]:
    """One request's surface: its instructions, tools, output schema and model settings, as
    lines."""
    lines: list[str] = []
    system = [m.content for m in request.messages if m.role == "system"]
    if system:
        for text in system:
            lines += ["--- instructions", text]
    else:
        lines.append("--- instructions: none")
    for tool in sorted(request.tools, key=lambda t: (t.name, t.output)):
        lines += _tool(tool)
    if request.output_schema is not None:
        lines += _output(request.output_schema)
    if request.settings:
        # Only when set: the snapshot of an agent on its provider's defaults has no such part.
        lines += ["--- model settings", _json(request.settings)]
    return tuple(lines)


_ENCODE = msgspec.json.Encoder().encode
# Rendered surfaces by their encoding: a suite's cases mostly share a few surfaces, and the
# JSON of their schemas, indented with sorted keys, is the check's one real cost.
_RENDERED: dict[bytes, tuple[str, ...]] = {}
_RENDERED_MAX = 256
_TEXTS: dict[tuple[tuple[str, tuple[tuple[str, ...], ...]], ...], str] = {}


def _lines_of(request: ModelRequest) -> tuple[bytes, tuple[str, ...]]:
    """`surface_lines(request)`, and the key it is known by."""
    system = [m.content for m in request.messages if m.role == "system"]
    try:
        key = _ENCODE((system, request.tools, request.output_schema, request.settings))
    except (TypeError, ValueError, OverflowError):  # a schema JSON cannot hold: no cache
        return b"", surface_lines(request)
    lines = _RENDERED.get(key)
    if lines is None:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        lines = _RENDERED[key] = surface_lines(request)
    return key, lines


def render(requests: Iterable[ModelRequest]) -> str:
    """The snapshot text of a run's requests; "" when the run made none."""
    surfaces: dict[str, list[tuple[str, ...]]] = {}
    keys: dict[str, set[bytes]] = {}
    for request in requests:
        agent = request.agent or AGENT_UNDER_TEST
        seen = surfaces.setdefault(agent, [])
        key, lines = _lines_of(request)
        known = keys.setdefault(agent, set())
        if key and key in known:
            continue
        known.add(key)
        if lines not in seen:
            seen.append(lines)
    if not surfaces:
        return ""
    # Cases of a suite mostly show the same surfaces: their text is made once. The tuples'
    # strings keep their hashes, so the key costs a few lookups, not a walk of the text.
    whole = tuple((agent, tuple(seen)) for agent, seen in surfaces.items())
    text = _TEXTS.get(whole)
    if text is None:
        if len(_TEXTS) >= _RENDERED_MAX:
            _TEXTS.clear()
        text = _TEXTS[whole] = _text(surfaces)
    return text


def _text(surfaces: dict[str, list[tuple[str, ...]]]) -> str:
    out = [HEADER]
    # The agent under test first, the others by name: the order requests came in may
    # depend on which answered first.
    for agent in sorted(surfaces, key=lambda a: (a != AGENT_UNDER_TEST, a)):
        seen = surfaces[agent]
        for index, lines in enumerate(seen, 1):
            more = f" (surface {index} of {len(seen)})" if len(seen) > 1 else ""
            out.append(f"=== agent: {agent}{more}")
            out.extend(lines)
            out.append("")
    # Made safe once, here: the file, the diff and every report show the same text.
    return clean_lines("\n".join(out).rstrip("\n") + "\n")
