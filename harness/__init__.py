"""zeroclaw-eval: an evaluation harness for AI agent loops.

The public API; every name here is re-exported from the module that owns it (a name that
moved keeps working from here). Names resolve on first use (PEP 562), so `zeroclaw --help`
and `import harness` stay fast and never import an agent framework.
"""

from __future__ import annotations

import sys

# `zeroclaw --version` reads it from here, importing nothing else; the package's metadata
# takes its version from this line too (`[tool.hatch.version]`).
__version__ = "0.1.0"

# `typing` is not imported: it alone is a third of the time `zeroclaw --version` may take.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXPORTS: dict[str, str] = {
    "AdmissionError": "harness.io.problems",
    "AgentAdapter": "harness.agents.protocol",
    "AgentContext": "harness.agents.protocol",
    "AgentError": "harness.agents.registry",
    "AgentSession": "harness.agents.protocol",
    "AgentSurface": "harness.agents.protocol",
    "Approval": "harness.approvals",
    "ApprovalDesk": "harness.approvals",
    "Attempt": "harness.verdict.policy",
    "BudgetExpects": "harness.expectations.budget",
    "Case": "harness.fixtures.suite",
    "CaseReport": "harness.verdict.reports",
    "EvalConfig": "harness.config",
    "Evidence": "harness.expectations.base",
    "ExitCode": "harness.errors",
    "Expects": "harness.expectations.registry",
    "FrameworkAdapter": "harness.agents.protocol",
    "Grade": "harness.expectations.base",
    "Handoff": "harness.model_boundary",
    "HarnessError": "harness.errors",
    "Kind": "harness.expectations.base",
    "LlmTrace": "harness.fixtures.schema",
    "LoopAdapter": "harness.agents.protocol",
    "Message": "harness.model_types",
    "Mode": "harness.modes",
    "ModelBackend": "harness.model_boundary",
    "ModelBoundary": "harness.model_boundary",
    "ModelCallLimit": "harness.model_boundary",
    "ModelRequest": "harness.model_types",
    "ModelStep": "harness.model_types",
    "OutputSchema": "harness.model_types",
    "PayloadExpect": "harness.expectations.dispatch_payloads",
    "Problem": "harness.io.problems",
    "RecordedCall": "harness.tool_registry",
    "ReplayBackend": "harness.run.replay",
    "ReplayDivergence": "harness.run.replay",
    "Reporter": "harness.reporters.base",
    "RunOptions": "harness.run.options",
    "RunRecord": "harness.run_record",
    "SuiteKind": "harness.modes",
    "SuitePolicy": "harness.verdict.policy",
    "SuiteReport": "harness.verdict.reports",
    "Tool": "harness.tool_registry",
    "ToolCall": "harness.model_types",
    "ToolCallLimit": "harness.model_boundary",
    "ToolFailure": "harness.tool_registry",
    "ToolOutcome": "harness.tool_registry",
    "ToolRegistry": "harness.tool_registry",
    "ToolSchema": "harness.model_types",
    "WorkspaceExpects": "harness.expectations.workspace_files",
    "builtin_tools": "harness.builtin_toolset",
    "canonical_arguments": "harness.tool_registry",
    "empty_run_passes": "harness.fixtures.admission",
    "grade": "harness.expectations.registry",
    "load_case": "harness.fixtures.suite",
    "load_config": "harness.config",
    "load_suite": "harness.fixtures.suite",
    "parse_fixture": "harness.fixtures.schema",
    "policy_for": "harness.verdict.policy",
    "resolve_agent": "harness.agents.registry",
    "run_cases": "harness.pipeline",
    "run_suite": "harness.pipeline",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from harness.agents.protocol import (
        AgentAdapter as AgentAdapter,
    )
    from harness.agents.protocol import (
        AgentContext as AgentContext,
    )
    from harness.agents.protocol import (
        AgentSession as AgentSession,
    )
    from harness.agents.protocol import (
        AgentSurface as AgentSurface,
    )
    from harness.agents.protocol import (
        FrameworkAdapter as FrameworkAdapter,
    )
    from harness.agents.protocol import (
        LoopAdapter as LoopAdapter,
    )
    from harness.agents.registry import (
        AgentError as AgentError,
    )
    from harness.agents.registry import (
        resolve_agent as resolve_agent,
    )
    from harness.approvals import (
        Approval as Approval,
    )
    from harness.approvals import (
        ApprovalDesk as ApprovalDesk,
    )
    from harness.builtin_toolset import (
        builtin_tools as builtin_tools,
    )
    from harness.config import (
        EvalConfig as EvalConfig,
    )
    from harness.config import (
        load_config as load_config,
    )
    from harness.errors import (
        ExitCode as ExitCode,
    )
    from harness.errors import (
        HarnessError as HarnessError,
    )
    from harness.expectations.base import (
        Evidence as Evidence,
    )
    from harness.expectations.base import (
        Grade as Grade,
    )
    from harness.expectations.base import (
        Kind as Kind,
    )
    from harness.expectations.budget import (
        BudgetExpects as BudgetExpects,
    )
    from harness.expectations.dispatch_payloads import (
        PayloadExpect as PayloadExpect,
    )
    from harness.expectations.registry import (
        Expects as Expects,
    )
    from harness.expectations.registry import (
        grade as grade,
    )
    from harness.expectations.workspace_files import (
        WorkspaceExpects as WorkspaceExpects,
    )
    from harness.fixtures.admission import (
        empty_run_passes as empty_run_passes,
    )
    from harness.fixtures.schema import (
        LlmTrace as LlmTrace,
    )
    from harness.fixtures.schema import (
        parse_fixture as parse_fixture,
    )
    from harness.fixtures.suite import (
        Case as Case,
    )
    from harness.fixtures.suite import (
        load_case as load_case,
    )
    from harness.fixtures.suite import (
        load_suite as load_suite,
    )
    from harness.io.problems import (
        AdmissionError as AdmissionError,
    )
    from harness.io.problems import (
        Problem as Problem,
    )
    from harness.model_boundary import (
        Handoff as Handoff,
    )
    from harness.model_boundary import (
        Message as Message,
    )
    from harness.model_boundary import (
        ModelBackend as ModelBackend,
    )
    from harness.model_boundary import (
        ModelBoundary as ModelBoundary,
    )
    from harness.model_boundary import (
        ModelCallLimit as ModelCallLimit,
    )
    from harness.model_boundary import (
        ModelRequest as ModelRequest,
    )
    from harness.model_boundary import (
        ModelStep as ModelStep,
    )
    from harness.model_boundary import (
        OutputSchema as OutputSchema,
    )
    from harness.model_boundary import (
        ToolCall as ToolCall,
    )
    from harness.model_boundary import (
        ToolCallLimit as ToolCallLimit,
    )
    from harness.model_boundary import (
        ToolSchema as ToolSchema,
    )
    from harness.modes import (
        Mode as Mode,
    )
    from harness.modes import (
        SuiteKind as SuiteKind,
    )
    from harness.pipeline import (
        run_cases as run_cases,
    )
    from harness.pipeline import (
        run_suite as run_suite,
    )
    from harness.reporters.base import (
        Reporter as Reporter,
    )
    from harness.run.options import (
        RunOptions as RunOptions,
    )
    from harness.run.replay import (
        ReplayBackend as ReplayBackend,
    )
    from harness.run.replay import (
        ReplayDivergence as ReplayDivergence,
    )
    from harness.run_record import (
        RunRecord as RunRecord,
    )
    from harness.tool_registry import (
        RecordedCall as RecordedCall,
    )
    from harness.tool_registry import (
        Tool as Tool,
    )
    from harness.tool_registry import (
        ToolFailure as ToolFailure,
    )
    from harness.tool_registry import (
        ToolOutcome as ToolOutcome,
    )
    from harness.tool_registry import (
        ToolRegistry as ToolRegistry,
    )
    from harness.tool_registry import (
        canonical_arguments as canonical_arguments,
    )
    from harness.verdict.policy import (
        Attempt as Attempt,
    )
    from harness.verdict.policy import (
        SuitePolicy as SuitePolicy,
    )
    from harness.verdict.policy import (
        policy_for as policy_for,
    )
    from harness.verdict.reports import (
        CaseReport as CaseReport,
    )
    from harness.verdict.reports import (
        SuiteReport as SuiteReport,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    __import__(module)
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
