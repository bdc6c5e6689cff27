"""`harness.live.backend`: the live backend against a real loopback Chat Completions server
(mapping, parsing, retries, timeouts, the API key kept out of everything it says), and live
mode end to end through `main(argv)`.

End to end, the server answers like a tiny model (`tiny_model`, in conftest.py): a user
message that names a tool gets a tool call, a tool result gets a final text that quotes it.
Faults are injected through its script or its answers: 429 with Retry-After, 500,
exhaustion, a hang past the case timeout, a malformed body. Every test keeps the API key out
of everything the CLI prints or writes, while the server proves it did receive the key.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import logging
import random
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from _openai_server import (
    Action,
    OpenAIServer,
    RecordedRequest,
    Reply,
    Stream,
    completion,
    disconnect,
    hang,
    malformed,
    status,
    text_reply,
    tool_reply,
)
from conftest import (
    AGENTS,
    ECHO_CASE,
    ECHO_INPUT,
    LIVE_KEY,
    LIVE_KEY_CORE,
    LIVE_KEY_ENV,
    LIVE_MODEL,
    TEXT_STEP_TOKENS,
    TOOL_STEP_TOKENS,
    Cli,
    CliResult,
    Runs,
    assert_key_kept_out,
    cases_by_id,
    live_case,
    make_project,
    report_of,
)

from harness.config import EvalConfig
from harness.live.backend import (
    MAX_RESPONSE_BYTES,
    LiveBackend,
    LiveSettings,
    ProviderError,
    live_backend_factory,
)
from harness.live.chat_completions import (
    INVALID_ARGUMENTS_KEY,
    SecretMask,
    parse_retry_after,
    request_body,
)
from harness.model_boundary import (
    Message,
    ModelBoundary,
    ModelRequest,
    ModelStep,
    ProviderFailure,
    ToolCall,
    ToolSchema,
)

KEY = "sk-test-SECRET-zeroclaw-123"
MODEL = "loopback-gpt"


class FakeSleep:
    """Records the delays asked for instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class MaxRandom(random.Random):
    """Jitter at its top: every delay is (just under) its exponential ceiling."""

    def random(self) -> float:
        return 0.999


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def settings_for(base_url: str, **overrides: Any) -> LiveSettings:
    return LiveSettings(
        base_url=base_url, model=MODEL, api_key=KEY, api_key_env="ZC_TEST_KEY", **overrides
    )


def backend_for(
    base_url: str, sleep: FakeSleep | None = None, rng: random.Random | None = None, **kw: Any
) -> LiveBackend:
    return LiveBackend(settings_for(base_url, **kw), sleep=sleep or FakeSleep(), rng=rng)


def user(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),))


def run(backend: LiveBackend, *requests: ModelRequest) -> list[ModelStep]:
    async def go() -> list[ModelStep]:
        try:
            return [await backend.respond(r) for r in requests or (user(),)]
        finally:
            await backend.aclose()

    return asyncio.run(go())


def fails(backend: LiveBackend, request: ModelRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        run(backend, request or user())
    return info.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the request -------------------------------------------------------------------------

CONVERSATION = ModelRequest(
    messages=(
        Message(role="system", content="You are terse."),
        Message(role="user", content="Echo ü twice"),
        Message(
            role="assistant",
            tool_calls=(
                ToolCall("call_1", "echo", {"message": "ü", "n": 2}),
                ToolCall("call_2", "echo", {}),
            ),
        ),
        Message(role="tool", content="ü", tool_call_id="call_1"),
        Message(role="tool", content="", tool_call_id="call_2"),
        Message(role="assistant", content="Thinking", tool_calls=(ToolCall("c3", "x", {}),)),
        Message(role="tool", content="done", tool_call_id="c3"),
    ),
    tools=(
        ToolSchema(
            "echo",
            "Echo a message.",
            {"type": "object", "properties": {"message": {"type": "string"}}},
        ),
    ),
)


def test_request_maps_messages_tools_model_and_key(server: OpenAIServer) -> None:
    server.enqueue(text_reply("ok"))
    run(backend_for(server.base_url), CONVERSATION)

    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"].startswith("application/json")
    assert request.json == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Echo ü twice"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "echo", "arguments": '{"message": "ü", "n": 2}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "echo", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ü"},
            {"role": "tool", "tool_call_id": "call_2", "content": ""},
            {
                "role": "assistant",
                "content": "Thinking",
                "tool_calls": [
                    {"id": "c3", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c3", "content": "done"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "echo",
                    "description": "Echo a message.",
                    "parameters": {
                        "type": "object",
                        "properties": {"message": {"type": "string"}},
                    },
                },
            }
        ],
    }


def test_no_tools_key_without_tools_and_trailing_slash_in_base_url(server: OpenAIServer) -> None:
    server.enqueue(text_reply("ok"))
    run(backend_for(server.base_url + "/"), user("plain"))
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json == {"model": MODEL, "messages": [{"role": "user", "content": "plain"}]}
    assert "tools" not in request_body(MODEL, user())


def test_base_url_without_v1_reaches_chat_completions(server: OpenAIServer) -> None:
    server.enqueue(text_reply("ok"))
    assert run(backend_for(server.url))[0].text == "ok"
    assert server.requests[0].path == "/chat/completions"


# --- the response ------------------------------------------------------------------------


def test_text_response_with_usage(server: OpenAIServer) -> None:
    server.enqueue(text_reply("Hello!", prompt_tokens=17, completion_tokens=4))
    backend = backend_for(server.base_url)
    assert run(backend) == [ModelStep(text="Hello!", input_tokens=17, output_tokens=4)]
    # One step answered (`run` returned it), from one attempt.
    assert (backend.attempts, backend.retries) == (1, 0)


def test_tool_call_response(server: OpenAIServer) -> None:
    server.enqueue(
        tool_reply(
            [("call_a", "read_file", {"path": "notes.txt"}), ("call_b", "list_files", {})],
            prompt_tokens=30,
            completion_tokens=12,
        )
    )
    (step,) = run(backend_for(server.base_url))
    assert step == ModelStep(
        text="",
        tool_calls=(
            ToolCall("call_a", "read_file", {"path": "notes.txt"}),
            ToolCall("call_b", "list_files", {}),
        ),
        input_tokens=30,
        output_tokens=12,
    )


def test_null_content_and_missing_usage_are_empty_and_zero(server: OpenAIServer) -> None:
    server.enqueue(text_reply(None, prompt_tokens=None, completion_tokens=None))
    assert run(backend_for(server.base_url)) == [ModelStep()]


def test_usage_is_summed_per_call_through_the_boundary(server: OpenAIServer) -> None:
    server.enqueue(
        tool_reply([("c1", "echo", {"message": "a"})], prompt_tokens=11, completion_tokens=3),
        text_reply("done", prompt_tokens=20, completion_tokens=7),
    )
    backend = backend_for(server.base_url)
    boundary = ModelBoundary(backend)

    async def go() -> None:
        first = await boundary.respond(user())
        call = first.tool_calls[0]
        await boundary.respond(
            ModelRequest(
                messages=(
                    *user().messages,
                    Message(role="assistant", tool_calls=first.tool_calls),
                    Message(role="tool", content="a", tool_call_id=call.id),
                )
            )
        )
        await backend.aclose()

    asyncio.run(go())
    assert (boundary.calls, boundary.input_tokens, boundary.output_tokens) == (2, 31, 10)
    assert server.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "a",
    }


