"""`zeroclaw eval calibrate probe`: the judge's consistency and its bias towards long
answers, measured on a sample of the recorded verdicts and stored with the calibration.

* **Flip rate.** Each sampled verdict is asked again k times (k odd, at the production
  settings: the same request, temperature 0). A verdict *flips* when any re-ask's pass or
  fail differs from the recorded one. The share of sampled verdicts that flipped is the
  flip rate; a rubric over `judge_max_flip_rate` does not gate.
* **Verbosity probe.** Each sampled verdict the judge passed is asked again with the
  final response padded by a paragraph that has nothing to do with the task. Padding
  cannot make an answer better: a padded answer scoring higher than the original is a
  rise, and a rubric with any rise does not gate.

Every probe reply is recorded in the store like a run's (re-ask j of a rubric of k samples
is sample k + j of the same request; a padded answer is its own request), so a probe is
replayed offline and the same every time; `--record-judge` asks the live judge for the
replies not yet recorded. A probe missing a reply measures nothing: its figure is not
stored, and it says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import msgspec

from harness.errors import ExitCode
from harness.expectations.judge import Material, Rubric
from harness.io.atomic import write_atomic
from harness.io.text import clean
from harness.judge.calibration import CalibrationFile, RubricCalibration, gate
from harness.judge.labels import Item, Suite, chosen_rubrics, items
from harness.judge.service import JudgeService, Sample
from harness.judge.settings import JudgeError, read_calibration
from harness.judge.store import reply_key
from harness.tool_registry import RecordedCall

# Text no rubric asks for: what a verbosity-biased judge rewards.
PADDING = (
    "Additionally, it is worth noting that clear communication matters a great deal, and "
    "that many people find detailed, thorough and well-structured explanations helpful in "
    "a wide range of everyday situations, whatever the topic at hand may be."
)


@dataclass
class Probed:
    """One rubric's probe: its figures, or what kept them from being measured."""

    flips: int = 0
    flip_items: int = 0
    rises: int = 0
    padded: int = 0
    missing: int = 0  # probe replies without a verdict (not recorded, or failed)
    first_missing: str = ""


