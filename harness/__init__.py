"""zeroclaw-eval: an evaluation harness for AI agent loops.

The public API; every name here is re-exported from the private module that owns it.
Importing this package never imports an agent framework.
"""

from harness.agent import (
    AgentAdapter,
    AgentContext,
    AgentError,
    AgentSession,
    LoopAdapter,
    resolve_agent,
)
from harness.backend import (
    Message,
    ModelBackend,
    ModelBoundary,
    ModelRequest,
    ModelStep,
    ToolCall,
    ToolSchema,
)
from harness.case import AdmissionError, Expects, LlmTrace, Problem, parse_fixture
from harness.config import EvalConfig, load_config
from harness.grader import Grade, empty_run_passes, grade
from harness.record import RecordedCall, RunRecord
from harness.replay import ReplayBackend, ReplayDivergence
from harness.report.model import CaseReport, SuiteReport
from harness.runner import run_cases, run_suite
from harness.suite import Case, load_case, load_suite
from harness.tools import Tool, ToolFailure, ToolRegistry, builtin_tools

__all__ = [
    "AdmissionError",
    "AgentAdapter",
    "AgentContext",
    "AgentError",
    "AgentSession",
    "Case",
    "CaseReport",
    "EvalConfig",
    "Expects",
    "Grade",
    "LlmTrace",
    "LoopAdapter",
    "Message",
    "ModelBackend",
    "ModelBoundary",
    "ModelRequest",
    "ModelStep",
    "Problem",
    "RecordedCall",
    "ReplayBackend",
    "ReplayDivergence",
    "RunRecord",
    "SuiteReport",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolRegistry",
    "ToolSchema",
    "builtin_tools",
    "empty_run_passes",
    "grade",
    "load_case",
    "load_config",
    "load_suite",
    "parse_fixture",
    "resolve_agent",
    "run_cases",
    "run_suite",
]
