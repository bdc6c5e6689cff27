"""Live backend: model steps from an OpenAI-compatible Chat Completions endpoint.

Serves OpenAI, any compatible gateway, and local servers (vLLM, Ollama, ...): one POST to
`{base_url}/chat/completions` per model step, translated from and to the neutral types of
`harness.backend`. Calls are bounded by a per-call timeout and retried, with exponential
backoff and full jitter, on 408, 429, 5xx, connection errors and timeouts (honouring
`Retry-After`), a bounded number of times; everything else fails at once with a
`ProviderError`.

The API key lives only in `LiveSettings.api_key` (kept out of its repr) and in the
Authorization header of each request. Any text that came from the server (error bodies,
model output) has it replaced by `***` before it goes anywhere, since a server may echo it.

Imported only in live mode: the HTTP client is the one the agent frameworks already use.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from harness.backend import (
    Message,
    ModelRequest,
    ModelStep,
    ProviderFailure,
    ToolCall,
    ToolSchema,
)
from harness.config import EvalConfig, live_missing

if TYPE_CHECKING:
    from harness.suite import Case

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 60.0
# Statuses worth another attempt: the provider is busy, rate-limiting, or broken for now.
RETRYABLE_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))
# The key of the arguments dict that carries a tool call's arguments when the provider sent
# something that is not a JSON object (see `_parse_arguments`).
INVALID_ARGUMENTS_KEY = "_invalid_json_arguments"
_EXCERPT_CHARS = 300
_MASK = "***"


class ProviderError(ProviderFailure):
    """The provider failed for good: misconfigured, refused, malformed, or out of attempts.

    Its text is one paragraph meant for a run report, and never holds the API key.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status  # the last HTTP status, when there was one
        self.attempts = attempts  # HTTP attempts made for the failing call


