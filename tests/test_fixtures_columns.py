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
