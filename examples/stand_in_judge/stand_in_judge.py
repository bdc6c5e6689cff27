"""A deterministic stand-in for an LLM judge: an OpenAI-compatible Chat Completions server
on 127.0.0.1 that grades by a rule, so this repository's judge-graded capability suite can
be recorded again by anyone, offline and for free.

It is not a language model and does not read the rubric: it grades every run against one
rule, "the final response states what every successful tool call returned": the score is
the share of successful tool results found (case-insensitively, verbatim) in the final
response; a run without a successful tool call is `unknown` (there is no evidence to grade).
It reads the run from the judge prompt's data block, exactly as a real judge is shown it.

    python examples/stand_in_judge/stand_in_judge.py            # listens on port 8931
    ZEROCLAW_STAND_IN_JUDGE_KEY=unused zeroclaw eval run --suite evals/capability --record-judge

A real project points `judge_base_url` and `judge_model` at a real judge, records its
replies with `--record-judge`, labels them and finalizes the calibration (docs/judge.md).
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"
PORT = 8931
MODEL = "zeroclaw-stand-in-rule-judge"
_BLOCK = re.compile(r"BEGIN-RUN-DATA (\w+)\n(.*)\nEND-RUN-DATA \1\n", re.S)


def grade(run: dict[str, Any]) -> tuple[float, bool, str]:
    """(score, unknown, reason) of one run by the rule."""
    results = [
        str(call.get("result", ""))
        for call in run.get("tool_calls", [])
        if isinstance(call, dict) and call.get("succeeded")
    ]
    if not results:
        return 0.0, True, "No tool call succeeded, so there is no result to check."
    final = str(run.get("final_response", "")).lower()
    stated = [r for r in results if r.lower() in final]
    score = round(len(stated) / len(results), 2)
    if len(stated) == len(results):
        return score, False, "The final response states every tool result."
    missing = len(results) - len(stated)
    return score, False, f"The final response leaves out {missing} of {len(results)} tool results."


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion answering one judge request."""
    content = str(body["messages"][-1]["content"])
    match = _BLOCK.search(content)
    if match is None:
        score, unknown, reason = 0.0, True, "The request holds no run data block."
    else:
        score, unknown, reason = grade(json.loads(match.group(2)))
    verdict = json.dumps({"score": score, "unknown": unknown, "reason": reason})
    text = f"Checked each tool result against the final response.\nVERDICT: {verdict}"
    return {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", MODEL),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": len(content) // 4,
            "completion_tokens": len(text) // 4,
            "total_tokens": len(content) // 4 + len(text) // 4,
        },
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length))
            answer = reply(body)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            self._send(400, {"error": {"message": f"not a judge request: {exc}"}})
            return
        self._send(200, answer)

    def _send(self, status: int, document: dict[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a recording makes one request a verdict


def serve(port: int = PORT) -> ThreadingHTTPServer:
    """The server, bound on loopback (port 0: any free port); the caller serves it."""
    return ThreadingHTTPServer((HOST, port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=PORT)
    server = serve(parser.parse_args().port)
    print(f"stand-in judge on {HOST}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