def test_invalid_tool_call_arguments_are_preserved_not_emptied(server: OpenAIServer) -> None:
    server.enqueue(
        tool_reply(
            [
                ("c1", "write_file", '{"path": "a.txt", "content": '),
                ("c2", "write_file", '["not", "an", "object"]'),
                ("c3", "list_files", ""),
            ]
        )
    )
    (step,) = run(backend_for(server.base_url))
    assert step.tool_calls == (
        ToolCall("c1", "write_file", {INVALID_ARGUMENTS_KEY: '{"path": "a.txt", "content": '}),
        ToolCall("c2", "write_file", {INVALID_ARGUMENTS_KEY: '["not", "an", "object"]'}),
        ToolCall("c3", "list_files", {}),
    )
    assert INVALID_ARGUMENTS_KEY == "_invalid_json_arguments"


def test_arguments_nested_too_deeply_to_parse_are_preserved_as_invalid(
    server: OpenAIServer,
) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # a JSON string in the body, past any parser inside
    server.enqueue(tool_reply([("c1", "echo", deep)]))
    (step,) = run(backend_for(server.base_url))
    assert step.tool_calls == (ToolCall("c1", "echo", {INVALID_ARGUMENTS_KEY: deep}),)


def test_content_parts_dict_arguments_and_missing_call_ids(server: OpenAIServer) -> None:
    # A local server's dialect: content as parts, arguments as an object, no call ids.
    server.enqueue(
        completion(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "tool_calls": [{"function": {"name": "echo", "arguments": {"m": 1}}}],
            }
        )
    )
    (step,) = run(backend_for(server.base_url))
    assert step.text == "ab"
    assert step.tool_calls == (ToolCall("call_0_0", "echo", {"m": 1}),)


# --- retries -----------------------------------------------------------------------------


def test_429_with_retry_after_is_honoured_then_succeeds(server: OpenAIServer) -> None:
    server.enqueue(
        status(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "2"}),
        text_reply("after the wait"),
    )
    sleep = FakeSleep()
    backend = backend_for(server.base_url, sleep)
    assert run(backend)[0].text == "after the wait"
    assert sleep.delays == [2.0]
    assert (backend.attempts, backend.retries) == (2, 1)
    assert len(server.requests) == 2
    assert server.bodies[0] == server.bodies[1]
    server.assert_drained()


def test_retry_after_as_http_date_is_capped(server: OpenAIServer) -> None:
    later = format_datetime(datetime.now(timezone.utc) + timedelta(hours=1), usegmt=True)
    server.enqueue(status(503, headers={"Retry-After": later}), text_reply("ok"))
    sleep = FakeSleep()
    run(backend_for(server.base_url, sleep, retry_after_max=7.5))
    assert sleep.delays == [7.5]


def test_parse_retry_after() -> None:
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({"retry-after": "Tue, 01 Jan 2030 12:00:30 GMT"}, now) == 30.0
    assert parse_retry_after({"retry-after": "Mon, 31 Dec 2029 12:00:00 GMT"}, now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({"retry-after": "Mon, 01 Jan 99999999999 00:00:00 GMT"}) is None
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None


def test_500_then_success_backs_off_with_jitter(server: OpenAIServer) -> None:
    server.enqueue(status(500, "upstream exploded"), text_reply("recovered"))
    sleep = FakeSleep()
    backend = backend_for(server.base_url, sleep, rng=random.Random(7), backoff_base=0.5)
    assert run(backend)[0].text == "recovered"
    assert sleep.delays == [0.5 * random.Random(7).random()]
    assert (backend.attempts, backend.retries) == (2, 1)


def test_exhaustion_gives_up_after_max_attempts_naming_the_last_error(
    server: OpenAIServer,
) -> None:
    server.enqueue(
        status(502, "bad gateway"),
        status(500, "still broken"),
        status(503),
        status(500, {"error": {"message": "the server had an error"}}),
        text_reply("never reached"),
    )
    sleep = FakeSleep()
    backend = backend_for(
        server.base_url, sleep, rng=MaxRandom(), max_attempts=4, backoff_base=1.0, backoff_max=3.0
    )
    error = fails(backend)
    assert len(server.requests) == 4 and server.pending == 1
    assert (error.status, error.attempts) == (500, 4)
    assert (backend.attempts, backend.retries) == (4, 3)
    text = str(error)
    assert "gave up after 4 attempts" in text
    assert "HTTP 500" in text and "the server had an error" in text
    assert MODEL in text and server.base_url in text
    assert "\n" not in text
    # Exponential ceilings 1, 2, 4 -> capped at 3; jitter at its top.
    assert sleep.delays == pytest.approx([0.999, 1.998, 2.997])
    assert isinstance(error, ProviderFailure)


def test_401_is_not_retried(server: OpenAIServer) -> None:
    server.enqueue(
        status(401, {"error": {"message": "Incorrect API key provided"}}), text_reply("no")
    )
    sleep = FakeSleep()
    backend = backend_for(server.base_url, sleep)
    error = fails(backend)
    assert len(server.requests) == 1 and sleep.delays == []
    assert (error.status, error.attempts, backend.retries) == (401, 1, 0)
    assert "HTTP 401" in str(error) and "Incorrect API key provided" in str(error)
    assert "not retried" in str(error) and "ZC_TEST_KEY" in str(error)


def test_400_is_not_retried_and_a_long_body_is_clipped(server: OpenAIServer) -> None:
    server.enqueue(status(400, "x" * 5000), text_reply("no"))
    error = fails(backend_for(server.base_url))
    assert len(server.requests) == 1
    assert "HTTP 400" in str(error)
    assert "x" * 250 in str(error) and "x" * 1000 not in str(error)
    assert len(str(error)) < 800


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (malformed("<html>gateway</html>"), "not JSON"),
        (status(200, {"error": {"message": "quota"}}), "no choices"),
        (status(200, {"choices": [{"text": "legacy"}]}), "no message"),
        (tool_reply([("c1", "", {})]), "no function name"),
    ],
)
def test_malformed_body_is_a_provider_error_not_retried(
    server: OpenAIServer, reply: Any, problem: str
) -> None:
    server.enqueue(reply, text_reply("no"))
    sleep = FakeSleep()
    error = fails(backend_for(server.base_url, sleep))
    assert "malformed response" in str(error) and problem in str(error)
    assert len(server.requests) == 1 and sleep.delays == []


def with_usage(usage: str) -> Reply:
    """A text reply whose `usage` is `usage`, as JSON text: values Python would not write."""
    document = json.loads(text_reply("hi").body)
    document["usage"] = "USAGE"
    return Reply(200, json.dumps(document).replace('"USAGE"', usage).encode())


COUNT = "is not a token count (a whole number from 0 to 1,000,000,000)"


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        (
            '{"prompt_tokens": 1' + "0" * 400 + ', "completion_tokens": 5}',
            f"usage.prompt_tokens: an integer of 401 digits {COUNT}",
        ),
        ('{"prompt_tokens": 1000000001}', f"usage.prompt_tokens: 1000000001 {COUNT}"),
        ('{"prompt_tokens": 3, "completion_tokens": -3}', f"usage.completion_tokens: -3 {COUNT}"),
        ('{"prompt_tokens": 1e999}', f"usage.prompt_tokens: Infinity {COUNT}"),
        ('{"completion_tokens": 12.5}', f"usage.completion_tokens: 12.5 {COUNT}"),
        ('{"prompt_tokens": "12"}', f'usage.prompt_tokens: "12" {COUNT}'),
        ('{"prompt_tokens": true}', f"usage.prompt_tokens: true {COUNT}"),
        ("[10, 5]", "usage: not an object"),
    ],
    ids=["400-digits", "over", "negative", "1e999", "fraction", "string", "bool", "array"],
)
def test_usage_that_is_no_token_count_is_a_provider_error_naming_the_field(
    server: OpenAIServer, usage: str, problem: str
) -> None:
    server.enqueue(with_usage(usage), text_reply("no"))
    error = fails(backend_for(server.base_url))
    assert "malformed response" in str(error) and problem in str(error), str(error)
    assert "not retried" in str(error) and len(server.requests) == 1


