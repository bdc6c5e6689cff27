"""The judge of a run: each rubric of a case asked of an OpenAI-compatible judge (through
the live backend: its retries, limiter, capped bodies and the key masked in everything the
provider sends back), or replayed from the suite's recorded replies; each verdict parsed
strictly and marked gated or diagnostic by its rubric's calibration.

Without `record` no call is ever made: a reply not recorded is that check's failure. A
transport error, a refusal, an unparseable reply: each is a verdict without a score, which
fails the check (gated or not), never a pass.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from harness.errors import HarnessError
from harness.expectations.base import JudgeNote
from harness.expectations.judge import Material, Rubric
from harness.judge.calibration import Bounds, CalibrationFile, gate
from harness.judge.store import DamagedReply, RecordedReply, ReplyStore, reply_key
from harness.model_boundary import ModelRequest
from harness.verdict.receipts import provider_ref

if TYPE_CHECKING:
    from harness.live.provider_limiter import ProviderLimiter, SharedParts
    from harness.live.provider_settings import LiveSettings

NOT_RECORDED = "judge reply not recorded: run with --record-judge"
TEMPERATURE = 0.0


class JudgeSetup(msgspec.Struct, frozen=True):
    """What a judge's verdicts depend on besides the run: provider, model, template, parser
    and sampling. With a rubric's text and threshold it is the judge setup a calibration is
    bound to."""

    base_url: str
    model: str
    temperature: float = TEMPERATURE

    def setup_hash(self, rubric: Rubric) -> str:
        # The template and the parser are imported by the first rubric judged, as what asks
        # the provider is (`body`): a run whose cases have none needs neither.
        from harness.judge.prompt import PARSER_VERSION, SYSTEM, TEMPLATE_VERSION

        described = {
            "provider": provider_ref(self.base_url, ""),
            "model": self.model,
            "template": TEMPLATE_VERSION,
            "system": SYSTEM,
            "parser": PARSER_VERSION,
            "temperature": self.temperature,
            "rubric": rubric.rubric,
            "threshold": rubric.threshold,
            "include_transcript": rubric.include_transcript,
            "samples": rubric.samples,
        }
        text = json.dumps(described, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def model_family(model: str) -> str:
    """A model's family, for the self-preference rule: its name without a provider prefix,
    up to its first digit or separator (`gpt-4o-mini` and `openai/gpt-4.1` are `gpt`)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    match = re.match(r"[a-z]+", name)
    return match.group() if match else name


class Sample(msgspec.Struct):
    """One reply's reading: a score (None: a failed sample), the unknown flag, the reason
    (or why it failed), tokens, and whether it was asked now."""

    score: float | None
    unknown: bool
    reason: str
    key: str
    live: bool = False
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def vote(self) -> tuple[int, float]:
        """Its place when samples are ordered for the majority: a failed sample lowest,
        then an unknown one, then by score."""
        if self.score is None:
            return (0, 0.0)
        if self.unknown:
            return (1, 0.0)
        return (2, self.score)


