"""What every request to one provider shares: a pause the provider asked for, and whether
the provider is down.

Cases, and the repetitions of a case, may run at the same time, each with its own
`LiveBackend`, all talking to one provider. Retrying each on its own is wrong twice over: a
rate limit one request is told about goes on being hit by all the others, and a provider
that is not there costs every case its full retries and backoff. So the backends of one
provider share one `ProviderLimiter` (`harness.live.backend.provider_from_config` makes it):

* A 429 or 503 with `Retry-After` pauses the provider: `paused_until` (on the monotonic
  clock) moves out, and every request of every backend, new or retried, waits until then
  before it is sent. A turn not yet begun waits before its clock starts (`wait_out_pause`),
  so the pause delays it instead of failing it; a request inside a turn that cannot wait
  that long fails at once (`PauseTooLong`) instead of sleeping into the turn's timeout.
* `DOWN_AFTER_FAILURES` consecutive connection failures (refused, reset, DNS or TLS failure,
  connect timeout), counted across all backends, declare the provider down: every later
  request fails at once, unsent, with one message (`ProviderDown`). An HTTP response of any
  status proves the provider reachable and resets the count; error statuses are the retry
  policy's business, not this one's.

It holds no asyncio primitive: the runner may abandon a blocked case and go on in a fresh
event loop on another thread, where a primitive bound to the first loop would fail. The
state is plain numbers under a thread lock, and waiting is the caller's `sleep`.
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from harness.live.chat_completions import SecretMask

if TYPE_CHECKING:
    import httpx

# Consecutive connection failures after which a provider is down for the rest of the run.
# One more than a call's default attempts (4): one call that used up its retries is not yet
# proof, a second call failing the same way is.
DOWN_AFTER_FAILURES = 5
# The statuses whose Retry-After pauses every request to the provider, not only the one
# that got it: the provider is rate-limiting or overloaded as a whole.
PAUSING_STATUSES = frozenset({429, 503})

Sleep = Callable[[float], Awaitable[None]]


class NotSent(Exception):
    """A request the limiter refused to send; its text is a clause for a run error."""


class ProviderDown(NotSent):
    """The provider is down: the whole message, said the same to every request."""


class PauseTooLong(NotSent):
    """The provider asked for a longer wait than the request's turn has left."""


def _unbounded() -> float:
    return math.inf


