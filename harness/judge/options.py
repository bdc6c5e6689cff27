"""The judge's flags: `--record-judge` (of every command that grades) and those of
`zeroclaw eval calibrate`'s steps, declared beside the judge (and re-exported by
`harness.settings`, where the command line is built): a module of declarations alone, so
the command line's start imports nothing of the judge itself."""

from __future__ import annotations

from pathlib import Path

from harness.options import Option, count

RECORD_JUDGE = Option(
    "--record-judge",
    "ask the live judge (judge_base_url, judge_model, the key in judge_api_key_env) for "
    "every judge reply not yet recorded and write it beside the suite; list recorded "
    "replies no case asked for (without it the judge is only replayed, never called)",
    action="store_true",
)
# `zeroclaw eval calibrate label|finalize|probe` (docs/judge.md): each step and its help.
CALIBRATE_STEPS = {
    "label": "ask a blind pass or fail on each recorded judge verdict (resumable)",
    "finalize": "write the calibration file from the labels; exit 0 iff every rubric gates",
    "probe": "measure the judge's flip rate and verbosity bias on a sample; store them",
    "import": "add the labels downloaded from a labeling page (label --html) to the labels file",
}
RUBRIC = Option(
    "--rubric",
    "only this rubric (repeatable; default: every rubric of the suite)",
    metavar="NAME",
    action="append",
)
PROBE_OPTIONS = (
    RECORD_JUDGE,
    Option("--sample", "recorded verdicts probed per rubric", metavar="N", type=count, default=20),
    Option("--k", "re-asks of each verdict (odd)", metavar="K", type=count, default=3),
)
# What each step takes besides the suite's options (`harness.settings.CALIBRATE_OPTIONS`).
_PAGE = "write a labeling page here instead of asking in the terminal (then: calibrate import)"
_PAIRING = "the agent's model the labeled runs were made with (default: live_model)"
STEP_OPTIONS: dict[str, tuple[Option, ...]] = {
    "label": (Option("--html", _PAGE, metavar="PATH", type=Path),),
    "import": (Option("file", "the labels file downloaded from the labeling page", type=Path),),
    "finalize": (Option("--agent-model", _PAIRING, metavar="NAME"),),
    "probe": PROBE_OPTIONS,
}
