"""Live-mode concurrency: how far `--jobs N` turns a slow provider's latency into speedup.

    python benchmarks/live_concurrency.py [--rounds 2] [--cases 60] [--delay 0.2] [--quick]

A loopback OpenAI-compatible Chat Completions server (a `ThreadingHTTPServer` in a child
process, so its CPU is not this process's and it never competes for this process's GIL)
answers every request after a fixed delay (200 ms by default). Its model is scripted: asked
to echo a value, it calls the `echo` tool once; given the tool's result, it answers text
holding the value. So each case of the generated live suite (60 by default) is two model
requests, and a serial run costs at least cases x 2 x delay. The API key has the 51
characters of a classic OpenAI key (masking it costs more the longer it is).

The suite runs through the real pipeline (`harness.pipeline.run` with `RunOptions`,
`mode="live"`, a backend from `harness.live.backend.provider_from_config`, as `zeroclaw eval run
--mode live` builds it) with `--jobs 1`, 8, 16 and 32, through both built-in frameworks, in
this process. Rounds are interleaved (every framework and every N once per round, the order
rotated from round to round), so drift hits every side alike; for each framework and N it
prints the median wall and CPU time (`time.process_time`: the harness and the agent
framework, never the server), the median of the per-round speedups against the same
round's serial run, that speedup as a share of the ideal (serial time / N, bounded by the
number of cases), the median per-round CPU ratio against serial, the harness CPU per model
request, and the most requests the server had in flight at once. Target: at 16 concurrent
cases, at least 80% of the ideal speedup. The default (2 rounds) takes under 3 minutes on
two cores, most of it the serial runs' floor; `--quick` (1 round, 32 cases, `--jobs 1` and
16) well under one.

Two bounds explain the figures. With equal cases no scheduler beats cases / ceil(cases / N)
(N slots serve them in waves: 15.0 of 16 for 60 cases; the "waves" column). And every case
runs its CPU on the one event loop: with a provider answering every request after the same
delay the cases of a wave move in lockstep, each step of each case waiting behind the same
step of the others, so a wave takes about requests x delay + N x (CPU per case), and

    wall(N) ~ ceil(cases / N) x (requests x delay + N x CPU per case)

(the "model" column, from each row's own CPU). The last line says how little CPU per case
the target needs.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FRAMEWORKS = ("openai-agents", "pydantic-ai")
JOBS = (1, 8, 16, 32)
TARGET_JOBS = 16
TARGET_SHARE = 0.80
MODEL = "loopback-echo"
KEY_ENV = "ZEROCLAW_BENCH_API_KEY"
KEY = "sk-" + "zeroclaw0bench0loopback0key0" + "0" * 20  # 51 characters
REQUESTS_PER_CASE = 2
VALUE = re.compile(r"zc-bench-[0-9]+")


# --- the server (child process) -----------------------------------------------------------


class _Counters:
    """What the server saw, for the parent to read between runs: requests answered, the
    most in flight at once, and the server's own CPU time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    def enter(self) -> int:
        with self.lock:
            self.requests += 1
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return self.calls

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def snapshot(self, reset: bool) -> dict[str, Any]:
        with self.lock:
            shown = {"requests": self.requests, "peak": self.peak, "cpu": time.process_time()}
            if reset:
                self.requests, self.peak = 0, self.in_flight
            return shown


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def answer(body: Any, call_number: int) -> dict[str, Any]:
    """The scripted model: echo the value the user names, then report the tool's result."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return _completion({"role": "assistant", "content": "no messages"}, "stop")
    results = []
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            results.append(str(message.get("content")))
    if results:
        said = f"The echo tool said: {' '.join(reversed(results))}"
        return _completion({"role": "assistant", "content": said}, "stop")
    user: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    found = VALUE.search(str(user.get("content", "")))
    value = found.group() if found else "(nothing)"
    call = {
        "id": f"call_{call_number}",
        "type": "function",
        "function": {"name": "echo", "arguments": json.dumps({"message": value})},
    }
    return _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a case's client reuses its connection
    # Without it, a response's last segment waits for the client's delayed ACK (Nagle's
    # algorithm): some 40 ms on the second request of a kept-alive connection.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        if self.path.startswith("/stats"):
            self._send(200, server.counters.snapshot(reset="reset" in self.path))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length) if length else b""
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        number = server.counters.enter()
        try:
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            document = answer(body, number)
            time.sleep(server.delay)  # the provider's latency, one thread per connection
            self._send(200, document)
        finally:
            server.counters.leave()

    def _send(self, code: int, document: Any) -> None:
        data = json.dumps(document).encode()
        reason = self.responses.get(code, ("",))[0]
        head = (
            f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        try:
            self.wfile.write(head.encode("latin-1") + data)  # one write: one segment
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog (5) drops connection attempts when 32 cases connect at once, and
    # a dropped SYN is retried only after a second: latency the harness never caused.
    request_queue_size = 512

    def __init__(self, delay: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay = delay
        self.counters = _Counters()


def serve(delay: float) -> None:
    """Run the server until stdin closes (the parent ended); print its port first."""
    server = _Server(delay)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # EOF: the parent is gone or done
    server.shutdown()


@dataclass
class Loopback:
    """The server child process, seen from the parent."""

    process: subprocess.Popen[str]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self, reset: bool = False) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.port}/stats{'?reset' if reset else ''}"
        with urllib.request.urlopen(url, timeout=10) as response:
            document: dict[str, Any] = json.loads(response.read())
            return document


def start_server(delay: float) -> Loopback:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--delay", repr(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.strip().isdigit():
        process.kill()
        sys.exit(f"the loopback server did not start (it printed {line!r})")
    return Loopback(process, int(line))


def stop_server(server: Loopback) -> None:
    assert server.process.stdin is not None
    server.process.stdin.close()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


# --- the suite and its runs ---------------------------------------------------------------


def write_suite(directory: Path, cases: int) -> Path:
    """`cases` live fixtures, each: echo one value through the tool, then report it."""
    suite = directory / "live"
    suite.mkdir(parents=True, exist_ok=True)
    for i in range(cases):
        value = f"zc-bench-{i:03d}"
        fixture = {
            "model_name": f"bench-live-{i:03d}",
            "description": "Positive, live: one echo call carries the value there and back.",
            "tools": ["echo"],
            "turns": [{"user_input": f'Call echo once with the message "{value}", then tell me.'}],
            "expects": {
                "tools_used": ["echo"],
                "exact_tool_calls": 1,
                "tool_results_contain": [{"tool": "echo", "needle": value}],
                "response_contains": [value],
            },
        }
        (suite / f"case_{i:03d}.json").write_text(json.dumps(fixture), "utf-8")
    return suite


def options_for(suite: Path, framework: str, base_url: str, jobs: int) -> Any:
    """The run options `zeroclaw eval run --mode live --jobs N` would build for this
    configuration: a fresh provider (and its limiter) per run."""
    from harness.config import EvalConfig
    from harness.defaults import DEFAULT_CASE_TIMEOUT
    from harness.live.backend import provider_from_config
    from harness.pipeline import RunOptions
    from harness.verdict.receipts import provider_ref

    config = EvalConfig(
        live_base_url=base_url,
        live_model=MODEL,
        live_api_key_env=KEY_ENV,
        live_allowed_tools=("echo",),
    )
    provider = provider_from_config(config, {KEY_ENV: KEY}, DEFAULT_CASE_TIMEOUT)
    return RunOptions(
        suite=suite,
        agent=framework,
        mode="live",
        kind="live",
        root=suite.parent,
        backend=provider.backend,
        allowed_tools=provider.allowed_tools,
        provider=provider_ref(base_url, MODEL),
        name="bench/live",
        jobs=jobs,
    )


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds of this process
    requests: int  # chat completions the server answered
    peak: int  # most requests in flight at the server at once


def time_run(suite: Path, cases: int, framework: str, server: Loopback, jobs: int) -> Sample:
    from harness.pipeline import run

    options = options_for(suite, framework, server.base_url, jobs)
    gc.collect()
    server.stats(reset=True)
    start, cpu = time.perf_counter(), time.process_time()
    report = run(options)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    seen = server.stats(reset=True)
    if report.exit_code() != 0 or len(report.cases) != cases:
        bad = [c.first_failure() for c in report.cases if not c.passed][:3]
        sys.exit(f"{framework} --jobs {jobs}: the suite did not pass: {bad}")
    return Sample(wall, cpu, int(seen["requests"]), int(seen["peak"]))


def rotated(items: Sequence[Any], by: int) -> list[Any]:
    by %= len(items)
    return [*items[by:], *items[:by]]


def rounds(
    suite: Path,
    cases: int,
    frameworks: Sequence[str],
    jobs: Sequence[int],
    server: Loopback,
    count: int,
) -> Iterator[dict[tuple[str, int], Sample]]:
    """Each round: every framework and N once, in an order rotated from round to round."""
    for number in range(count):
        samples: dict[tuple[str, int], Sample] = {}
        for framework in rotated(frameworks, number):
            for n in rotated(jobs, number):
                samples[framework, n] = time_run(suite, cases, framework, server, n)
        yield samples


# --- the report ---------------------------------------------------------------------------


def ideal(n: int, cases: int) -> int:
    return min(n, cases)


def waves(n: int, cases: int) -> int:
    return math.ceil(cases / n)


def lockstep_wall(n: int, cases: int, delay: float, cpu_per_case: float) -> float:
    """The wall time of `cases` equal cases, N at a time, when each wave moves in lockstep."""
    return waves(n, cases) * (REQUESTS_PER_CASE * delay + n * cpu_per_case)


def cpu_for_target(cases: int, delay: float) -> float | None:
    """The most CPU per case with which the lockstep model still reaches the target at
    `TARGET_JOBS`; None when the waves alone keep it out of reach."""
    n = min(TARGET_JOBS, cases)
    goal = TARGET_SHARE * ideal(n, cases)
    w = waves(n, cases)
    if cases <= goal * w:
        return None
    return REQUESTS_PER_CASE * delay * (cases - goal * w) / (goal * w * n - cases)


@dataclass(frozen=True)
class Row:
    jobs: int
    wall: float  # median seconds
    cpu: float  # median seconds
    speedup: float  # median of per-round serial wall / this wall
    cpu_ratio: float  # median of per-round this CPU / serial CPU
    per_request: float  # median CPU seconds per model request
    peak: int  # most requests in flight at the server

    def share(self, cases: int) -> float:
        return self.speedup / ideal(self.jobs, cases)


def rows(
    results: list[dict[tuple[str, int], Sample]], framework: str, jobs: Sequence[int]
) -> list[Row]:
    serial = min(jobs)
    table = []
    for n in jobs:
        samples = [r[framework, n] for r in results]
        base = [r[framework, serial] for r in results]
        table.append(
            Row(
                jobs=n,
                wall=statistics.median(s.wall for s in samples),
                cpu=statistics.median(s.cpu for s in samples),
                speedup=statistics.median(
                    b.wall / s.wall for b, s in zip(base, samples, strict=True)
                ),
                cpu_ratio=statistics.median(
                    s.cpu / b.cpu for b, s in zip(base, samples, strict=True)
                ),
                per_request=statistics.median(s.cpu / max(s.requests, 1) for s in samples),
                peak=max(s.peak for s in samples),
            )
        )
    return table


def print_table(framework: str, table: list[Row], cases: int, delay: float) -> None:
    print(f"\n{framework}")
    print(
        "  jobs   wall s  model s   CPU s  speedup  ideal  of ideal  waves  CPU vs serial"
        "  CPU/request  in flight"
    )
    for row in table:
        model = lockstep_wall(row.jobs, cases, delay, row.per_request * REQUESTS_PER_CASE)
        bound = cases / waves(row.jobs, cases) / ideal(row.jobs, cases)
        print(
            f"  {row.jobs:4d}  {row.wall:7.3f}  {model:7.3f}  {row.cpu:6.3f}  "
            f"{row.speedup:6.2f}x  {ideal(row.jobs, cases):4d}x  {row.share(cases):7.0%}  "
            f"{bound:5.0%}  {row.cpu_ratio:13.2f}  {row.per_request * 1e3:8.2f} ms  {row.peak:9d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds (default 2)")
    parser.add_argument("--cases", type=int, default=60, help="cases in the suite (default 60)")
    parser.add_argument(
        "--delay", type=float, default=0.2, help="seconds the server takes per request (0.2)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        nargs="+",
        default=list(JOBS),
        help="the N of --jobs to run (default 1 8 16 32; the smallest is the serial baseline)",
    )
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        action="append",
        help="a framework to run (repeatable; default both)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 round of 32 cases, --jobs 1 and 16 only"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.delay)
        return
    if args.quick:
        args.rounds, args.cases, args.jobs = 1, 32, [1, TARGET_JOBS]
    frameworks: list[str] = args.framework or list(FRAMEWORKS)
    jobs = sorted(set(args.jobs))
    if args.rounds < 1 or args.cases < 1 or jobs[0] < 1 or args.delay < 0:
        parser.error("--rounds, --cases and --jobs must be at least 1, --delay not negative")

    server = start_server(args.delay)
    try:
        with tempfile.TemporaryDirectory(prefix="zeroclaw-bench-live-") as tmp:
            suite = write_suite(Path(tmp), args.cases)
            warm = write_suite(Path(tmp) / "warm", 4)
            for framework in frameworks:  # imports, caches, the first connections
                time_run(warm, 4, framework, server, 2)
            cpu_before = server.stats()["cpu"]
            results = list(rounds(suite, args.cases, frameworks, jobs, server, args.rounds))
            server_cpu = server.stats()["cpu"] - cpu_before
    finally:
        stop_server(server)

    requests = args.cases * REQUESTS_PER_CASE
    served = sum(s.requests for r in results for s in r.values())
    print(
        f"cases: {args.cases} (each {REQUESTS_PER_CASE} model requests), server delay: "
        f"{args.delay * 1e3:g} ms per request, rounds: {args.rounds} (medians; ratios "
        f"per round), serial floor: {requests * args.delay:.1f} s"
    )
    print(
        "server: ThreadingHTTPServer in a child process (its CPU is not counted below): "
        f"{server_cpu / max(served, 1) * 1e3:.2f} ms CPU per request"
    )
    print(
        "speedup: against the same round's --jobs "
        f"{jobs[0]}; ideal: serial time / N, bounded by {args.cases} cases; waves: "
        "cases / ceil(cases / N) of the ideal, the best any scheduler gets with equal cases; "
        "model: ceil(cases / N) x (requests x delay + N x CPU per case)"
    )
    tables = {framework: rows(results, framework, jobs) for framework in frameworks}
    for framework, table in tables.items():
        print_table(framework, table, args.cases, args.delay)
    print()
    for framework, table in tables.items():
        row = next((r for r in table if r.jobs == TARGET_JOBS), None)
        if row is None:
            print(f"target: not measured (--jobs {TARGET_JOBS} was not run)")
            break
        verdict = "met" if row.share(args.cases) >= TARGET_SHARE else "NOT met"
        print(
            f"target: at {TARGET_JOBS} concurrent cases >= {TARGET_SHARE:.0%} of the ideal "
            f"speedup: {framework} {row.speedup:.2f}x = {row.share(args.cases):.0%} of "
            f"{ideal(TARGET_JOBS, args.cases)}x: {verdict}"
        )
    needed = cpu_for_target(args.cases, args.delay)
    shown = {
        framework: next((r for r in table if r.jobs == TARGET_JOBS), table[-1])
        for framework, table in tables.items()
    }
    measured = ", ".join(
        f"{framework} {row.per_request * REQUESTS_PER_CASE * 1e3:.1f} ms at --jobs {row.jobs}"
        for framework, row in shown.items()
    )
    if needed is None:
        print(f"lockstep model: the target is out of reach with {args.cases} cases (waves)")
    else:
        print(
            f"lockstep model: the target needs at most {needed * 1e3:.1f} ms of CPU per case "
            f"in this process (measured: {measured})"
        )


if __name__ == "__main__":
    main()
