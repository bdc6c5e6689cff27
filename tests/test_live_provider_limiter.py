"""`harness.live.provider_limiter`: what every backend of one provider shares, against a real
loopback server (or a closed port): a 429 or 503 with `Retry-After` pauses every request to
the provider, a pause the turn cannot wait out fails the call at once, and a run of
connection failures declares the provider down, after which nothing more is sent.

The backends are driven directly, several at once on one event loop as the runner's jobs
are; the last test goes through the command line.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _openai_server import Action, OpenAIServer, status, text_reply
from conftest import (
    ECHO_INPUT,
    Cli,
    Runs,
    assert_key_kept_out,
    live_case,
    make_project,
    report_of,
    tiny_model,
)

from harness.config import EvalConfig
from harness.live.backend import LiveBackend, LiveSettings, ProviderError, live_backend_factory
from harness.live.provider_limiter import DOWN_AFTER_FAILURES, ProviderLimiter, connection_failure
from harness.model_boundary import (
    Message,
    ModelBoundary,
    ModelRequest,
    ModelStep,
    ProviderFailure,
)

KEY = "sk-test-SECRET-limiter-77"
MODEL = "loopback-gpt"
PAUSE = 1.0  # the Retry-After of the storm, in seconds


class FakeSleep:
    """Records the delays asked for instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def settings_for(base_url: str, **overrides: Any) -> LiveSettings:
    return LiveSettings(
        base_url=base_url, model=MODEL, api_key=KEY, api_key_env="ZC_TEST_KEY", **overrides
    )


def user(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),))


def run(backend: LiveBackend, request: ModelRequest | None = None) -> ModelStep:
    async def go() -> ModelStep:
        try:
            return await backend.respond(request or user())
        finally:
            await backend.aclose()

    return asyncio.run(go())


def fails(backend: LiveBackend) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        run(backend)
    return info.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def down_message(base_url: str) -> str:
    return (
        f"provider {base_url} is down: {DOWN_AFTER_FAILURES} consecutive connection failures "
        "(last: connection refused); the remaining cases were not sent"
    )


# --- a 429 storm ----------------------------------------------------------------------------