@pytest.mark.parametrize(
    "usage", ["null", "{}", '{"prompt_tokens": null, "completion_tokens": 0}', '{"x": 1}']
)
def test_usage_left_out_counts_no_tokens(server: OpenAIServer, usage: str) -> None:
    server.enqueue(with_usage(usage))
    assert run(backend_for(server.base_url)) == [ModelStep(text="hi")]


def test_usage_at_the_bound_is_counted(server: OpenAIServer) -> None:
    server.enqueue(with_usage('{"prompt_tokens": 1000000000, "completion_tokens": 0}'))
    assert run(backend_for(server.base_url)) == [ModelStep(text="hi", input_tokens=10**9)]


def test_a_hang_past_the_call_timeout_is_a_timeout_error(server: OpenAIServer) -> None:
    server.enqueue(hang(30, then=text_reply("too late")))
    backend = backend_for(server.base_url, call_timeout=0.3, max_attempts=1)
    start = time.monotonic()
    error = fails(backend)
    assert time.monotonic() - start < 10
    assert "timed out after 0.3s" in str(error) and "gave up after 1 attempt;" in str(error)
    assert error.status is None


def test_a_hang_is_retried_then_succeeds(server: OpenAIServer) -> None:
    server.enqueue(hang(30), text_reply("second try"))
    sleep = FakeSleep()
    backend = backend_for(server.base_url, sleep, call_timeout=0.3, max_attempts=2)
    assert run(backend)[0].text == "second try"
    assert (backend.attempts, backend.retries, len(sleep.delays)) == (2, 1, 1)


