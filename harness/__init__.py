"""zeroclaw-eval: an evaluation harness for AI agent loops.

The public API; every name here is re-exported from the private module that owns it.
Names resolve on first use (PEP 562), so `zeroclaw --help` and `import harness` stay fast
and never import an agent framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AdmissionError": "harness.case",
    "AgentAdapter": "harness.agent",
    "AgentContext": "harness.agent",
    "AgentError": "harness.agent",
    "AgentSession": "harness.agent",
    "Case": "harness.suite",
    "CaseReport": "harness.report.model",
    "EvalConfig": "harness.config",
    "BudgetExpects": "harness.case",
    "Expects": "harness.case",
    "Grade": "harness.grader",
    "LlmTrace": "harness.case",
    "LoopAdapter": "harness.agent",
    "Message": "harness.backend",
    "Mode": "harness.modes",
    "ModelBackend": "harness.backend",
    "ModelBoundary": "harness.backend",
    "ModelRequest": "harness.backend",
    "ModelStep": "harness.backend",
    "Problem": "harness.case",
    "RecordedCall": "harness.record",
    "ReplayBackend": "harness.replay",
    "ReplayDivergence": "harness.replay",
    "RunRecord": "harness.record",
    "SuiteKind": "harness.modes",
    "SuiteReport": "harness.report.model",
    "Tool": "harness.tools",
    "WorkspaceExpects": "harness.case",
    "ToolCall": "harness.backend",
    "ToolFailure": "harness.tools",
    "ToolRegistry": "harness.tools",
    "ToolSchema": "harness.backend",
    "builtin_tools": "harness.tools",
    "empty_run_passes": "harness.grader",
    "grade": "harness.grader",
    "load_case": "harness.suite",
    "load_config": "harness.config",
    "load_suite": "harness.suite",
    "parse_fixture": "harness.case",
    "resolve_agent": "harness.agent",
    "run_cases": "harness.runner",
    "run_suite": "harness.runner",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from harness.agent import (
        AgentAdapter as AgentAdapter,
    )
    from harness.agent import (
        AgentContext as AgentContext,
    )
    from harness.agent import (
        AgentError as AgentError,
    )
    from harness.agent import (
        AgentSession as AgentSession,
    )
    from harness.agent import (
        LoopAdapter as LoopAdapter,
    )
    from harness.agent import (
        resolve_agent as resolve_agent,
    )
    from harness.backend import (
        Message as Message,
    )
    from harness.backend import (
        ModelBackend as ModelBackend,
    )
    from harness.backend import (
        ModelBoundary as ModelBoundary,
    )
    from harness.backend import (
        ModelRequest as ModelRequest,
    )
    from harness.backend import (
        ModelStep as ModelStep,
    )
    from harness.backend import (
        ToolCall as ToolCall,
    )
    from harness.backend import (
        ToolSchema as ToolSchema,
    )
    from harness.case import (
        AdmissionError as AdmissionError,
    )
    from harness.case import (
        BudgetExpects as BudgetExpects,
    )
    from harness.case import (
        Expects as Expects,
    )
    from harness.case import (
        LlmTrace as LlmTrace,
    )
    from harness.case import (
        Problem as Problem,
    )
    from harness.case import (
        WorkspaceExpects as WorkspaceExpects,
    )
    from harness.case import (
        parse_fixture as parse_fixture,
    )
    from harness.config import (
        EvalConfig as EvalConfig,
    )
    from harness.config import (
        load_config as load_config,
    )
    from harness.grader import (
        Grade as Grade,
    )
    from harness.grader import (
        empty_run_passes as empty_run_passes,
    )
    from harness.grader import (
        grade as grade,
    )
    from harness.modes import (
        Mode as Mode,
    )
    from harness.modes import (
        SuiteKind as SuiteKind,
    )
    from harness.record import (
        RecordedCall as RecordedCall,
    )
    from harness.record import (
        RunRecord as RunRecord,
    )
    from harness.replay import (
        ReplayBackend as ReplayBackend,
    )
    from harness.replay import (
        ReplayDivergence as ReplayDivergence,
    )
    from harness.report.model import (
        CaseReport as CaseReport,
    )
    from harness.report.model import (
        SuiteReport as SuiteReport,
    )
    from harness.runner import (
        run_cases as run_cases,
    )
    from harness.runner import (
        run_suite as run_suite,
    )
    from harness.suite import (
        Case as Case,
    )
    from harness.suite import (
        load_case as load_case,
    )
    from harness.suite import (
        load_suite as load_suite,
    )
    from harness.tools import (
        Tool as Tool,
    )
    from harness.tools import (
        ToolFailure as ToolFailure,
    )
    from harness.tools import (
        ToolRegistry as ToolRegistry,
    )
    from harness.tools import (
        builtin_tools as builtin_tools,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
