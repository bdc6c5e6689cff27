"""The judge's replies, recorded in files committed beside the suite, so a judge-graded
suite replays offline and free.

One file a reply, `<key>.json`, the key the SHA-256 of exactly what the judge was sent
(the request body, canonical JSON: template, rubric, run, model, temperature) and which
sample it was; a file whose key does not match what it says was sent is damaged, never
replayed. Each file is also the verdict's record: what the judge saw, what it said, the
judge setup's hash, the case and rubric, the judge's tokens. Files are written whole
(`write_atomic`), one per reply, so nothing else in the store is touched by a recording.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from harness.io.atomic import write_atomic
from harness.io.files import InputError, decode_json, read_bounded

SCHEMA = "zeroclaw-eval/judge-reply/v1"
# A reply is a few kilobytes; the request holds the run, which a long one makes larger.
MAX_REPLY_FILE = 4 << 20


class RecordedReply(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One judge reply as the store keeps it."""

    schema: str
    key: str
    setup: str  # the judge setup's content hash
    case: str
    rubric: str
    sample: int  # 0-based: a rubric asking k samples asks k times
    request: dict[str, Any]  # the body sent, exactly
    reply: str  # the judge's text, the API key masked
    input_tokens: int = 0
    output_tokens: int = 0


class DamagedReply(Exception):
    """A recorded reply that cannot be used; the message names the file and says why."""


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def reply_key(body: dict[str, Any], sample: int) -> str:
    """The key of the `sample`-th reply to `body`: a hash of exactly what was sent."""
    digest = hashlib.sha256(canonical(body))
    digest.update(f"\nsample {sample}".encode())
    return digest.hexdigest()


class _Versioned(Protocol):
    @property
    def schema(self) -> str: ...


Document = TypeVar("Document", bound=_Versioned)


def read_document(
    path: Path,
    limit: int,
    kind: type[Document],
    schema: str,
    what: str,
    error: type[Exception],
) -> Document | None:
    """The `kind` document of `schema` at `path`, read within `limit` bytes; None: there is
    none. One that cannot be read, is not `what`, or is of another schema is `error`,
    naming the file: a judge file is never taken on a guess."""
    try:
        data = read_bounded(path, limit)
    except InputError as exc:
        if exc.missing:
            return None
        raise error(f"{path}: {exc.reason}") from None
    try:
        found: Document = decode_json(data, kind)
    except msgspec.DecodeError as exc:
        raise error(f"{path}: not {what}: {exc}") from None
    if found.schema != schema:
        raise error(f"{path}: schema {found.schema!r}, expected {schema!r}")
    return found


class ReplyStore:
    """The directory of recorded replies (it need not exist until one is written)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def read(self, key: str) -> RecordedReply | None:
        """The reply recorded under `key`; None: none is. `DamagedReply` when the file
        cannot be read, is not a reply, or is not what `key` says was sent."""
        path = self.path(key)
        reply = read_document(
            path, MAX_REPLY_FILE, RecordedReply, SCHEMA, "a recorded judge reply", DamagedReply
        )
        if reply is None:
            return None
        if reply.key != key or reply_key(reply.request, reply.sample) != key:
            raise DamagedReply(
                f"{path}: its request does not hash to its name: edited or misplaced; "
                "delete it and record again with --record-judge"
            )
        return reply

    def write(self, reply: RecordedReply) -> Path:
        path = self.path(reply.key)
        self.directory.mkdir(parents=True, exist_ok=True)
        encoded = msgspec.json.format(msgspec.json.encode(reply), indent=2) + b"\n"
        write_atomic(path, encoded)
        return path

    def keys(self) -> Iterator[str]:
        if not self.directory.is_dir():
            return
        for entry in sorted(self.directory.iterdir()):
            if entry.suffix == ".json" and entry.is_file():
                yield entry.stem

    def replies(self) -> Iterator[RecordedReply]:
        """Every reply the store holds that can be read (a damaged one is left out)."""
        for key in self.keys():
            try:
                reply = self.read(key)
            except DamagedReply:
                continue
            if reply is not None:
                yield reply

    def stale(self, used: Iterable[str]) -> list[Path]:
        """The recorded replies no request of a run asked for: left by a rubric, run or
        judge setup that changed (listed, never deleted: the caller decides). Replies a run
        never asks for are not stale: a mutant's answer (`mutate`) or a probe's
        (`calibrate probe`), whose case id holds `~`."""
        wanted = set(used)
        found = []
        for key in self.keys():
            if key in wanted:
                continue
            try:
                reply = self.read(key)
            except DamagedReply:
                reply = None
            if reply is None or "~" not in reply.case:
                found.append(self.path(key))
        return found
