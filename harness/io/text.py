"""Text every reporter writes, made safe in one place.

Case ids, fixture names, model output, tool results, provider bodies and run errors are
untrusted: a fork's pull request writes the fixtures, a live model writes the rest. Before
any of it reaches a terminal, a CI log or a report file:

* `clean` / `clean_lines`: lone surrogates (which no UTF-8 stream can encode) and the two
  non-characters XML forbids become U+FFFD; C0 and C1 controls (terminal escape sequences
  start with ESC or the C1 CSI), DEL, the bidirectional formatting characters (which
  reorder what a reader sees), the invisible ones (which hide it) and the Unicode line
  separators are shown as `\\uXXXX` escapes, so a reader sees that they were there.
  `clean_lines` keeps LF and tab, and turns CRLF into LF.
* `inert` (plain text), `inert_markup` (XML, HTML) and `json_safe` (JSON text): no line a
  GitHub runner would act on. The runner reads a workflow command from any line that
  starts with `::` once leading Unicode whitespace is trimmed, and a legacy command from
  `##[` anywhere in a line; it splits lines at CR as well as LF.
* `stop_commands`: untrusted text between GitHub's own `::stop-commands::<token>` and
  `::<token>::`, the token random, for text on a stream the runner parses.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from typing import Any, NamedTuple

REPLACEMENT = "\ufffd"
ELLIPSIS = "…"

# Bidirectional formatting characters (the marks, embeddings, overrides and isolates), and
# the invisible ones that only hide text (zero-width space, word joiner, invisible
# operators, BOM); the zero-width (non-)joiners stay, emoji and scripts need them.
_FORMAT = "\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_NOT_TEXT = "\ud800-\udfff\ufffe\uffff"  # replaced: they cannot be shown or encoded
_UNSAFE = f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_FORMAT}{_NOT_TEXT}]"
_UNSAFE_IN_LINES = f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_FORMAT}{_NOT_TEXT}]"
# JSON encoders escape C0 themselves; what they leave raw and a terminal or log viewer
# would act on is escaped here, as JSON escapes, so the parsed value is unchanged.
_JSON_UNSAFE = f"##\\[|[\x7f-\x9f\u2028\u2029{_FORMAT}{_NOT_TEXT}]"
# A line start is the start of the text or just after CR or LF, the runner's line ends;
# the whitespace it trims is Unicode whitespace (no-break space, ideographic space, NEL…).
_LINE_COMMAND = r"(?<![^\r\n])([^\S\r\n]*):(?=:)"
_SURROGATE = "[\ud800-\udfff]"


class _Patterns(NamedTuple):
    unsafe: re.Pattern[str]
    unsafe_in_lines: re.Pattern[str]
    json_unsafe: re.Pattern[str]
    line_command: re.Pattern[str]
    surrogate: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    # Compiled on first use: `--help` imports every reporter, and with them this module.
    return _Patterns(
        re.compile(_UNSAFE),
        re.compile(_UNSAFE_IN_LINES),
        re.compile(_JSON_UNSAFE),
        re.compile(_LINE_COMMAND),
        re.compile(_SURROGATE),
    )


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF or code >= 0xFFFE:
        return REPLACEMENT
    return f"\\u{code:04x}"


def clean(text: str) -> str:
    """`text` as one line that is safe to show anywhere (see the module docstring); a
    newline in a case id or a file name is shown as `\\u000a`."""
    if text.isascii() and text.isprintable():
        return text
    return _patterns().unsafe.sub(_escape, text)


def clean_lines(text: str) -> str:
    """Like `clean`, keeping LF and tab; CRLF becomes LF, a lone CR is shown escaped."""
    if text.isascii() and (
        text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()
    ):
        return text  # the usual case, without the regular expression's per-character scan
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _patterns().unsafe_in_lines.sub(_escape, text)


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, `…` marking a cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def one_line(text: str, limit: int | None = None) -> str:
    """Clean text with every run of whitespace (newlines included) folded to one space."""
    folded = " ".join(clean_lines(text).split())
    return folded if limit is None else clip(folded, limit)


def brief(parts: tuple[str, str], limit: int, *, fold: bool = True) -> str:
    """A failure's (what, how many more) parts, clean, clipped to `limit` characters without
    losing the second part; `fold` puts it on one line."""
    head, more = parts
    shown = one_line(head) if fold else clean_lines(head)
    more = clean(more)
    return clip(shown, limit - len(more)) + more


def headline(text: str, limit: int | None = None) -> str:
    """The first non-blank line of `text`, clean; empty when there is none."""
    first = next((line for line in clean_lines(text).split("\n") if line.strip()), "")
    first = first.strip()
    return first if limit is None else clip(first, limit)


def _neutralise(text: str, hash_sign: str, colon: str) -> str:
    # One-character searches first: they are the fast kind, and `#` is rare.
    if "#" in text and "##[" in text:
        text = text.replace("##[", f"#{hash_sign}[")
    if ":" in text and "::" in text:
        text = _patterns().line_command.sub(lambda m: m.group(1) + colon, text)
    return text


def inert(text: str) -> str:
    """Plain text (clean already) in which no line is a workflow command: `##[` is shown
    as `#\\u0023[`, a line's leading `::` as `\\u003a:`."""
    return _neutralise(text, "\\u0023", "\\u003a")


