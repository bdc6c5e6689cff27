"""Expectations on the run's tool calls as a whole: a trajectory of expected calls matched
against the recorded ones in one of four modes, by an optimal assignment (a maximum
bipartite matching, never greedy first fit), the alignment shown when it fails."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from harness.expectations.base import (
    EXPECTS,
    MISSPELT,
    Context,
    Evidence,
    Grade,
    Kind,
    Strict,
    agent_name_problem,
    clip,
    finite_json,
    is_blank,
    q,
)
from harness.expectations.response_json import json_equal
from harness.io.problems import unsafe_name_problem
from harness.io.validation import Fault, did_you_mean
from harness.tool_registry import RecordedCall

AT = f"{EXPECTS}.trajectory"
TrajectoryMode = Literal["strict", "unordered", "subset", "superset"]
# Matching is quadratic in the calls at worst (an assignment over every pair); these bound
# it for any fixture and any run, far above what a real trajectory holds.
MAX_EXPECTED = 50
MAX_ACTUAL = 500
_ARGUMENT_KEYS = ("arguments", "arguments_subset", "arguments_contain")


class ExpectedCall(Strict):
    """One expected call: its tool, at most one way of matching its arguments (`arguments`
    exactly, `arguments_subset` by subset, `arguments_contain` a needle in the recorded
    canonical JSON), and the agent of a multi-agent graph that made it."""

    tool: str
    arguments: dict[str, Any] | None = None
    arguments_subset: dict[str, Any] | None = None
    arguments_contain: str | None = None
    agent: str | None = None

    def describe(self) -> str:
        text = q(self.tool)
        if self.arguments is not None:
            text += f" arguments={_compact(self.arguments)}"
        elif self.arguments_subset is not None:
            text += f" arguments⊇{_compact(self.arguments_subset)}"
        elif self.arguments_contain is not None:
            text += f" arguments∋{q(clip(self.arguments_contain, 200))}"
        if self.agent is not None:
            text += f" by {q(self.agent)}"
        return text


class TrajectorySpec(Strict):
    """`mode` (`strict`: exactly these calls in this order; `unordered`: exactly these in
    any order; `subset`: every call of the run is one of these; `superset`: these all
    happen, other calls may too) and the expected `calls`."""

    mode: TrajectoryMode
    calls: list[ExpectedCall]


class Trajectory(Kind):
    """`trajectory`: the run's recorded calls, over every turn, against an expected list."""

    order = 25
    trajectory: TrajectorySpec | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        spec = self.trajectory
        if spec is None:
            return
        if len(spec.calls) > MAX_EXPECTED:
            yield Fault(
                f"{AT}.calls",
                f"{len(spec.calls)} expected calls: at most {MAX_EXPECTED} are matched",
            )
            return
        if spec.mode == "superset" and not spec.calls:
            yield Fault(f"{AT}.calls", "an empty superset holds for every run: it asserts nothing")
        for i, call in enumerate(spec.calls):
            yield from _call_problems(call, f"{AT}.calls[{i}]", context)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        spec = self.trajectory
        if spec is None:
            return
        expected = spec.calls
        check = f"trajectory({spec.mode}, {len(expected)} call(s))"
        actual = evidence.record.calls
        if len(actual) > MAX_ACTUAL:
            detail = f"the run made {len(actual)} tool calls: at most {MAX_ACTUAL} are matched"
            yield Grade(check, False, detail, "tool", AT)
            return
        fits = _fits(expected, actual)
        ok, pairs = _verdict(spec.mode, fits, len(expected), len(actual))
        detail = _alignment(spec.mode, ok, expected, actual, pairs)
        if not ok and spec.mode == "strict":
            perfect = _max_matching(fits, len(expected), len(actual))
            if len(perfect) == len(expected) == len(actual):
                detail += "; every call matches in another order (strict asks for this one)"
        yield Grade(check, ok, detail, "tool", AT)


def _call_problems(call: ExpectedCall, at: str, context: Context) -> Iterator[Fault]:
    if is_blank(call.tool):
        yield Fault(f"{at}.tool", "empty tool asserts nothing")
    else:
        problem = _tool_problem(call, context)
        if problem is not None:
            yield Fault(f"{at}.tool", problem)
    if call.agent is not None:
        problem = agent_name_problem(call.agent, context)
        if problem is not None:
            yield Fault(f"{at}.agent", problem)
    given = [key for key in _ARGUMENT_KEYS if getattr(call, key) is not None]
    if len(given) > 1:
        yield Fault(
            f"{at}.{given[1]}",
            f"{' and '.join(given)} together: set at most one way of matching the arguments",
        )
    if call.arguments_contain is not None and is_blank(call.arguments_contain):
        yield Fault(f"{at}.arguments_contain", "empty needle asserts nothing")
    for key in ("arguments", "arguments_subset"):
        value = getattr(call, key)
        if value is not None and not finite_json(value):
            yield Fault(
                f"{at}.{key}", "NaN and Infinity are not JSON: no model's arguments can equal them"
            )


def _tool_problem(call: ExpectedCall, context: Context) -> str | None:
    """Why `call.tool` can never be called by the agent (or by `call.agent`), or None. A
    tool unknown to the agent's surface could never match a recorded call in replay."""
    unsafe = unsafe_name_problem("tool name", call.tool)
    if unsafe is not None:
        return unsafe
    tools, whose = context.agent_tools, context.agent
    if call.agent is not None and call.agent in context.agents:
        tools, whose = context.agents[call.agent], f"agent {call.agent!r}"
    if tools is None or call.tool in tools:
        return None
    hint = did_you_mean(call.tool, tools, MISSPELT)
    listed = ", ".join(sorted(tools)) or "none"
    return f"{call.tool!r} is not a tool of {whose}{hint}; its tools: {listed}"


