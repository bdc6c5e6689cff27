"""Live backend: model steps from an OpenAI-compatible Chat Completions endpoint.
OpenAI, any compatible gateway, local servers (vLLM, Ollama, ...): one POST to
`{base_url}/chat/completions` per model step, bounded by a per-call timeout, retried with
backoff and full jitter on 408, 429, 5xx, connection errors and timeouts (honouring
`Retry-After`) a bounded number of times; anything else is a `ProviderError`. The backends
of one provider share a `ProviderLimiter` (a 429/503 `Retry-After` pauses them all; a run
of connection failures declares it down), the key's mask, the TLS context and the
connection pool (`harness.live.provider_limiter`).
The API key lives only in `LiveSettings.api_key` (kept out of its repr) and in the
Authorization header of each request. A server may echo it anywhere: in model text, as a
tool call's name or id, inside arguments, in an error body, escaped in any way. So every
string of a decoded response, and any raw body or transport error quoted in a message, has
it replaced by `***` (in every escaping `SecretMask` knows) before it reaches the agent, the
record or any output.

A response body is read as a stream and never beyond `MAX_RESPONSE_BYTES` once decoded
(gzip and deflate are decoded as it is read, bounded, and no other coding is accepted): a
compression bomb or an endless body is a clear run error, not the memory of the CI runner.
The HTTP client (the agent frameworks' own) is imported by the first call, not with this
module: a replay run's judge, which only replays, has no use for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.config import EvalConfig
from harness.live.chat_completions import (
    ACCEPTED_ENCODINGS,
    Malformed,
    Reply,
    SecretMask,
    Unreadable,
    excerpt,
    one_line,
    parse_retry_after,
    read_body,
    request_body,
    scrub_value,
    shape_problem,
    to_step,
)
from harness.live.provider_limiter import (
    PAUSING_STATUSES,
    NotSent,
    PauseTooLong,
    ProviderDown,
    ProviderLimiter,
    SharedParts,
    Sleep,
    connection_failure,
)
from harness.live.provider_settings import DEFAULT_CALL_TIMEOUT as DEFAULT_CALL_TIMEOUT
from harness.live.provider_settings import LiveSettings as LiveSettings
from harness.live.provider_settings import ProviderError as ProviderError
from harness.model_boundary import ModelRequest, ModelStep
from harness.runtime.deadline import DeadlineExceeded, within

if TYPE_CHECKING:
    import httpx

    from harness.fixtures.suite import Case

# Statuses worth another attempt: the provider is busy, rate-limiting, or broken for now.
RETRYABLE_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))
# The most of a response body (after content decoding) that is ever read. A chat completion
# is a few kilobytes; even a long answer with many tool calls is far below this.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class LiveBackend:
    """A `ModelBackend` over an OpenAI-compatible Chat Completions endpoint.

    `attempts` counts HTTP requests sent, `retries` the attempts that repeated a failed one
    (the model boundary counts the steps answered). `limiter` is shared by every backend of
    the provider (without one the backend is a provider of its own). `sleep`, `rng` and
    `transport` are for tests.
    """

    def __init__(
        self,
        settings: LiveSettings,
        *,
        limiter: ProviderLimiter | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        shared: SharedParts | None = None,
    ) -> None:
        self.settings = settings
        self._shared = shared or SharedParts(settings.api_key)
        self._scrub = self._shared.mask
        self.limiter = limiter or ProviderLimiter(self._scrub(settings.base_url))
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        # When the turn in progress began, for what is left of it: calls made while the
        # agent starts count from the backend's creation, just before the agent is started.
        self._turn_started = self.limiter.clock()
        self.attempts = 0
        self.retries = 0

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"LiveBackend(base_url={s.base_url!r}, model={s.model!r}, "
            f"attempts={self.attempts}, retries={self.retries})"
        )

    async def ready(self, limit: float) -> None:
        """Before a turn starts: wait out a pause the provider asked for, at most `limit`
        seconds (what the case's wall clock has left), so that it delays the turn instead
        of using up the turn's time. A pause longer than that fails the case at once."""
        try:
            await self.limiter.wait_out_pause(self._sleep, limit)
        except PauseTooLong as exc:
            s = self.settings
            raise ProviderError(
                self._scrub(f"model calls to {s.endpoint} (model {s.model!r}) were not sent: {exc}")
            ) from None

    def start_turn(self, index: int) -> None:
        self._turn_started = self.limiter.clock()

    async def aclose(self) -> None:  # its own client (the provider's pool stays open)
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body `respond` sends for `request`, exactly."""
        payload = request_body(self.settings.model, request)
        if self.settings.temperature is not None:
            payload["temperature"] = self.settings.temperature
        return payload

    async def respond(self, request: ModelRequest) -> ModelStep:
        payload = self.body(request)
        s = self.settings
        last_error = ""
        last_status: int | None = None
        delay, asked = 0.0, False  # the wait before the next attempt; from a Retry-After?
        for attempt in range(1, s.max_attempts + 1):
            await self._admit(attempt, delay, asked, last_error, last_status)
            self.retries += attempt > 1
            self.attempts += 1
            retry_after: float | None = None
            outcome = await self._attempt(payload, attempt)
            if isinstance(outcome, Failure):  # a transport failure or a timeout
                last_error, last_status = outcome.text, None
                self._count_unreachable(outcome, attempt)
            elif outcome.status_code in RETRYABLE_STATUSES:
                last_error, last_status = self._describe(outcome), outcome.status_code
                retry_after = parse_retry_after(outcome.headers)
                if retry_after is not None and outcome.status_code in PAUSING_STATUSES:
                    self.limiter.pause(min(retry_after, s.retry_after_max), outcome.status_code)
            elif not 200 <= outcome.status_code < 300:
                raise ProviderError(
                    self._scrub(
                        f"model call to {s.endpoint} (model {s.model!r}) was refused with "
                        f"{self._describe(outcome)} (not retried; attempt {attempt})"
                        f"{self._hint(outcome.status_code)}"
                    ),
                    status=outcome.status_code,
                    attempts=attempt,
                )
            else:
                return self._parse(outcome, attempt)
            delay, asked = self._delay(attempt, retry_after), retry_after is not None
        raise ProviderError(
            self._scrub(
                f"model call to {s.endpoint} (model {s.model!r}) gave up after "
                f"{s.max_attempts} attempt{'s' if s.max_attempts != 1 else ''}; "
                f"last error: {last_error}"
            ),
            status=last_status,
            attempts=s.max_attempts,
        )

    # --- the provider's shared state -----------------------------------------------------

    async def _admit(
        self, attempt: int, delay: float, asked: bool, last_error: str, last_status: int | None
    ) -> None:
        """Wait before attempt number `attempt`: its `delay` and any pause of the provider.
        A provider that is down, or a pause longer than the turn has left, fails the call at
        once, unsent."""
        try:
            await self.limiter.admit(self._sleep, delay, asked=asked, turn_left=self._turn_left)
        except ProviderDown as exc:
            raise ProviderError(self._scrub(str(exc)), attempts=attempt - 1) from None
        except NotSent as exc:
            s = self.settings
            last = f"; last error: {last_error}" if last_error else ""
            raise ProviderError(
                self._scrub(
                    f"model call to {s.endpoint} (model {s.model!r}) was not sent: {exc} "
                    f"(turn timeout {s.turn_timeout:g}s){last}"
                ),
                status=last_status,
                attempts=attempt - 1,
            ) from None

    def _turn_left(self) -> float:
        timeout = self.settings.turn_timeout
        if timeout is None:
            return math.inf
        return timeout - (self.limiter.clock() - self._turn_started)

    def _count_unreachable(self, failure: Failure, attempt: int) -> None:
        """Count a connection failure with every backend of the provider; the call fails at
        once, with the provider's down message, once the count says it is down."""
        if failure.unreachable is None:
            return
        down = self.limiter.unreachable(failure.unreachable)
        if down is not None:
            raise ProviderError(self._scrub(down), attempts=attempt)

    # --- one attempt --------------------------------------------------------------------

    async def _attempt(self, payload: dict[str, Any], attempt: int) -> Reply | Failure:
        """The response, or why there is none, when a retry may still get one.

        Raises `ProviderError` for failures no retry can mend (a bad URL or scheme, a body
        too large or in a refused encoding)."""
        import httpx

        s = self.settings
        try:
            reply = await within(s.call_timeout, self._exchange(payload))
        except httpx.ConnectTimeout:
            text = f"timed out after {s.call_timeout:g}s connecting to the provider"
            return Failure(text, "connect timeout")
        except (DeadlineExceeded, httpx.TimeoutException):
            return Failure(f"timed out after {s.call_timeout:g}s waiting for the provider")
        except Unreadable as exc:
            self.limiter.reached()
            raise ProviderError(
                self._scrub(
                    f"model call to {s.endpoint} (model {s.model!r}) got {exc} "
                    f"(HTTP {exc.status}, attempt {attempt}, not retried)"
                ),
                status=exc.status,
                attempts=attempt,
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            problem = f"connection error ({type(exc).__name__}: {exc})"
            reason = connection_failure(exc)  # None: the provider was reached
            return Failure(self._scrub(one_line(problem)), reason and self._scrub(excerpt(reason)))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            problem = f"{type(exc).__name__}: {exc}"
            raise ProviderError(
                self._scrub(
                    f"model call to {s.endpoint} failed (not retried; attempt {attempt}): "
                    f"{one_line(problem)}"
                ),
                attempts=attempt,
            ) from None
        self.limiter.reached()
        return reply

    async def _exchange(self, payload: dict[str, Any]) -> Reply:
        """One request, its response body read to the end, bounded."""
        headers = {
            "Authorization": f"Bearer {self.settings.api_key}",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPTED_ENCODINGS,
            "User-Agent": "zeroclaw-eval",
        }
        request = self._http().stream("POST", self.settings.endpoint, json=payload, headers=headers)
        async with request as response:
            body = await read_body(response, MAX_RESPONSE_BYTES)
        return Reply(response.status_code, response.reason_phrase, response.headers, body)

    def _http(self) -> httpx.AsyncClient:
        import httpx

        if self._transport is None:  # the provider's pool: connections kept across cases
            return self._shared.client(self.settings.call_timeout)
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.settings.call_timeout),
                transport=self._transport,
                follow_redirects=False,
            )
        return self._client

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        s = self.settings
        if retry_after is not None:
            return min(retry_after, s.retry_after_max)
        # Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^n)).
        ceiling = min(s.backoff_max, s.backoff_base * 2.0 ** (attempt - 1))
        return ceiling * self._rng.random()

    # --- responses ----------------------------------------------------------------------

    def _parse(self, response: Reply, attempt: int) -> ModelStep:
        problem: str | None
        document: Any = None
        try:
            # Every string of the response is masked before anything reads it: names and
            # ids reach framework errors, arguments reach tools, all of it the record.
            document = scrub_value(json.loads(response.body), self._scrub)
        except RecursionError:
            problem = "a JSON body nested too deeply"
        except ValueError:
            problem = "a body that is not JSON"
        else:
            problem = shape_problem(document)
        if problem is None:
            try:
                return to_step(document, self._scrub, f"call_{self.attempts - 1}")
            except Malformed as exc:
                problem = str(exc)
        raise ProviderError(
            self._scrub(
                f"model call to {self.settings.endpoint} (model {self.settings.model!r}) "
                f"got a malformed response (HTTP {response.status_code}, attempt {attempt}, "
                f"not retried): {problem}: {excerpt(self._scrub(response.text))}"
            ),
            status=response.status_code,
            attempts=attempt,
        )

    # --- text ---------------------------------------------------------------------------

    def _describe(self, response: Reply) -> str:
        reason = response.reason_phrase
        status = f"HTTP {response.status_code}{' ' + reason if reason else ''}"
        body = excerpt(self._scrub(response.text))
        return f"{status}: {body}" if body else f"{status} (empty body)"

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            where = self.settings.api_key_env or "the configured variable"
            return f"; check the API key in {where}"
        if status == 404:
            return "; check live_base_url and live_model"
        return ""


