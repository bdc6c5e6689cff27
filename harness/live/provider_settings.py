"""Where and how to call a live provider (`LiveSettings`, checked as it is made: the URL,
the bounds, a key an HTTP header can carry) and `ProviderError`, its failure for good.

Apart from the backend, which sends: the judge of a replay run checks its provider's URL as
the run starts and makes no call, so it has no use for the HTTP client the backend imports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.config import live_missing, url_problem
from harness.model_boundary import ProviderFailure

if TYPE_CHECKING:
    from harness.config import EvalConfig

DEFAULT_CALL_TIMEOUT = 60.0
# Characters an HTTP header value can carry as they are.
_HEADER_SAFE = re.compile(r"[\x21-\x7e]*")


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
    # How long one turn may take (the run's per-turn timeout): a wait the provider asks for
    # that is longer than what is left of the turn fails the call at once. None: unbounded.
    turn_timeout: float | None = None
    # Sent as the body's `temperature` when set (the judge asks 0); None: the provider's own.
    temperature: float | None = None

    def __post_init__(self) -> None:
        problem = url_problem(self.base_url)
        if problem is not None:
            raise ProviderError(problem)
        if not self.call_timeout > 0 or not math.isfinite(self.call_timeout):
            raise ValueError(f"call_timeout must be a positive number, not {self.call_timeout}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.retry_after_max < 0:
            raise ValueError("backoff_base, backoff_max and retry_after_max must not be negative")
        if self.turn_timeout is not None and not self.turn_timeout > 0:
            raise ValueError(f"turn_timeout must be a positive number, not {self.turn_timeout}")
        if not _HEADER_SAFE.fullmatch(self.api_key):
            # Said before any request: httpx would fail on the header with a traceback, or
            # quote the value in its error.
            where = f"in {self.api_key_env} " if self.api_key_env else ""
            raise ProviderError(
                f"the API key {where}holds a character an HTTP header cannot carry "
                "(a space, a control character or a non-ASCII one)"
            )

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