def inert_markup(text: str) -> str:
    """XML or HTML (escaped already) in which no line is a workflow command; character
    references keep the parsed text the same."""
    return _neutralise(text, "&#35;", "&#58;")


def _json_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found == "##[":
        return "#\\u0023["
    code = ord(found)
    if 0xD800 <= code <= 0xDFFF:
        return REPLACEMENT
    return f"\\u{code:04x}"


def json_safe(text: str) -> str:
    """JSON text (an encoder's output) with what it leaves raw escaped: the parsed value is
    unchanged, except a lone surrogate, which becomes U+FFFD. A line of JSON never starts
    with `::` (strings cannot hold a raw newline), so only `##[` needs escaping."""
    if text.isascii() and "\x7f" not in text and ("#" not in text or "##[" not in text):
        return text
    return _patterns().json_unsafe.sub(_json_escape, text)


def without_surrogates(value: Any) -> Any:
    """`value` (JSON-like builtins) with every lone surrogate in its strings, keys
    included, replaced by U+FFFD: what a JSON encoder needs to encode it as UTF-8."""
    if isinstance(value, str):
        return _patterns().surrogate.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_surrogates(v) for v in value]
    return value


def encoded_json(value: Any) -> bytes:
    """`value` (a struct of the run's text, or builtins) as JSON, a lone surrogate as
    U+FFFD: what an agent or a tool made can hold one, and no UTF-8 can."""
    import msgspec

    try:
        return msgspec.json.encode(value)
    except UnicodeEncodeError:  # a lone surrogate somewhere in the run's text
        return msgspec.json.encode(without_surrogates(msgspec.to_builtins(value)))
    except (TypeError, ValueError, RecursionError):
        # What no JSON has, which an agent put in what it sent after the boundary checked
        # it (the record holds what was sent): each such value shown by its kind.
        return msgspec.json.encode(_plain(value, set(), 0))


# How deep `_plain` goes: past it, a value is shown as `<too deep>`.
_PLAIN_DEPTH = 400


def _plain(value: Any, inside: set[int], depth: int) -> Any:
    """`value` as builtins JSON holds, whatever it holds: a struct as its fields (and its
    tag) by their JSON names, a key that is no text as its text, what JSON has no kind for
    as `<kind>`, a value inside itself as `<cycle>`, a lone surrogate as U+FFFD."""
    import msgspec

    if isinstance(value, str):
        return without_surrogates(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth > _PLAIN_DEPTH:
        return "<too deep>"
    if id(value) in inside:
        return "<cycle>"
    inside.add(id(value))
    try:
        if isinstance(value, msgspec.Struct):
            config = value.__struct_config__
            shown = {} if config.tag_field is None else {config.tag_field: config.tag}
            for field in msgspec.structs.fields(value):
                item = getattr(value, field.name)
                if config.omit_defaults and _default(field, item):
                    continue  # left out, as the struct's own encoding leaves it out
                shown[field.encode_name] = _plain(item, inside, depth + 1)
            return shown
        if isinstance(value, dict):
            return {
                without_surrogates(key) if isinstance(key, str) else _key(key): _plain(
                    item, inside, depth + 1
                )
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple, set, frozenset)):
            return [_plain(item, inside, depth + 1) for item in value]
        return f"<{type(value).__name__}>"
    finally:
        inside.discard(id(value))


def _default(field: Any, item: object) -> bool:
    """Whether `item` is `field`'s default (a struct that omits defaults writes none)."""
    import msgspec

    if field.default is not msgspec.NODEFAULT:
        return bool(item == field.default)
    return field.default_factory is not msgspec.NODEFAULT and bool(item == field.default_factory())


def _key(key: object) -> str:
    """A key that is no text, as JSON writes one: a number's digits, `true`, `null`."""
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return f"<{type(key).__name__}>"


def command_token() -> str:
    """A token for `stop_commands` that untrusted text cannot guess."""
    import secrets

    return secrets.token_hex(16)


def stop_commands(text: str, token: str) -> str:
    """`text` between `::stop-commands::<token>` and `::<token>::`: the runner acts on no
    line in between, whatever it holds."""
    end = "" if text.endswith("\n") else "\n"
    return f"::stop-commands::{token}\n{text}{end}::{token}::\n"


@functools.cache
def policy_for(script: str) -> str:
    """The Content-Security-Policy of a page of ours whose one script is `script`: nothing
    fetched, no other script run (the script allowed by its hash), no form posted."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
