"""The model boundary: the backend protocol, the meter, and what an adapter tells it.

Adapters translate a framework's model interface to `ModelRequest` and back from `ModelStep`
(the neutral types, `harness.model_types`, named here too); every step passes through
`ModelBoundary`, so call counts, tokens, the request's types (`RequestCheck`), the limits on
model calls per turn and tool calls per answer, and divergence diagnostics are done once for
all. The handoffs, guardrail runs and final agent an adapter or a loop tells it are checked
against their types as they are told.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal, NoReturn, Protocol, TypeVar

import msgspec

from harness.defaults import (
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    MAX_STEP_TOKENS,
)
from harness.errors import HarnessError
from harness.io.text import clean
from harness.model_types import Message as Message
from harness.model_types import ModelRequest as ModelRequest
from harness.model_types import ModelStep as ModelStep
from harness.model_types import OutputSchema as OutputSchema
from harness.model_types import RequestCheck, handed, kind_of
from harness.model_types import Role as Role
from harness.model_types import ToolCall as ToolCall
from harness.model_types import ToolSchema as ToolSchema
from harness.runtime.deadline import within

T = TypeVar("T", bound=msgspec.Struct)


class Handoff(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Control passed from one agent of a graph to another: in which turn (-1 while the agent
    started), after which model request of it (its index in the turn), from and to whom;
    `filtered` when the handoff passed the history on through a filter of its own (the
    SDK's `input_filter`) rather than whole; `nested` when the framework summarised the
    history into one message instead (the SDK's `nest_handoff_history`)."""

    turn: int
    step: int
    source: str
    target: str
    filtered: bool = False
    nested: bool = False


GuardrailKind = Literal[
    "input", "output", "tool_input", "tool_output", "output_validator", "usage_limit"
]


