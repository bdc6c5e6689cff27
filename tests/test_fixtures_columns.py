"""`harness.fixtures.columns`: strings and digests packed one buffer a column, each read
back equal to what was appended."""

from __future__ import annotations

import hashlib

import pytest

from harness.fixtures.columns import Digests, Texts


def test_texts_read_back_what_was_appended_whatever_it_holds() -> None:
    appended = ["case-000001", "", "façade ünïcode", "emoji 🧪", "lone \ud800 surrogate"]
    appended.append("x" * 5000)
    texts = Texts()
    for text in appended:
        texts.append(text)
    assert len(texts) == len(appended)
    assert [texts[i] for i in range(len(appended))] == appended
    assert texts[-1] == appended[-1] and texts[-len(appended)] == appended[0]
    for bad in (len(appended), -len(appended) - 1):
        with pytest.raises(IndexError):
            texts[bad]


def test_digests_read_back_what_was_appended_none_included() -> None:
    digests = Digests(32)
    one, two = hashlib.sha256(b"one").digest(), hashlib.sha256(b"two").digest()
    for digest in (one, None, two):
        digests.append(digest)
    assert [digests[0], digests[1], digests[2], digests[-1]] == [one, None, two, two]
    assert len(digests) == 3
    with pytest.raises(IndexError):
        digests[3]


def test_a_digest_of_another_width_is_refused() -> None:
    digests = Digests(32)
    with pytest.raises(ValueError, match="16 bytes among digests of 32"):
        digests.append(bytes(16))
    assert len(digests) == 0


def test_texts_extended_in_one_go_read_back_as_appended_one_by_one() -> None:
    words = ["", "a.json", "caf\u00e9.json", "\udcff.json", "x" * 300]
    one_by_one, at_once = Texts(), Texts()
    one_by_one.append("first")
    at_once.append("first")
    for word in words:
        one_by_one.append(word)
    at_once.extend(words)
    at_once.extend([])
    assert [at_once[i] for i in range(len(at_once))] == ["first", *words]
    assert [at_once[i] for i in range(len(at_once))] == [
        one_by_one[i] for i in range(len(one_by_one))
    ]


def test_digests_extended_packed_read_back_with_their_nones() -> None:
    digests = Digests(4)
    digests.append(b"abcd")
    digests.extend(b"efgh" + bytes(4) + b"ijkl", b"\x01\x00\x01")
    assert [digests[i] for i in range(len(digests))] == [b"abcd", b"efgh", None, b"ijkl"]
    with pytest.raises(ValueError, match="7 bytes for 2 digests of 4"):
        digests.extend(b"1234567", b"\x01\x01")


@pytest.mark.parametrize(
    "appended",
    [
        [],
        ["case-000001", "", "b.json"],
        ["case-000001", "", "façade ünïcode", "emoji 🧪", "lone \ud800 surrogate", "z"],
    ],
)
def test_texts_read_at_once_are_those_read_one_by_one(appended: list[str]) -> None:
    texts = Texts()
    texts.extend(appended)
    assert texts.all() == [texts[i] for i in range(len(texts))] == appended