@dataclass(frozen=True)
class Failure:
    """An attempt that got no response: what happened (the key masked), and, when the
    provider could not be reached at all, why in a few words."""

    text: str
    unreachable: str | None = None


def live_backend_factory(
    settings: LiveSettings, *, limiter: ProviderLimiter | None = None, **options: Any
) -> Callable[[Case], LiveBackend]:
    """A runner backend factory: a fresh `LiveBackend` per case (options as for it), all of
    them sharing `limiter` (by default one made here for the factory), the key's mask and
    the TLS context."""
    parts = SharedParts(settings.api_key)
    shared = limiter or ProviderLimiter(parts.mask(settings.base_url))

    def factory(case: Case) -> LiveBackend:
        return LiveBackend(settings, limiter=shared, shared=parts, **options)

    return factory


@dataclass(frozen=True)
class LiveProvider:
    """What a live run needs of its configuration: a backend per case, the built-in tools
    a case may use, the secret no output may hold, and the limiter every backend shares."""

    backend: Callable[[Case], LiveBackend]
    allowed_tools: frozenset[str]
    secret: str = field(repr=False)
    limiter: ProviderLimiter | None = None


def provider_from_config(
    config: EvalConfig, environ: Mapping[str, str], turn_timeout: float
) -> LiveProvider:
    """The provider of a live run, or a `ProviderError` saying exactly what is missing.

    `turn_timeout` is the run's per-turn timeout (`--timeout`, else case_timeout_secs): no
    model call waits longer than a turn may take, nor gives up sooner than the run allows.
    One `ProviderLimiter` is shared by every backend the factory makes."""
    try:
        settings = LiveSettings.from_config(config, environ)
    except ProviderError as exc:
        raise ProviderError(f"live mode: {exc}") from None
    settings = dataclasses.replace(
        settings,
        call_timeout=min(DEFAULT_CALL_TIMEOUT, turn_timeout),
        turn_timeout=turn_timeout,
    )
    limiter = ProviderLimiter(SecretMask(settings.api_key)(settings.base_url))
    return LiveProvider(
        live_backend_factory(settings, limiter=limiter),
        frozenset(config.live_allowed_tools),
        settings.api_key,
        limiter,
    )