class Storm:
    """A rate-limited provider: `first` gets a 429 with `Retry-After: PAUSE` (`told` is when,
    on the server's side); `in flight` is held until the client knows of the pause, then
    gets a 500, so it is in flight throughout and retries during the pause; any request
    arriving during the pause gets another 429, as from a real provider, and everything
    else is answered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.told: float | None = None
        self.held = False
        self.limiter: ProviderLimiter | None = None

    def answer(self, body: Any) -> Action:
        text = body["messages"][-1]["content"]
        now = time.monotonic()
        with self.lock:
            told, hold = self.told, text == "in flight" and not self.held
            if text == "first" and told is None:
                self.told = now
                return self.rate_limited()
            self.held = self.held or hold
        if hold:
            deadline = time.monotonic() + 10
            while not self.paused() and time.monotonic() < deadline:
                time.sleep(0.01)
            return status(500, {"error": {"message": "busy"}})
        if told is not None and now < told + PAUSE:
            return self.rate_limited()
        return text_reply(f"ok: {text}")

    def paused(self) -> bool:
        return self.limiter is not None and self.limiter.paused_until > 0

    @staticmethod
    def rate_limited() -> Action:
        return status(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "1"})


async def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the storm never got going"
        await asyncio.sleep(0.01)


def test_a_429_pauses_every_request_to_the_provider_until_its_retry_after() -> None:
    storm = Storm()
    with OpenAIServer(responder=storm.answer) as server:
        factory = live_backend_factory(settings_for(server.base_url))
        backends = [factory(None) for _ in range(6)]  # type: ignore[arg-type]
        limiter = backends[0].limiter
        storm.limiter = limiter
        assert all(b.limiter is limiter for b in backends)

        async def in_flight() -> ModelStep:
            return await backends[0].respond(user("in flight"))

        async def first() -> ModelStep:
            await _until(lambda: server.requests)  # `in flight` is on the server
            return await backends[1].respond(user("first"))

        async def later(i: int) -> ModelStep:
            # New requests while the provider is paused, one every 100 ms.
            await _until(storm.paused)
            await asyncio.sleep(0.1 * i)
            return await backends[2 + i].respond(user(f"later {i}"))

        async def go() -> list[ModelStep]:
            try:
                return await asyncio.gather(in_flight(), first(), *(later(i) for i in range(4)))
            finally:
                await asyncio.gather(*(b.aclose() for b in backends))

        steps = asyncio.run(go())
        requests = server.requests

    assert [s.text for s in steps] == [
        "ok: in flight",
        "ok: first",
        *(f"ok: later {i}" for i in range(4)),
    ]
    told = storm.told
    assert told is not None
    during = [
        r.json["messages"][-1]["content"] for r in requests if told < r.arrived < told + PAUSE
    ]
    assert during == [], f"sent while the provider was paused: {during}"
    # One retry each for the two that were told to wait or failed; none for the rest.
    assert len(requests) == 8
    assert sum(b.retries for b in backends) == 2
    assert [b.attempts for b in backends] == [2, 2, 1, 1, 1, 1]


def test_a_503_with_retry_after_pauses_the_other_backends_and_a_500_does_not() -> None:
    with OpenAIServer(
        [
            status(503, headers={"Retry-After": "2"}),
            text_reply("a"),
            text_reply("b"),
            status(500, headers={"Retry-After": "3"}),
            text_reply("c"),
            text_reply("d"),
        ]
    ) as server:
        sleep = FakeSleep()
        factory = live_backend_factory(settings_for(server.base_url), sleep=sleep)
        one, two = factory(None), factory(None)  # type: ignore[arg-type]
        assert run(one).text == "a"
        assert run(two).text == "b"
        # The second waited out what was left of the first one's Retry-After: sleeping is
        # faked here, so nearly all of it.
        assert sleep.delays[0] == 2.0 and sleep.delays[1] == pytest.approx(2.0, abs=0.5)
        assert (two.attempts, two.retries) == (1, 0)

        # A 500's Retry-After is that request's own wait, not the provider's.
        sleep = FakeSleep()
        factory = live_backend_factory(settings_for(server.base_url), sleep=sleep)
        three, four = factory(None), factory(None)  # type: ignore[arg-type]
        assert run(three).text == "c" and run(four).text == "d"
        assert sleep.delays == [3.0]
        assert three.limiter.paused_until == 0.0
        server.assert_drained()


def test_a_pause_longer_than_the_turn_fails_the_call_at_once_unsent() -> None:
    with OpenAIServer(
        [status(429, {"error": {"message": "slow down"}}, {"Retry-After": "30"}), text_reply("no")]
    ) as server:
        factory = live_backend_factory(settings_for(server.base_url, turn_timeout=2.0))
        start = time.monotonic()
        error = fails(factory(None))  # type: ignore[arg-type]
        expected = (
            f"model call to {server.base_url}/chat/completions (model {MODEL!r}) was not sent: "
            "the provider asked it to wait 30.0s (Retry-After), longer than the 2.0s left of "
            "its turn (turn timeout 2s); last error: HTTP 429 Too Many Requests: "
            '{"error": {"message": "slow down"}}'
        )
        # What is left of the turn is measured: a loaded machine may have used a little.
        assert re.sub(r"the \d\.\ds left", "the 2.0s left", str(error)) == expected
        assert (error.status, error.attempts) == (429, 1)
        # Another case's turn, started after it: the provider is still paused, for longer
        # than this turn can wait, so its call is not even sent.
        error = fails(factory(None))  # type: ignore[arg-type]
        assert re.search(
            r"was not sent: the provider is paused for (29\.\d|30\.0)s more "
            r"\(Retry-After on an HTTP 429 to another request\)",
            str(error),
        ), error
        assert "longer than the 2.0s left of its turn" in str(error)
        assert (error.status, error.attempts) == (None, 0)
        assert time.monotonic() - start < 1.5
        assert len(server.requests) == 1 and server.pending == 1


def test_the_limiter_is_bound_to_no_event_loop() -> None:
    # The runner may go on in a fresh event loop on another thread after abandoning a
    # blocked case: a pause set from one loop holds in the next.
    with OpenAIServer([text_reply("a"), text_reply("b")]) as server:
        factory = live_backend_factory(settings_for(server.base_url))
        assert run(factory(None)).text == "a"  # type: ignore[arg-type]
        backend = factory(None)  # type: ignore[arg-type]
        backend.limiter.pause(0.5, 429)
        until = backend.limiter.paused_until
        steps: list[ModelStep] = []
        worker = threading.Thread(target=lambda: steps.append(run(backend)))
        worker.start()
        worker.join(timeout=20)
        assert [s.text for s in steps] == ["b"]
        assert server.requests[1].arrived >= until


# --- a dead provider ------------------------------------------------------------------------


def test_a_dead_provider_fails_every_request_at_once_with_one_message() -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    factory = live_backend_factory(settings_for(base_url))
    backends = [factory(None) for _ in range(10)]  # type: ignore[arg-type]

    async def go() -> list[Any]:
        try:
            calls = (b.respond(user(f"case {i}")) for i, b in enumerate(backends))
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            await asyncio.gather(*(b.aclose() for b in backends))

    start = time.monotonic()
    outcomes = asyncio.run(go())
    elapsed = time.monotonic() - start
    assert all(isinstance(o, ProviderError) for o in outcomes), outcomes
    assert {str(o) for o in outcomes} == {down_message(base_url)}
    assert isinstance(outcomes[0], ProviderFailure)  # the runner's run error, said as is
    # The first failures slept one backoff (under half a second) and found the provider
    # down; none retried. Before the limiter each call spent 4 attempts and 3 backoffs.
    assert elapsed < 2.0, elapsed
    assert sum(b.retries for b in backends) == 0
    assert sum(b.attempts for b in backends) <= len(backends)
    limiter = backends[0].limiter
    assert limiter.down and limiter.failures == DOWN_AFTER_FAILURES


def test_after_k_connection_failures_no_request_is_even_tried() -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    sleep = FakeSleep()
    factory = live_backend_factory(settings_for(base_url), sleep=sleep)
    backends = [factory(None) for _ in range(10)]  # type: ignore[arg-type]
    assert backends[0].settings.max_attempts < DOWN_AFTER_FAILURES  # one call is no proof

    async def go() -> list[tuple[str, float]]:
        said = []
        for i, backend in enumerate(backends):
            start = time.monotonic()
            with pytest.raises(ProviderError) as info:
                await backend.respond(user(f"case {i}"))
            said.append((str(info.value), time.monotonic() - start))
            await backend.aclose()
        return said

    said = asyncio.run(go())
    # The first call used up its attempts; the second call's attempt was the K-th failure.
    assert "gave up after 4 attempts" in said[0][0] and "connection error" in said[0][0]
    assert "is down" not in said[0][0]
    assert [text for text, _ in said[1:]] == [down_message(base_url)] * 9
    assert [b.attempts for b in backends] == [4, 1] + [0] * 8
    assert sum(b.attempts for b in backends) == DOWN_AFTER_FAILURES
    assert all(seconds < 0.1 for _, seconds in said[2:]), said
    assert len(sleep.delays) == 3  # the first call's backoffs, and no other wait


class Body(httpx.AsyncByteStream):
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.data


def streamed(code: int, document: Any) -> httpx.Response:
    """A response the backend reads as a stream, as from a real connection (httpx reads a
    body given as `json=` at once, and then has no stream left to give)."""
    body = json.dumps(document).encode()
    return httpx.Response(code, headers={"content-type": "application/json"}, stream=Body(body))


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("All connection attempts failed") from ConnectionRefusedError(
        111, "Connection refused"
    )


def test_a_response_resets_the_count_and_only_consecutive_failures_count() -> None:
    answers: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        answer: Any = answers.pop(0)
        return answer(request)  # type: ignore[no-any-return]

    def ok(request: httpx.Request) -> httpx.Response:
        message = {"role": "assistant", "content": "ok"}
        return streamed(200, {"choices": [{"message": message}]})

    def busy(request: httpx.Request) -> httpx.Response:
        return streamed(500, {"error": {"message": "busy"}})

    factory = live_backend_factory(
        settings_for("http://provider.test/v1"),
        sleep=FakeSleep(),
        transport=httpx.MockTransport(handler),
    )
    limiter = factory(None).limiter  # type: ignore[arg-type]
    answers += [refused, refused, refused, ok]  # a success resets the count
    assert run(factory(None)).text == "ok"  # type: ignore[arg-type]
    assert (limiter.failures, limiter.down) == (0, False)
    answers += [refused, refused, busy, ok]  # so does any response, whatever its status
    assert run(factory(None)).text == "ok"  # type: ignore[arg-type]
    assert (limiter.failures, limiter.down) == (0, False)
    # Not reset, the count would have reached 5 by now; one call's attempts are not yet 5.
    answers += [refused] * 4
    assert "gave up after 4 attempts" in str(fails(factory(None)))  # type: ignore[arg-type]
    assert (limiter.failures, limiter.down) == (4, False)
    answers += [refused]
    error = fails(factory(None))  # type: ignore[arg-type]
    assert str(error) == (
        "provider http://provider.test/v1 is down: 5 consecutive connection failures "
        "(last: connection refused); the remaining cases were not sent"
    )
    assert (error.attempts, limiter.down) == (1, True)
    answers += [ok]
    assert str(fails(factory(None))) == str(error)  # type: ignore[arg-type]
    assert answers == [ok]  # never asked: down is for the rest of the run


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (refused, "connection refused"),
        (httpx.ConnectTimeout("timed out"), "connect timeout"),
        (httpx.ReadError("reset"), "connection reset"),
        (httpx.ConnectError("dns"), "DNS lookup failed (Name or service not known)"),
        (httpx.ConnectError("tls"), "TLS failure (CERTIFICATE_VERIFY_FAILED)"),
        (httpx.ConnectError("odd"), "could not connect (ConnectError: odd)"),
        (httpx.RemoteProtocolError("Server disconnected without sending a response."), None),
        (httpx.ReadTimeout("slow"), None),
        (httpx.ReadError("closed"), None),
    ],
    ids=["refused", "connect-timeout", "reset", "dns", "tls", "other", "dropped", "slow", "read"],
)
def test_which_failures_are_connection_failures(error: Any, reason: str | None) -> None:
    causes: dict[str, BaseException] = {
        "reset": ConnectionResetError(104, "Connection reset by peer"),
        "dns": socket.gaierror(-2, "Name or service not known"),
        "tls": ssl.SSLCertVerificationError(1, "certificate verify failed"),
    }
    if callable(error):
        try:
            error(httpx.Request("POST", "http://x/"))
        except httpx.ConnectError as exc:
            error = exc
    elif str(error) in causes:
        cause = causes[str(error)]
        if isinstance(cause, ssl.SSLError):
            cause.reason = "CERTIFICATE_VERIFY_FAILED"  # as the ssl module sets it
        error.__cause__ = cause
    assert connection_failure(error) == reason


def test_the_down_message_holds_no_key() -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/{KEY}/v1"
    factory = live_backend_factory(settings_for(base_url), sleep=FakeSleep())
    for _ in range(2):
        error = fails(factory(None))  # type: ignore[arg-type]
    assert "is down" in str(error) and "/***/v1" in str(error)
    assert KEY not in str(error) and KEY not in repr(error)
    assert KEY not in repr(factory(None).limiter)  # type: ignore[arg-type]


def test_the_provider_shares_one_limiter_across_its_backends() -> None:
    from harness.live.backend import provider_from_config

    config = EvalConfig(
        live_base_url="http://127.0.0.1:9/v1", live_model="m", live_api_key_env="ZC_KEY"
    )
    provider = provider_from_config(config, {"ZC_KEY": KEY}, 7.0)
    assert provider.limiter is not None and not provider.limiter.down
    assert provider.limiter.paused_until == 0.0
    one, two = provider.backend(None), provider.backend(None)  # type: ignore[arg-type]
    assert one is not two and one.limiter is two.limiter is provider.limiter
    assert one.settings.turn_timeout == 7.0 and one.settings.call_timeout == 7.0


# --- through the command line ---------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "4"])
def test_a_dead_provider_gives_every_case_the_run_error_quickly(
    run_cli: Cli, tmp_path: Path, jobs: str
) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    expects = {"tools_used": ["echo"], "response_contains": ["zeroclaw-probe-7"]}
    cases = {
        f"{i}_echo.json": live_case(f"echo-{i}", ECHO_INPUT, tools=["echo"], expects=expects)
        for i in range(5)
    }
    project = make_project(tmp_path / "project", base_url, cases)
    runs = Runs(run_cli, project)
    start = time.monotonic()
    result = runs.live("openai-agents", "--jobs", jobs)
    elapsed = time.monotonic() - start
    report = report_of(result)
    assert result.returncode == 1
    errors = [case["error"] for case in report["cases"]]
    assert all(errors), errors
    # One at a time, the first case spent its attempts and the next one's attempt made the
    # provider down; four at once, their first attempts and one retry did. Every case
    # after that failed without sending anything.
    assert "connection" in errors[0], errors[0]
    assert errors[1:] == [down_message(base_url)] * 4, errors
    if jobs != "1":
        assert errors[0] == down_message(base_url)
    slow = [c["duration_ms"] for c in report["cases"][2:] if c["duration_ms"] >= 1000]
    assert slow == [], "a case after the provider went down still waited"
    # One case's backoff (under 3.5 s in all) and no other: before the limiter, each of
    # the five cases spent its own.
    assert elapsed < 15, elapsed
    assert_key_kept_out(runs)


# --- a pause before a turn begins ---------------------------------------------------------


class Clock:
    """A monotonic clock that only sleeping moves: `sleep` advances it (and records the
    delays); `during_sleep` runs at each sleep, as other requests would meanwhile."""

    def __init__(self) -> None:
        self.now = 100.0
        self.delays: list[float] = []
        self.during_sleep: list[Any] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds
        if self.during_sleep:
            self.during_sleep.pop(0)()


def waiting_backend(clock: Clock) -> LiveBackend:
    limiter = ProviderLimiter("http://127.0.0.1:9/v1", clock=clock)
    settings = settings_for("http://127.0.0.1:9/v1", turn_timeout=1.0)
    return LiveBackend(settings, limiter=limiter, sleep=clock.sleep)


def test_a_turn_not_yet_begun_waits_out_the_pause_before_its_clock_starts() -> None:
    clock = Clock()
    backend = waiting_backend(clock)
    backend.limiter.pause(5.0, 429)
    # Another request is told to wait longer while this one waits: it waits again.
    clock.during_sleep.append(lambda: backend.limiter.pause(2.0, 429))
    boundary = ModelBoundary(backend)
    asyncio.run(boundary.ready(600.0))
    assert clock.delays == [5.0, 2.0]
    backend.start_turn(0)
    assert backend._turn_left() == 1.0  # the whole turn is left: its clock started after
    asyncio.run(boundary.ready(600.0))  # not paused: no wait
    assert clock.delays == [5.0, 2.0]


def test_a_pause_longer_than_the_case_has_left_fails_it_at_once() -> None:
    clock = Clock()
    backend = waiting_backend(clock)
    backend.limiter.pause(30.0, 503)
    with pytest.raises(ProviderError) as info:
        asyncio.run(backend.ready(12.0))
    assert str(info.value) == (
        "model calls to http://127.0.0.1:9/v1/chat/completions (model 'loopback-gpt') were "
        "not sent: the provider is paused for 30.0s more (Retry-After on an HTTP 503), longer "
        "than the 12.0s left of the case's wall clock"
    )
    assert clock.delays == []


def test_a_turn_does_not_wait_for_a_provider_that_is_down() -> None:
    clock = Clock()
    backend = waiting_backend(clock)
    backend.limiter.pause(30.0, 429)
    for _ in range(DOWN_AFTER_FAILURES):
        backend.limiter.unreachable("connection refused")
    asyncio.run(backend.ready(600.0))  # its first request says the provider is down
    assert clock.delays == []
    with pytest.raises(ProviderError, match="is down"):
        asyncio.run(backend.respond(user()))


def test_a_backend_without_the_hook_starts_its_turns_at_once() -> None:
    class Scripted:
        async def respond(self, request: ModelRequest) -> ModelStep:
            return ModelStep(text="ok")

    asyncio.run(ModelBoundary(Scripted()).ready(0.0))


@pytest.mark.parametrize("agent", ["openai-agents", "pydantic-ai"])
def test_a_pause_longer_than_the_turn_delays_the_cases_not_yet_started(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    # The first request gets a 429 whose Retry-After (3 s) is longer than a turn may take
    # (1.5 s); every other request is answered. Two cases run at once: the one told to
    # wait cannot, nor can the other if its turn needs the provider during the pause. The
    # cases not yet begun wait for the pause to end before their turn's clock starts; the
    # wait is longer than a turn and the watchdog's grace (1 s), and no case is abandoned.
    pause = 3.0
    expects = {"tools_used": ["echo"], "response_contains": ["zeroclaw-probe-7"]}
    cases = {
        f"{i}_echo.json": live_case(f"echo-{i}", ECHO_INPUT, tools=["echo"], expects=expects)
        for i in range(6)
    }
    too_many = status(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "3"})
    with OpenAIServer([too_many], responder=tiny_model) as server:
        project = make_project(tmp_path / "project", server.base_url, cases, timeout=1.5)
        runs = Runs(run_cli, project)
        start = time.monotonic()
        result = runs.live(agent, "--jobs", "2")
        elapsed = time.monotonic() - start
        requests = server.requests
    report = report_of(result)
    by_id = {case["id"]: case for case in report["cases"]}
    started_first = [by_id["echo-0"], by_id["echo-1"]]
    errors = [case["error"] for case in started_first if not case["passed"]]
    assert errors, "the case told to wait passed"
    assert any("asked it to wait 3.0s (Retry-After), longer than the" in e for e in errors)
    assert all("was not sent" in e and "left of its turn" in e for e in errors), errors
    later = [by_id[f"echo-{i}"] for i in range(2, 6)]
    assert [(c["passed"], c["error"]) for c in later] == [(True, None)] * 4
    # The first request got the 429; the other case's first one may have been on its way
    # already. Nothing else went out before the pause was over.
    told = requests[0].arrived
    assert all(r.arrived > told + pause - 0.1 for r in requests[2:]), "sent during the pause"
    assert pause <= elapsed < pause + 20, elapsed
    assert_key_kept_out(runs, server)
