"""Sessions: `tests`, `lint`, one per eval suite (`eval_regression` is the gate), and
`eval_mutation` (the regression suite must kill every boundary mutant)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["eval_regression"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
AGENT_EXTRA = ".[openai-agents]"
ALL_AGENTS = ".[openai-agents,pydantic-ai]"
# Every built-in agent the regression suite must stay green on; the first is the default,
# whose reports go to reports/regression/, the others' to reports/regression-<agent>/.
AGENTS = ["openai-agents", "pydantic-ai"]
# The capability suite's committed baseline, which `eval_capability` compares with.
CAPABILITY_BASELINE = "evals/baselines/capability.json"


def _eval(session: nox.Session, suite: str, *extra: str, folder: str = "") -> None:
    reports = f"reports/{folder or suite}"
    session.run(
        "zeroclaw",
        "eval",
        "run",
        "--suite",
        f"evals/{suite}",
        "--suite-kind",
        suite,
        "--junit-xml",
        f"{reports}/junit.xml",
        "--json-report",
        f"{reports}/report.json",
        "--summary",
        f"{reports}/summary.md",
        *extra,
        *session.posargs,
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pytest) on the interpreter nox runs on, one worker per core.

    Arguments after `--` go to pytest: `nox -s tests -- tests/test_cli.py -k usage`; give
    `-n 0` (or `-n 4`, or `-p no:xdist`) to choose the parallelism yourself. The HTML
    report's browser tests need Debian's Chromium and its driver: the session installs them
    with apt-get as root (or with sudo, where it asks no password), else fails in one line
    that says the command to run.
    """
    session.install(ALL_AGENTS, *nox.project.dependency_groups(PYPROJECT, "test"))
    if _needs_browser(session.posargs):
        _provide_browser(session)
    session.run("pytest", *_parallel(session.posargs), *session.posargs)


# The HTML report's browser tests drive Debian's Chromium and its driver at these paths.
BROWSER = (Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver"))
BROWSER_PACKAGES = ("chromium", "chromium-driver")
BROWSER_TESTS = "test_reporters_html.py"
BROWSER_MISSING = (
    "the HTML report's browser tests need Debian's Chromium and its driver; run "
    "`sudo apt-get install -y chromium chromium-driver`, then `nox -s tests` again"
)


def _needs_browser(posargs: list[str]) -> bool:
    """Whether the tests pytest is asked for include the browser tests: every test unless
    the arguments name paths (`-- tests/test_cli.py -k usage`) and none holds them."""
    paths = [arg.split("::")[0] for arg in posargs if not arg.startswith("-")]
    named = [Path(path) for path in paths if Path(path).exists()]
    return not named or any(path.is_dir() or path.name == BROWSER_TESTS for path in named)


def browser_install(*, root: bool, sudo: bool, apt: bool) -> list[list[str]] | str:
    """The commands that install the browser here, or the one line that says what to run
    where the session cannot (no apt-get, or neither root nor sudo without a password)."""
    if not apt or not (root or sudo):
        return BROWSER_MISSING
    prefix = [] if root else ["sudo", "-n"]
    # sudo passes no environment through, so the frontend goes on apt-get's command line.
    apt_get = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    return [[*apt_get, "update", "-qq"], [*apt_get, "install", "-y", "-qq", *BROWSER_PACKAGES]]


def _provide_browser(session: nox.Session) -> None:
    if all(path.exists() for path in BROWSER):
        return
    root = os.geteuid() == 0
    sudo = not root and shutil.which("sudo") is not None and _sudo_without_password()
    plan = browser_install(root=root, sudo=sudo, apt=shutil.which("apt-get") is not None)
    if isinstance(plan, str):
        session.error(plan)
    session.log("installing Debian's Chromium and its driver for the HTML report's browser tests")
    for command in plan:
        session.run(*command, external=True, silent=True)
    if not all(path.exists() for path in BROWSER):
        session.error(BROWSER_MISSING)


def _sudo_without_password() -> bool:
    return subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0


def _parallel(posargs: list[str]) -> list[str]:
    """`-n auto` (pytest-xdist), unless the arguments already say how to run."""
    chosen = any(
        arg.startswith(("-n", "--numprocesses", "--dist")) or arg.endswith("no:xdist")
        for arg in posargs
    )
    return [] if chosen else ["-n", "auto"]


@nox.session
def lint(session: nox.Session) -> None:
    """Lint: ruff check, ruff format --check, mypy --strict over the package and the
    benchmarks; actionlint and zizmor's offline audits over the workflows."""
    session.install(ALL_AGENTS, *nox.project.dependency_groups(PYPROJECT, "lint", "test"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("actionlint", "-no-color")
    session.run("zizmor", "--offline", "--persona=auditor", "--no-progress", ".github/workflows")


@nox.session
@nox.parametrize("agent", AGENTS, ids=AGENTS)
def eval_regression(session: nox.Session, agent: str) -> None:
    """Gated regression suite: replay evals/regression; the exit status is the CI gate."""
    session.install(f".[{agent}]")
    folder = "regression" if agent == AGENTS[0] else f"regression-{agent}"
    # Replay cases in one worker process per core.
    _eval(session, "regression", "--agent", agent, "--jobs", "auto", folder=folder)


@nox.session
@nox.parametrize("agent", AGENTS, ids=AGENTS)
def eval_mutation(session: nox.Session, agent: str) -> None:
    """Mutation testing of evals/regression: every boundary mutant (a broken loop) must be
    killed; the scores and every survivor go to reports/mutation[-<agent>]/mutation.json."""
    session.install(f".[{agent}]")
    folder = "mutation" if agent == AGENTS[0] else f"mutation-{agent}"
    session.run(
        "zeroclaw",
        "eval",
        "mutate",
        "--suite",
        "evals/regression",
        "--agent",
        agent,
        "--json-report",
        f"reports/{folder}/mutation.json",
        *session.posargs,
    )


@nox.session(default=False)
def eval_capability(session: nox.Session) -> None:
    """Tracked capability suite: exits 0 on failed checks, 1 on admission or run errors.

    Appends the pass rate and per-case verdicts to reports/capability/history.jsonl, writes
    the run's history entry under reports/capability/history/ (the trend in the summary),
    and compares every case with the committed baseline (evals/baselines/capability.json):
    `nox -s eval_capability -- --fail-on-regression` fails on a case that passed there and
    fails now; `-- --write-baseline evals/baselines/capability.json` refreshes it.
    """
    session.install(AGENT_EXTRA)
    _eval(
        session,
        "capability",
        "--history",
        "reports/capability/history.jsonl",
        "--history-dir",
        "reports/capability/history",
        "--baseline",
        CAPABILITY_BASELINE,
    )


@nox.session(default=False)
def eval_live(session: nox.Session) -> None:
    """Opt-in live suite against a real provider; skips, naming what is missing, if unset.

    Never a required check: it costs money and a real model is not deterministic.
    """
    session.install(AGENT_EXTRA)
    missing = session.run(
        "python",
        "-c",
        "import os; from harness.config import load_config, live_missing; "
        "print('\\n'.join(live_missing(load_config().config, os.environ)))",
        silent=True,
    )
    if missing and missing.strip():
        lines = "\n  - ".join(missing.strip().splitlines())
        session.skip(f"live suite not run; missing:\n  - {lines}")
    _eval(session, "live", "--mode", "live")