class GuardrailRun(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One run of a guardrail (or of a framework's counterpart: a pydantic-ai output
    validator whose retries ran out, a usage limit exceeded): in which turn (-1 while the
    agent started), after which model request of it (-1: before any), its name and kind,
    the agent it guards, and whether it tripped. A tool guardrail names the call it guarded
    (`tool`, `call_id`) and what it decided (`behavior`: `reject_content` answers the call
    with `message` and the turn goes on, `raise_exception` ends it). `halted`: the tripwire
    ended the turn."""

    turn: int
    step: int
    name: str
    kind: GuardrailKind
    agent: str | None = None
    tripped: bool = False
    halted: bool = False
    behavior: str | None = None
    tool: str | None = None
    call_id: str | None = None
    message: str | None = None


class ProviderFailure(HarnessError):
    """A model provider failed for good (after any retries); reported as the case's run
    error verbatim, so its text must never hold a secret."""


def token_count_problem(value: object) -> str | None:
    """Why `value` is no count of one model call's tokens; None when it is one."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_STEP_TOKENS:
        return None
    return (
        f"{_shown_count(value)} is not a token count (a whole number from 0 to {MAX_STEP_TOKENS:,})"
    )


def _check_token_counts(step: ModelStep) -> None:
    for name in ("input_tokens", "output_tokens"):
        problem = token_count_problem(getattr(step, name))
        if problem is not None:
            raise ProviderFailure(f"the model backend's step: {name}: {problem}")


def _shown_count(value: object) -> str:
    """`value` as JSON would spell it (`true`, `"12"`, `Infinity`), short: an integer
    hundreds of digits long is said by its length."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # past Python's digit limit for printing an integer
            return "an integer too long to print"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):  # not JSON: a backend's own object
        text = type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


class RequestRefused(HarnessError):
    """The agent asked its model with a request that is not what `ModelRequest` declares (a
    message whose role no `Message` has or whose content is no text, an id that is no text,
    arguments no JSON can carry: `RequestCheck`): its run error in every mode. The request
    is neither sent nor recorded: no check meets what it cannot read."""


class Divergence(HarnessError):
    """The backend cannot answer the agent as scripted (a step replay does not have, steps
    left unused): the boundary adds the last request it saw, the one place it is kept."""

    def __init__(self, message: str, *, show_request: bool = True) -> None:
        super().__init__(message)
        self.show_request = show_request


class ModelCallLimit(Divergence):
    """The agent asked for more model calls in one turn than `max_model_calls_per_turn`
    allows: a loop that does not stop. The call over the limit is never sent to the backend,
    and the case's run error says so in the same words whatever the agent's framework."""

    def __init__(self, message: str) -> None:
        super().__init__(message, show_request=False)


class ToolCallLimit(Divergence):
    """The model asked for more tool calls in one answer than `max_tool_calls_per_step`
    allows. The answer never reaches the agent, so none of its calls is dispatched, and the
    case's run error says so in the same words whatever the agent's framework."""

    def __init__(self, message: str) -> None:
        super().__init__(message, show_request=False)


class ModelBackend(Protocol):
    """Where model responses come from: a replay script or a provider.

    Optional hooks, called when the backend has them: `async ready(limit)` before every
    user turn, before the turn's clock starts (a provider's pause waits there, at most
    `limit` seconds), `start_turn(index)` and `end_turn(index)` around every user turn (a
    `Divergence` from either is the case's run error), and `async aclose()` once the case
    is over, and `stop_turn(index)` in place of `end_turn` for a turn the framework ended
    early (a guardrail's tripwire: the steps it did not ask for are no divergence)."""

    async def respond(self, request: ModelRequest) -> ModelStep: ...


def check_offered(step: ModelStep, request: ModelRequest) -> None:
    """In a graph of several agents, a step calling a tool the asking agent (the request's
    `agent`) does not offer is a divergence naming the agent and what it offers: the
    script was written for another agent's request, or the agent lost the tool. Frameworks
    disagree on what they do with such a call alone, so it is checked here, for all."""
    if request.agent is None:
        return
    names = {schema.name for schema in request.tools}
    for call in step.tool_calls:
        if call.name not in names:
            listed = ", ".join(sorted(names)) or "none"
            raise Divergence(
                f"the model called tool {call.name!r}, which agent {request.agent!r} (the "
                f"agent asking) does not offer (its tools: {listed})"
            )


class Observer(Protocol):
    """What sees every request and its answer, told which request an answer is to (the
    runner's transcript): `observed(request)` gives the request's index, and
    `answered_at(index, step)` is told the step that answered it. Agents asking at the same
    time each get the answer to their own request, whatever order they come back in."""

    def observed(self, request: ModelRequest) -> int: ...

    def answered_at(self, index: int, step: ModelStep) -> None: ...


class ModelBoundary:
    """The one object adapters talk to; meters every step, keeps the last request, and
    refuses the model call that would pass `max_calls_per_turn` in one turn (calls made
    while the agent starts count as a turn of their own) and the answer asking for more
    than `max_tool_calls_per_step` tool calls."""

    def __init__(
        self,
        backend: ModelBackend,
        *,
        keep_steps: bool = False,
        on_request: Callable[[ModelRequest], None] | None = None,
        max_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
        on_step: Callable[[ModelStep], None] | None = None,
        max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP,
        observer: Observer | None = None,
    ) -> None:
        if max_calls_per_turn < 1:
            raise ValueError(f"max_calls_per_turn must be at least 1, not {max_calls_per_turn}")
        if max_tool_calls_per_step < 1:
            raise ValueError(
                f"max_tool_calls_per_step must be at least 1, not {max_tool_calls_per_step}"
            )
        self._backend = backend
        self._on_request = on_request
        self._on_step = on_step
        self._observer = observer
        self._check = RequestCheck()  # what the agent sends, before it is sent or recorded
        self._refused: str | None = None  # what of it was refused in the turn in progress
        # Frameworks read it to set their own limits above it, so this one is what applies.
        self.max_calls_per_turn = max_calls_per_turn
        self.max_tool_calls_per_step = max_tool_calls_per_step
        self._turn = -1
        # Model calls made in the turn in progress, answered or not; a handoff follows the last.
        self._turn_calls = 0
        # The limit the turn went over: every later call of the turn, and its end, fail too.
        self._over_limit: Divergence | None = None
        # Mutation testing only: faults injected where the agent and the model meet.
        self.rewrite_request: Callable[[ModelRequest], ModelRequest] | None = None
        self.rewrite_step: Callable[[ModelStep], ModelStep] | None = None
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.last_request: ModelRequest | None = None
        # Every step of every turn, when kept (live runs: what `record` turns into a fixture).
        self.steps: list[list[ModelStep]] | None = [] if keep_steps else None
        # Control passed from one agent of a graph to another, in order (`handoff`).
        self.handoffs: list[Handoff] = []
        # Every guardrail run the adapter told, in order (`guardrail`), and the turns a
        # tripwire ended (`halt`).
        self.guardrails: list[GuardrailRun] = []
        self.halted_turns: set[int] = set()
        # The agent whose answer ended the turn, when the adapter says (`answered_by`):
        # the last request's agent need not be it (a guardrail's agent asks beside it).
        self.final_agent: str | None = None

    @property
    def backend(self) -> ModelBackend:
        return self._backend

    def handoff(
        self, source: str, target: str, *, filtered: bool = False, nested: bool = False
    ) -> None:
        """Control passes from agent `source` to agent `target` (an adapter says so as its
        framework makes the handoff; `filtered` when a filter of the handoff's own makes the
        history the target gets, `nested` when the framework summarises it into one
        message): recorded with the turn and the number of the model request it followed,
        never as a tool call."""
        at = (self._turn, self._turn_calls - 1)
        made = Handoff(*at, source, target, filtered=filtered, nested=nested)
        self.handoffs.append(self._told(made, "a handoff"))

    def guardrail(
        self,
        name: str,
        kind: GuardrailKind,
        *,
        agent: str | None = None,
        tripped: bool = False,
        halted: bool = False,
        behavior: str | None = None,
        tool: str | None = None,
        call_id: str | None = None,
        message: str | None = None,
    ) -> None:
        """A guardrail ran (an adapter says so as its framework runs it): recorded with the
        turn and the number of the model request it followed."""
        at = (self._turn, self._turn_calls - 1)
        run = GuardrailRun(
            *at, name, kind, agent, tripped, halted, behavior, tool, call_id, message
        )
        self.guardrails.append(self._told(run, "a guardrail run"))

    def answered_by(self, agent: str) -> None:
        """The turn in progress ended with `agent`'s answer (an adapter says so when its
        framework tells which agent gave the final output): the record's `final_agent`."""
        if type(agent) is not str:
            self._refuse(f" told the boundary it answered as {kind_of(agent)}, not an agent's name")
        self.final_agent = agent

    def halt(self) -> None:
        """The framework ended the turn in progress early, as a guardrail's tripwire does
        (an adapter says so as it catches the tripwire): the turn's last tripped guardrail
        is marked as what ended it, and the steps the turn never asked for are no
        divergence (the backend's `stop_turn(index)` hook, when it has one, is called in
        place of `end_turn`)."""
        self.halted_turns.add(self._turn)
        for i in range(len(self.guardrails) - 1, -1, -1):
            run = self.guardrails[i]
            if run.turn != self._turn:
                break
            if run.tripped:
                self.guardrails[i] = msgspec.structs.replace(run, halted=True)
                break

    async def respond(self, request: ModelRequest) -> ModelStep:
        said = self._check.problem(request)
        if said is not None:
            self._refuse(f"'s model request {self._where()} {said}")
        if self._over_limit is not None or self._turn_calls >= self.max_calls_per_turn:
            self._count_call()
        else:  # well within the limit (`_count_call`'s answer, without the call)
            self._turn_calls += 1
        if self.rewrite_request is not None:
            request = self.rewrite_request(request)
        self.last_request = request
        if self._on_request is not None:
            self._on_request(request)
        observer = self._observer
        if observer is not None:
            at = observer.observed(request)
        try:
            step = await self._backend.respond(request)
        except Divergence as exc:
            raise self._explained(exc) from None
        tokens_in, tokens_out = step.input_tokens, step.output_tokens
        # Any backend's, not only a provider's: the sums and means of a run need counts.
        # Two plain ints in range (every step a replay or a provider gives) pass at once.
        if not (
            type(tokens_in) is int
            and type(tokens_out) is int
            and 0 <= tokens_in <= MAX_STEP_TOKENS
            and 0 <= tokens_out <= MAX_STEP_TOKENS
        ):
            _check_token_counts(step)
        self.calls += 1
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        if len(step.tool_calls) > self.max_tool_calls_per_step:
            self._check_width(step)
        if self.steps:
            self.steps[-1].append(step)
        answer = step if self.rewrite_step is None else self.rewrite_step(step)
        if self._on_step is not None:
            self._on_step(answer)  # what the agent got
        if observer is not None:
            observer.answered_at(at, answer)
        answer = handed(answer)  # the agent's own: what it changes, the record keeps not
        self._check.given(answer)
        return answer

    @property
    def paces(self) -> bool:
        """Whether the backend may ask a turn to wait before it starts (`ready`)."""
        return getattr(self._backend, "ready", None) is not None

    async def ready(self, limit: float) -> None:
        """Awaited before each turn's clock starts, for at most `limit` seconds: what the
        backend must wait for before a turn can begin (a pause its provider asked for)."""
        hook = getattr(self._backend, "ready", None)
        if hook is not None:
            await within(limit, hook(limit))

    def start_turn(self, index: int) -> None:
        self._turn, self._turn_calls, self._over_limit = index, 0, None
        self.final_agent, self._refused = None, None
        if self.steps is not None:
            self.steps.append([])
        self._hook("start_turn", index)

    def end_turn(self, index: int) -> None:
        # A loop that caught the limit's error (or a refusal) and answered anyway still
        # went over it (or sent what was refused).
        self._refuse_if_over()
        if self._refused is not None:
            raise RequestRefused(self._refused)
        halted = index in self.halted_turns and hasattr(self._backend, "stop_turn")
        self._hook("stop_turn" if halted else "end_turn", index)

    def _refuse(self, said: str) -> NoReturn:
        """What the agent sent or told refused (`said` follows "the agent"): never recorded,
        and its turn fails even should the agent catch the error and go on."""
        self._refused = f"the agent{said}"
        raise RequestRefused(self._refused)

    def _told(self, made: T, what: str) -> T:
        """`made` (what an adapter or a loop told the boundary) if each of its fields is of
        its declared type (a struct is not checked as it is made), else refused."""
        try:
            msgspec.convert(msgspec.to_builtins(made), type(made), strict=True)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            said = f"{exc}"
            for field in msgspec.structs.fields(made):  # `to_builtins` names no field
                try:
                    msgspec.to_builtins(getattr(made, field.name))
                except (TypeError, ValueError) as its:
                    said = f"{its} - at `$.{field.name}`"
                    break
            self._refuse(f" told the boundary {what} {self._where()} that is not one: {said}")
        return made

    def _where(self) -> str:
        return f"in turn {self._turn}" if self._turn >= 0 else "while starting"

    def _refuse_if_over(self) -> None:
        if self._over_limit is not None:
            raise type(self._over_limit)(str(self._over_limit))

    def _count_call(self) -> None:
        if self._over_limit is None and self._turn_calls >= self.max_calls_per_turn:
            self._over_limit = ModelCallLimit(
                f"the agent made more than {self.max_calls_per_turn} model calls "
                f"{self._where()} (max_model_calls_per_turn); the call over the limit was "
                "not answered"
            )
        self._refuse_if_over()
        self._turn_calls += 1

    def _check_width(self, step: ModelStep) -> None:
        """Refuse an answer asking for more tool calls than the limit, before the agent (and
        its framework, which would dispatch each one) sees any of them."""
        asked = len(step.tool_calls)
        if asked > self.max_tool_calls_per_step:
            self._over_limit = ToolCallLimit(
                f"the model asked for {asked} tool calls in one answer {self._where()}, more "
                f"than the {self.max_tool_calls_per_step} allowed (max_tool_calls_per_step; "
                "raise it with --max-tool-calls N); none of them was dispatched"
            )
            self._refuse_if_over()

    async def aclose(self) -> None:
        close = getattr(self._backend, "aclose", None)
        if close is not None:
            await close()

    def _hook(self, name: str, index: int) -> None:
        hook = getattr(self._backend, name, None)
        if hook is None:
            return
        try:
            hook(index)
        except Divergence as exc:
            raise self._explained(exc) from None

    def _explained(self, exc: Divergence) -> Divergence:
        if not exc.show_request:
            return exc
        summary = summarize_request(self.last_request)
        return type(exc)(f"{exc}; the last request was:\n{summary}", show_request=False)


def summarize_request(request: ModelRequest | None, *, width: int = 120) -> str:
    """The messages of a request, one line each, so an author sees where replay diverged."""
    if request is None:
        return "  (no model request was made)"
    lines = []
    for i, message in enumerate(request.messages):
        parts = []
        if message.content:
            parts.append(_clip(json.dumps(message.content, ensure_ascii=False), width))
        # Names and ids are the model's or the fixture's: a newline in one stays escaped,
        # so it cannot pass for a message line of its own.
        for call in message.tool_calls:
            args = _clip(_arguments(call.arguments), width)
            parts.append(f"call {clean(call.name)}({args}) id={clean(call.id)}")
        if message.tool_call_id:
            parts.insert(0, f"result for {clean(message.tool_call_id)}:")
        lines.append(f"  [{i}] {message.role}: {' '.join(parts) or '(empty)'}")
    return "\n".join(lines)


def _arguments(arguments: object) -> str:
    """A call's arguments as JSON; ones an agent changed after the boundary checked them
    (a key that is no text, an object of its own) said by kind."""
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return f"(arguments no JSON can show: {kind_of(arguments)})"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
