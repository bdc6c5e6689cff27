"""A scripted OpenAI-compatible Chat Completions server on loopback, for tests without the
internet.

    with OpenAIServer([status(429, headers={"Retry-After": "2"}), text_reply("hi")]) as server:
        settings = LiveSettings(base_url=server.base_url, model="m", api_key="sk-test")
        ...
        assert server.requests[0].json["model"] == "m"

`base_url` ends in `/v1`; POST `/v1/chat/completions` and `/chat/completions` are answered.
Each request takes the next action of the script (a FIFO queue, `enqueue` adds more); when
the script is empty, the `responder` (if any) decides from the request's JSON body; without
one, the `default` action answers (a 500 saying the script is exhausted). Actions:

* `text_reply(content, ...)` / `tool_reply([(id, name, arguments)], ...)` / `completion(...)`:
  a 200 chat completion, with usage;
* `status(code, body, headers)`: any status, e.g. 429 with `Retry-After`, 500, 401;
* `malformed(body)`: a 200 whose body is not JSON;
* `hang(seconds, then=None)`: wait (cut short when the server closes), then answer `then`,
  or drop the connection without an answer;
* `disconnect()`: drop the connection without an answer;
* `Stream(chunks, ...)`: a body of unknown length, sent chunk by chunk as `chunks()` makes
  them (chunked transfer encoding), counting in `sent` what got out before the client hung
  up; `Reply(..., headers={"Content-Encoding": "gzip"})` sends a compressed body as it is.

Every request is recorded (`requests`: method, path, lower-cased headers, text, parsed JSON,
when it arrived on the monotonic clock, and the connection it came on), whatever it got.
It speaks HTTP/1.1 and keeps a connection open after a reply, as providers do; a dropped
hang, a disconnect and a stream end theirs. The server runs in a daemon thread on
127.0.0.1 with a free port; `close()` (or leaving the `with` block) stops it promptly,
even mid-hang.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Action",
    "Disconnect",
    "Hang",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Stream",
    "completion",
    "disconnect",
    "hang",
    "malformed",
    "status",
    "text_reply",
    "tool_reply",
]

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
DEFAULT_MODEL = "loopback-model"


# --- actions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """An HTTP response: status, body bytes, content type, extra headers."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Wait `seconds` (less if the server closes), then answer `then` or drop the line."""

    seconds: float
    then: Reply | Disconnect | None = None


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without sending a response."""


@dataclass(eq=False)
class Stream:
    """A response whose body is sent as `chunks()` yields it, with chunked transfer
    encoding (no Content-Length); `sent` is how many body bytes were written before the
    body ended or the client closed the connection."""

    chunks: Callable[[], Iterable[bytes]]
    status: int = 200
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    sent: int = 0
    finished: threading.Event = field(default_factory=threading.Event)


Action = Reply | Hang | Disconnect | Stream
# Decides the answer from a request's JSON body (None when it was not JSON); may return an
# action or a plain dict, which is sent as a 200 JSON body.
Responder = Callable[[Any], "Action | dict[str, Any]"]


def _json_reply(code: int, document: Any, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(code, json.dumps(document).encode(), "application/json", dict(headers or {}))


def completion(
    message: Mapping[str, Any],
    *,
    prompt_tokens: int | None = 10,
    completion_tokens: int | None = 5,
    finish_reason: str = "stop",
    model: str = DEFAULT_MODEL,
) -> Reply:
    """A 200 chat completion whose `choices[0].message` is `message`; usage is left out
    when both token counts are None."""
    document: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish_reason}],
    }
    if prompt_tokens is not None or completion_tokens is not None:
        document["usage"] = {
            "prompt_tokens": prompt_tokens or 0,
            "completion_tokens": completion_tokens or 0,
            "total_tokens": (prompt_tokens or 0) + (completion_tokens or 0),
        }
    return _json_reply(200, document)


def text_reply(
    content: str | None,
    *,
    prompt_tokens: int | None = 10,
    completion_tokens: int | None = 5,
) -> Reply:
    """A final assistant message."""
    return completion(
        {"role": "assistant", "content": content},
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def tool_reply(
    calls: Sequence[tuple[str, str, Mapping[str, Any] | str]],
    *,
    content: str | None = None,
    prompt_tokens: int | None = 10,
    completion_tokens: int | None = 5,
) -> Reply:
    """An assistant message calling tools: `(id, name, arguments)` each, the arguments a dict
    (sent JSON-encoded, as providers do) or a string sent as it is (e.g. invalid JSON)."""
    return completion(
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(dict(args)),
                    },
                }
                for call_id, name, args in calls
            ],
        },
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason="tool_calls",
    )


def status(
    code: int, body: str | Mapping[str, Any] = "", headers: Mapping[str, str] | None = None
) -> Reply:
    """Any status; a dict body is sent as JSON, a string as plain text (empty by default,
    which becomes an OpenAI-style error object naming the status)."""
    if isinstance(body, Mapping):
        return _json_reply(code, dict(body), headers)
    if not body:
        return _json_reply(code, {"error": {"message": f"loopback status {code}"}}, headers)
    return Reply(code, body.encode(), "text/plain; charset=utf-8", dict(headers or {}))


def malformed(body: str = "<html>this is not JSON</html>") -> Reply:
    """A 200 whose body is not JSON."""
    return Reply(200, body.encode(), "text/html; charset=utf-8")


def hang(seconds: float, then: Reply | Disconnect | None = None) -> Hang:
    return Hang(seconds, then)


def disconnect() -> Disconnect:
    return Disconnect()


# --- the server --------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    text: str
    json: Any  # the parsed body; None when it was not JSON
    arrived: float = 0.0  # time.monotonic() once the whole request was read
    # The connection it came on (its client's port): requests on one kept-alive connection
    # share it.
    connection: int = 0


class OpenAIServer:
    """A real HTTP server on 127.0.0.1 answering Chat Completions from a script.

    Start it with `with OpenAIServer(...) as server:` or `start()`/`close()`. `api_key`, when
    given, makes it answer 401 to any request whose Authorization is not `Bearer <api_key>`
    (without consuming a script action), as a real provider would.
    """

    def __init__(
        self,
        script: Iterable[Action] = (),
        *,
        responder: Responder | None = None,
        default: Action | None = None,
        api_key: str | None = None,
    ) -> None:
        self._script: deque[Action] = deque(script)
        self._responder = responder
        self._default = default or status(
            500, {"error": {"message": "script exhausted: the loopback server has no answer"}}
        )
        self._api_key = api_key
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> OpenAIServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.owner = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="openai-loopback",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; cuts any hang short. Safe to call twice."""
        self._closing.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the loopback server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The server's root, e.g. `http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What `live_base_url` should be: `http://127.0.0.1:PORT/v1`."""
        return self.url + "/v1"

    # the script

    def enqueue(self, *actions: Action) -> None:
        with self._lock:
            self._script.extend(actions)

    @property
    def pending(self) -> int:
        """Script actions not yet used."""
        with self._lock:
            return len(self._script)

    def assert_drained(self) -> None:
        """Fail when the script still holds actions no request took."""
        left = self.pending
        assert left == 0, f"{left} scripted action(s) were never requested"

    # what it was asked

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the chat completion requests, in order."""
        return [r.json for r in self.requests if r.path in CHAT_PATHS]

    # used by the handler

    def _next_action(self, request: RecordedRequest) -> Action:
        with self._lock:
            self._requests.append(request)
            if self._api_key is not None and (
                request.headers.get("authorization") != f"Bearer {self._api_key}"
            ):
                return status(
                    401, {"error": {"message": "Incorrect API key provided", "code": 401}}
                )
            if request.method != "POST" or request.path not in CHAT_PATHS:
                return status(404, {"error": {"message": f"no route {request.path}"}})
            if isinstance(request.json, dict) and request.json.get("stream"):
                return status(400, {"error": {"message": "streaming is not supported here"}})
            if self._script:
                return self._script.popleft()
            responder = self._responder
        if responder is None:
            return self._default
        answer = responder(request.json)
        return _json_reply(200, answer) if isinstance(answer, dict) else answer


class _Handler(BaseHTTPRequestHandler):
    server_version = "openai-loopback/1"
    # As providers answer: connections stay open for the next request unless an action
    # ends them (a hang dropped, a disconnect, a stream).
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait
    # for the client's delayed acknowledgement of the headers, 40 ms a reply.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read `requests` instead

    def _serve(self) -> None:
        owner: OpenAIServer = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            document = json.loads(text) if text else None
        except ValueError:
            document = None
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            text=text,
            json=document,
            arrived=time.monotonic(),
            connection=int(self.client_address[1]),
        )
        action = owner._next_action(request)
        if isinstance(action, Hang):
            if owner._closing.wait(action.seconds):
                self.close_connection = True
                return  # closing: drop the line
            action = action.then if action.then is not None else Disconnect()
        if isinstance(action, Disconnect):
            self.close_connection = True
            return
        if isinstance(action, Stream):
            self._stream(action)
            return
        self._send(action)

    def _stream(self, stream: Stream) -> None:
        try:
            self.send_response(stream.status)
            self.send_header("Content-Type", stream.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            for name, value in stream.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for chunk in stream.chunks():
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    stream.sent += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading, as it should have
        finally:
            stream.finished.set()
        self.close_connection = True

    def _send(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timed out) first
