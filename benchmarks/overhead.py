"""The bare OpenAI Agents SDK loop the harness is compared with, and its figure.

    python benchmarks/overhead.py [-n 3000] [--rounds 5]

The bare side is the minimum a scripted test needs: a `Model` that pops canned responses
and tools that compute results, with the same tool definitions (all five) the harness's
built-in agent offers, so both sides run the same agent through the SDK's real `Runner`
with tracing off. `benchmarks/per_case.py` measures the harness against it as users run
it (`zeroclaw eval run --agent openai-agents` against this loop in a process of its own,
marginal CPU per case, interleaved rounds): this module's `main` prints that figure, the
one figure of the SDK path (target <= 1.10); `benchmarks/instructions.py` counts the same
two sides in instructions.

Where the harness's extra CPU goes (2-core AMD EPYC, 1 MiB L2 per core; thread CPU probes,
`strace -c -f`, `/usr/bin/time`, `instructions.py --caches`):

* **Its own work, in instructions.** The harness executes 1.03x the bare loop's instructions
  per case (15.28 M against 14.87 M at 40 and 120 cases: its case start, recording, grading,
  snapshot check and reports, some 240 of its functions a case beside the SDK's ~410), and
  that after the bare loop spends 0.89 M a case the harness does not: it builds its `Agent`
  and five `FunctionTool`s per case through their constructors (the dataclass's type hints
  evaluated again, the default model settings deep-copied), where the harness copies an
  agent built once and makes its tools once (`harness.agents.sdk_cache`); it also
  serialises each case's last turn's items (`to_input_list`), which the harness reads only
  for a next turn (0.12 M). The SDK's own code in `Runner.run` executes the same
  instructions on both sides. On the cases' thread, outside `Runner.run`, the harness's
  largest parts a case are its reports of the case (`Results.add`: the progress line, the
  last-run report, the transcript kept for `show`), grading, the snapshot check and the
  run's bookkeeping between cases (`_as_found`), in that order; the adapter's own part of
  a request (converting the SDK's input, the request, the step back) is a few hundredths
  of a millisecond a case.
* **Cache misses, most of the difference.** The harness misses the simulated L2 1.35-1.42
  times as often per case (26.7 K against 18.8 K in one count), yet the L1 only 4% more
  often (207.8 K against 199.6 K): it reads not much more memory, but more distinct memory
  a case than 1 MiB holds, so lines the next case reads again are gone by then. The excess
  is data (21.5 K against 14.7 K; instruction fetches 5.2 K against 4.1 K), which for
  Python code is the interpreter reading bytecode, frames and objects, its own and the
  SDK's. Counted inside `Runner.run` alone (callgrind, collection toggled around each
  run), the harness's runs execute 1.015x the bare loop's instructions (13.54 M against
  13.34 M a case: its model and tools answering from within) but miss the L2 1.26 times as
  often (20.5 K against 16.2 K); outside the runs, its own work misses 6.2 K times a case
  against the bare loop's 2.6 K. So half the excess is the SDK's own loop reading again
  what the harness's work between its runs pushed out (the same `Runner.run` takes ~3% more
  CPU in the harness's process): less distinct memory touched between two runs (fewer
  functions and objects a case in grading, reports and case start) cuts both halves. A
  miss served by the shared L3 costs tens of cycles, one pushed out to memory by other
  processes hundreds, so the CPU-time ratio is several points above the instruction
  ratio, and more so on a loaded machine.
* **The progress line, through a pipe.** The command writes each case's progress line to
  its standard output as the case ends; `measure` reads that output through a pipe, and
  each line wakes the reader. On a loaded 2-core machine, the same harness command measured
  with its output to a pipe against a file (interleaved, 4 rounds, 1,000 cases) took 0.18
  ms a case more CPU, 0.11 ms of it system time, with 0.5 more involuntary context switches
  a case; with its output to a file, its system time per case is the bare loop's (which
  prints nothing). Rounds on a loaded machine vary widely: a figure to take again on a
  quiet one. A user's terminal or CI runner reads the same way, so the figure keeps the
  pipe; on a quiet machine the reader runs on the other core and costs far less.
* Not page faults (2.5 minor faults a case against the bare loop's 1.4), the collector
  (0.02 ms a case against 0.01), other threads (the watching thread sleeps while cases run)
  or tracing (off on both sides: `RunConfig(tracing_disabled=True)`).

The loop here stays as it was (an agent a case, as the harness has, made with the SDK's
public constructors); a bare loop doing neither (its agent built once, no last
`to_input_list`) counted 13.86 M instructions a case, against which the harness's ratio
would be about 7 points higher. The figure is to be read with that difference in mind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from harness import builtin_tools

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "evals" / "regression"


def scripted_cases(n: int, suite: Path = SUITE) -> list[dict[str, Any]]:
    """N cases cycling over a suite's fixtures, each under a unique id."""
    templates = [json.loads(p.read_text("utf-8")) for p in sorted(suite.glob("*.json"))]
    return [dict(templates[i % len(templates)], id=f"bench-{i:05d}") for i in range(n)]


