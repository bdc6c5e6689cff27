"""The OpenAI Chat Completions wire format: the request body for a neutral
`ModelRequest`, the `ModelStep` in a response, the server's `Retry-After`, the content
codings a body may come in (decoded with every output bounded), the escapings a server may
echo a secret in (`SecretMask`), and a response as it was read (`Reply`).

Pure translation, no I/O: the live backend sends, reads and retries.
"""

from __future__ import annotations

import base64
import json
import math
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

from harness.model_boundary import (
    Message,
    ModelRequest,
    ModelStep,
    ToolCall,
    ToolSchema,
    token_count_problem,
)

# The key of the arguments dict that carries a tool call's arguments when the provider sent
# something that is not a JSON object (see `_parse_arguments`).
INVALID_ARGUMENTS_KEY = "_invalid_json_arguments"
EXCERPT_CHARS = 300


def request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions JSON body for a neutral request."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    wanted = request.output_schema
    if wanted is not None and wanted.mode == "native":
        # A structured answer in text, as the frameworks' own Chat Completions models ask
        # for it; a prompted one is asked for in the instructions, which hold its schema.
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": wanted.name, "schema": wanted.schema, "strict": wanted.strict},
        }
    body.update(_settings(request))
    return body


# The model settings Chat Completions takes under the same name; the others (a framework's
# reasoning, truncation, ...) have no one field to map to, and are not sent.
_SAMPLING = ("temperature", "top_p", "max_tokens")
# Refused by the API in a request that offers no tools.
_TOOL_CHOICE = ("tool_choice", "parallel_tool_calls")


def _settings(request: ModelRequest) -> dict[str, Any]:
    settings = request.settings
    sent = {name: settings[name] for name in _SAMPLING if name in settings}
    if request.tools:
        sent.update((name, settings[name]) for name in _TOOL_CHOICE if name in settings)
    choice = sent.get("tool_choice")
    if isinstance(choice, str) and choice not in ("auto", "required", "none"):
        # The SDK's tool_choice may name one tool: the API wants it as a function.
        sent["tool_choice"] = {"type": "function", "function": {"name": choice}}
    return sent


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


class Malformed(Exception):
    """The body is JSON but not a chat completion the harness can use."""


def shape_problem(document: Any) -> str | None:
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


def to_step(document: dict[str, Any], scrub: Callable[[str], str], id_prefix: str) -> ModelStep:
    """A chat completion as a model step; every string of it (text, tool names, ids,
    arguments) scrubbed of the key. A call without an id gets `{id_prefix}_{index}` (some
    local servers omit ids; tool results still need one to pair with)."""
    message = document["choices"][0]["message"]
    usage = document.get("usage")
    if usage is None:  # not every server reports usage: no tokens counted
        usage = {}
    if not isinstance(usage, dict):
        raise Malformed("usage: not an object")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise Malformed("choices[0].message.tool_calls is not a list")
    calls = tuple(_tool_call(raw, i, scrub, id_prefix) for i, raw in enumerate(raw_calls))
    return ModelStep(
        text=scrub(_content_text(message.get("content"))),
        tool_calls=calls,
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
    )