def test_the_call_timeout_bounds_the_whole_call() -> None:
    # A transport that never finishes, whatever httpx's own phase timeouts say.
    async def forever(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    backend = LiveBackend(
        settings_for("http://127.0.0.1:9/v1", call_timeout=0.2, max_attempts=1),
        transport=httpx.MockTransport(forever),
    )
    start = time.monotonic()
    assert "timed out after 0.2s" in str(fails(backend))
    assert time.monotonic() - start < 10


def test_connection_refused_is_retried_then_a_provider_error() -> None:
    sleep = FakeSleep()
    backend = backend_for(f"http://127.0.0.1:{closed_port()}/v1", sleep, max_attempts=3)
    error = fails(backend)
    assert "gave up after 3 attempts" in str(error) and "connection error" in str(error)
    assert (backend.attempts, len(sleep.delays)) == (3, 2)


def test_a_dropped_connection_is_retried(server: OpenAIServer) -> None:
    server.enqueue(disconnect(), text_reply("reconnected"))
    backend = backend_for(server.base_url)
    assert run(backend)[0].text == "reconnected"
    assert backend.retries == 1


def test_cancellation_propagates_without_retrying(server: OpenAIServer) -> None:
    server.enqueue(hang(30), text_reply("no"))
    sleep = FakeSleep()
    backend = backend_for(server.base_url, sleep, call_timeout=20)

    leftover: list[asyncio.Task[Any]] = []

    async def go() -> None:
        try:
            await asyncio.wait_for(backend.respond(user()), timeout=0.3)
        finally:
            await asyncio.sleep(0.05)  # time for a cancelled call to unwind
            leftover.extend(asyncio.all_tasks() - {asyncio.current_task()})
            await backend.aclose()

    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(go())
    assert time.monotonic() - start < 10
    assert sleep.delays == [] and backend.attempts == 1
    assert leftover == []  # the HTTP call was cancelled with its caller


def test_a_url_no_retry_can_mend_fails_at_once() -> None:
    with pytest.raises(ProviderError, match="not an http:// or https:// URL"):
        settings_for("api.example.com/v1")
    with pytest.raises(ProviderError, match="not an http:// or https:// URL"):
        settings_for("ftp://example.com/v1")


def test_a_closed_backend_reopens_its_client(server: OpenAIServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"))
    backend = backend_for(server.base_url)
    assert run(backend)[0].text == "one"
    assert run(backend)[0].text == "two"


# --- the key -----------------------------------------------------------------------------


def test_the_key_is_never_in_reprs() -> None:
    settings = settings_for("http://127.0.0.1:9/v1")
    backend = LiveBackend(settings)
    for text in (repr(settings), str(settings), repr(backend), str(backend)):
        assert KEY not in text
    assert "api_key=" not in repr(settings)
    assert MODEL in repr(backend)


@pytest.mark.parametrize(
    "reply",
    [
        status(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        status(400, f"bad request from Bearer {KEY}"),
        malformed(f"<pre>Authorization: Bearer {KEY}</pre>"),
        status(200, {"error": f"no choices for {KEY}"}),
    ],
    ids=["401-json", "400-text", "malformed", "no-choices"],
)
def test_the_key_echoed_by_a_failing_server_is_scrubbed(
    server: OpenAIServer, reply: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.enqueue(reply)
    backend = backend_for(server.base_url)
    error = fails(backend)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    for text in (str(error), repr(error), *map(str, error.args), repr(backend), caplog.text):
        assert KEY not in text
    assert "***" in str(error)


def test_the_key_echoed_in_retryable_errors_is_scrubbed_from_the_give_up(
    server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.enqueue(*[status(500, f"internal error; your key {KEY} is fine")] * 2)
    error = fails(backend_for(server.base_url, max_attempts=2))
    assert "gave up after 2 attempts" in str(error)
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in caplog.text
    assert "your key *** is fine" in str(error)


def test_the_key_echoed_in_model_output_is_scrubbed(server: OpenAIServer) -> None:
    server.enqueue(
        text_reply(f"The key is {KEY}."),
        tool_reply([("c1", "write_file", {"path": "k.txt", "content": f"{KEY}\n", KEY: [KEY]})]),
    )
    text, tools = run(backend_for(server.base_url), user(), user())
    assert text.text == "The key is ***."
    assert tools.tool_calls[0].arguments == {"path": "k.txt", "content": "***\n", "***": ["***"]}


def test_the_key_is_not_in_connection_errors() -> None:
    error = fails(backend_for(f"http://127.0.0.1:{closed_port()}/v1", max_attempts=1))
    assert KEY not in str(error) and KEY not in repr(error)


# --- settings from the configuration ----------------------------------------------------


def test_from_config_names_everything_missing() -> None:
    with pytest.raises(ProviderError) as info:
        LiveSettings.from_config(EvalConfig(live_api_key_env="ZC_KEY"), {})
    text = str(info.value)
    assert "live_base_url" in text and "live_model" in text and "ZC_KEY" in text
    with pytest.raises(ProviderError) as info:
        LiveSettings.from_config(
            EvalConfig(live_base_url="http://x/v1", live_model="m", live_api_key_env="ZC_KEY"),
            {"ZC_KEY": "  "},
        )
    assert "ZC_KEY" in str(info.value) and "live_model" not in str(info.value)


def test_from_config_reads_the_key_from_the_environment() -> None:
    config = EvalConfig(
        live_base_url=" https://api.example.com/v1 ",
        live_model="gpt-x",
        live_api_key_env="ZC_KEY",
        case_timeout_secs=12.0,
    )
    settings = LiveSettings.from_config(config, {"ZC_KEY": f"{KEY}\n"})
    assert settings.api_key == KEY
    assert (settings.base_url, settings.model, settings.api_key_env) == (
        "https://api.example.com/v1",
        "gpt-x",
        "ZC_KEY",
    )
    assert settings.call_timeout == 12.0  # never longer than a turn may take
    assert settings.endpoint == "https://api.example.com/v1/chat/completions"
    assert KEY not in repr(settings)
    default = LiveSettings.from_config(
        EvalConfig(live_base_url="http://x/v1", live_model="m"), {"OPENAI_API_KEY": "k"}
    )
    assert default.call_timeout == 60.0 and default.api_key_env == "OPENAI_API_KEY"


def test_live_backend_factory_makes_a_fresh_backend_per_case(server: OpenAIServer) -> None:
    server.enqueue(text_reply("a"))
    factory = live_backend_factory(settings_for(server.base_url), sleep=FakeSleep())
    first, second = factory(None), factory(None)  # type: ignore[arg-type]
    assert isinstance(first, LiveBackend) and first is not second
    assert run(first)[0].text == "a"
    assert second.attempts == 0


# --- the loopback server itself -----------------------------------------------------------


def test_server_default_when_the_script_is_exhausted(server: OpenAIServer) -> None:
    error = fails(backend_for(server.base_url, max_attempts=2))
    assert "script exhausted" in str(error) and len(server.requests) == 2


def test_server_responder_answers_from_the_request() -> None:
    def responder(body: Any) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text_reply(f"the tool said {last['content']}")
        return tool_reply([("c1", "echo", {"message": last["content"]})])

    with OpenAIServer([status(429, headers={"Retry-After": "0"})], responder=responder) as s:
        backend = backend_for(s.base_url)
        (first,) = run(backend, user("ping"))
        assert first.tool_calls == (ToolCall("c1", "echo", {"message": "ping"}),)
        follow_up = ModelRequest(
            messages=(
                *user("ping").messages,
                Message(role="assistant", tool_calls=first.tool_calls),
                Message(role="tool", content="ping", tool_call_id="c1"),
            )
        )
        assert run(backend, follow_up)[0].text == "the tool said ping"
        assert len(s.requests) == 3


def test_server_requires_the_key_when_told(server: OpenAIServer) -> None:
    with OpenAIServer([text_reply("ok")], api_key="other-key") as s:
        error = fails(backend_for(s.base_url))
        assert "HTTP 401" in str(error) and s.pending == 1


def test_server_close_cuts_a_hang_short() -> None:
    s = OpenAIServer([hang(60)]).start()
    result: list[BaseException] = []

    async def call() -> None:
        try:
            await backend_for(s.base_url, call_timeout=30, max_attempts=1).respond(user())
        except BaseException as exc:
            result.append(exc)

    worker = threading.Thread(target=lambda: asyncio.run(call()))
    worker.start()
    deadline = time.monotonic() + 10
    while not s.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    start = time.monotonic()
    s.close()
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert time.monotonic() - start < 10
    assert result and isinstance(result[0], ProviderError)


# --- live mode end to end, through the command line ---------------------------------------


def user_inputs(request: RecordedRequest) -> list[str]:
    body = request.json if isinstance(request.json, dict) else {}
    return [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]


def requests_for(server: OpenAIServer, first_user_input: str) -> list[RecordedRequest]:
    """The requests of the conversation that began with `first_user_input`."""
    return [r for r in server.requests if user_inputs(r)[:1] == [first_user_input]]


def offered_tools(request: RecordedRequest) -> list[str]:
    return sorted(t["function"]["name"] for t in request.json.get("tools") or [])


REMEMBER_INPUT = "remember: heron-19"
WRITE_INPUT = "write: notes/out.txt = zeroclaw-note-5"

MULTI_TURN_CASE = live_case(
    "live-multi-turn-recall",
    REMEMBER_INPUT,
    "recall",
    expects={"response_matches": ["\\Aheron-19\\z"], "max_tool_calls": 0},
)
# Needs the workspace expectations and the runner grading the workspace the run left.
WRITE_CASE = live_case(
    "live-write-file",
    WRITE_INPUT,
    tools=["write_file"],
    expects={
        "tools_used": ["write_file"],
        "all_tools_succeeded": True,
        "workspace": {
            "file_exists": ["notes/out.txt"],
            "file_contains": {"notes/out.txt": ["zeroclaw-note-5"]},
        },
        "budget": {"max_llm_calls": 2, "max_total_tokens": 100},
    },
)
SUITE = {
    "a_echo.json": ECHO_CASE,
    "b_multi_turn.json": MULTI_TURN_CASE,
    "c_write_file.json": WRITE_CASE,
}


def assert_nothing_ran(result: CliResult, server: OpenAIServer, *reports: Path) -> None:
    assert result.returncode == 1, result.stderr
    assert server.requests == [], "a refused run still called the provider"
    assert result.stdout.strip() == "", result.stdout
    for report in reports:
        assert not report.exists(), f"{report} written by a run that should not have started"


# --- success through both frameworks -------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_live_suite_passes_through_both_frameworks(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    project = make_project(tmp_path / "project", tiny_server.base_url, SUITE)
    runs = Runs(run_cli, project)
    result = runs.live(agent, "--json-report", "reports/live.json")
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2) + result.stderr
    assert report["mode"] == "live" and report["kind"] == "live" and report["agent"] == agent
    # The totals may count more than these four (cases not run, flaky ones); these match.
    assert report["totals"].items() >= {"cases": 3, "passed": 3, "failed": 0, "errors": 0}.items()
    assert json.loads((project / "reports/live.json").read_text(encoding="utf-8")) == report
    cases = cases_by_id(report)

    echo = cases["live-echo"]["record"]
    assert echo["final_response"] == "Done. zeroclaw-probe-7"
    assert [
        (c["name"], json.loads(c["arguments"]), c["result"], c["success"]) for c in echo["calls"]
    ] == [("echo", {"message": "zeroclaw-probe-7"}, "zeroclaw-probe-7", True)]
    recall = cases["live-multi-turn-recall"]["record"]
    assert recall["turn_responses"] == ["OK", "heron-19"] and recall["calls"] == []
    written = cases["live-write-file"]
    assert written["passed"], written
    workspace_grades = [g for g in written["grades"] if g["category"] == "side_effect"]
    assert len(workspace_grades) == 2 and all(g["passed"] for g in workspace_grades)

    # Tokens are the provider's usage summed over the case's model calls.
    tool, text = TOOL_STEP_TOKENS, TEXT_STEP_TOKENS
    expected = {
        "live-echo": (2, tool[0] + text[0], tool[1] + text[1]),
        "live-multi-turn-recall": (2, 2 * text[0], 2 * text[1]),
        "live-write-file": (2, tool[0] + text[0], tool[1] + text[1]),
    }
    for case_id, (calls, input_tokens, output_tokens) in expected.items():
        record = cases[case_id]["record"]
        assert (record["model_calls"], record["input_tokens"], record["output_tokens"]) == (
            calls,
            input_tokens,
            output_tokens,
        ), case_id
    # One request per model call, nothing retried; each case offered exactly its tools.
    assert len(tiny_server.requests) == 6
    assert {tuple(offered_tools(r)) for r in requests_for(tiny_server, ECHO_INPUT)} == {("echo",)}
    assert {tuple(offered_tools(r)) for r in requests_for(tiny_server, WRITE_INPUT)} == {
        ("write_file",)
    }
    # A case without `tools` gets the built-in tools live_allowed_tools allows (not `fail`).
    assert {tuple(offered_tools(r)) for r in requests_for(tiny_server, REMEMBER_INPUT)} == {
        ("echo", "list_files", "read_file", "write_file")
    }
    # The second turn was sent the first turn's history.
    last = requests_for(tiny_server, REMEMBER_INPUT)[-1]
    assert user_inputs(last) == [REMEMBER_INPUT, "recall"]
    assert all(r.json["model"] == LIVE_MODEL for r in tiny_server.requests)
    assert_key_kept_out(runs, tiny_server)


@pytest.mark.parametrize("agent", AGENTS)
def test_cases_one_after_another_share_the_provider_s_kept_alive_connection(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    # The server keeps connections open as providers do: a case connecting anew would pay
    # a TLS handshake per case against a real one.
    project = make_project(tmp_path / "project", tiny_server.base_url, SUITE)
    result = Runs(run_cli, project).live(agent, "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert len(tiny_server.requests) == 6
    assert len({r.connection for r in tiny_server.requests}) == 1


# --- fault injection ------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_one_429_and_one_500_are_retried_and_the_case_passes(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    tiny_server.enqueue(
        status(429, {"error": {"message": "rate limited"}}, headers={"Retry-After": "1"}),
        status(500, {"error": {"message": "internal error"}}),
    )
    project = make_project(tmp_path / "project", tiny_server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(run_cli, project)
    result = runs.live(agent)
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2) + result.stderr
    (case,) = report["cases"]
    assert case["passed"] and case["error"] is None
    tiny_server.assert_drained()
    # Two model calls, three attempts for the first: the server saw the two extra requests,
    # each carrying the same request again.
    assert case["record"]["model_calls"] == 2
    requests = tiny_server.requests
    assert len(requests) == 4
    assert requests[0].json == requests[1].json == requests[2].json
    # Only the answered calls' usage counts.
    assert case["record"]["input_tokens"] == TOOL_STEP_TOKENS[0] + TEXT_STEP_TOKENS[0]
    # Retry-After: 1 was honoured before the second attempt.
    assert case["duration_ms"] >= 1000
    assert_key_kept_out(runs, tiny_server)


def test_exhausted_retries_are_a_run_error_naming_the_attempts(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    cases = {
        "a_unavailable.json": live_case(
            "always-500", "unavailable: now", expects={"response_contains": ["never"]}
        ),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", tiny_server.base_url, cases)
    runs = Runs(run_cli, project)
    result = runs.live("openai-agents")
    report = report_of(result)
    assert result.returncode == 1
    by_id = cases_by_id(report)
    error = by_id["always-500"]["error"]
    assert error is not None and by_id["always-500"]["passed"] is False
    assert "gave up after 4 attempts" in error and "HTTP 500" in error, error
    assert "overloaded" in error  # the provider's own reason, key scrubbed
    assert len(requests_for(tiny_server, "unavailable: now")) == 4
    # The other case still ran, and passed.
    assert by_id["live-echo"]["passed"], by_id["live-echo"]
    assert report["totals"].items() >= {"cases": 2, "passed": 1, "failed": 0, "errors": 1}.items()
    assert_key_kept_out(runs, tiny_server)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_hang_becomes_a_timeout_run_error_and_the_suite_completes(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    cases = {
        "a_hang.json": live_case("hangs", "hang", expects={"response_contains": ["never"]}),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", tiny_server.base_url, cases, timeout=2)
    runs = Runs(run_cli, project)
    start = time.monotonic()
    result = runs.live(agent)
    elapsed = time.monotonic() - start
    report = report_of(result)
    assert result.returncode == 1
    assert elapsed < 30, f"the whole run took {elapsed:.1f}s for a 2s case timeout"
    by_id = cases_by_id(report)
    hung = by_id["hangs"]
    assert hung["error"] is not None and "timed out after 2s" in hung["error"], hung["error"]
    assert "turn 0" in hung["error"]
    # Within the configured time (plus the grace a cancelled call takes to unwind), not
    # after the server's 30 s hang.
    assert 1900 <= hung["duration_ms"] < 2000 + 3000, hung["duration_ms"]
    assert requests_for(tiny_server, "hang")
    # The next case still ran, and passed.
    assert by_id["live-echo"]["passed"], by_id["live-echo"]
    assert [c["id"] for c in report["cases"]] == ["hangs", "live-echo"]
    assert_key_kept_out(runs, tiny_server)


def test_timeout_on_the_command_line_also_bounds_each_model_call(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    """`--timeout` replaces case_timeout_secs for the calls too: a model slower than the
    configured 1 s but well within the 20 s asked for on the command line is waited for."""
    case = live_case(
        "slow-model", "slow: patience-3", expects={"response_contains": ["patience-3"]}
    )
    project = make_project(tmp_path / "project", tiny_server.base_url, {"a.json": case}, timeout=1)
    runs = Runs(run_cli, project)
    report = report_of(runs.live("openai-agents", "--timeout", "20"))
    (result,) = report["cases"]
    assert result["passed"], result["error"]
    assert len(tiny_server.requests) == 1  # waited for, not timed out and retried
    # Without --timeout, the configured second bounds the turn.
    report = report_of(runs.live("openai-agents"))
    assert "timed out after 1s in turn 0" in report["cases"][0]["error"]
    assert_key_kept_out(runs, tiny_server)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_malformed_body_is_a_clear_run_error(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    cases = {
        "a_malformed.json": live_case(
            "malformed-body", "malformed", expects={"response_contains": ["never"]}
        ),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", tiny_server.base_url, cases)
    runs = Runs(run_cli, project)
    result = runs.live(agent)
    report = report_of(result)
    assert result.returncode == 1
    by_id = cases_by_id(report)
    error = by_id["malformed-body"]["error"]
    assert error is not None
    assert "malformed response" in error and "not JSON" in error, error
    assert "upstream proxy error" in error  # an excerpt of what came back
    assert len(requests_for(tiny_server, "malformed")) == 1  # not retried: retrying cannot mend it
    assert by_id["live-echo"]["passed"]
    assert_key_kept_out(runs, tiny_server)


# --- a model asking for many tool calls at once ---------------------------------------------

WAVE = 1500  # tool calls in every answer: a model that kept a run going past 4 minutes


def wave_model(width: int, forever: bool = False) -> Callable[[Any], Action]:
    """A model answering a user message with `width` echo calls at once (fresh ids each
    time), and tool results with a text, or (`forever`) with another wave."""

    def answer(body: Any) -> Action:
        messages = body["messages"]
        if messages[-1]["role"] == "tool" and not forever:
            return text_reply("Done.")
        n = len(messages)
        return tool_reply([(f"call_{n}_{i}", "echo", {"message": f"w{i}"}) for i in range(width)])

    return answer


WAVE_CASE = live_case("wave", "echo: a wave", tools=["echo"], expects={"tools_used": ["echo"]})


def wave_run(
    run_cli: Cli,
    tmp_path: Path,
    width: int,
    agent: str,
    *extra: str,
    config: str = "",
    forever: bool = False,
) -> tuple[dict[str, Any], OpenAIServer]:
    with OpenAIServer(responder=wave_model(width, forever), api_key=LIVE_KEY) as server:
        project = make_project(
            tmp_path / "project", server.base_url, {"w.json": WAVE_CASE}, timeout=5, extra=config
        )
        runs = Runs(run_cli, project)
        result = runs.live(agent, "--html", "report.html", *extra)
    assert "Traceback" not in result.stdout + result.stderr
    assert (project / "report.html").stat().st_size > 0
    assert_key_kept_out(runs, server)
    (case,) = report_of(result)["cases"]
    return case, server


def too_wide(asked: int, limit: int) -> str:
    return (
        f"the model asked for {asked} tool calls in one answer in turn 0, more than the "
        f"{limit} allowed (max_tool_calls_per_step; raise it with --max-tool-calls N); "
        "none of them was dispatched"
    )


@pytest.mark.parametrize("agent", AGENTS)
def test_an_answer_of_1500_tool_calls_is_the_run_error_and_nothing_is_dispatched(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    # It was dispatched, every call of every answer, until the turn's timeout: the record,
    # the reports and the next request grew by thousands of calls a step.
    case, server = wave_run(run_cli, tmp_path, WAVE, agent)
    assert case["error"] == too_wide(WAVE, 128)
    assert len(server.requests) == 1 and case["record"]["calls"] == []
    assert case["record"]["model_calls"] == 1  # made, and paid for


@pytest.mark.parametrize("agent", AGENTS)
def test_the_tool_call_limit_is_configured_and_raised_on_the_command_line(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    config = "max_tool_calls_per_step = 5"
    case, _ = wave_run(run_cli, tmp_path / "configured", 6, agent, config=config)
    assert case["error"] == too_wide(6, 5)
    case, server = wave_run(
        run_cli, tmp_path / "raised", 6, agent, "--max-tool-calls", "6", config=config
    )
    assert case["passed"] and case["error"] is None, case
    assert [c["name"] for c in case["record"]["calls"]] == ["echo"] * 6
    assert len(server.requests) == 2


@pytest.mark.parametrize("agent", AGENTS)
def test_the_turn_timeout_holds_whatever_the_model_asks_for(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    """With the limit raised past what the model asks, every answer is dispatched: the
    turn still ends at its timeout, whether the framework yields or blocks its thread."""
    limit = ("--max-tool-calls", "5000", "--timeout", "2")
    case, _ = wave_run(run_cli, tmp_path, WAVE, agent, *limit, forever=True)
    assert case["error"].startswith("timed out after 2s in turn 0"), case["error"]
    # The timeout, the watchdog's grace for a blocked thread and the unwinding: not the
    # thousands of calls the model still asks for.
    assert 1900 <= case["duration_ms"] < 2000 + 3000, case["duration_ms"]


# --- refusals before anything runs ----------------------------------------------------------

MISSING_BASE_URL = "live_base_url"
MISSING_KEY = f"the API key in the environment variable {LIVE_KEY_ENV}"


@pytest.mark.parametrize(
    ("has_url", "has_key", "missing"),
    [
        (False, True, [MISSING_BASE_URL]),
        (True, False, [MISSING_KEY]),
        (False, False, [MISSING_BASE_URL, MISSING_KEY]),
    ],
    ids=["no-base-url", "no-key", "neither"],
)
def test_missing_configuration_names_exactly_what_is_missing(
    run_cli: Cli,
    tmp_path: Path,
    tiny_server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    has_url: bool,
    has_key: bool,
    missing: list[str],
) -> None:
    monkeypatch.delenv(LIVE_KEY_ENV, raising=False)
    base_url = tiny_server.base_url if has_url else None
    project = make_project(tmp_path / "project", base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(run_cli, project)
    result = runs.live("openai-agents", "--json-report", "report.json", key=has_key)
    assert_nothing_ran(result, tiny_server, project / "report.json")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert "live mode is not configured" in line
    for item in missing:
        assert item in line, line
    for item in {MISSING_BASE_URL, MISSING_KEY, "live_model"} - set(missing):
        assert item not in line, f"{item!r} is configured but reported missing: {line}"
    assert_key_kept_out(runs)


def test_a_blank_key_counts_as_missing(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    project = make_project(tmp_path / "project", tiny_server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(run_cli, project)
    result = runs.live("pydantic-ai", env={LIVE_KEY_ENV: "   "})
    assert_nothing_ran(result, tiny_server)
    assert MISSING_KEY in result.stderr


def test_a_live_fixture_with_scripted_steps_is_refused_at_admission(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    scripted = live_case("scripted", "echo: hi", expects={"response_contains": ["hi"]})
    scripted["turns"][0]["steps"] = [{"response": {"type": "text", "content": "hi"}}]
    project = make_project(
        tmp_path / "project", tiny_server.base_url, {"a_echo.json": ECHO_CASE, "b.json": scripted}
    )
    runs = Runs(run_cli, project)
    result = runs.live("openai-agents", "--json-report", "report.json")
    assert_nothing_ran(result, tiny_server, project / "report.json")
    assert "b.json: $.turns[0].steps" in result.stderr
    assert "a live case must not script model steps" in result.stderr
    assert "nothing was run" in result.stderr


@pytest.mark.parametrize("tool", ["shell", "bash"])
def test_a_command_running_tool_in_a_case_is_refused_saying_why(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, tool: str
) -> None:
    case = live_case(
        "wants-a-shell", "echo: hi", tools=["echo", tool], expects=ECHO_CASE["expects"]
    )
    project = make_project(tmp_path / "project", tiny_server.base_url, {"a.json": case})
    runs = Runs(run_cli, project)
    result = runs.live("pydantic-ai", "--json-report", "report.json")
    assert_nothing_ran(result, tiny_server, project / "report.json")
    assert f"a.json: $.tools[1]: tool {tool!r} is refused" in result.stderr
    assert "command-running tool would let the model run anything" in result.stderr


def test_a_command_running_tool_in_the_configuration_is_refused(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    project = make_project(
        tmp_path / "project",
        tiny_server.base_url,
        {"a_echo.json": ECHO_CASE},
        extra='live_allowed_tools = ["echo", "shell"]',
    )
    runs = Runs(run_cli, project)
    result = runs.live("openai-agents", "--json-report", "report.json")
    assert_nothing_ran(result, tiny_server, project / "report.json")
    assert "live_allowed_tools[1]: tool 'shell' is refused" in result.stderr
    assert "command-running tool" in result.stderr


def test_live_allowed_tools_narrows_what_a_case_is_offered(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    project = make_project(
        tmp_path / "project",
        tiny_server.base_url,
        {"a_write.json": WRITE_CASE},
        extra='live_allowed_tools = ["echo"]',
    )
    runs = Runs(run_cli, project)
    report = report_of(runs.live("openai-agents"))
    (case,) = report["cases"]
    # write_file is the case's tool, but the configuration does not allow it: never offered,
    # so the tiny model cannot call it and the case fails its checks.
    assert not case["passed"] and case["error"] is None
    assert {tuple(offered_tools(r)) for r in tiny_server.requests} == {()}
    assert case["record"]["calls"] == []


# --- the key, end to end --------------------------------------------------------------------------


def test_the_key_is_in_no_report_output_or_file(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    """Every report format, annotations, the step summary and history, for a suite with a
    passing case and failures whose provider answers echo the key."""
    cases = {
        **SUITE,
        "d_unavailable.json": live_case(
            "always-500", "unavailable", expects={"response_contains": ["x"]}
        ),
        "e_malformed.json": live_case(
            "malformed-body", "malformed", expects={"response_contains": ["x"]}
        ),
        # The model itself says the key: in tool arguments, then in a final text.
        "f_says_key.json": live_case(
            "says-the-key",
            "leak",
            "confess",
            tools=["echo"],
            expects={"response_contains": ["My API key is"], "tools_used": ["echo"]},
        ),
    }
    project = make_project(tmp_path / "project", tiny_server.base_url, cases)
    runs = Runs(run_cli, project)
    step_summary = project / "github" / "step_summary.md"
    step_summary.parent.mkdir()
    for agent, fmt in (
        ("openai-agents", "table"),
        ("pydantic-ai", "junit"),
        ("pydantic-ai", "json"),
    ):
        reports = project / "reports" / f"{agent}-{fmt}"
        result = runs(
            "eval",
            "run",
            "--suite",
            "evals/live",
            "--mode",
            "live",
            "--agent",
            agent,
            "--format",
            fmt,
            "--json-report",
            reports / "report.json",
            "--junit-xml",
            reports / "junit.xml",
            "--summary",
            reports / "summary.md",
            "--history",
            reports / "history.jsonl",
            "--annotations",
            "github",
            env={"GITHUB_STEP_SUMMARY": str(step_summary)},
        )
        assert result.returncode == 1, result.stderr
        for name in ("report.json", "junit.xml", "summary.md", "history.jsonl"):
            assert (reports / name).stat().st_size > 0, name
        report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
        by_id = cases_by_id(report)
        # The failures happened and were reported, just without the key.
        assert "***" in by_id["always-500"]["error"]
        assert "***" in by_id["malformed-body"]["error"]
        said = by_id["says-the-key"]
        assert said["passed"], said
        assert said["record"]["calls"][0]["arguments"] == '{"message":"***"}'
        assert said["record"]["turn_responses"] == ["Done. ***", "My API key is ***."]
        assert by_id["live-echo"]["passed"]
    assert "::error" in "".join(runs.outputs)
    assert step_summary.stat().st_size > 0
    # The server did receive the key on every request (it answers 401 otherwise) ...
    assert_key_kept_out(runs, tiny_server)
    # ... but only there: the model's scrubbed words went back into the conversation.
    assert len(tiny_server.requests) > 20
    assert not any(LIVE_KEY_CORE in r.text for r in tiny_server.requests)


# --- the key in every escaping ----------------------------------------------------------------

# A key with the characters servers escape: `/` (JSON's `\/`), `+` and `=` (percent-encoding).
ESCAPED_KEY = "sk-live/Zq7SECRET+echo=77"
ESCAPED_KEY_CORE = "Zq7SECRET"


def key_forms(key: str) -> dict[str, str]:
    """The key as servers and reports may write it, each named."""
    return {
        "plain": key,
        "json": json.dumps(key)[1:-1],
        "json-slash": key.replace("/", "\\/"),
        "unicode-escaped": "".join(f"\\u{ord(c):04x}" for c in key),
        "unicode-escaped-upper": "".join(f"\\u{ord(c):04X}" for c in key),
        "percent": quote(key, safe=""),
        "percent-every-byte": "".join(f"%{b:02X}" for b in key.encode()),
        "html-references": "".join(f"&#{ord(c)};" for c in key),
        "base64": base64.b64encode(key.encode()).decode(),
        "hex": key.encode().hex(),
        "hex-upper": key.encode().hex().upper(),
        "core": ESCAPED_KEY_CORE if key == ESCAPED_KEY else key,
    }


def assert_no_form_of(key: str, text: str, where: str) -> None:
    for name, form in key_forms(key).items():
        assert form not in text, f"the key ({name}) leaked into {where}:\n{text[:2000]}"


def test_the_mask_covers_every_escaping_and_mixtures_of_them() -> None:
    mask = SecretMask(ESCAPED_KEY)
    mixed = "sk-live\\/Zq7%53ECRET\\u002Becho&#61;77"  # a server escaping only some characters
    nested = json.dumps(json.dumps({"k": ESCAPED_KEY.replace("/", "\\/")}))
    aligned = [base64.b64encode(p + ESCAPED_KEY.encode()).decode() for p in (b"", b"a", b"ab")]
    urlsafe = base64.urlsafe_b64encode(b"Bearer " + ESCAPED_KEY.encode()).decode()
    for form in [*key_forms(ESCAPED_KEY).values(), mixed, nested, *aligned, urlsafe]:
        if form == ESCAPED_KEY_CORE:
            continue
        masked = mask(f"before {form} after")
        assert mask.found_in(form), form
        assert "***" in masked and ESCAPED_KEY_CORE not in masked, (form, masked)
        assert masked.startswith("before ") and masked.endswith(" after"), masked
    assert mask("sk-live/Zq7SECRET+echo=7") == "sk-live/Zq7SECRET+echo=7"  # not the key
    assert not SecretMask("") and SecretMask("")("anything") == "anything"


def key_echoing_model(body: Any) -> Action:
    """A provider that echoes the key back in every way a careless one does, by the last
    user message: as a tool call's name, as a tool call's id, `\\/`-escaped and
    `\\u`-escaped in the raw JSON of an error, percent-encoded in a URL of a non-JSON body,
    hex-encoded in text and in a tool call's arguments."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return text_reply(f"Done; the tool said {last['content']}")
    said = last.get("content") or ""
    if said == "name":
        return tool_reply([("call_1", ESCAPED_KEY, {})])
    if said == "id":
        return tool_reply([(ESCAPED_KEY, "echo", {"message": "ping"})])
    if said == "slashes":  # a valid completion written with PHP-style `\/` escapes
        document = json.loads(text_reply(f"your key is {ESCAPED_KEY}").body)
        return Reply(200, json.dumps(document).replace("/", "\\/").encode())
    if said == "refused":
        raw = (
            '{"error": {"message": "invalid key '
            + ESCAPED_KEY.replace("/", "\\/")
            + '", "hint": "'
            + "".join(f"\\u{ord(c):04x}" for c in ESCAPED_KEY)
            + '"}}'
        )
        return Reply(400, raw.encode())
    if said == "garbled":
        return malformed(f"<a href='https://gw.example/retry?key={quote(ESCAPED_KEY, safe='')}'>")
    if said == "hex":  # a model asked to encode the key: lower case to say, upper to pass on
        hexed = ESCAPED_KEY.encode().hex()
        return tool_reply([("call_1", "echo", {"message": hexed.upper()})], content=hexed)
    return text_reply("I cannot do that.")


KEY_ECHO_CASES = {
    f"{name}.json": live_case(
        f"key-as-{name}", name, tools=["echo"], expects={"response_contains": ["never said"]}
    )
    for name in ("name", "id", "slashes", "refused", "garbled", "hex")
}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_key_echoed_as_a_tool_name_an_id_or_escaped_is_in_no_output(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    with OpenAIServer(responder=key_echoing_model, api_key=ESCAPED_KEY) as server:
        project = make_project(tmp_path / "project", server.base_url, KEY_ECHO_CASES)
        runs = Runs(run_cli, project)
        result = runs.live(
            agent,
            "--json-report",
            "reports/report.json",
            "--junit-xml",
            "reports/junit.xml",
            "--summary",
            "reports/summary.md",
            env={LIVE_KEY_ENV: ESCAPED_KEY},
            key=False,
        )
    report = report_of(result)
    assert result.returncode == 1, result.stderr
    assert report["totals"]["cases"] == 6
    # The provider did get the key (it answers 401 otherwise) and echoed it every time.
    assert server.requests and all(
        r.headers["authorization"] == f"Bearer {ESCAPED_KEY}" for r in server.requests
    )
    cases = cases_by_id(report)
    assert "***" in cases["key-as-refused"]["error"]
    assert "***" in cases["key-as-garbled"]["error"]
    assert cases["key-as-slashes"]["record"]["final_response"] == "your key is ***"
    assert [c["name"] for c in cases["key-as-id"]["record"]["calls"]] == ["echo"]
    hexed = cases["key-as-hex"]["record"]
    assert [c["arguments"] for c in hexed["calls"]] == ['{"message":"***"}']
    assert hexed["final_response"] == "Done; the tool said ***"
    if agent == "openai-agents":  # the SDK's "tool not found" error names the tool
        assert "Tool *** not found" in cases["key-as-name"]["error"]
    files = sorted((project / "reports").iterdir())
    assert [f.name for f in files] == ["junit.xml", "report.json", "summary.md"]
    for path in files:
        assert_no_form_of(ESCAPED_KEY, path.read_text(encoding="utf-8"), str(path.name))
    assert_no_form_of(ESCAPED_KEY, result.stdout, "stdout")
    assert_no_form_of(ESCAPED_KEY, result.stderr, "stderr")
    # Nor did the masked echoes go back to the provider as the agent's words.
    assert not any(ESCAPED_KEY_CORE in r.text for r in server.requests)


@pytest.mark.parametrize("key", ["sk live key", "sk-\u00e9t\u00e9", "sk-line\nbreak"])
def test_a_key_no_header_can_carry_is_a_clear_error_without_the_key(key: str) -> None:
    with pytest.raises(ProviderError) as info:
        LiveSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key=key, api_key_env="K")
    message = str(info.value)
    assert "the API key in K holds a character an HTTP header cannot carry" in message
    assert key not in message and "sk" not in message


# --- bounded responses ------------------------------------------------------------------------

CAP = MAX_RESPONSE_BYTES


def gzip_bomb(size: int) -> bytes:
    """A gzip body that is small on the wire and `size` bytes (of JSON-looking text) decoded."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    parts = [compressor.compress(b'{"choices": [{"message": {"content": "')]
    parts += [compressor.compress(block) for _ in range(size >> 20)]
    return b"".join(parts) + compressor.flush()


def test_a_gzip_bomb_is_a_clear_error_in_bounded_memory(server: OpenAIServer) -> None:
    decoded = 16 * CAP  # 128 MiB decoded from about 128 KiB on the wire
    bomb = gzip_bomb(decoded)
    assert len(bomb) < decoded // 500
    server.enqueue(Reply(200, bomb, headers={"Content-Encoding": "gzip"}), text_reply("no"))
    sleep = FakeSleep()
    tracemalloc.start()
    try:
        error = fails(backend_for(server.base_url, sleep))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "a response body larger than 8 MiB (MAX_RESPONSE_BYTES" in str(error), str(error)
    assert "the rest was not read" in str(error) and "not retried" in str(error)
    assert peak < 3 * CAP, f"{peak / 2**20:.0f} MiB held for a body capped at 8 MiB"
    assert len(server.requests) == 1 and sleep.delays == []  # no retry of a bomb
    assert error.status == 200


def test_an_endless_plain_body_stops_being_read_at_the_cap(server: OpenAIServer) -> None:
    total = 8 * CAP
    chunk = b"x" * 65536
    stream = Stream(lambda: (chunk for _ in range(total // len(chunk))))
    server.enqueue(stream)
    error = fails(backend_for(server.base_url))
    assert "a response body larger than 8 MiB" in str(error), str(error)
    assert stream.finished.wait(10)
    # What the client read, plus what the sockets' buffers took before it hung up.
    assert CAP < stream.sent < total // 2, stream.sent


def test_a_declared_length_over_the_cap_is_refused_before_reading(server: OpenAIServer) -> None:
    content = "y" * (CAP + 1)
    oversized = json.loads(text_reply("").body)
    oversized["choices"][0]["message"]["content"] = content
    server.enqueue(Reply(200, json.dumps(oversized).encode()))
    error = fails(backend_for(server.base_url))
    assert "a response body larger than 8 MiB" in str(error), str(error)


def test_a_body_just_under_the_cap_is_read(server: OpenAIServer) -> None:
    document = json.loads(text_reply("").body)
    document["choices"][0]["message"]["content"] = "z" * (CAP - 1000)
    body = json.dumps(document).encode()
    assert len(body) <= CAP
    server.enqueue(Reply(200, gzip.compress(body), headers={"Content-Encoding": "gzip"}))
    (step,) = run(backend_for(server.base_url))
    assert len(step.text) == CAP - 1000


def raw_deflate(data: bytes) -> bytes:
    """Deflate without the zlib header, as some servers send `Content-Encoding: deflate`."""
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda b: zlib.compress(b), id="deflate-zlib"),
        pytest.param(raw_deflate, id="deflate-raw"),
    ],
)
def test_deflate_bodies_are_decoded(server: OpenAIServer, encode: Any) -> None:
    server.enqueue(
        Reply(200, encode(text_reply("deflated").body), headers={"Content-Encoding": "deflate"})
    )
    assert run(backend_for(server.base_url))[0].text == "deflated"
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize(
    ("encoding", "body", "problem"),
    [
        ("br", text_reply("x").body, "a body in Content-Encoding 'br', which the harness"),
        ("gzip, gzip", text_reply("x").body, "Content-Encoding 'gzip, gzip'"),
        ("gzip", b"not gzip at all", "a body that is not valid gzip data"),
    ],
)
def test_a_body_in_an_encoding_not_read_is_a_clear_error(
    server: OpenAIServer, encoding: str, body: bytes, problem: str
) -> None:
    server.enqueue(Reply(200, body, headers={"Content-Encoding": encoding}))
    error = fails(backend_for(server.base_url))
    assert problem in str(error) and "not retried" in str(error), str(error)


def test_a_body_nested_too_deeply_is_a_clear_error(server: OpenAIServer) -> None:
    server.enqueue(Reply(200, b"[" * 100_000 + b"]" * 100_000))
    error = fails(backend_for(server.base_url))
    assert "malformed response" in str(error) and "nested too deeply" in str(error)


def test_a_gzip_bomb_is_the_case_run_error(run_cli: Cli, tmp_path: Path) -> None:
    bomb = gzip_bomb(4 * CAP)
    with OpenAIServer(
        responder=lambda body: Reply(200, bomb, headers={"Content-Encoding": "gzip"})
    ) as server:
        project = make_project(
            tmp_path / "project",
            server.base_url,
            {"bomb.json": live_case("bomb", "hi", expects={"response_contains": ["x"]})},
        )
        result = Runs(run_cli, project).live("pydantic-ai")
    (case,) = report_of(result)["cases"]
    assert result.returncode == 1
    assert "a response body larger than 8 MiB (MAX_RESPONSE_BYTES" in case["error"]
    assert "Traceback" not in result.stdout + result.stderr
    assert len(server.requests) == 1