class JudgeService(msgspec.Struct):
    """The built-in `Judge`: replays from `store`, asks the provider (`settings`) only when
    `record`, and writes what it asked into the store. `used` collects every reply key the
    run asked for, so the replies no case asked for can be listed as stale."""

    setup: JudgeSetup
    store: ReplyStore
    settings: LiveSettings | None = None  # None: replay only
    record: bool = False
    calibration: CalibrationFile | None = None
    bounds: Bounds = msgspec.field(default_factory=Bounds)
    # The live agent's model family when the judge shares it (self-preference).
    same_family: str | None = None
    used: set[str] = msgspec.field(default_factory=set)
    written: list[Path] = msgspec.field(default_factory=list)
    _gates: dict[tuple[str, str], tuple[bool, str]] = msgspec.field(default_factory=dict)
    _shared: SharedParts | None = None
    _limiter: ProviderLimiter | None = None

    async def judge(
        self, case_id: str, rubrics: Sequence[Rubric], material: Material
    ) -> Mapping[str, JudgeNote]:
        found: dict[str, JudgeNote] = {}
        for rubric in rubrics:
            samples = [
                await self._sample(case_id, rubric, material, i) for i in range(rubric.samples)
            ]
            found[rubric.name] = self._note(rubric, samples)
        return found

    def _note(self, rubric: Rubric, samples: list[Sample]) -> JudgeNote:
        setup = self.setup.setup_hash(rubric)
        gated, why = self.gate_of(rubric.name, setup)
        median = majority(samples)
        reason = median.reason
        if len(samples) > 1:
            reason = f"{reason} (median of {len(samples)} samples)"
        return JudgeNote(
            rubric=rubric.name,
            threshold=rubric.threshold,
            score=median.score,
            unknown=median.unknown,
            reason=reason,
            gated=gated,
            why=why,
            setup=setup,
            replay=median.key,
            live=any(s.live for s in samples),
            input_tokens=sum(s.input_tokens for s in samples if s.live),
            output_tokens=sum(s.output_tokens for s in samples if s.live),
            samples=[None if s.score is None else s.score for s in samples]
            if len(samples) > 1
            else None,
        )

    def gate_of(self, rubric: str, setup: str) -> tuple[bool, str]:
        """Whether `rubric` gates under `setup`, and why; decided once a run."""
        known = self._gates.get((rubric, setup))
        if known is None:
            entry = self.calibration.rubrics.get(rubric) if self.calibration else None
            known = gate(entry, setup, self.bounds, self.same_family)
            self._gates[(rubric, setup)] = known
        return known

    def request(self, rubric: Rubric, material: Material) -> ModelRequest:
        from harness.judge.prompt import messages

        return ModelRequest(messages=messages(rubric, material))

    def body(self, request: ModelRequest) -> dict[str, object]:
        """Exactly what the judge is sent for `request` (what its replies are keyed by)."""
        # What `LiveBackend.body` sends, without making a backend (its limiter, its
        # random source, the HTTP client's module) for each sample.
        from harness.live.chat_completions import request_body

        model = self.settings.model if self.settings is not None else self.setup.model
        payload: dict[str, object] = request_body(model, request)
        if self.setup.temperature is not None:
            payload["temperature"] = self.setup.temperature
        return payload

    async def sample(self, case_id: str, rubric: Rubric, material: Material, i: int) -> Sample:
        """The `i`-th sample of `rubric` on `material`: replayed, or asked when recording."""
        return await self._sample(case_id, rubric, material, i)

    async def _sample(self, case_id: str, rubric: Rubric, material: Material, i: int) -> Sample:
        request = self.request(rubric, material)
        body = self.body(request)
        key = reply_key(body, i)
        self.used.add(key)
        try:
            recorded = self.store.read(key)
        except DamagedReply as exc:
            return Sample(None, False, f"recorded judge reply unusable: {exc}", key)
        if recorded is not None:
            return read_reply(recorded.reply, key, recorded.input_tokens, recorded.output_tokens)
        if not self.record or self.settings is None:
            return Sample(None, False, NOT_RECORDED, key)
        return await self._ask(case_id, rubric, request, body, key, i)

    async def _ask(
        self,
        case_id: str,
        rubric: Rubric,
        request: ModelRequest,
        body: dict[str, object],
        key: str,
        i: int,
    ) -> Sample:
        from harness.live.backend import LiveBackend, ProviderError
        from harness.live.provider_limiter import ProviderLimiter, SharedParts

        assert self.settings is not None
        if self._shared is None:
            self._shared = SharedParts(self.settings.api_key)
            self._limiter = ProviderLimiter(self._shared.mask(self.settings.base_url))
        backend = LiveBackend(self.settings, limiter=self._limiter, shared=self._shared)
        try:
            step = await backend.respond(request)
        except ProviderError as exc:  # its text is masked already
            return Sample(None, False, f"judge call failed: {exc}", key, live=True)
        finally:
            await backend.aclose()
        reply = RecordedReply(
            schema="zeroclaw-eval/judge-reply/v1",
            key=key,
            setup=self.setup.setup_hash(rubric),
            case=case_id,
            rubric=rubric.name,
            sample=i,
            request=dict(body),
            reply=step.text,
            input_tokens=step.input_tokens,
            output_tokens=step.output_tokens,
        )
        try:
            self.written.append(self.store.write(reply))
        except (OSError, HarnessError) as exc:
            # The verdict is not used: a reply the next replay cannot find would make this
            # run's grade one no later run can reproduce.
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return Sample(
                None,
                False,
                f"judge reply could not be recorded: {self.store.path(key)}: {why}",
                key,
                True,
                step.input_tokens,
                step.output_tokens,
            )
        sample = read_reply(step.text, key, step.input_tokens, step.output_tokens)
        sample.live = True
        return sample


def majority(samples: Sequence[Sample]) -> Sample:
    """The sample whose verdict is the strict majority's: the median of an odd number of
    votes reaches the threshold exactly when a strict majority does; a failed sample sits
    lowest, a failed vote."""
    return sorted(samples, key=lambda s: s.vote)[len(samples) // 2]


def read_reply(text: str, key: str, input_tokens: int = 0, output_tokens: int = 0) -> Sample:
    """A reply's text read as a sample: parsed strictly, an unparseable one a failed
    sample saying why."""
    from harness.judge.prompt import Unparseable, parse

    try:
        parsed = parse(text)
    except Unparseable as exc:
        return Sample(
            None, False, f"unparseable judge reply: {exc}", key, False, input_tokens, output_tokens
        )
    return Sample(
        parsed.score, parsed.unknown, parsed.reason, key, False, input_tokens, output_tokens
    )


def recording_lines(judge: object, partial: bool) -> list[str]:
    """What a run with `--record-judge` says after it: the replies it wrote, and those
    recorded that no case asked for (stale: a rubric, a run or the judge setup changed;
    listed, never deleted). A partial run asks for part of them: it lists none."""
    if not isinstance(judge, JudgeService) or not judge.record:
        return []
    lines = [f"recorded {len(judge.written)} judge repl(ies) in {judge.store.directory}"]
    if not partial:
        stale = judge.store.stale(judge.used)
        if stale:
            lines.append(f"{len(stale)} recorded judge repl(ies) no case asked for (stale):")
            lines.extend(f"  {path}" for path in stale)
    return lines
