"""The last run as `zeroclaw eval show CASE_ID` reads it: where it is kept, the form of its
passing cases' transcripts, and a case read back with its transcript.

`.zeroclaw-eval/` in the directory the run started from (a folder that ignores itself in
git) holds the last run's JSON report, which keeps its failing cases' transcripts, and
beside it `transcripts-<token>.jsonl`, one JSON line per passing case (a run does not hold
its passes' transcripts: `harness.reporters.json_report` writes each out as its case is
done), which the report names (`$.transcripts`). A report names only its own run's file, so
`show` never shows one run's verdict with another's requests: a reader that finds the file
gone has read a report a newer run has just replaced, and is told so. Case ids are any
text: they are only ever inside the JSON lines, never in a file's name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgspec

from harness.errors import HarnessError
from harness.io.files import InputError, open_regular, why
from harness.transcript import TranscriptStep

if TYPE_CHECKING:
    from harness.verdict.reports import CaseReport

LAST_FOLDER = ".zeroclaw-eval"
LAST_NAME = "last-report.json"
TRANSCRIPTS = re.compile(r"transcripts-[0-9a-f]{32}\.jsonl")
# A line longer than this is not a transcript this harness wrote: `show` refuses it rather
# than read on without bound.
MAX_LINE_BYTES = 64 << 20


class LastRunError(HarnessError):
    """The last run's state cannot be read for `show` (the message names the file)."""


class KeptTranscript(msgspec.Struct, kw_only=True, frozen=True):
    """One passing case's transcript, as a line of the transcripts file."""

    id: str
    fixture: str
    transcript: list[TranscriptStep]


class _Key(msgspec.Struct, frozen=True):
    """A line's case, read without its transcript."""

    id: str
    fixture: str


def last_report_path(directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / LAST_FOLDER / LAST_NAME


def with_transcript(report: Path, raw: dict[str, Any], case: CaseReport) -> CaseReport:
    """`case` of the report at `report` (its raw document: `raw`) with its transcript: the
    report's own, else the one kept beside it (a passing case's), when there is one."""
    record = case.record
    if record is None or record.transcript is not None:
        return case
    kept = kept_transcript(report, raw, case)
    if kept is None:
        return case
    with_kept = msgspec.structs.replace(record, transcript=kept)
    return msgspec.structs.replace(case, record=with_kept)


def kept_transcript(
    report: Path, raw: dict[str, Any], case: CaseReport
) -> list[TranscriptStep] | None:
    """`case`'s transcript from the transcripts file the report at `report` names; None
    when it names none or holds none of the case. A name that is not of a transcripts
    file, a file gone or not as written is `LastRunError`."""
    name = raw.get("transcripts")
    if name is None:
        return None
    if not isinstance(name, str) or not TRANSCRIPTS.fullmatch(name):
        raise LastRunError(
            f"{report}: $.transcripts: {name!r} is not a transcripts file's name "
            "(transcripts-<32 hex digits>.jsonl, beside the report)"
        )
    path = report.parent / name
    try:
        fd, _ = open_regular(path)
        with os.fdopen(fd, "rb") as lines:
            return _find(path, lines, case)
    except InputError as exc:
        if exc.missing:
            raise LastRunError(
                f"{path}: gone: a newer run replaced the report just read; run `show` again"
            ) from None
        raise LastRunError(f"{path}: {exc.reason}") from None
    except OSError as exc:
        raise LastRunError(f"{path}: cannot read: {why(exc)}") from None


def _find(path: Path, lines: IO[bytes], case: CaseReport) -> list[TranscriptStep] | None:
    key_decoder = msgspec.json.Decoder(_Key)
    for number, line in enumerate(iter(lambda: lines.readline(MAX_LINE_BYTES + 1), b""), 1):
        if len(line) > MAX_LINE_BYTES:
            raise LastRunError(f"{path}: line {number}: over {MAX_LINE_BYTES} bytes")
        try:
            key = key_decoder.decode(line)
            if key.id == case.id and key.fixture == case.fixture:
                return msgspec.json.decode(line, type=KeptTranscript).transcript
        except msgspec.DecodeError as exc:  # ValidationError included
            raise LastRunError(f"{path}: line {number}: not a kept transcript: {exc}") from None
    return None
