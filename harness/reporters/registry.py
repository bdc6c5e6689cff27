"""The reporters of this package, found by their module's `REPORTER`: adding an output
format is adding a module."""

from __future__ import annotations

import importlib
import pkgutil

from harness.options import Option
from harness.reporters.base import Commit, Output, Reporter, ReporterSpec

# What reporters share and what shows a case for a person, which declare no `REPORTER`:
# not imported to find that out (a run imports the ones its reporters use).
HELPERS = frozenset(
    {
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
    }
)


def _discover() -> tuple[ReporterSpec, ...]:
    package = importlib.import_module(__package__ or "harness.reporters")
    specs: list[ReporterSpec] = []
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module_info.name in HELPERS:
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        spec = getattr(module, "REPORTER", None)
        if spec is not None:
            specs.append(spec)
    return tuple(specs)


SPECS: tuple[ReporterSpec, ...] = _discover()
DEFAULT_FORMAT = "table"


def stdout_formats() -> tuple[str, ...]:
    """The `--format` choices, the default first."""
    names = [s.stdout_format for s in SPECS if s.stdout_format is not None]
    return tuple(sorted(names, key=lambda name: (name != DEFAULT_FORMAT, name)))


def options() -> tuple[Option, ...]:
    """Every reporter's options, each once."""
    seen: dict[str, Option] = {}
    for spec in SPECS:
        for option in spec.options:
            seen.setdefault(option.flag, option)
    return tuple(seen.values())


def build(output: Output) -> list[Reporter]:
    """The reporters `output` asks for, in the order they finish."""
    reporters = [r for spec in SPECS for r in spec.build(output)]
    reporters.append(Commit(output.files))
    return sorted(reporters, key=lambda r: r.order)
