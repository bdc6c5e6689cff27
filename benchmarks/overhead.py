"""Harness overhead against the bare OpenAI Agents SDK loop, measured in one process.

    python benchmarks/overhead.py [-n 1000] [--rounds 5]

Both sides replay the same N cases (the regression suite's fixtures, repeated under fresh
ids) through the SDK's real `Runner` with tracing off. The bare side is the minimum a
scripted test needs: a `Model` that pops canned responses and tools that compute results,
with the same tool definitions the harness gives its agent (so both run the same agent).
The harness side is `run_suite`: admission of every fixture, a fresh agent, backend,
registry and workspace per case, recording, grading and the suite report. Prints both
times, the ratio (target <= 1.10) as best-of-rounds and as the median and spread of the
per-round ratios (rounds are interleaved, so each pair ran under the same conditions),
peak traced memory of each, and the time of `zeroclaw eval --help` (target < 150 ms),
which must not import an agent framework.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from harness import builtin_tools, run_suite

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


def time_harness(directory: Path, n: int) -> Timing:
    # Replay conformance is on (it always is): every request is checked against the script.
    start, cpu = time.perf_counter(), time.process_time()
    report = run_suite(directory, agent="openai-agents")
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    if report.exit_code() != 0 or len(report.cases) != n:
        bad = [c for c in report.cases if not c.passed][:3]
        sys.exit(f"harness run did not pass: {bad}")
    return elapsed


def peak_memory(fn: Any) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def time_help(repeats: int = 15) -> tuple[float, bool]:
    command = [sys.executable, "-m", "harness", "eval", "--help"]
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    probe = (
        "import sys, harness.cli; print('agents' in sys.modules or 'pydantic_ai' in sys.modules)"
    )
    imports_framework = (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
        == "True"
    )
    return statistics.median(samples), imports_framework


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="number of cases (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per side")
    parser.add_argument("--suite", type=Path, default=SUITE, help="fixtures to cycle over")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="zeroclaw-bench-") as tmp:
        directory = Path(tmp)
        cases = make_cases(args.n, directory, args.suite)
        time_bare(cases[:50])  # warm both paths: imports, caches
        warm = directory / "warm"
        warm.mkdir()
        make_cases(20, warm, args.suite)
        time_harness(warm, 20)

        bare_times: list[Timing] = []
        harness_times: list[Timing] = []
        for _ in range(args.rounds):  # interleaved so drift hits both sides alike
            bare_times.append(time_bare(cases))
            harness_times.append(time_harness(directory, args.n))
        bare_best = min(t[0] for t in bare_times)
        harness_best = min(t[0] for t in harness_times)
        bare_peak = peak_memory(lambda: time_bare(cases))
        harness_peak = peak_memory(lambda: time_harness(directory, args.n))

    help_time, imports_framework = time_help()
    ratio = harness_best / bare_best
    paired = sorted(h[0] / b[0] for b, h in zip(bare_times, harness_times, strict=True))
    cpu_paired = sorted(h[1] / b[1] for b, h in zip(bare_times, harness_times, strict=True))
    print(f"cases: {args.n}, rounds: {args.rounds} (best of each)")
    print(f"bare SDK loop:  {bare_best:8.3f} s  ({bare_best / args.n * 1e3:.3f} ms/case)")
    print(f"run_suite:      {harness_best:8.3f} s  ({harness_best / args.n * 1e3:.3f} ms/case)")
    print(f"ratio harness/bare: {ratio:.3f}  (target <= 1.10)")
    print(
        f"per-round ratios, wall: median {statistics.median(paired):.3f}, "
        f"range {paired[0]:.3f}..{paired[-1]:.3f}"
    )
    print(
        f"per-round ratios, CPU:  median {statistics.median(cpu_paired):.3f}, "
        f"range {cpu_paired[0]:.3f}..{cpu_paired[-1]:.3f}  (target <= 1.10)"
    )
    print(
        f"peak traced memory: bare {bare_peak / 1e6:.1f} MB, harness {harness_peak / 1e6:.1f} MB, "
        f"ratio {harness_peak / bare_peak:.2f}"
    )
    print(f"zeroclaw eval --help: {help_time * 1e3:.1f} ms median  (target < 150 ms)")
    print(f"importing the CLI imports an agent framework: {imports_framework}")


if __name__ == "__main__":
    main()
