"""The package's shape: one-way imports, small modules, declared seams that stay true."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import msgspec
import pytest

import harness
from harness.expectations import registry as kinds
from harness.expectations.base import Evidence, Kind
from harness.reporters import registry as reporters

PACKAGE = Path(harness.__file__).resolve().parent
MAX_MODULE_LINES = 500


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, type_only: bool = False) -> set[str]:
    """The harness modules `path` imports, lazy imports included; type-only ones (under
    `if TYPE_CHECKING:`) too when `type_only`."""
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if (
                not type_only
                and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"
            ):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.module and node.module.startswith("harness"):
                for alias in node.names:
                    name = f"{node.module}.{alias.name}"
                    found.add(name if name in MODULES else node.module)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names if a.name.startswith("harness"))

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in found if name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package_type_only_imports_included() -> None:
    graph = {name: _imports(path, type_only=True) - {name} for name, path in MODULES.items()}
    assert _cycles(graph) == []


# --- the rooms ----------------------------------------------------------------------------

# The package's layers, lowest first (docs/architecture.md draws them): a unit is a room (a
# subpackage of harness/) or a module at the top of harness/, and a module may import from
# its own unit and from units listed before it, never after (type-only imports included).
# `harness/__init__.py`, the public API, re-exports from every layer.
LAYERS = (
    "errors",
    "defaults",
    "modes",
    "options",
    "runtime",
    "io",
    "tool_registry",
    "workspace",
    "builtin_toolset",
    "model_types",
    "model_boundary",
    "approvals",
    "transcript",
    "run_record",
    "config",
    "expectations",
    "verdict",
    "agents",
    "fixtures",
    "snapshots",
    "run",
    "tracking",
    "reporters",
    "pipeline",
    "live",
    "judge",
    "mutation",
    "tracing",
    "pytest_plugin",
    "settings",
    "arguments",
    "cli",
    "console",
    "__main__",
)
MAX_TOP_MODULES = 20


def _unit(module: str) -> str | None:
    """The room or top-level module `module` belongs to; None for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _upward(graph: dict[str, set[str]], layers: tuple[str, ...]) -> list[str]:
    """Every import of `graph` that reaches a unit listed after its own, or leaves `layers`."""
    rank = {unit: n for n, unit in enumerate(layers)}
    found = []
    for module, imported in sorted(graph.items()):
        unit = _unit(module)
        if unit is None:
            continue
        if unit not in rank:
            found.append(f"{module}: in no layer")
            continue
        for target in sorted(imported):
            other = _unit(target)
            if other is not None and other != unit and rank.get(other, len(rank)) > rank[unit]:
                found.append(f"{module} imports {target}, a layer above it")
    return found


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {"harness.io.text": {"harness.verdict.reports"}, "harness.verdict.reports": set()}
    assert _upward(graph, ("io", "verdict")) == [
        "harness.io.text imports harness.verdict.reports, a layer above it"
    ]
    assert _upward(graph, ("verdict", "io")) == []
    assert _upward({"harness.new.thing": set()}, ("io",)) == ["harness.new.thing: in no layer"]


def test_every_import_between_rooms_runs_downward_type_only_ones_included() -> None:
    graph = {name: _imports(path, type_only=True) for name, path in MODULES.items()}
    assert _upward(graph, LAYERS) == []


def test_the_top_of_the_package_is_small_and_every_room_says_what_belongs_in_it() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
    rooms = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
    assert {room.name for room in rooms} >= {"io", "runtime", "fixtures", "run", "tracking"}
    for room in rooms:
        docstring = ast.get_docstring(ast.parse((room / "__init__.py").read_text("utf-8")))
        assert docstring and len(docstring) > 40, f"{room.relative_to(PACKAGE)} says nothing"


TESTS = PACKAGE.parent / "tests"
# Suites about more than one module keep descriptive names (docs/architecture.md, "Tests").
CROSS_CUTTING = {
    "test_architecture",
    "test_ci_consumers",
    "test_compat",
    "test_examples",
    "test_examples_airline_desk",
    "test_examples_bank_support",
    "test_framework_differences",
    "test_noxfile",
    "test_process",
    "test_workflows",
}


