"""`zeroclaw eval calibrate label|finalize`: people label the judge's recorded verdicts
blind, and the labels become the calibration file a rubric's gate reads.

`label` shows, one item at a time, the rubric, the task's turns, the final response (and
the tool calls, when the rubric shows them to the judge), all of it untrusted text made
safe for a terminal; it asks pass or fail, and only after the answer says what the judge
gave. Each label is on disk before the next item; items labeled already are skipped, so a
session can stop at any point and resume.

`finalize` computes, per rubric, the agreement with its Wilson 95% interval, Cohen's κ
with its interval, the confusion matrix and the false-pass rate with its upper bound;
writes them to the calibration file bound to the judge setup's hash; and says, for every
bound not met, how many more labels would be needed. It exits 0 when every rubric it
calibrated gates, 1 when one does not (the file is written either way).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import msgspec

from harness.errors import ExitCode
from harness.io.atomic import write_atomic
from harness.io.text import clean, clean_lines, clip, inert
from harness.judge.calibration import (
    CalibrationFile,
    Confusion,
    RubricCalibration,
    calibrated,
    figures,
    gate,
)
from harness.judge.labels import (
    LABEL_SCHEMA,
    MAX_SHOWN,
    Item,
    Label,
    Suite,
    SuiteRubric,
    append_label,
    chosen_rubrics,
    items,
    pairs,
    read_labels,
    revealed,
)
from harness.judge.labels import suite_of as suite_of  # opened by the command line
from harness.judge.service import model_family
from harness.judge.settings import read_calibration

ANSWERS: dict[str, Literal["pass", "fail"]] = {
    "p": "pass",
    "pass": "pass",
    "f": "fail",
    "fail": "fail",
}


def step(args: dict[str, Any], suite: Suite, answers: TextIO, out: TextIO) -> int:
    """The `calibrate` step the command line names, with its arguments."""
    rubrics: list[str] = args["rubric"] or []
    if args["step"] in ("import", "label") and (args.get("html") or args.get("file")):
        from harness.judge import label_page  # it builds on this module

        if args["step"] == "import":
            return label_page.import_labels(suite, args["file"], out)
        return label_page.write_page(suite, rubrics, args["html"], out)
    if args["step"] == "label":
        return label(suite, rubrics, answers, out)
    if args["step"] == "probe":
        from harness.judge.probes import probe  # it builds on this module

        return probe(suite, rubrics, args["sample"], args["k"], out)
    return finalize(suite, rubrics, out, args.get("agent_model") or args.get("live_model", ""))


# --- label ---------------------------------------------------------------------------------


def label(suite: Suite, names: Sequence[str], answers: TextIO, out: TextIO) -> int:
    """The labeling session: every unlabeled item of the chosen rubrics, until the items
    run out, the person quits, or the input ends."""
    chosen = chosen_rubrics(suite, names)
    done = {lab.item for lab in read_labels(suite.labels_path)}
    todo = [item for item in items(suite.judge.store, chosen) if item.key not in done]
    given = 0
    print(
        f"{len(todo)} recorded verdict(s) to label; labels go to {suite.labels_path}",
        file=out,
    )
    for number, item in enumerate(todo, 1):
        out.write(render_item(item, number, len(todo)))
        answer = _ask(answers, out)
        if answer == "quit":
            break
        if answer == "skip":
            continue
        append_label(
            suite.labels_path,
            Label(item=item.key, case=item.case, rubric=item.rubric.name, setup=item.setup,
                  label=answer, schema=LABEL_SCHEMA),
        )  # fmt: skip
        given += 1
        out.write(revealed(item, answer))
    left = len(todo) - given
    print(f"labeled {given}; {left} left unlabeled (run again to resume)", file=out)
    return ExitCode.PASSED


def _ask(answers: TextIO, out: TextIO) -> Literal["pass", "fail", "skip", "quit"]:
    while True:
        out.write("label: [p]ass, [f]ail, [s]kip, [q]uit? ")
        out.flush()
        line = answers.readline()
        if not line:  # the input ended: as quitting, every label given is kept
            out.write("\n")
            return "quit"
        word = line.strip().lower()
        if word in ANSWERS:
            return ANSWERS[word]
        if word in ("s", "skip"):
            return "skip"
        if word in ("q", "quit"):
            return "quit"
        out.write("answer p, f, s or q\n")


def _text(value: Any) -> str:
    """Untrusted text as a terminal may show it: controls and escape sequences escaped,
    lines that would be CI commands made inert, clipped."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return inert(clean_lines(clip(text, MAX_SHOWN)))


def _indented(value: Any) -> str:
    return "\n".join(f"    {line}" for line in _text(value).split("\n"))


def render_item(item: Item, number: int, total: int) -> str:
    """One item as the person labeling sees it: never the judge's verdict."""
    run = item.run()
    lines = [
        "",
        f"=== {number}/{total}: case {clean(item.case)}, rubric {clean(item.rubric.name)} ===",
        f"rubric (threshold {item.rubric.threshold:.2f}):",
        _indented(item.rubric.rubric.strip()),
    ]
    turns = run.get("turns")
    for i, turn in enumerate(turns if isinstance(turns, list) else [], 1):
        if isinstance(turn, dict):
            lines += [f"user, turn {i}:", _indented(turn.get("user", ""))]
            lines += [f"agent, turn {i}:", _indented(turn.get("agent", ""))]
    calls = run.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            lines.append(f"tool call {clean(str(call.get('tool', '?')))}:")
            lines.append(_indented({k: call.get(k) for k in ("arguments", "result", "succeeded")}))
    lines += ["final response:", _indented(run.get("final_response", ""))]
    return "\n".join(lines) + "\n"