class ProviderLimiter:
    """The shared state of one provider's requests. `provider` names it in messages (the
    base URL, the key masked); `clock` is monotonic seconds. Usable from any thread and any
    event loop, one at a time or several."""

    def __init__(
        self,
        provider: str,
        *,
        down_after: int = DOWN_AFTER_FAILURES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if down_after < 1:
            raise ValueError(f"down_after must be at least 1, not {down_after}")
        self.provider = provider
        self.down_after = down_after
        self.clock = clock
        self._lock = threading.Lock()
        self.paused_until = 0.0  # on `clock`; in the past when the provider is not paused
        self.pause_status: int | None = None  # the status that asked for the latest pause
        self.failures = 0  # consecutive connection failures, across all backends
        self.down_message: str | None = None  # set once, when the provider is declared down

    def __repr__(self) -> str:
        return (
            f"ProviderLimiter({self.provider!r}, failures={self.failures}, "
            f"down={self.down}, pause_left={self.pause_left():.3g})"
        )

    @property
    def down(self) -> bool:
        return self.down_message is not None

    def pause_left(self) -> float:
        """Seconds until requests may be sent again; 0 when not paused."""
        return max(0.0, self.paused_until - self.clock())

    # --- what the backends report -------------------------------------------------------

    def pause(self, seconds: float, status: int) -> None:
        """The provider answered `status` with a Retry-After of `seconds` (already capped):
        no request goes out before then. A shorter pause never cuts a longer one short."""
        with self._lock:
            until = self.clock() + seconds
            if until > self.paused_until:
                self.paused_until, self.pause_status = until, status

    def reached(self) -> None:
        """An HTTP response came back, whatever its status: the provider is there."""
        with self._lock:
            if self.down_message is None:
                self.failures = 0

    def unreachable(self, reason: str) -> str | None:
        """A connection failure (`reason`, e.g. "connection refused", holding no secret);
        the down message once this or an earlier failure declared the provider down."""
        with self._lock:
            if self.down_message is None:
                self.failures += 1
                if self.failures >= self.down_after:
                    self.down_message = (
                        f"provider {self.provider} is down: {self.failures} consecutive "
                        f"connection failures (last: {reason}); the remaining cases were not sent"
                    )
            return self.down_message

    # --- before each request ------------------------------------------------------------

    async def admit(
        self,
        sleep: Sleep,
        delay: float = 0.0,
        *,
        asked: bool = False,
        turn_left: Callable[[], float] = _unbounded,
    ) -> None:
        """Wait until a request may be sent: its own `delay` (its backoff, or the Retry-After
        it was given when `asked`) and the provider's pause, however long others make it
        meanwhile. `turn_left()` is how long the request's turn can still wait.

        Raises `ProviderDown` when the provider is down, before the wait or after it, and
        `PauseTooLong` when a wait the provider asked for outlasts the turn."""
        self._refuse_if_down()
        covered = self.paused_until
        wait = max(delay, self.pause_left())
        while wait > 0:
            if asked or wait > delay:  # the provider's word, not the backoff's
                self._refuse_past_turn(wait, turn_left(), own=asked and wait <= delay)
            await sleep(wait)
            self._refuse_if_down()
            if self.paused_until <= covered:
                return
            # Another request was told to wait while this one slept: the pause is longer.
            covered, delay, asked = self.paused_until, 0.0, False
            wait = self.pause_left()

    async def wait_out_pause(self, sleep: Sleep, limit: float) -> None:
        """Wait until the provider's pause is over, however long others make it meanwhile:
        for a turn not yet begun, whose clock starts after. `PauseTooLong`, at once, when
        the pause outlasts `limit` seconds; no wait when the provider is down (the turn's
        first request says so)."""
        deadline = self.clock() + limit
        covered = -math.inf
        while self.down_message is None and self.paused_until > covered:
            covered, wait = self.paused_until, self.pause_left()
            if wait <= 0:
                return
            left = deadline - self.clock()
            if wait > left:
                raise PauseTooLong(
                    f"the provider is paused for {wait:.1f}s more (Retry-After on an HTTP "
                    f"{self.pause_status}), longer than the {max(0.0, left):.1f}s left of "
                    "the case's wall clock"
                )
            await sleep(wait)

    def _refuse_if_down(self) -> None:
        if self.down_message is not None:
            raise ProviderDown(self.down_message)

    def _refuse_past_turn(self, wait: float, left: float, *, own: bool) -> None:
        if wait <= left:
            return
        why = (
            f"the provider asked it to wait {wait:.1f}s (Retry-After)"
            if own
            else f"the provider is paused for {wait:.1f}s more "
            f"(Retry-After on an HTTP {self.pause_status} to another request)"
        )
        raise PauseTooLong(f"{why}, longer than the {max(0.0, left):.1f}s left of its turn")


def connection_failure(exc: BaseException) -> str | None:
    """What `exc` says kept the provider from being reached, in a few words: a connection
    refused or reset, a DNS or TLS failure, a connect timeout; None when the provider was
    reached and then failed (a dropped response, a read timeout), which says nothing
    about whether it is there."""
    import httpx  # imported by the call that failed already

    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timeout"
    cause = _os_cause(exc)
    if isinstance(exc, httpx.ConnectError):
        return cause or f"could not connect ({type(exc).__name__}: {exc})"
    return cause if cause == "connection reset" else None


def _os_cause(exc: BaseException) -> str | None:
    """The operating system's reason, found down the chain an HTTP client wraps it in."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, ConnectionResetError):
            return "connection reset"
        if isinstance(current, socket.gaierror):
            return f"DNS lookup failed ({current.strerror or current})"
        if isinstance(current, ssl.SSLError):
            return f"TLS failure ({getattr(current, 'reason', None) or current})"
        current = current.__cause__ or current.__context__
    return None


class SharedParts:
    """What every backend of one provider can share because it never changes: the key's
    mask and the TLS context. Built per case they cost tens of milliseconds of CPU each
    (the mask's escapings; the certificate bundle read again), which with many cases at
    once on one event loop is what bounds a concurrent live run."""

    def __init__(self, api_key: str) -> None:
        self.mask = SecretMask(api_key)
        self._tls: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        # One client per event loop (a client belongs to the loop it was made on; the
        # runner may start a fresh loop after abandoning a blocked case).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()

    def client(self, timeout: float) -> httpx.AsyncClient:
        """The provider's HTTP client on the running loop: its connections are reused by
        every case instead of each case connecting anew."""
        import httpx  # on the first call: a judge that only replays never makes one

        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None or client.is_closed:
                client = httpx.AsyncClient(
                    timeout=httpx.Timeout(timeout),
                    follow_redirects=False,
                    verify=self._tls_context(),
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                )
                self._clients[loop] = client
            return client

    def tls(self) -> ssl.SSLContext:
        with self._lock:
            return self._tls_context()

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            import httpx

            self._tls = httpx.create_ssl_context()
        return self._tls
