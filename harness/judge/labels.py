"""What people label: the suite's rubrics under its judge setup (`Suite`), the judge's
recorded verdicts of them, and the labels file committed beside the suite.

An item is one verdict: a case's rubric judged on one run, under the judge setup the suite
has now (a rubric asking k samples is one item of k recorded replies, its verdict their
strict majority, as at run time). Its id is the key of its first sample: a hash of exactly
what the judge was sent, so a label stays with the run it was given on.

The labels file (`labels.jsonl`) holds one JSON object a line, appended as each label is
given (a labeling session cut short keeps every label given so far):

    {"item": "<key>", "case": "...", "rubric": "...", "setup": "<hash>", "label": "pass"}

read strictly: a line that is not a label, or a second label of one item, is refused
naming the file and the line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from harness.expectations.judge import Rubric
from harness.fixtures.suite import Case
from harness.io.text import one_line
from harness.judge.service import JudgeService, Sample, majority, read_reply
from harness.judge.settings import CALIBRATION, LABELS, JudgeError
from harness.judge.store import RecordedReply, ReplyStore, reply_key

LABEL_SCHEMA = "zeroclaw-eval/judge-label/v1"
MAX_LABELS_FILE = 16 << 20
# What a person is shown of one text: enough to judge, never a screenful of one field.
MAX_SHOWN = 4000
_BLOCK = re.compile(r"BEGIN-RUN-DATA (\w+)\n(.*)\nEND-RUN-DATA \1\n", re.S)


class Label(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A person's verdict on one item, given without seeing the judge's."""

    item: str
    case: str
    rubric: str
    setup: str
    label: Literal["pass", "fail"]
    schema: str = LABEL_SCHEMA


@dataclass(frozen=True)
class SuiteRubric:
    """A rubric of the suite as it is now, with the judge setup's hash it is judged under."""

    rubric: Rubric
    setup: str
    cases: tuple[str, ...]


@dataclass(frozen=True)
class Item:
    """One recorded verdict to label."""

    key: str  # its first sample's reply key
    case: str
    rubric: Rubric
    setup: str
    replies: tuple[RecordedReply, ...]

    @property
    def verdict(self) -> Sample:
        return majority([read_reply(r.reply, r.key) for r in self.replies])

    @property
    def judge_passed(self) -> bool:
        """As a run grades it: a score, known, reaching the threshold."""
        sample = self.verdict
        if sample.score is None or sample.unknown:
            return False
        return sample.score >= self.rubric.threshold

    def run(self) -> dict[str, Any]:
        """The run the judge was shown, read back from its data block ({} when the
        request holds none: then only the rubric can be shown)."""
        request = self.replies[0].request
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            return {}
        content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
        match = _BLOCK.search(content) if isinstance(content, str) else None
        if match is None:
            return {}
        try:
            found = json.loads(match.group(2))
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}


def suite_rubrics(judged: Iterable[tuple[str, Rubric, str]]) -> dict[str, list[SuiteRubric]]:
    """The suite's rubrics by name, from (case id, rubric, setup hash): one entry per
    distinct setup (a calibration is kept by name, so a name judged under two setups
    cannot be calibrated until its cases agree)."""
    found: dict[str, dict[str, tuple[Rubric, list[str]]]] = {}
    for case, rubric, setup in judged:
        entry = found.setdefault(rubric.name, {}).setdefault(setup, (rubric, []))
        entry[1].append(case)
    return {
        name: [SuiteRubric(rubric, setup, tuple(cases)) for setup, (rubric, cases) in by.items()]
        for name, by in sorted(found.items())
    }


def items(store: ReplyStore, rubrics: dict[str, list[SuiteRubric]]) -> list[Item]:
    """Every complete recorded verdict of the suite's rubrics under their current setup,
    ordered by rubric then key (the key, a hash, orders them in no telling way)."""
    current = {(name, r.setup): r for name, found in rubrics.items() for r in found}
    groups: dict[tuple[str, str, str, str], dict[int, RecordedReply]] = {}
    for reply in store.replies():
        # A mutant's or a probe's reply (its case id holds `~`) is no run's verdict.
        if (reply.rubric, reply.setup) not in current or "~" in reply.case:
            continue
        first = reply_key(reply.request, 0)
        groups.setdefault((reply.rubric, reply.setup, reply.case, first), {})[reply.sample] = reply
    found: list[Item] = []
    for (name, setup, case, first), samples in sorted(groups.items()):
        rubric = current[(name, setup)].rubric
        wanted = range(rubric.samples)
        if all(i in samples for i in wanted):  # a verdict missing a sample is not whole
            replies = tuple(samples[i] for i in wanted)
            found.append(Item(first, case, rubric, setup, replies))
    return found