# --- finalize ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finalized:
    name: str
    entry: RubricCalibration | None
    gates: bool
    lines: list[str]


def finalize(suite: Suite, names: Sequence[str], out: TextIO, agent_model: str = "") -> int:
    """The calibration file from the labels; the figures and the labels still needed.
    `agent_model`: the agent's model the labeled runs were made with ("" unknown); when
    the judge is of its family, the calibration is made on that pairing."""
    chosen = chosen_rubrics(suite, names)
    labels = read_labels(suite.labels_path)
    existing = read_calibration(suite.calibration_path) or CalibrationFile()
    pairing = _pairing(suite, agent_model, out)
    results = [
        _rubric(name, found, labels, suite, existing, pairing) for name, found in chosen.items()
    ]
    for result in results:
        out.write("\n".join(result.lines) + "\n")
    entries = dict(existing.rubrics)
    entries.update({r.name: r.entry for r in results if r.entry is not None})
    written = CalibrationFile(rubrics=dict(sorted(entries.items())))
    data = msgspec.json.format(msgspec.json.encode(written), indent=2) + b"\n"
    suite.folder.mkdir(parents=True, exist_ok=True)
    write_atomic(suite.calibration_path, data)
    gating = sum(r.gates for r in results)
    print(
        f"wrote {suite.calibration_path}: {gating} of {len(results)} rubric(s) gate",
        file=out,
    )
    return ExitCode.PASSED if gating == len(results) else ExitCode.FAILED


def _pairing(suite: Suite, agent_model: str, out: TextIO) -> str | None:
    """The model family of agent and judge when they share one (the self-preference
    pairing the labels were made on), else None."""
    family = model_family(suite.judge.setup.model)
    if not agent_model.strip() or model_family(agent_model) != family:
        return None
    print(
        f"agent model {clean(agent_model.strip())} and the judge are of one family ({family}): "
        "calibrated on that pairing",
        file=out,
    )
    return family


def _rubric(
    name: str,
    found: list[SuiteRubric],
    labels: Sequence[Label],
    suite: Suite,
    existing: CalibrationFile,
    pairing: str | None = None,
) -> Finalized:
    head = f"rubric {clean(name)}:"
    if len(found) > 1:
        cases = "; ".join(", ".join(clean(c) for c in r.cases) for r in found)
        return Finalized(name, None, False, [
            f"{head} not calibrated: its cases judge it under {len(found)} different setups "
            f"(text, threshold, include_transcript or samples differ: {cases}); a "
            "calibration is kept by name: give each its own name",
        ])  # fmt: skip
    [rubric] = found
    mine = [lab for lab in labels if lab.rubric == name]
    current = [lab for lab in mine if lab.setup == rubric.setup]
    labeled = pairs(items(suite.judge.store, {name: found}), current)
    lines = [head]
    if len(mine) > len(current):
        lines.append(
            f"  {len(mine) - len(current)} label(s) made under another judge setup: not counted"
        )
    if len(current) > len(labeled):
        lines.append(
            f"  {len(current) - len(labeled)} label(s) whose recorded replies are gone: not counted"
        )
    if not labeled:
        lines.append("  no labels: run `zeroclaw eval calibrate label` first")
        return Finalized(name, None, False, lines)
    confusion = Confusion.of(labeled)
    old = existing.rubrics.get(name)
    kept = old if old is not None and old.setup == rubric.setup else None
    entry = calibrated(
        name,
        rubric.setup,
        confusion,
        pairing=pairing,
        flip=(kept.flip_rate, kept.flip_samples) if kept else (None, 0),
        verbosity_rises=kept.verbosity_rises if kept else None,
    )
    gates, why = gate(entry, rubric.setup, suite.judge.bounds)
    lines += figure_lines(confusion)
    if gates:
        lines.append(f"  gates: {why}")
    else:
        lines.append("  does not gate:")
        lines += [f"    - {problem}" for problem in why.split("; ")]
    return Finalized(name, entry, gates, lines)


def figure_lines(c: Confusion) -> list[str]:
    """A rubric's figures in plain words, as `finalize` prints them."""
    f = figures(c)
    a_low, a_high = f.agreement_interval
    k_low, k_high = f.kappa_interval
    false_pass = "unmeasured (no human fail)" if f.false_pass is None else f"{f.false_pass:.2f}"
    return [
        f"  {f.n} label(s): {c.human_pass} human pass, {c.human_fail} human fail",
        f"  agreement {f.agreement:.2f} (95% Wilson interval {a_low:.2f} to {a_high:.2f})",
        f"  Cohen's kappa {f.kappa:.2f} (95% interval {k_low:.2f} to {k_high:.2f})",
        "  confusion:        human pass  human fail",
        f"    judge pass   {c.jp_hp:>11} {c.jp_hf:>11}",
        f"    judge fail   {c.jf_hp:>11} {c.jf_hf:>11}",
        f"  false-pass rate {false_pass}, 95% upper bound {f.false_pass_high:.2f}",
    ]
