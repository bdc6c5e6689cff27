"""`harness.judge.store`: one file a reply, keyed by what was sent; an edited or damaged
file is never replayed; stale ones listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.judge.store import DamagedReply, RecordedReply, ReplyStore, reply_key

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}


def reply(sample: int = 0) -> RecordedReply:
    return RecordedReply(
        schema="zeroclaw-eval/judge-reply/v1",
        key=reply_key(BODY, sample),
        setup="s",
        case="c",
        rubric="r",
        sample=sample,
        request=BODY,
        reply="VERDICT: {}",
    )


def test_a_written_reply_reads_back(tmp_path: Path) -> None:
    store = ReplyStore(tmp_path / "replies")
    assert store.read(reply().key) is None
    store.write(reply())
    assert store.read(reply().key) == reply()


def test_the_key_is_what_was_sent_and_which_sample() -> None:
    assert reply_key(BODY, 0) != reply_key(BODY, 1)
    assert reply_key(BODY, 0) != reply_key({**BODY, "model": "n"}, 0)
    assert reply_key(BODY, 0) == reply_key(dict(reversed(list(BODY.items()))), 0)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: d["request"].update(model="other"), "does not hash to its name"),
        (lambda d: d.update(surprise=1), "not a recorded judge reply"),
        (lambda d: d.update(schema="v0"), "schema 'v0'"),
    ],
)
def test_an_edited_reply_is_refused_naming_its_file(tmp_path: Path, damage, why: str) -> None:  # type: ignore[no-untyped-def]
    store = ReplyStore(tmp_path)
    path = store.write(reply())
    data = json.loads(path.read_text("utf-8"))
    damage(data)
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(DamagedReply) as caught:
        store.read(reply().key)
    assert str(path) in str(caught.value) and why in str(caught.value)


def test_replies_no_request_asked_for_are_stale(tmp_path: Path) -> None:
    store = ReplyStore(tmp_path)
    store.write(reply(0))
    store.write(reply(1))
    assert store.stale({reply(0).key}) == [store.path(reply(1).key)]
