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
import operator
from collections.abc import Iterable
from typing import Any

import msgspec

from harness.errors import HarnessError
from harness.io.text import clean_lines
from harness.model_boundary import ModelRequest, OutputSchema, ToolSchema

HEADER = (
    "# Request snapshot: what each agent of this case shows its model, whatever the script\n"
    "# answers. Checked by every replay run; written by `zeroclaw eval run --update-snapshots`.\n"
)
AGENT_UNDER_TEST = "(the agent under test)"


class Unshowable(HarnessError):
    """A part of a request that no JSON can show (a mapping whose keys mix types, a cycle,
    nesting past the recursion limit): the agent's doing, said as the case's run error, as
    its provider would refuse the request."""


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        raise Unshowable(
            f"the agent's request to its model cannot be shown as JSON: {what}: "
            f"{type(exc).__name__}: {exc}"
        ) from None


def _tool(tool: ToolSchema) -> list[str]:
    kind = "output tool" if tool.output else "tool"
    return [
        f"--- {kind}: {tool.name}",
        f"description: {tool.description}" if tool.description else "description: (none)",
        f"parameters: {_json(tool.parameters, f'{kind} {tool.name!r}: parameters')}",
    ]


def _output(schema: OutputSchema) -> list[str]:
    strict = ", strict" if schema.strict else ""
    shown = _json(schema.schema, f"output schema {schema.name!r}")
    return [f"--- output schema: {schema.name} ({schema.mode}{strict})", shown]


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
        lines += ["--- model settings", _json(request.settings, "model settings")]
    return tuple(lines)


_ENCODE = msgspec.json.Encoder().encode
# Rendered surfaces by their encoding: a suite's cases mostly share a few surfaces, and the
# JSON of their schemas, indented with sorted keys, is the check's one real cost.
_RENDERED: dict[bytes, tuple[str, ...]] = {}
_RENDERED_MAX = 256
# Snapshot texts by the distinct surfaces of a run (each agent's, by their encoding), in the
# order first seen: what the text is made of, so a run showing what an earlier one showed
# has its text at once.
_TEXTS: dict[tuple[tuple[str, bytes], ...], str] = {}


def _key_of(system: list[str], request: ModelRequest) -> bytes:
    """The encoding a request's surface is known by; b"" when it has none (a schema JSON
    cannot hold), and its surface is rendered each time."""
    try:
        return _ENCODE((system, request.tools, request.output_schema, request.settings))
    except (TypeError, ValueError, OverflowError):
        return b""


def _keys(asked: list[ModelRequest]) -> list[bytes]:
    """`_key_of` each request. A loop mostly shows its model the same tools, schema and
    settings (the very objects) request after request: such a request's key is the one
    before's, unencoded again. Exact, as the requests are rendered after the run: the same
    objects encode the same now, whatever was done to them while it ran."""
    keys: list[bytes] = []
    before: ModelRequest | None = None
    system_before: list[str] = []
    for request in asked:
        system = [m.content for m in request.messages if m.role == "system"]
        if (
            before is not None
            and request.tools is before.tools
            and request.output_schema is before.output_schema
            and (request.settings is before.settings or not (request.settings or before.settings))
            and system == system_before
        ):
            keys.append(keys[-1])
        else:
            keys.append(_key_of(system, request))
        before, system_before = request, system
    return keys


def _lines_of(request: ModelRequest, key: bytes) -> tuple[str, ...]:
    """`surface_lines(request)`, known by `key`."""
    if not key:
        return surface_lines(request)
    lines = _RENDERED.get(key)
    if lines is None:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        lines = _RENDERED[key] = surface_lines(request)
    return lines


_AGENT = operator.attrgetter("agent")


def render(requests: Iterable[ModelRequest]) -> str:
    """The snapshot text of a run's requests; "" when the run made none."""
    asked = list(requests)
    keys = _keys(asked)
    if not keys:
        return ""
    first = keys[0]
    # Mostly one surface (each request's key is the first's, mostly the very object) of the
    # agent under test (every agent None, or ""): known without pairing every request.
    one = bool(first) and keys.count(first) == len(keys) and not any(map(_AGENT, asked))
    if one:
        shown: tuple[tuple[str, bytes], ...] = ((AGENT_UNDER_TEST, first),)
    else:
        # Each agent's distinct surfaces in the order first seen: what the text is made of.
        shown = tuple(
            dict.fromkeys(
                [(r.agent or AGENT_UNDER_TEST, k) for r, k in zip(asked, keys, strict=True)]
            )
        )
    cached = all(keys)
    text = _TEXTS.get(shown) if cached else None
    if text is None:
        text = _text(_surfaces(asked, keys))
        if cached:
            if len(_TEXTS) >= _RENDERED_MAX:
                _TEXTS.clear()
            _TEXTS[shown] = text
    return text


def _surfaces(asked: list[ModelRequest], keys: list[bytes]) -> dict[str, list[tuple[str, ...]]]:
    """Per agent, the lines of each distinct surface its requests showed, in order."""
    surfaces: dict[str, list[tuple[str, ...]]] = {}
    known: set[tuple[str, bytes]] = set()
    for request, key in zip(asked, keys, strict=True):
        agent = request.agent or AGENT_UNDER_TEST
        seen = surfaces.setdefault(agent, [])
        if key and (agent, key) in known:
            continue
        known.add((agent, key))
        lines = _lines_of(request, key)
        if lines not in seen:
            seen.append(lines)
    return surfaces


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
