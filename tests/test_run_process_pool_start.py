"""The pool's start: what importing it costs a run before its first case."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

# In a fresh interpreter: the pool imported, no report decoder made yet; then the first
# report that comes whole decoded as the harness encodes it, by a decoder made for it.
DECODER = """
import msgspec

from harness.run import process_pool
from harness.verdict.reports import CaseReport

assert process_pool._DECODER == [], "a report decoder was made as the pool was imported"
report = CaseReport(id="case-1", fixture="evals/case-1.json", passed=False, error="boom")
assert process_pool._decode(msgspec.json.encode(report)) == report
assert len(process_pool._DECODER) == 1
assert process_pool._decode(msgspec.json.encode(report)) == report
assert len(process_pool._DECODER) == 1  # made once
"""


def test_the_report_decoder_is_made_for_the_first_report_that_comes_whole() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DECODER], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