# --- matching -------------------------------------------------------------------------------


def _fits(expected: Sequence[ExpectedCall], actual: Sequence[RecordedCall]) -> list[list[int]]:
    """For each expected call, the indexes of the recorded calls it matches."""
    parsed: dict[int, Any] = {}
    fits: list[list[int]] = []
    for want in expected:
        row = []
        for j, call in enumerate(actual):
            if call.name != want.tool or (want.agent is not None and call.agent != want.agent):
                continue
            if want.arguments_contain is not None and want.arguments_contain not in call.arguments:
                continue
            shape = want.arguments if want.arguments is not None else want.arguments_subset
            if shape is not None:
                if j not in parsed:
                    parsed[j] = _parse(call.arguments)
                if not _arguments_fit(parsed[j], shape, exact=want.arguments is not None):
                    continue
            row.append(j)
        fits.append(row)
    return fits


_NOT_JSON = object()


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _arguments_fit(got: Any, want: dict[str, Any], *, exact: bool) -> bool:
    try:
        return json_equal(got, want) if exact else _subset(got, want)
    except RecursionError:  # arguments nested deeper than any comparison goes: no match
        return False


def _subset(got: Any, want: Any) -> bool:
    """Every key of the object `want` is in `got` with a value that fits it: objects by
    subset again, any other value exactly (type-strict, as `response_json` compares)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and _subset(got[k], v) for k, v in want.items()
        )
    return json_equal(got, want)


def _max_matching(fits: list[list[int]], n: int, m: int) -> dict[int, int]:
    """A maximum matching of expected calls to recorded ones (expected index -> recorded
    index), by augmenting paths (Kuhn): optimal, O(n·edges), which the bounds on n and m
    keep small. Iterative, so no call depth grows with the input."""
    owner: list[int] = [-1] * m  # recorded index -> expected index
    for start in range(n):
        seen = [False] * m
        # Depth-first search for an augmenting path, with an explicit stack of
        # (expected index, position in its fits, recorded index taken to reach it).
        stack: list[list[int]] = [[start, 0, -1]]
        found = False
        while stack and not found:
            frame = stack[-1]
            i, k = frame[0], frame[1]
            if k >= len(fits[i]):
                stack.pop()
                continue
            frame[1] += 1
            j = fits[i][k]
            if seen[j]:
                continue
            seen[j] = True
            if owner[j] == -1:
                # Flip the path: each expected call on it takes the recorded call it reached.
                frame[2] = j
                for f in stack:
                    owner[f[2]] = f[0]
                found = True
            else:
                frame[2] = j
                stack.append([owner[j], 0, -1])
    return {i: j for j, i in enumerate(owner) if i != -1}


def _ordered_matching(fits: list[list[int]], n: int, m: int) -> dict[int, int]:
    """The longest alignment keeping both orders (expected i before i' matched to recorded
    j before j'): a longest common subsequence under the matching relation, O(n·m)."""
    allowed = [set(row) for row in fits]
    # best[i][j]: the longest alignment of expected[i:] with actual[j:].
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            skip = max(best[i + 1][j], best[i][j + 1])
            best[i][j] = max(skip, best[i + 1][j + 1] + 1) if j in allowed[i] else skip
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if j in allowed[i] and best[i][j] == best[i + 1][j + 1] + 1:
            pairs[i] = j
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _verdict(
    mode: TrajectoryMode, fits: list[list[int]], n: int, m: int
) -> tuple[bool, dict[int, int]]:
    """Whether the run meets the trajectory in `mode`, and the alignment shown."""
    if mode == "strict":
        pairs = _ordered_matching(fits, n, m)
        return n == m and all(pairs.get(i) == i for i in range(n)), pairs
    pairs = _max_matching(fits, n, m)
    matched = len(pairs)
    if mode == "unordered":
        return matched == n == m, pairs
    if mode == "subset":
        return matched == m, pairs
    return matched == n, pairs


def _alignment(
    mode: TrajectoryMode,
    ok: bool,
    expected: Sequence[ExpectedCall],
    actual: Sequence[RecordedCall],
    pairs: dict[int, int],
) -> str:
    """Which expected call matched which recorded one, which are missing, which extra."""
    taken = set(pairs.values())
    parts = [
        f"[{i}] {want.describe()} = call {pairs[i]}"
        for i, want in enumerate(expected)
        if i in pairs
    ]
    missing = [f"[{i}] {want.describe()}" for i, want in enumerate(expected) if i not in pairs]
    extra = [f"call {j} {_recorded(call)}" for j, call in enumerate(actual) if j not in taken]
    head = f"{len(pairs)} of {len(expected)} expected call(s) matched {len(actual)} recorded"
    if ok:
        return f"{head}: " + "; ".join(parts) if parts else f"{head}: the run made no tool call"
    text = head
    if parts:
        text += "; matched: " + "; ".join(parts)
    if missing:
        label = "; not called (allowed): " if mode == "subset" else "; missing: "
        text += label + "; ".join(missing)
    if extra:
        allowed = mode == "superset"
        text += ("; other calls (allowed): " if allowed else "; extra: ") + "; ".join(extra)
    return text


def _recorded(call: RecordedCall) -> str:
    text = f"{q(call.name)}({clip(call.arguments, 200)})"
    return text if call.agent is None else f"{text} by {q(call.agent)}"


def _compact(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True), 200)
