"""Personal data and secrets taken out of an imported conversation before it becomes a
fixture: built-in patterns (e-mail addresses, phone numbers, card numbers that pass the
Luhn check, API keys and tokens: `sk-…`, bearer tokens, AWS access keys, GitHub tokens,
JWTs) and the user's own (`--redact`, `redact_patterns`), each value replaced by a stable
placeholder (`<EMAIL_1>`, `<CARD_1>`): the same value gets the same placeholder everywhere,
inside a tool call's JSON arguments and its result too, so a value that round-trips through
a tool still does. The report counts replacements per kind and never shows a value.

Every pattern is RE2's: matching takes linear time whatever a hostile trace holds.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError
from harness.tracing.conversation import ImportedConversation, ImportedStep, ImportedTurn


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def luhn(digits: str) -> bool:
    """Whether the digits pass the Luhn check card numbers carry."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card(text: str) -> bool:
    digits = _digits(text)
    return 13 <= len(digits) <= 19 and luhn(digits)


def _phone(text: str) -> bool:
    return 9 <= len(_digits(text)) <= 15


@dataclass(frozen=True)
class Pattern:
    """One kind of value: its RE2 pattern (group 1, when it has one, is what is replaced),
    what makes a match one (`valid`) and what makes two matches the same value (`key`)."""

    kind: str
    regex: str
    valid: Callable[[str], bool] = lambda _: True
    key: Callable[[str], str] = lambda text: text


# Most specific first: a JWT or a key is never read as a phone number afterwards.
BUILT_IN = (
    Pattern("JWT", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    Pattern("BEARER", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{12,}=*)"),
    Pattern("API_KEY", r"\bsk-[A-Za-z0-9_-]{16,}"),
    Pattern("AWS_KEY", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    Pattern("GITHUB_TOKEN", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    Pattern(
        "EMAIL",
        r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
        key=str.lower,
    ),
    Pattern("CARD", r"\b\d(?:[ -]?\d){12,18}\b", _card, _digits),
    Pattern(
        "PHONE",
        r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,5}(?:[ .-]\d{2,5}){1,4}\b",
        _phone,
        _digits,
    ),
)
USER_KIND = "REDACTED"


def _compile(regex: str, what: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(regex, options=options)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise UsageError(f"{what}: {regex!r} is no RE2 pattern: {reason}") from None


@dataclass
class Redactor:
    """Replaces what the patterns match, the same value by the same placeholder for as long
    as it lives (one fixture, or every fixture of one import)."""

    patterns: list[tuple[Pattern, Any]]
    placeholders: dict[tuple[str, str], str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    # The values replaced, to check nothing written holds one (never shown).
    originals: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, user_patterns: Iterable[str] = (), *, built_in: bool = True) -> Redactor:
        chosen = [(p, _compile(p.regex, p.kind)) for p in BUILT_IN] if built_in else []
        for regex in user_patterns:
            chosen.append((Pattern(USER_KIND, regex), _compile(regex, "--redact")))
        return cls(chosen)

    def text(self, text: str) -> str:
        for pattern, compiled in self.patterns:
            text = compiled.sub(lambda m, p=pattern: self._replace(p, m), text)
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it redacted (a card number sent as a JSON
        number becomes its placeholder's string)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, int) and not isinstance(value, bool):
            text = str(value)
            replaced = self.text(text)
            return value if replaced == text else replaced
        return value

    def conversation(self, conversation: ImportedConversation) -> ImportedConversation:
        turns = tuple(
            ImportedTurn(self.text(t.user_input), tuple(map(self._step, t.steps)), t.where)
            for t in conversation.turns
        )
        return dataclasses.replace(
            conversation,
            turns=turns,
            instructions={k: self.text(v) for k, v in conversation.instructions.items()},
        )

    def _step(self, step: ImportedStep) -> ImportedStep:
        calls = tuple(
            dataclasses.replace(
                call,
                arguments=self.value(call.arguments),
                result=None if call.result is None else self.text(call.result),
            )
            for call in step.calls
        )
        text = None if step.text is None else self.text(step.text)
        return dataclasses.replace(step, text=text, calls=calls)

    def _replace(self, pattern: Pattern, match: Any) -> str:
        whole: str = match.group(0)
        grouped = match.re.groups >= 1 and match.group(1) is not None
        value: str = match.group(1) if grouped else whole
        if not pattern.valid(value):
            return whole
        key = (pattern.kind, pattern.key(value))
        placeholder = self.placeholders.get(key)
        if placeholder is None:
            number = sum(1 for kind, _ in self.placeholders if kind == pattern.kind) + 1
            placeholder = self.placeholders[key] = f"<{pattern.kind}_{number}>"
        self.counts[pattern.kind] += 1
        self.originals[value] = pattern.kind
        if not grouped:
            return placeholder
        start = match.start(1) - match.start(0)
        return whole[:start] + placeholder + whole[start + len(value) :]

    def found_in(self, text: str) -> list[str]:
        """The kinds of the replaced values `text` still holds (as they are, or escaped as
        JSON text escapes them)."""
        found = {
            kind
            for original, kind in self.originals.items()
            if original in text or json.dumps(original)[1:-1] in text
        }
        return sorted(found)

    def report(self) -> str:
        """What was replaced, per kind, without a value."""
        if not self.counts:
            return "redaction: nothing matched"
        parts = [
            f"{kind} {count}x ({self._distinct(kind)} distinct)"
            for kind, count in sorted(self.counts.items())
        ]
        return "redaction replaced: " + ", ".join(parts)

    def _distinct(self, kind: str) -> int:
        return sum(1 for k, _ in self.placeholders if k == kind)
