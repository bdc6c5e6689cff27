"""Dispatch checks scoped to one agent of a multi-agent graph: `expects.agents.<name>` holds
the fields of the dispatch kinds (`tools_used`, the call counts, the payload checks, ...),
admitted by those kinds' own rules and graded over that agent's calls alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    Strict,
    agent_name_problem,
    compose,
    q,
)
from harness.expectations.dispatch_payloads import DispatchPayloads
from harness.expectations.tool_dispatch import ToolDispatch
from harness.io.json_paths import child_path
from harness.io.problems import unsafe_name_problem
from harness.io.validation import Fault
from harness.run_record import RunRecord

# The kinds a block scopes: their fields are the block's, so an agent's checks are spelt,
# admitted and graded exactly as the run-wide ones.
_SCOPED: tuple[type[ToolDispatch] | type[DispatchPayloads], ...] = (ToolDispatch, DispatchPayloads)


if TYPE_CHECKING:

    class AgentDispatch(Strict):
        """The dispatch checks of one agent: the fields of `ToolDispatch` and
        `DispatchPayloads`."""

        def __getattr__(self, name: str) -> Any: ...

else:
    AgentDispatch = compose("AgentDispatch", _SCOPED, __name__)
    AgentDispatch.__doc__ = (
        "The dispatch checks of one agent of a multi-agent graph, graded over its calls alone."
    )

_AGENTS = f"{EXPECTS}.agents"


class AgentScoped(Kind):
    """`agents`: agent name -> that agent's dispatch checks, graded over the calls whose
    `RecordedCall.agent` is that name (the handoffs are no calls, so they count in none)."""

    order = 34
    agents: dict[str, AgentDispatch] = {}

    def problems(self, context: Context) -> Iterator[Fault]:
        for name, block in self.agents.items():
            at = child_path(_AGENTS, name)
            problem = agent_name_problem(name, context)
            if problem is not None:
                yield Fault(at, problem)
            kinds = _kinds(block)
            if not kinds:
                yield Fault(at, "declares no check: an empty agent block asserts nothing")
            yield from _unsafe_tools(block, at)
            scoped = Context(
                context.mode,
                context.agents.get(name),
                f"agent {name!r}",
                context.turn_steps,
                context.agents,
            )
            for kind in kinds:
                for fault in kind.problems(scoped):
                    yield Fault(at + fault.path.removeprefix(EXPECTS), fault.message)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        calls = evidence.record.calls
        for name, block in self.agents.items():
            at = child_path(_AGENTS, name)
            # Whose tools they are is known only for the whole graph: an agent's is not
            # claimed (agent_tools None).
            own = Evidence(RunRecord(calls=[c for c in calls if c.agent == name]))
            for kind in _kinds(block):
                for g in kind.grades(own):
                    yield msgspec.structs.replace(
                        g,
                        check=f"agents[{q(name)}].{g.check}",
                        field=at + g.field.removeprefix(EXPECTS),
                    )


def _kinds(block: AgentDispatch) -> list[ToolDispatch | DispatchPayloads]:
    """The scoped kinds `block` sets a field of, built from its fields."""
    values = msgspec.structs.asdict(block)
    kinds: list[ToolDispatch | DispatchPayloads] = []
    for kind in _SCOPED:
        mine = {name: values[name] for name in kind.__struct_fields__}
        built = kind(**mine)
        if built != kind():
            kinds.append(built)
    return kinds


def _unsafe_tools(block: AgentDispatch, at: str) -> Iterator[Fault]:
    """Tool names holding control or format characters, refused here as admission refuses
    them in the run-wide checks."""
    named: list[tuple[str, str]] = [
        (f"{at}.{family}[{i}]", name)
        for family in ("tools_used", "tools_not_used")
        for i, name in enumerate(getattr(block, family))
    ]
    named += [
        (f"{at}.{family}[{i}].tool", entry.tool)
        for family in ("tool_arguments_contain", "tool_results_contain")
        for i, entry in enumerate(getattr(block, family))
    ]
    for path, name in named:
        problem = unsafe_name_problem("tool name", name)
        if problem is not None:
            yield Fault(path, problem)
