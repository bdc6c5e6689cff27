"""Picking cases: `-k EXPR` (pytest's keyword expressions) and `--case ID`.

A keyword expression is made of words joined by `and`, `or`, `not` and parentheses; a word
matches a case when it is a substring (ignoring case, as pytest does) of the case id or
of its fixture's file name. A selection that matches nothing is an error, never a green
run, and a regression suite run on a selection is marked partial in every report.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import HarnessError, UsageError

if TYPE_CHECKING:
    from harness.suite import Case

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_KEYWORDS = ("and", "or", "not")
# Parentheses and `not`s within one another. The parser and the matcher it builds recurse
# once a level, so a bound far below the interpreter's recursion limit keeps a runaway
# expression a usage error; no selection a person writes comes near it.
MAX_NESTING = 100
# How much of an expression a message quotes: it may be thousands of characters long.
_SHOWN_CHARS = 40

Match = Callable[[Sequence[str]], bool]


class SelectionError(UsageError):
    """A `-k` expression that cannot be parsed."""


def keyword_matcher(expression: str) -> Match:
    """A function telling whether names (a case's id and file name) match `expression`."""
    tokens = _TOKEN.findall(expression)
    shown = _shown(expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        raise SelectionError(f"-k {shown}: cannot be read")
    if not tokens:
        raise SelectionError("-k '': an empty expression selects nothing")
    parser = _Parser(tokens, shown)
    match = parser.disjunction()
    if parser.at < len(tokens):
        raise SelectionError(f"-k {shown}: unexpected {tokens[parser.at]!r}")
    return match


def _shown(expression: str) -> str:
    if len(expression) > _SHOWN_CHARS:
        expression = expression[: _SHOWN_CHARS - 1] + "…"
    return repr(expression)


class _Parser:
    """Recursive descent over `or` < `and` < `not` < word / parenthesis."""

    def __init__(self, tokens: list[str], shown: str) -> None:
        self.tokens, self.at, self._shown = tokens, 0, shown
        self._depth = 0  # parentheses and `not`s open where the parser is

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise SelectionError(f"-k {self._shown}: ends where a word was expected")
        self.at += 1
        return token

    def _deeper(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise SelectionError(
                f"-k {self._shown}: nested more than {MAX_NESTING} deep "
                "(parentheses and 'not'): write it flatter"
            )

    def disjunction(self) -> Match:
        terms = [self.conjunction()]
        while self._peek() == "or":
            self._take()
            terms.append(self.conjunction())
        return terms[0] if len(terms) == 1 else lambda names: any(t(names) for t in terms)

    def conjunction(self) -> Match:
        terms = [self.negation()]
        while self._peek() == "and":
            self._take()
            terms.append(self.negation())
        return terms[0] if len(terms) == 1 else lambda names: all(t(names) for t in terms)

    def negation(self) -> Match:
        if self._peek() == "not":
            self._take()
            self._deeper()
            inner = self.negation()
            self._depth -= 1
            return lambda names: not inner(names)
        return self.atom()

    def atom(self) -> Match:
        token = self._take()
        if token == "(":
            self._deeper()
            inner = self.disjunction()
            if self._take() != ")":
                raise SelectionError(f"-k {self._shown}: a '(' is never closed")
            self._depth -= 1
            return inner
        if token == ")" or token in _KEYWORDS:
            raise SelectionError(f"-k {self._shown}: unexpected {token!r}")
        word = token.lower()
        return lambda names: any(word in name.lower() for name in names)


@dataclass(frozen=True)
class Selection:
    """What a run was asked to pick (nothing: the whole suite)."""

    keyword: str | None = None
    case_ids: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (I, N): the I-th of N shares, 1-based
    suite_sha256: str | None = None  # the whole suite's digest (set once it is admitted)
    fixture_file: str | None = None  # `--suite` named one fixture of a suite

    @property
    def active(self) -> bool:
        picked = self.keyword is not None or bool(self.case_ids) or self.shard is not None
        return picked or self.fixture_file is not None

    def describe(self) -> str:
        parts = [f"--suite {self.fixture_file}"] if self.fixture_file is not None else []
        parts += [f"-k {self.keyword!r}"] if self.keyword is not None else []
        parts += [f"--case {case_id!r}" for case_id in self.case_ids]
        if self.shard is not None:
            parts.append(f"--shard {self.shard[0]}/{self.shard[1]}")
        return " ".join(parts)

    def matcher(self) -> Callable[[str, str], bool]:
        """A test of (case id, fixture file name)."""
        keyword = keyword_matcher(self.keyword) if self.keyword is not None else None
        wanted = set(self.case_ids)

        shard = self.shard

        def selected(case_id: str, file_name: str) -> bool:
            if wanted and case_id not in wanted:
                return False
            if shard is not None and shard_of(case_id, shard[1]) != shard[0]:
                return False
            return keyword is None or keyword((case_id, file_name))

        return selected


def shard_of(case_id: str, shards: int) -> int:
    """The shard (1..`shards`) a case belongs to: a stable hash of its id alone, so adding
    or removing a case moves no other case to another shard."""
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


# More shards than any CI matrix runs (GitHub's allows 256 jobs): a larger count is a typo.
MAX_SHARDS = 1000


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` with 1 ≤ I ≤ N ≤ `MAX_SHARDS`, in ASCII digits (argparse type)."""
    import argparse

    index, slash, count = text.partition("/")
    if slash and _decimal(index) and _decimal(count):
        i, n = int(index), int(count)
        if 1 <= i <= n <= MAX_SHARDS:
            return i, n
    raise argparse.ArgumentTypeError(
        f"expected I/N with 1 <= I <= N <= {MAX_SHARDS}, e.g. 2/3: {text!r}"
    )


def _decimal(text: str) -> bool:
    digits = text.strip()
    return digits.isascii() and digits.isdigit()


class EmptySelection(HarnessError):
    """A selection that picks no case: an error, never a green run."""


def choose(cases: Sequence[Case], selection: Selection) -> list[Case]:
    """The cases `selection` picks, in suite order; `EmptySelection` when it picks none,
    or names a case id the suite does not have."""
    if not selection.active:
        return list(cases)
    ids = {case.id for case in cases}
    unknown = [case_id for case_id in selection.case_ids if case_id not in ids]
    if unknown:
        raise EmptySelection(
            f"--case {', '.join(repr(u) for u in unknown)}: no such case in the suite"
        )
    selected = selection.matcher()
    chosen = [case for case in cases if selected(case.id, os.path.basename(case.where))]
    only_shard = selection.keyword is None and not selection.case_ids
    if not chosen and not only_shard:  # a shard of a small suite may hold no case
        raise EmptySelection(
            f"{selection.describe()} selects none of the suite's {len(cases)} case(s); "
            "an empty selection is an error, never a green run"
        )
    return chosen
