"""The reporters of this package, found by their module's `REPORTER`: adding an output
format is adding a module. A reporter that writes nothing unless one of its flags is given
is known by its gate (`flags.GATED`) until a run gives one: its module, and what it
imports (the HTML report's rendering, say), is imported only then."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from harness.options import Option
from harness.reporters.base import Commit, Output, Reporter, ReporterSpec
from harness.reporters.flags import GATED, Gate

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
        "flags",
    }
)


class Gated:
    """A gated reporter's `REPORTER` (`flags.Gate`): its name, options and format known
    without its module, which is imported when a run asks for it (`build`) or when anything
    else of the spec is asked for (`zeroclaw eval report`'s `write_from_json`)."""

    def __init__(self, module: str, gate: Gate) -> None:
        self.module, self._gate = module, gate
        self.name, self.options, self.stdout_format = gate.name, gate.options, gate.stdout_format

    def asked(self, output: Output) -> bool:
        """Whether `output` gives one of its flags, picks its format or has one of its
        environment variables set: else its spec builds no reporter."""
        if self.stdout_format is not None and output.stdout_format == self.stdout_format:
            return True
        if any(output.environ.get(name) for name in self._gate.environ):
            return True
        return any(output.values.get(o.dest) not in (None, False) for o in self.options)

    def spec(self) -> ReporterSpec:
        """The module's own `REPORTER`, imported on first use."""
        spec: ReporterSpec = importlib.import_module(self.module).REPORTER
        return spec

    def build(self, output: Output) -> list[Reporter]:
        return self.spec().build(output) if self.asked(output) else []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "module":
            # Asked before `__init__` set them (a copy, an unpickling): the spec has none.
            raise AttributeError(name)
        return getattr(self.spec(), name)


def _discover() -> tuple[ReporterSpec, ...]:
    package = importlib.import_module(__package__ or "harness.reporters")
    specs: list[ReporterSpec] = []
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module_info.name in HELPERS:
            continue
        gate = GATED.get(module_info.name)
        if gate is not None:
            specs.append(Gated(f"{package.__name__}.{module_info.name}", gate))
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
