"""Judges played by the loopback OpenAI-compatible server (`_openai_server`), for tests
of the LLM judge against a real HTTP server:

* `fair`: reads the run from the request's data block and scores the final response 0.9
  when it holds the expected word, 0.1 otherwise (deterministic);
* `always_pass`: scores every run 1.0 (biased: a judge that passes everything);
* `garbage`: answers prose with no verdict line;
* `Flaky`: a garbage answer every other request, else as `fair`;
* a judge that is down: a server closed before the run (`down_url`).

Each request is kept by the server (`requests`), so a test can see what the judge was sent.
"""

from __future__ import annotations

import json
import re
import socket
from typing import Any

from _openai_server import Reply, text_reply

EXPECTED = "Paris"
_BLOCK = re.compile(r"BEGIN-RUN-DATA (\w+)\n(.*)\nEND-RUN-DATA \1\n", re.S)


def verdict(score: float, unknown: bool = False, reason: str = "It answers.") -> Reply:
    line = json.dumps({"score": score, "unknown": unknown, "reason": reason})
    return text_reply(
        f"Looking at the run.\nVERDICT: {line}", prompt_tokens=120, completion_tokens=30
    )


def run_data(body: Any) -> dict[str, Any]:
    """The run the judge was shown: the JSON document of the data block."""
    user = body["messages"][-1]["content"]
    match = _BLOCK.search(user)
    assert match is not None, user
    found: dict[str, Any] = json.loads(match.group(2))
    return found


def fair(body: Any) -> Reply:
    final = run_data(body)["final_response"]
    if EXPECTED in final:
        return verdict(0.9, reason="It names the capital.")
    return verdict(0.1, reason="It does not name the capital.")


def always_pass(body: Any) -> Reply:
    return verdict(1.0, reason="Looks great.")


def garbage(body: Any) -> Reply:
    return text_reply("The answer seems fine to me overall.")


class Flaky:
    """Every other request a garbage reply, else `fair`'s."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, body: Any) -> Reply:
        self.count += 1
        return garbage(body) if self.count % 2 else fair(body)


def down_url() -> str:
    """A loopback URL nothing listens on: a judge that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