@dataclass(frozen=True)
class LiveSettings:
    """Where and how to call the provider. `api_key` is never shown by repr()."""

    base_url: str
    model: str
    api_key: str = field(repr=False)
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    # A server's Retry-After is honoured up to this many seconds.
    retry_after_max: float = 60.0
    # The name (never the value) of the variable that held the key, for messages.
    api_key_env: str = ""

    def __post_init__(self) -> None:
        if not re.match(r"https?://[^/\s]", self.base_url):
            raise ProviderError(
                f"live_base_url {self.base_url!r} is not an http:// or https:// URL "
                '(e.g. "https://api.openai.com/v1")'
            )
        if not self.call_timeout > 0 or not math.isfinite(self.call_timeout):
            raise ValueError(f"call_timeout must be a positive number, not {self.call_timeout}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.retry_after_max < 0:
            raise ValueError("backoff_base, backoff_max and retry_after_max must not be negative")

    @classmethod
    def from_config(cls, config: EvalConfig, environ: Mapping[str, str]) -> LiveSettings:
        """Settings for `config`'s provider, the key read from `environ`.

        Raises `ProviderError` naming everything still missing. A call never waits longer
        than a turn may take (`case_timeout_secs`).
        """
        missing = live_missing(config, environ)
        if missing:
            raise ProviderError("live mode is not configured; missing: " + "; ".join(missing))
        return cls(
            base_url=config.live_base_url.strip(),
            model=config.live_model.strip(),
            api_key=environ[config.live_api_key_env].strip(),
            call_timeout=min(DEFAULT_CALL_TIMEOUT, config.case_timeout_secs),
            api_key_env=config.live_api_key_env,
        )

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


Sleep = Callable[[float], Awaitable[None]]


class LiveBackend:
    """A `ModelBackend` over an OpenAI-compatible Chat Completions endpoint.

    `attempts` counts HTTP requests sent, `retries` the attempts that repeated a failed one,
    `calls` the model steps answered. `sleep`, `rng` and `transport` are for tests.
    """

    def __init__(
        self,
        settings: LiveSettings,
        *,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self.calls = 0
        self.attempts = 0
        self.retries = 0

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"LiveBackend(base_url={s.base_url!r}, model={s.model!r}, calls={self.calls}, "
            f"attempts={self.attempts}, retries={self.retries})"
        )

    def start_turn(self, index: int) -> None:
        pass

    def end_turn(self, index: int) -> None:
        pass

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def respond(self, request: ModelRequest) -> ModelStep:
        payload = request_body(self.settings.model, request)
        s = self.settings
        last_error = ""
        last_status: int | None = None
        for attempt in range(1, s.max_attempts + 1):
            self.attempts += 1
            retry_after: float | None = None
            outcome = await self._attempt(payload, attempt)
            if isinstance(outcome, str):  # a transport failure or a timeout
                last_error, last_status = outcome, None
            elif outcome.status_code in RETRYABLE_STATUSES:
                last_error, last_status = self._describe(outcome), outcome.status_code
                retry_after = parse_retry_after(outcome.headers)
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
                step = self._parse(outcome, attempt)
                self.calls += 1
                return step
            if attempt == s.max_attempts:
                break
            self.retries += 1
            await self._sleep(self._delay(attempt, retry_after))
        raise ProviderError(
            self._scrub(
                f"model call to {s.endpoint} (model {s.model!r}) gave up after "
                f"{s.max_attempts} attempt{'s' if s.max_attempts != 1 else ''}; "
                f"last error: {last_error}"
            ),
            status=last_status,
            attempts=s.max_attempts,
        )

    # --- one attempt --------------------------------------------------------------------

    async def _attempt(self, payload: dict[str, Any], attempt: int) -> httpx.Response | str:
        """The response, or a description of why there is none worth retrying for.

        Raises `ProviderError` for failures no retry can mend (a bad URL or scheme)."""
        s = self.settings
        headers = {
            "Authorization": f"Bearer {s.api_key}",
            "Accept": "application/json",
            "User-Agent": "zeroclaw-eval",
        }
        try:
            return await _within(
                s.call_timeout, self._http().post(s.endpoint, json=payload, headers=headers)
            )
        except (_CallTimeout, httpx.TimeoutException):
            return f"timed out after {s.call_timeout:g}s waiting for the provider"
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            problem = f"connection error ({type(exc).__name__}: {exc})"
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            problem = f"{type(exc).__name__}: {exc}"
            raise ProviderError(
                self._scrub(
                    f"model call to {s.endpoint} failed (not retried; attempt {attempt}): "
                    f"{_one_line(problem)}"
                ),
                attempts=attempt,
            ) from None
        return self._scrub(_one_line(problem))

    def _http(self) -> httpx.AsyncClient:
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

    def _parse(self, response: httpx.Response, attempt: int) -> ModelStep:
        problem: str | None
        try:
            document = response.json()
        except ValueError:
            document = None
            problem = "a body that is not JSON"
        else:
            problem = _shape_problem(document)
        if problem is None:
            try:
                return self._to_step(document)
            except _Malformed as exc:
                problem = str(exc)
        raise ProviderError(
            self._scrub(
                f"model call to {self.settings.endpoint} (model {self.settings.model!r}) "
                f"got a malformed response (HTTP {response.status_code}, attempt {attempt}, "
                f"not retried): {problem}: {_excerpt(self._scrub(response.text))}"
            ),
            status=response.status_code,
            attempts=attempt,
        )

    def _to_step(self, document: dict[str, Any]) -> ModelStep:
        message = document["choices"][0]["message"]
        usage = document.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise _Malformed("choices[0].message.tool_calls is not a list")
        calls = tuple(self._tool_call(raw, i) for i, raw in enumerate(raw_calls))
        return ModelStep(
            text=self._scrub(_content_text(message.get("content"))),
            tool_calls=calls,
            input_tokens=_count(usage.get("prompt_tokens")),
            output_tokens=_count(usage.get("completion_tokens")),
        )

    def _tool_call(self, raw: Any, index: int) -> ToolCall:
        where = f"choices[0].message.tool_calls[{index}]"
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict):
            raise _Malformed(f"{where} has no function object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _Malformed(f"{where} has no function name")
        call_id = raw.get("id")
        if not isinstance(call_id, str) or not call_id:
            # Some local servers omit ids; tool results still need one to pair with.
            call_id = f"call_{self.calls}_{index}"
        arguments = _scrub_value(_parse_arguments(function.get("arguments")), self._scrub)
        return ToolCall(call_id, name, arguments)

    # --- text ---------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """`text` with the API key (raw or JSON-escaped) replaced by `***`."""
        key = self.settings.api_key
        if not key:
            return text
        for form in {key, json.dumps(key)[1:-1]}:
            text = text.replace(form, _MASK)
        return text

    def _describe(self, response: httpx.Response) -> str:
        reason = response.reason_phrase
        status = f"HTTP {response.status_code}{' ' + reason if reason else ''}"
        body = _excerpt(self._scrub(response.text))
        return f"{status}: {body}" if body else f"{status} (empty body)"

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            where = self.settings.api_key_env or "the configured variable"
            return f"; check the API key in {where}"
        if status == 404:
            return "; check live_base_url and live_model"
        return ""


def live_backend_factory(settings: LiveSettings, **options: Any) -> Callable[[Case], LiveBackend]:
    """A runner backend factory: a fresh `LiveBackend` per case (options as for it)."""

    def factory(case: Case) -> LiveBackend:
        return LiveBackend(settings, **options)

    return factory


# --- the request -------------------------------------------------------------------------


def request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions JSON body for a neutral request."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    return body


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


# --- the response ------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _shape_problem(document: Any) -> str | None:
    """Why `document` is not a chat completion, or None when it is one."""
    if not isinstance(document, dict):
        return "the JSON body is not an object"
    choices = document.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices in the body"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "choices[0] has no message object"
    return None


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    raise _Malformed(f"choices[0].message.content is a {type(content).__name__}")


def _parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict.

    Chat Completions sends them as a JSON string. When that string is not a JSON object, the
    raw text is kept as `{"_invalid_json_arguments": raw}`: the tool then fails visibly on
    arguments it does not know, and the record shows what the model sent, rather than the
    tool silently running with `{}`. An absent or blank string means no arguments (some
    servers send "" for tools without parameters); a dict is taken as it is (some servers
    send one).
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        return {INVALID_ARGUMENTS_KEY: raw}
    return {INVALID_ARGUMENTS_KEY: json.dumps(raw)}


def _scrub_value(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {
            scrub(k) if isinstance(k, str) else k: _scrub_value(v, scrub) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub_value(v, scrub) for v in value]
    return value


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asked to wait: `retry-after-ms`, or `Retry-After` as seconds or an
    HTTP-date; None when absent or unreadable. Never negative."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = _number(millis)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    delta = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return max(0.0, delta)


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return max(0.0, value) if math.isfinite(value) else None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _excerpt(text: str) -> str:
    text = _one_line(text)
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 1] + "…"


# --- the per-call bound ------------------------------------------------------------------


class _CallTimeout(Exception):
    pass


async def _within(timeout: float, coro: Coroutine[Any, Any, T]) -> T:
    """`coro`'s result, or `_CallTimeout` once `timeout` seconds pass: a bound on the whole
    call (httpx's own timeouts bound each phase, not a body trickling in). Cancelling the
    caller cancels the call."""
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved
        raise _CallTimeout
    return task.result()
