"""`harness.expectations.response_text`: grading `response_contains`, `response_not_contains`
and `response_matches`: one grade per entry, details that show the response."""

from __future__ import annotations

import pytest
from conftest import expects, only, record, shape

from harness.expectations.registry import grade

# --- response families ----------------------------------------------------------------------


def test_response_contains_passes_when_substring_present() -> None:
    g = only(grade(expects(response_contains=["hello"]), record("say hello world")))
    assert shape(g) == ('response_contains("hello")', True, "found", "response")


def test_response_contains_fails_showing_the_response() -> None:
    g = only(grade(expects(response_contains=["hello"]), record("Goodbye, friend")))
    assert not g.passed
    assert g.check == 'response_contains("hello")'
    assert g.category == "response"
    assert '"Goodbye, friend"' in g.detail


def test_response_contains_is_case_sensitive() -> None:
    g = only(grade(expects(response_contains=["Hello"]), record("hello")))
    assert not g.passed


def test_response_not_contains_both_polarities() -> None:
    ok = only(grade(expects(response_not_contains=["error"]), record("all good")))
    assert ok.passed
    assert ok.check == 'response_not_contains("error")'
    bad = only(grade(expects(response_not_contains=["error"]), record("an error occurred")))
    assert not bad.passed
    assert "an error occurred" in bad.detail
    assert bad.category == "response"


def test_response_matches_uses_search_not_fullmatch() -> None:
    g = only(grade(expects(response_matches=["bet"]), record("the alphabet song")))
    assert g.passed
    assert g.check == 'response_matches("bet")'
    assert g.category == "response"


def test_response_matches_anchors_and_fails_with_the_response() -> None:
    g = only(grade(expects(response_matches=["^bet"]), record("alphabet")))
    assert not g.passed
    assert '"alphabet"' in g.detail
    multi = only(grade(expects(response_matches=[r"^Done\.$"]), record("Done.")))
    assert multi.passed


def test_response_matches_invalid_pattern_fails_rather_than_raising() -> None:
    g = only(grade(expects(response_matches=["("]), record("(")))
    assert not g.passed
    assert "invalid regex" in g.detail


def test_long_responses_are_clipped_in_details() -> None:
    g = only(grade(expects(response_contains=["needle"]), record("x" * 5000)))
    assert not g.passed
    assert "5000 chars" in g.detail
    assert len(g.detail) < 1000


def test_response_matches_is_re2_linear_time_even_on_catastrophic_patterns() -> None:
    # Nested quantifiers against a non-matching reply: exponential for a backtracking
    # engine, linear for RE2 (pytest-timeout would catch a hang).
    g = only(grade(expects(response_matches=["(a+)+$"]), record("a" * 40 + "!")))
    assert not g.passed
    g = only(grade(expects(response_matches=["(x+x+)+y"]), record("x" * 5000)))
    assert not g.passed


def test_response_matches_speaks_the_original_dialect() -> None:
    cases = [
        ("\\Ahello\\z", "hello", True),
        ("\\Ahello\\z", "hello\n", False),  # \z is the very end
        ("hello$", "hello\n", False),  # without (?m), $ is the end of the text, as in RE2
        ("(?m)^two$", "one\ntwo\nthree", True),
        ("\\p{Lu}{3}", "the ABC", True),
        ("^[[:digit:]]+$", "2026", True),  # a POSIX class, not a character set of ':' etc.
        ("^[[:digit:]]+$", "dig", False),
    ]
    for pattern, response, expected in cases:
        assert only(grade(expects(response_matches=[pattern]), record(response))).passed is (
            expected
        ), (pattern, response)


def test_re2_says_nothing_on_stderr_when_it_refuses_a_pattern(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # RE2 logs each refusal from C++ unless told not to: a refused fixture must print only
    # the harness's own clear problem.
    from harness.expectations.response_text import PatternError, compiled

    with pytest.raises(PatternError):
        compiled("(?<=only-in-this-test)x")
    assert capfd.readouterr().err == ""


PATTERNS = [
    r"\AThe echo tool said: hello\z",
    r"hello",
    r"^said",
    r"(?m)^said$",
    r"\bé\b",
    r"\p{Lu}+",
    r"[[:digit:]]{2}",
    r"",
    r"a*",
    r"(x)(y)?z",
    r"\z",
    r"ü.ß",
]
TEXTS = [
    "The echo tool said: hello",
    "",
    "said\nsaid",
    "x é y",
    "ÉCOLE 42",
    "xz",
    "naïve über füß ... üaß",
    "🙂 hello 🙂",
]


def test_a_pattern_is_found_where_re2_s_search_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`finder` answers what `compiled(pattern).search(text) is not None` answers, by RE2's
    compiled expression itself or, when the module is not of its usual shape, by `search`."""
    from harness.expectations import response_text
    from harness.expectations.response_text import compiled, finder

    def answers() -> list[bool]:
        finder.cache_clear()
        return [finder(p)(t) for p in PATTERNS for t in TEXTS]

    expected = [compiled(p).search(t) is not None for p in PATTERNS for t in TEXTS]
    assert answers() == expected and any(expected) and not all(expected)

    class SearchOnly:
        def __init__(self, pattern: str) -> None:
            self.search = compiled(pattern).search

    monkeypatch.setattr(response_text, "compiled", SearchOnly)
    assert answers() == expected
    finder.cache_clear()


@pytest.mark.parametrize("search_only", [False, True])
def test_a_pattern_over_an_answer_no_utf_8_can_carry_matches_it_as_reports_show_it(
    monkeypatch: pytest.MonkeyPatch, search_only: bool
) -> None:
    # A lone surrogate in an agent's answer (an own loop's text): RE2 reads UTF-8, and the
    # grading failed the harness itself ("internal error: UnicodeEncodeError").
    from harness.expectations import response_text
    from harness.expectations.response_text import compiled, finder

    if search_only:  # the module not of its usual shape: its `search` is asked

        class SearchOnly:
            def __init__(self, pattern: str) -> None:
                self.search = compiled(pattern).search

        monkeypatch.setattr(response_text, "compiled", SearchOnly)
    finder.cache_clear()
    try:
        answer = record("said: hi\ud800 there")
        found = only(grade(expects(response_matches=["hi\ufffd there"]), answer))
        assert found.passed, found.detail
        missed = only(grade(expects(response_matches=[r"\Abye"]), answer))
        assert not missed.passed and "no match in response" in missed.detail
    finally:
        finder.cache_clear()
