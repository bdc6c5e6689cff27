"""Sessions: `tests`, `lint`, and one per eval suite (`eval_regression` is the gate)."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["eval_regression"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
AGENT_EXTRA = ".[openai-agents]"


def _reports_args(suite: str) -> list[str]:
    return [
        "--junit-xml",
        f"reports/{suite}/junit.xml",
        "--json-report",
        f"reports/{suite}/report.json",
    ]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pytest) on the interpreter nox runs on."""
    session.install(AGENT_EXTRA, *nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy (strict) over the package and tests."""
    session.install(AGENT_EXTRA, *nox.project.dependency_groups(PYPROJECT, "lint", "test"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session
def eval_regression(session: nox.Session) -> None:
    """Gated: replay evals/regression through the default agent; exit status is the gate."""
    session.install(AGENT_EXTRA)
    session.run(
        "zeroclaw",
        "eval",
        "run",
        "--suite",
        "evals/regression",
        "--suite-kind",
        "regression",
        *_reports_args("regression"),
        *session.posargs,
    )
