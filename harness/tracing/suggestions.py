"""The expectations a trace proves, by family, for the user to choose from: what the trace
did, never silently what it should have done. `zeroclaw eval import` replays each
conversation with all of them and keeps only those that held; `--expect` picks the families
written into the fixture.

Families: `tools` (`tools_used`), `trajectory` (the calls in order, with their arguments and
agents), `args` (`tool_arguments_contain`: each argument value), `results`
(`tool_results_contain`: a distinctive phrase of what each tool returned), `handoffs`,
`final_agent`, `response` (`response_contains`: a short distinctive phrase of the final
answer), `guardrails` (`guardrails_tripped`).
"""

from __future__ import annotations

import re
from typing import Any

from harness.errors import UsageError
from harness.tool_registry import canonical_arguments
from harness.tracing.conversation import ImportedCall, ImportedConversation

FAMILIES = (
    "tools",
    "trajectory",
    "args",
    "results",
    "handoffs",
    "final_agent",
    "response",
    "guardrails",
)
# The expects key each family writes: how a grade's path is traced back to its family.
KEYS = {
    "tools": ("tools_used",),
    "trajectory": ("trajectory",),
    "args": ("tool_arguments_contain",),
    "results": ("tool_results_contain",),
    "handoffs": ("handoffs",),
    "final_agent": ("final_agent",),
    "response": ("response_contains",),
    "guardrails": ("guardrails_tripped",),
}
PHRASE = 60  # the longest phrase suggested, in characters
MAX_NEEDLES = 20  # per family: more says nothing a reviewer reads
# Clauses end at a stop, colon or comma followed by a space (never inside "120.00").
_BREAKS = re.compile(r"(?<=[.!?:,])\s+|[;\n]+")


def parse_families(text: str | None) -> tuple[str, ...]:
    """`--expect`'s families (comma-separated, `all` for every one)."""
    if not text:
        return ()
    names = [n.strip() for n in text.split(",") if n.strip()]
    if "all" in names:
        return FAMILIES
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise UsageError(
            f"--expect: unknown famil{'y' if len(unknown) == 1 else 'ies'} "
            f"{', '.join(unknown)} (choose from {', '.join(FAMILIES)}, or all)"
        )
    return tuple(dict.fromkeys(names))


def family_of(field: str) -> str | None:
    """The family whose expectation a grade at `field` (`$.expects.tools_used[0]`) checks."""
    match = re.match(r"\$\.expects\.([a-z_]+)", field)
    if match is None:
        return None
    key = match.group(1)
    return next((f for f, keys in KEYS.items() if key in keys), None)


def suggest(conversation: ImportedConversation) -> dict[str, dict[str, Any]]:
    """Each family the trace proves something for, and the expectations it suggests."""
    calls = [c for c in conversation.calls() if c.kind != "handoff"]
    functions = [c for c in calls if c.kind == "function"]
    found: dict[str, dict[str, Any]] = {}
    if conversation.tools_used():
        found["tools"] = {"tools_used": conversation.tools_used()}
    if calls:
        found["trajectory"] = {"trajectory": {"mode": "strict", "calls": _trajectory(conversation)}}
    arguments = _needles(functions, _argument_needles)
    if arguments:
        found["args"] = {"tool_arguments_contain": arguments}
    results = _needles(functions, _result_needles)
    if results:
        found["results"] = {"tool_results_contain": results}
    if conversation.handoffs:
        found["handoffs"] = {"handoffs": [target for _, target in conversation.handoffs]}
    if conversation.final_agent and len(conversation.agents) > 1:
        found["final_agent"] = {"final_agent": conversation.final_agent}
    final = _final_text(conversation)
    if final:
        found["response"] = {"response_contains": [final]}
    if conversation.guardrails_tripped:
        found["guardrails"] = {"guardrails_tripped": list(conversation.guardrails_tripped)}
    return found


def expects_of(suggested: dict[str, dict[str, Any]], families: tuple[str, ...]) -> dict[str, Any]:
    """The `expects` block of the chosen families (those suggested)."""
    block: dict[str, Any] = {}
    for family in families:
        block.update(suggested.get(family, {}))
    return block


def _trajectory(conversation: ImportedConversation) -> list[dict[str, Any]]:
    several = len(conversation.agents) > 1
    expected = []
    for turn in conversation.turns:
        for step in turn.steps:
            for call in step.calls:
                if call.kind == "handoff":
                    continue
                entry: dict[str, Any] = {"tool": call.name, "arguments": call.arguments}
                if several and step.agent:
                    entry["agent"] = step.agent
                expected.append(entry)
    return expected


def _needles(calls: list[ImportedCall], make: Any) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for call in calls:
        for needle in make(call):
            seen.setdefault((call.name, needle), None)
    return [{"tool": tool, "needle": needle} for tool, needle in list(seen)[:MAX_NEEDLES]]


def _argument_needles(call: ImportedCall) -> list[str]:
    # A key and its value as the recorded canonical JSON spells them: `"invoice_id":"INV-1"`.
    return [
        canonical_arguments({key: value})[1:-1]
        for key, value in call.arguments.items()
        if isinstance(value, str | int | float | bool) and str(value).strip()
    ]


def _result_needles(call: ImportedCall) -> list[str]:
    if call.result is None or call.failed:
        return []
    found = phrase(call.result)
    return [found] if found else []


def _final_text(conversation: ImportedConversation) -> str | None:
    for step in reversed(conversation.turns[-1].steps if conversation.turns else ()):
        if step.text:
            return phrase(step.text)
    return None


def phrase(text: str) -> str | None:
    """A short distinctive piece of `text` (a substring of it): all of it when short, else
    the clause with most digits and capitals, cut at a word boundary."""
    stripped = text.strip()
    if len(stripped) <= PHRASE:  # short enough to be said whole
        return stripped or None
    pieces = [p.strip() for p in _BREAKS.split(text)]
    pieces = [p.rstrip(".,:") for p in pieces if len(p) >= 3]
    if not pieces:
        return stripped[:PHRASE]
    best = max(pieces, key=lambda p: (sum(ch.isdigit() or ch.isupper() for ch in p), len(p)))
    if len(best) > PHRASE:
        cut = best[:PHRASE]
        space = cut.rfind(" ")
        best = (cut[:space] if space > PHRASE // 2 else cut).strip()
    return best if best in text else None