def read_labels(path: Path) -> list[Label]:
    """The labels in `path` ([] when there is none yet), strictly."""
    return [label for _, label in numbered_labels(path)]


def numbered_labels(path: Path) -> list[tuple[int, Label]]:
    """The labels in `path` with their line numbers, strictly."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_LABELS_FILE + 1)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise JudgeError(f"{path}: cannot read the labels: {exc.strerror or exc}") from None
    if len(data) > MAX_LABELS_FILE:
        raise JudgeError(f"{path}: over {MAX_LABELS_FILE} bytes: not a labels file")
    labels: list[tuple[int, Label]] = []
    seen: dict[str, int] = {}
    decoder = msgspec.json.Decoder(Label)
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            label = decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise JudgeError(f"{path}:{number}: not a label: {exc}") from None
        if label.schema != LABEL_SCHEMA:
            raise JudgeError(f"{path}:{number}: schema {label.schema!r}, expected {LABEL_SCHEMA!r}")
        if label.item in seen:
            raise JudgeError(
                f"{path}:{number}: a second label of item {label.item[:12]} (also line "
                f"{seen[label.item]}): remove one"
            )
        seen[label.item] = number
        labels.append((number, label))
    return labels


def append_label(path: Path, label: Label) -> None:
    """`label` added to the labels file and on disk before the next is asked for."""
    line = msgspec.json.encode(label) + b"\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise JudgeError(f"{path}: cannot write the label: {exc.strerror or exc}") from None


def pairs(found: Sequence[Item], labels: Sequence[Label]) -> list[tuple[bool, bool]]:
    """(judge passed, person passed) of every labeled item in `found`."""
    given = {label.item: label.label == "pass" for label in labels}
    return [(item.judge_passed, given[item.key]) for item in found if item.key in given]


@dataclass(frozen=True)
class Suite:
    """What calibration reads of a suite: its judge, its rubrics now, where its files go."""

    judge: JudgeService
    rubrics: dict[str, list[SuiteRubric]]

    @property
    def folder(self) -> Path:
        return self.judge.store.directory.parent

    @property
    def labels_path(self) -> Path:
        return self.folder / LABELS

    @property
    def calibration_path(self) -> Path:
        return self.folder / CALIBRATION


def suite_of(judge: object, cases: Sequence[Case]) -> Suite:
    """The suite's rubrics under `judge`'s setup; refused when no judge is configured or
    no case has a rubric."""
    if not isinstance(judge, JudgeService):
        raise JudgeError(
            "calibrate needs the judge: set judge_base_url and judge_model in [tool.zeroclaw.eval]"
        )
    judged = [
        (case.id, rubric, judge.setup.setup_hash(rubric))
        for case in cases
        if case.trace.expects is not None
        for rubric in case.trace.expects.judge
    ]
    if not judged:
        raise JudgeError("no case of the suite has a rubric (expects.judge): nothing to calibrate")
    return Suite(judge, suite_rubrics(judged))


def chosen_rubrics(suite: Suite, names: Sequence[str]) -> dict[str, list[SuiteRubric]]:
    unknown = [name for name in names if name not in suite.rubrics]
    if unknown:
        known = ", ".join(suite.rubrics)
        raise JudgeError(f"no rubric named {', '.join(unknown)} in the suite (it has: {known})")
    return {n: r for n, r in suite.rubrics.items() if not names or n in names}


def revealed(item: Item, answer: str) -> str:
    """What the judge gave an item, said once the person's label is given."""
    verdict = item.verdict
    said = "passed" if item.judge_passed else "failed"
    score = "no score" if verdict.score is None else f"score {verdict.score:.2f}"
    agree = "agrees" if (answer == "pass") == item.judge_passed else "DISAGREES"
    return (
        f"you: {answer}. The judge {said} it ({score}): {one_line(verdict.reason, 300)} [{agree}]\n"
    )