def test_the_tests_mirror_the_package() -> None:
    # test_<room>_<module>.py tests harness/<room>/<module>.py (a second file on one
    # module adds an aspect: test_fixtures_suite_listing.py); a framework adapter drops
    # `frameworks`.
    stems = {
        "_".join(("agents", *parts[2:]) if parts[:2] == ("agents", "frameworks") else parts)
        for parts in (tuple(name.split(".")[1:]) for name in MODULES if "." in name)
    }
    strays = [
        test.name
        for test in sorted(TESTS.glob("test_*.py"))
        if test.stem not in CROSS_CUTTING
        and not any(test.stem == f"test_{s}" or test.stem.startswith(f"test_{s}_") for s in stems)
    ]
    assert strays == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_the_line_limit(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines"


def test_the_command_line_only_parses_and_hands_over() -> None:
    # It may import the pipeline's entry points, never the machinery behind them.
    allowed = {
        "harness.errors",
        "harness.runtime.interrupts",  # what it says of an interruption, said whole
        "harness.options",
        "harness.arguments",  # the parser, built for the action asked for
        "harness.settings",
        "harness.pipeline",
        "harness.run.options",  # a run's options and admission alone (`check`, `list`)
        "harness.reporters.base",
        "harness.reporters.registry",
        "harness.live.recorder",
        "harness.mutation.mutate",
        "harness.tracing.options",  # `import`'s flags, declarations alone
        "harness.tracing.importer",
        "harness.judge.calibrate",
        "harness.io.atomic",
        "harness.io.text",
        "harness.fixtures.schema",
        "harness.config",
        "harness.tracking.verify",
        "harness.reporters.case_view",
        "harness.tracking.merge",
        "harness.fixtures.selection",
        "harness.reporters.json_report",
        "harness.reporters.last_run",
    }
    assert _imports(MODULES["harness.cli"]) <= allowed


# --- expectation kinds -----------------------------------------------------------------------


def test_every_field_of_expects_belongs_to_exactly_one_kind() -> None:
    owners: dict[str, list[str]] = {}
    for kind in kinds.KINDS:
        for field in msgspec.structs.fields(kind):
            owners.setdefault(field.name, []).append(kind.__name__)
    expects_fields = [f.name for f in msgspec.structs.fields(kinds.Expects)]
    assert sorted(owners) == sorted(expects_fields)
    assert {name: len(o) for name, o in owners.items() if len(o) != 1} == {}


def test_kinds_are_found_in_every_module_and_graded_in_their_order() -> None:
    modules = {k.__module__ for k in kinds.KINDS}
    expected = {
        f"harness.expectations.{m.stem}"
        for m in (PACKAGE / "expectations").glob("*.py")
        if m.stem not in {"__init__", "base", "registry", "conformance", "plain_conformance"}
    }
    assert modules == expected
    orders = [k.order for k in kinds.KINDS]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    # The fields of Expects follow the grading order too.
    declared = [f.name for k in kinds.KINDS for f in msgspec.structs.fields(k)]
    assert declared == [f.name for f in msgspec.structs.fields(kinds.Expects)]


def test_assertions_are_counted_by_grading_an_empty_run() -> None:
    expects = msgspec.convert(
        {
            "response_contains": ["a", "b"],
            "min_tool_calls": 0,  # no check at all
            "max_tool_calls": 3,
            "tool_results_contain": [{"tool": "echo", "needle": "x"}],
            "workspace": {"file_exists": ["a.txt"], "file_contains": {"b.txt": ["x", "y"]}},
            "budget": {"max_llm_calls": 2, "max_input_tokens": 9},
            "response_json": {"/a": 1},
        },
        kinds.Expects,
    )
    graded = list(kinds.all_grades(expects, Evidence(kinds.EMPTY_RUN)))
    assert kinds.assertion_count(expects) == len(graded) == 10


def test_a_kind_view_holds_exactly_its_own_fields() -> None:
    expects = msgspec.convert(
        {"tools_used": ["echo"], "budget": {"max_llm_calls": 1}}, kinds.Expects
    )
    views = {type(v).__name__: v for v in kinds.views(expects)}
    assert set(views) == {k.__name__ for k in kinds.KINDS}
    dispatch = views["ToolDispatch"]
    assert isinstance(dispatch, Kind)
    assert dispatch.tools_used == ["echo"]  # type: ignore[attr-defined]
    assert not hasattr(dispatch, "budget")


# --- reporters ---------------------------------------------------------------------------


# The reporters' room also holds what reporters share and what shows a case for a person;
# every other module of it is a reporter.
REPORTER_HELPERS = {
    "__init__",
    "base",
    "registry",
    "case_view",
    "claims",
    "html_transcript",
    "html_checks",
    "html_page",
    "last_run",
    "streamed",
    "delivery",
    "flags",
}


def test_the_registry_skips_the_reporter_helpers_alone() -> None:
    # Skipped unimported: none of them may declare a reporter, or it would go unfound.
    assert REPORTER_HELPERS - {"__init__"} == reporters.HELPERS
    for helper in sorted(reporters.HELPERS):
        assert not hasattr(importlib.import_module(f"harness.reporters.{helper}"), "REPORTER")


def test_every_reporter_module_is_registered() -> None:
    names = {spec.name for spec in reporters.SPECS}
    modules = {m.stem for m in (PACKAGE / "reporters").glob("*.py")} - REPORTER_HELPERS
    declaring = {
        m for m in modules if hasattr(importlib.import_module(f"harness.reporters.{m}"), "REPORTER")
    }
    assert modules == declaring
    assert len(names) == len(reporters.SPECS) == len(declaring)
    assert reporters.stdout_formats() == ("table", "json", "junit")
    flags = [option.flag for option in reporters.options()]
    assert len(flags) == len(set(flags))
    assert {"--junit-xml", "--json-report", "--summary", "--history", "--annotations"} <= set(flags)


# --- the public API ----------------------------------------------------------------------

# Names users imported from `harness` before the modules were rebuilt: each still works.
EARLIER_PUBLIC_NAMES = [
    "AdmissionError",
    "AgentAdapter",
    "AgentContext",
    "AgentError",
    "AgentSession",
    "Case",
    "CaseReport",
    "EvalConfig",
    "BudgetExpects",
    "Expects",
    "Grade",
    "LlmTrace",
    "LoopAdapter",
    "Message",
    "Mode",
    "ModelBackend",
    "ModelBoundary",
    "ModelRequest",
    "ModelStep",
    "Problem",
    "RecordedCall",
    "ReplayBackend",
    "ReplayDivergence",
    "RunRecord",
    "SuiteKind",
    "SuiteReport",
    "Tool",
    "WorkspaceExpects",
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
# What the documented own-loop and adapter protocol hands a loop or tells an author to use.
PROTOCOL_NAMES = ("ToolOutcome", "canonical_arguments", "FrameworkAdapter", "HarnessError")


@pytest.mark.parametrize("name", EARLIER_PUBLIC_NAMES + list(PROTOCOL_NAMES))
def test_public_names_stay_importable(name: str) -> None:
    assert name in harness.__all__
    assert getattr(harness, name) is not None


def test_every_harness_error_shares_one_base() -> None:
    from harness.errors import HarnessError

    raised_on_purpose = (
        "harness.io.problems:AdmissionError",
        "harness.config:ConfigError",
        "harness.agents.registry:AgentError",
        "harness.io.atomic:ReportWriteError",
        "harness.live.recorder:RecordError",
        "harness.model_boundary:ProviderFailure",
        "harness.model_boundary:Divergence",
        "harness.run.replay:ReplayDivergence",
        "harness.live.backend:ProviderError",
        "harness.tool_registry:ToolFailure",
        "harness.runtime.deadline:DeadlineExceeded",
    )
    for spec in raised_on_purpose:
        module, _, name = spec.partition(":")
        assert issubclass(getattr(importlib.import_module(module), name), HarnessError), spec


def test_no_reporter_imports_another_or_reads_fixtures() -> None:
    shared = {f"harness.reporters.{helper}" for helper in REPORTER_HELPERS} - {
        "harness.reporters.__init__"
    }
    for name, path in MODULES.items():
        if not name.startswith("harness.reporters.") or name in shared:
            continue
        imported = _imports(path)
        others = {m for m in imported if m.startswith("harness.reporters.")} - shared
        assert others == set(), name
        assert not imported & {
            "harness.fixtures.suite",
            "harness.fixtures.schema",
            "harness.io.json_paths",
        }, name


def test_the_configuration_knows_no_agent_and_no_fixture_schema() -> None:
    imported = _imports(MODULES["harness.config"])
    assert not imported & {
        "harness.agents.protocol",
        "harness.agents.registry",
        "harness.fixtures.schema",
        "harness.fixtures.admission",
    }


def test_no_submodule_shadows_an_exported_name() -> None:
    # `harness.<name>` is both a submodule and an export: once the submodule is imported,
    # `from harness import <name>` would hand out the module.
    submodules = {name.split(".")[1] for name in MODULES if name.count(".") >= 1}
    assert submodules & set(harness.__all__) == set()
    for name in sorted(MODULES):
        if name != "harness.__main__":  # that one runs the command line
            importlib.import_module(name)
    from harness import builtin_tools

    assert callable(builtin_tools) and builtin_tools()[0].name == "echo"