@dataclass
class _Prober:
    service: JudgeService
    k: int

    def same(self, item: Item, material: Material) -> bool:
        body = self.service.body(self.service.request(item.rubric, material))
        return reply_key(body, 0) == item.key

    async def ask(self, case: str, rubric: Rubric, material: Material, i: int) -> Sample:
        return await self.service.sample(case, rubric, material, i)

    async def item(self, item: Item, found: Probed) -> None:
        material = _checked(item, self)
        if material is None:
            found.missing += 1
            found.first_missing = found.first_missing or (
                f"{item.case}: its run cannot be rebuilt exactly as the judge was sent it"
            )
            return
        rubric = item.rubric
        asked = [
            await self.ask(f"{item.case}~flip", rubric, material, rubric.samples + j)
            for j in range(self.k)
        ]
        if self._note_missing(asked, found):
            return
        found.flip_items += 1
        found.flips += any(_passes(s, rubric) != item.judge_passed for s in asked)
        original = item.verdict
        if not item.judge_passed or original.score is None:
            return
        padded = _padded(material)
        longer = [await self.ask(f"{item.case}~verbosity", rubric, padded, i)
                  for i in range(rubric.samples)]  # fmt: skip
        if self._note_missing(longer, found):
            return
        found.padded += 1
        score = sorted(longer, key=lambda s: s.vote)[len(longer) // 2].score
        found.rises += score is not None and score > original.score + 1e-9

    @staticmethod
    def _note_missing(samples: Sequence[Sample], found: Probed) -> bool:
        missing = [s for s in samples if s.score is None]
        if missing:
            found.missing += len(missing)
            found.first_missing = found.first_missing or missing[0].reason
        return bool(missing)


def _checked(item: Item, prober: _Prober) -> Material | None:
    """`material_of`, kept only when it is exactly what the judge was sent."""
    material = material_of(item)
    if material is None or not prober.same(item, material):
        return None
    return material


def material_of(item: Item) -> Material | None:
    """The run the item's judge was shown, rebuilt from its data block (None: the block
    is not one this template writes)."""
    run = item.run()
    turns = run.get("turns")
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        return None
    calls: list[RecordedCall] = []
    for c in run.get("tool_calls") or []:
        if not isinstance(c, dict):
            return None
        calls.append(
            RecordedCall(
                str(c.get("tool", "")),
                _text(c.get("arguments")),
                _text(c.get("result")),
                bool(c.get("succeeded")),
                0.0,
            )
        )
    return Material(
        user_inputs=tuple(str(t.get("user", "")) for t in turns),
        responses=tuple(str(t.get("agent", "")) for t in turns),
        calls=tuple(calls),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _passes(sample: Sample, rubric: Rubric) -> bool:
    return sample.score is not None and not sample.unknown and sample.score >= rubric.threshold


def _padded(material: Material) -> Material:
    responses = list(material.responses)
    responses[-1] = f"{responses[-1]}\n\n{PADDING}"
    return msgspec.structs.replace(material, responses=tuple(responses))


def probe(suite: Suite, names: Sequence[str], sample: int, k: int, out: TextIO) -> int:
    """Probe the chosen rubrics on the first `sample` recorded verdicts of each (in key
    order: a hash, so in no telling order), and store the figures with their calibration
    entries. Exit 0 when every probe measured and every probed rubric still gates."""
    if k < 1 or k % 2 == 0:
        raise JudgeError(f"--k {k}: re-asks must be an odd number, 1 or more")
    chosen = chosen_rubrics(suite, names)
    existing = read_calibration(suite.calibration_path)
    entries = dict(existing.rubrics) if existing is not None else {}
    prober = _Prober(suite.judge, k)
    ok = True
    planned: dict[str, tuple[RubricCalibration, list[Item]]] = {}
    for name, found in chosen.items():
        entry = entries.get(name)
        if len(found) != 1 or entry is None or entry.setup != found[0].setup:
            print(f"rubric {clean(name)}: no current calibration: run `calibrate finalize` "
                  "first", file=out)  # fmt: skip
            ok = False
            continue
        planned[name] = (entry, items(suite.judge.store, {name: found})[:sample])
    measured = asyncio.run(_measure(prober, {n: found for n, (_, found) in planned.items()}))
    for name, (entry, _) in planned.items():
        figures = measured[name]
        entries[name], lines, gates = _stored(entry, figures, suite)
        print(f"rubric {clean(name)}:", file=out)
        for line in lines:
            print(f"  {line}", file=out)
        ok = ok and gates and not figures.missing
    data = CalibrationFile(rubrics=dict(sorted(entries.items())))
    write_atomic(
        suite.calibration_path, msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n"
    )
    return ExitCode.PASSED if ok else ExitCode.FAILED


async def _measure(prober: _Prober, plan: dict[str, list[Item]]) -> dict[str, Probed]:
    """Every rubric's probe on one event loop (the judge's limiter lives on it)."""
    measured = {}
    for name, chosen in plan.items():
        found = measured[name] = Probed()
        for item in chosen:
            await prober.item(item, found)
    return measured


def _stored(
    entry: RubricCalibration, found: Probed, suite: Suite
) -> tuple[RubricCalibration, list[str], bool]:
    lines = []
    if found.missing:
        lines.append(
            f"{found.missing} probe repl(ies) without a verdict, nothing stored for them "
            f"({clean(found.first_missing)})"
        )
    if found.flip_items:
        rate = found.flips / found.flip_items
        entry = msgspec.structs.replace(entry, flip_rate=rate, flip_samples=found.flip_items)
        lines.append(
            f"flip rate {rate:.2f}: {found.flips} of {found.flip_items} verdict(s) changed "
            f"when asked again"
        )
    if found.padded:
        entry = msgspec.structs.replace(entry, verbosity_rises=found.rises)
        lines.append(
            f"verbosity probe: padding raised {found.rises} of {found.padded} passing "
            "answer(s)' score"
        )
    gates, why = gate(entry, entry.setup, suite.judge.bounds)
    lines.append(("gates: " if gates else "does not gate: ") + why)
    return entry, lines, gates