def make_cases(n: int, directory: Path, suite: Path = SUITE) -> list[dict[str, Any]]:
    """`scripted_cases`, each also written to `directory` as a fixture."""
    cases = scripted_cases(n, suite)
    for i, case in enumerate(cases):
        (directory / f"case_{i:05d}.json").write_text(json.dumps(case), "utf-8")
    return cases


class ScriptedModel(Model):
    """The smallest SDK model a scripted test needs: canned responses in order."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        r = self.steps.pop(0)["response"]
        output: list[Any]
        if r["type"] == "text":
            output = [
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(type="output_text", text=r["content"], annotations=[])
                    ],
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=c["id"],
                    name=c["name"],
                    arguments=json.dumps(c["arguments"]),
                    status="completed",
                )
                for c in r["tool_calls"]
            ]
        tokens_in, tokens_out = r.get("input_tokens", 0), r.get("output_tokens", 0)
        usage = Usage(
            requests=1,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_tokens=tokens_in + tokens_out,
        )
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def _echo(_ctx: Any, arguments: str) -> str:
    message = json.loads(arguments).get("message")
    return message if isinstance(message, str) else "(empty)"


async def _fail(_ctx: Any, arguments: str) -> str:
    return str(json.loads(arguments).get("reason", ""))


async def _unused(_ctx: Any, arguments: str) -> str:
    return ""


def _tools() -> list[Any]:
    """The same tool definitions (names, descriptions, schemas) the harness gives its agent,
    so both sides run the same agent; only the implementations are the bare minimum."""
    invoke = {"echo": _echo, "fail": _fail}
    return [
        FunctionTool(
            t.name,
            t.description,
            t.parameters,
            invoke.get(t.name, _unused),
            strict_json_schema=False,
        )
        for t in builtin_tools()
    ]


async def bare(cases: list[dict[str, Any]]) -> int:
    config = RunConfig(tracing_disabled=True)
    finished = 0
    for case in cases:
        # One agent per case, as the harness builds; its model pops the case's steps in order.
        steps = [step for turn in case["turns"] for step in turn["steps"]]
        agent = Agent(name="bare", model=ScriptedModel(steps), tools=_tools())
        history: list[Any] = []
        for turn in case["turns"]:
            result = await Runner.run(
                agent,
                [*history, {"role": "user", "content": turn["user_input"]}],
                run_config=config,
            )
            history = result.to_input_list()
        finished += 1
    return finished


Timing = tuple[float, float]  # (wall seconds, CPU seconds of this process)


def time_bare(cases: list[dict[str, Any]]) -> Timing:
    start, cpu = time.perf_counter(), time.process_time()
    assert asyncio.run(bare(cases)) == len(cases)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=3000, help="number of cases (default 3000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from per_case import sdk_target

    with tempfile.TemporaryDirectory(prefix="zeroclaw-overhead-") as tmp:
        print(sdk_target(Path(tmp), args.n, args.rounds).line())


if __name__ == "__main__":
    main()
