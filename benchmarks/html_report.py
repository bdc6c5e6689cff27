"""The HTML report's growth in a case's tool calls: one case of N calls against one of 2N.

    python benchmarks/html_report.py [-n 5000] [--rounds 5]

Each case is one model answer asking for all its calls at once, every call recorded with
its result, then the request carrying the results back and a final text (what a live
model answering with a wave of calls leaves). The report is `render_html`, the whole page
`--html` writes. Rounds are interleaved (N, 2N, then the baseline, each after a
collection), after a warm-up round. The baseline, measured in the same rounds, is the JSON
report's encoding of the same 2N-call case (`msgspec`), which is linear: the page's time
over it says the page is not a hidden multiple of what the report holds.

Prints the best round of each, the median of per-round ratios 2N/N (2.0 is linear, 4.0
quadratic; before each call was matched to its dispatch in constant time, 5,000 calls
took 40 s and this ratio was 3.6 at 1,000), the same ratio in function calls made (counted,
so no other load on the machine moves it) and the page's size at N and 2N.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import msgspec

from harness.expectations.base import Grade
from harness.model_boundary import Message, ModelStep, ToolCall
from harness.reporters.html import render_html
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.transcript import TranscriptStep
from harness.verdict.reports import CaseReport, SuiteReport


def report_of(n: int) -> SuiteReport:
    """A suite of one failing case whose one answer asked for `n` echo calls."""
    asked = tuple(ToolCall(f"call_{i}", "echo", {"message": f"wave {i}"}) for i in range(n))
    done = [
        RecordedCall("echo", f'{{"message":"wave {i}"}}', f"wave {i}", True, 0.05) for i in range(n)
    ]
    results = [
        Message(role="tool", content=f"wave {i}", tool_call_id=f"call_{i}") for i in range(n)
    ]
    record = RunRecord(
        final_response="done",
        turn_responses=["done"],
        calls=done,
        model_calls=2,
        transcript=[
            TranscriptStep(
                turn=0,
                step=0,
                sent=[Message(role="user", content="echo a wave")],
                tools_offered=["echo"],
                answer=ModelStep(tool_calls=asked),
            ),
            TranscriptStep(
                turn=0,
                step=1,
                sent=[Message(role="assistant", tool_calls=asked), *results],
                tools_offered=["echo"],
                answer=ModelStep(text="done"),
            ),
        ],
    )
    grade = Grade("exact_tool_calls(1)", False, f"{n} tool call(s)", "tool")
    case = CaseReport.graded("wave", "evals/regression/wave.json", [grade], record)
    return SuiteReport(
        suite="evals/regression", kind="regression", mode="replay", agent="bench", cases=[case]
    )


def timed(work: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def calls_made(work: Callable[[], object]) -> int:
    """Python and C function calls `work` makes."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5000, help="tool calls of the smaller case")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    small, large = report_of(args.n), report_of(2 * args.n)
    pages = [render_html(small), render_html(large)]  # the warm-up round, and the sizes
    msgspec.json.encode(large)
    rounds = [
        (
            timed(lambda: render_html(small)),
            timed(lambda: render_html(large)),
            timed(lambda: msgspec.json.encode(large)),
        )
        for _ in range(args.rounds)
    ]
    growth = statistics.median(big / little for little, big, _ in rounds)
    over_json = statistics.median(big / encoded for _, big, encoded in rounds)
    counted = calls_made(lambda: render_html(large)) / calls_made(lambda: render_html(small))
    print(f"tool calls: {args.n} and {2 * args.n}, rounds: {args.rounds}")
    print(f"render_html, {args.n} calls: {min(r[0] for r in rounds):.3f} s best")
    print(f"render_html, {2 * args.n} calls: {min(r[1] for r in rounds):.3f} s best")
    print(f"growth 2N/N, median per round: {growth:.2f} (2.0 linear, 4.0 quadratic)")
    print(f"growth 2N/N in function calls made: {counted:.3f}")
    print(f"page over the JSON encoding of the same case, median per round: {over_json:.1f}")
    print(f"page size: {len(pages[0]):,} and {len(pages[1]):,} bytes")


if __name__ == "__main__":
    main()