def _tool_call(raw: Any, index: int, scrub: Callable[[str], str], id_prefix: str) -> ToolCall:
    where = f"choices[0].message.tool_calls[{index}]"
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict):
        raise Malformed(f"{where} has no function object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise Malformed(f"{where} has no function name")
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"{id_prefix}_{index}"
    # The name and the id reach framework errors ("Tool … not found") and every report.
    arguments = scrub_value(_parse_arguments(function.get("arguments")), scrub)
    return ToolCall(scrub(call_id), scrub(name), arguments)


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
    raise Malformed(f"choices[0].message.content is a {type(content).__name__}")


def _parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict.

    Chat Completions sends them as a JSON string. When that string is not a JSON object (or
    nests too deeply to be read), the raw text is kept as `{"_invalid_json_arguments": raw}`:
    the tool then fails visibly on arguments it does not know, and the record shows what the
    model sent, rather than the tool silently running with `{}`. An absent or blank string
    means no arguments (some servers send "" for tools without parameters); a dict is taken
    as it is (some servers send one).
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
        except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        return {INVALID_ARGUMENTS_KEY: raw}
    return {INVALID_ARGUMENTS_KEY: json.dumps(raw)}


def scrub_value(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` (decoded JSON) with `scrub` applied to every string in it, keys included."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {
            scrub(k) if isinstance(k, str) else k: scrub_value(v, scrub) for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub_value(v, scrub) for v in value]
    return value


def _count(usage: dict[str, Any], key: str) -> int:
    """A count of `usage`: 0 when left out or null; a malformed response when it is no
    count at all (negative, fractional, 1e999, hundreds of digits long)."""
    value = usage.get(key)
    if value is None:
        return 0
    problem = token_count_problem(value)
    if problem is not None:
        raise Malformed(f"usage.{key}: {problem}")
    count: int = value
    return count


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
    import email.utils  # an HTTP-date is rare: the module (and what it imports) waits for one

    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):  # a year no date holds
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


def one_line(text: str) -> str:
    return " ".join(text.split())


def excerpt(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


# --- the body's content coding -----------------------------------------------------------

# What a server may compress a body with: zlib decodes both with a bound on the output.
ACCEPTED_ENCODINGS = "gzip, deflate"


class Unreadable(Exception):
    """A response body the harness will not read: too large, or in a refused encoding."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def too_large(cap: int) -> str:
    """Why a body over `cap` bytes was not read."""
    size = f"{cap / 2**20:g} MiB" if cap % 2**20 == 0 else f"{cap} bytes"
    return (
        f"a response body larger than {size} (MAX_RESPONSE_BYTES, counted decompressed); "
        "the rest was not read"
    )


class Inflater:
    """A zlib decompressor whose every output is bounded. `deflate` bodies come with the
    zlib header or, from some servers, without it: the raw form is tried when the first
    data is not zlib."""

    def __init__(self, wbits: int, fallback: int | None = None) -> None:
        self._decompressor = zlib.decompressobj(wbits)
        self._fallback = fallback

    def __call__(self, data: bytes, room: int) -> bytes:
        try:
            out = self._decompressor.decompress(data, room)
        except zlib.error:
            if self._fallback is None:
                raise
            self._decompressor = zlib.decompressobj(self._fallback)
            out = self._decompressor.decompress(data, room)
        self._fallback = None
        return out


def inflater(encoding: str, status: int) -> Inflater | None:
    """The decoder for a body in Content-Encoding `encoding`; None when it is not encoded.
    `Unreadable` for a coding the harness does not read."""
    codings = [c.strip().lower() for c in encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if codings in (["gzip"], ["x-gzip"]):
        return Inflater(16 + zlib.MAX_WBITS)
    if codings == ["deflate"]:
        return Inflater(zlib.MAX_WBITS, fallback=-zlib.MAX_WBITS)
    raise Unreadable(
        f"a body in Content-Encoding {excerpt(encoding)!r}, which the harness does not read "
        f"(it asks for {ACCEPTED_ENCODINGS})",
        status,
    )


# --- secrets -----------------------------------------------------------------------------

MASK = "***"
# An encoded form (base64, hex) shorter than this could match by chance: it is not masked.
_MIN_ENCODED_CHARS = 16


class SecretMask:
    """Replaces a secret with `MASK` wherever it appears, in any escaping a server (or a
    framework quoting one) may have put it in: plain; JSON and Python escapes, each
    character possibly written `\\uXXXX` / `\\xXX` or backslash-escaped (`\\/`, `\\"`),
    however many times the text was escaped; percent-encoded (also twice: `%252F`); HTML
    character references; base64 (standard or URL-safe, at any alignment); and hex of its
    UTF-8 bytes (all lower or all upper case). The escapings mix character by character, as
    they do when a server escapes only some characters. An encoded form of fewer than 16
    characters is not masked (it could occur by chance), nor is any other transformation
    (a key reversed, split, spelt out or encrypted cannot be recognised).

    Bool is whether the secret is set: an empty secret masks nothing."""

    def __init__(self, secret: str) -> None:
        self._pattern: re.Pattern[str] | None = None
        if secret:
            forms = [secret, *sorted(_base64_cores(secret)), *_hex_forms(secret)]
            self._pattern = re.compile("|".join(a for form in forms for a in _escaped(form)))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(MASK, text)

    def found_in(self, text: str) -> bool:
        return self._pattern is not None and self._pattern.search(text) is not None


def _escaped(text: str) -> list[str]:
    """Regular expressions that together match `text` with every character in any of its
    escapings. Each starts with a literal character: then `re` scans for those alone and
    masking a long body stays fast."""
    rest = "".join(f"(?:{'|'.join(_char_forms(c))})" for c in text[1:])
    return [first + rest for first in _char_forms(text[0])]


def _char_forms(c: str) -> list[str]:
    code = ord(c)
    forms = [re.escape(c)] if c.isalnum() else [re.escape(c), r"\\\\*" + re.escape(c)]
    if code < 0x10000:
        forms.append(r"\\\\*u" + _hex(code, 4))
    else:  # JSON writes it as a UTF-16 surrogate pair
        high, low = divmod(code - 0x10000, 0x400)
        forms.append(r"\\\\*u" + _hex(0xD800 + high, 4) + r"\\\\*u" + _hex(0xDC00 + low, 4))
    if code < 0x100:
        forms.append(r"\\\\*x" + _hex(code, 2))
    forms.append("".join("%(?:25)*" + _hex(byte, 2) for byte in c.encode("utf-8")))
    forms.append(f"&#0*{code};")
    forms.append("&#[xX]0*" + _hex(code, 1) + ";")
    return forms


def _hex(number: int, width: int) -> str:
    """`number` in hexadecimal, matching either case."""
    digits = f"{number:0{width}x}"
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)


def _base64_cores(secret: str) -> set[str]:
    """The base64 characters that depend on `secret` alone, at each of the three byte
    alignments it may start at inside a longer encoded text, standard and URL-safe."""
    data = secret.encode("utf-8")
    cores: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
        first = -(-offset * 8 // 6)  # the first character holding no padding bit
        core = encoded[first : (offset + len(data)) * 8 // 6]
        if len(core) >= _MIN_ENCODED_CHARS:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def _hex_forms(secret: str) -> list[str]:
    """The hex of `secret`'s UTF-8 bytes, lower and upper case (a model asked to encode the
    key, or a server logging bytes, writes one or the other)."""
    encoded = secret.encode("utf-8").hex()
    if len(encoded) < _MIN_ENCODED_CHARS:
        return []
    return [encoded] if encoded == encoded.upper() else [encoded, encoded.upper()]


@dataclass(frozen=True)
class Reply:
    """A provider's response, its body read (and decoded) in full."""

    status_code: int
    reason_phrase: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def read_body(response: httpx.Response, cap: int) -> bytes:
    """The body of `response` decoded, or `Unreadable` as soon as it passes `cap` bytes:
    nothing beyond the cap is read or decompressed."""
    encoding = response.headers.get("content-encoding", "")
    inflate = inflater(encoding, response.status_code)
    declared = response.headers.get("content-length", "")
    if inflate is None and declared.isdigit() and int(declared) > cap:
        raise Unreadable(too_large(cap), response.status_code)
    body = bytearray()
    async for chunk in response.aiter_raw():
        try:
            # Never more than one byte past the cap out of the decompressor.
            body += chunk if inflate is None else inflate(chunk, cap + 1 - len(body))
        except zlib.error:
            raise Unreadable(
                f"a body that is not valid {excerpt(encoding)} data", response.status_code
            ) from None
        if len(body) > cap:
            raise Unreadable(too_large(cap), response.status_code)
    return bytes(body)
