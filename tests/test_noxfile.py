"""The noxfile's test session provisions what its tests need, and CI runs the README's own
commands: a fresh machine with only Python passes `pip install nox && nox -s tests`."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def noxfile() -> Iterator[ModuleType]:
    # Imported once: nox registers each session as the module runs, and warns on a second.
    # The noxfile reads pyproject.toml relative to where nox runs it: the checkout.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        patch.syspath_prepend(str(REPO))
        yield importlib.import_module("noxfile")


def readme_commands() -> list[str]:
    """The commands of the README's first code block, comments dropped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_starts_with_the_main_job_and_the_tests() -> None:
    assert readme_commands() == [
        "pip install nox && nox -s eval_regression",
        "pip install nox && nox -s tests",
    ]


def test_ci_runs_the_readme_commands_and_installs_nothing_the_readme_does_not() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in script.splitlines()]
    for command in readme_commands():
        assert command in lines, f".ci/run does not run the README's `{command}`"
    # What the tests need is the test session's to install, or a fresh machine that follows
    # the README fails where CI passed.
    assert "apt-get" not in script and "chromium" not in script


class Session:
    """What `_provide_browser` asks of a nox session."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, ...]] = []

    def run(self, *args: str, **_: Any) -> None:
        self.ran.append(args)

    def log(self, *_: Any) -> None:
        pass

    def error(self, message: str) -> NoReturn:
        raise SessionError(message)


class SessionError(Exception):
    pass


def test_root_installs_debians_chromium_and_its_driver(noxfile: ModuleType) -> None:
    plan = noxfile.browser_install(root=True, sudo=False, apt=True)
    assert plan[-1][-5:] == ["install", "-y", "-qq", "chromium", "chromium-driver"]
    assert all(command[0] != "sudo" and "apt-get" in command for command in plan)
    assert plan[0][-2:] == ["update", "-qq"]


def test_a_user_with_passwordless_sudo_installs_through_it(noxfile: ModuleType) -> None:
    plan = noxfile.browser_install(root=False, sudo=True, apt=True)
    assert all(command[:2] == ["sudo", "-n"] for command in plan)
    assert "DEBIAN_FRONTEND=noninteractive" in plan[1]


@pytest.mark.parametrize(
    ("root", "sudo", "apt"), [(False, False, True), (True, False, False), (False, True, False)]
)
def test_where_nothing_can_install_one_line_says_the_command(
    noxfile: ModuleType, root: bool, sudo: bool, apt: bool
) -> None:
    plan = noxfile.browser_install(root=root, sudo=sudo, apt=apt)
    assert isinstance(plan, str) and "\n" not in plan
    assert "sudo apt-get install -y chromium chromium-driver" in plan


def test_a_session_that_cannot_install_fails_before_any_test(
    noxfile: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(noxfile, "BROWSER", (tmp_path / "chromium", tmp_path / "chromedriver"))
    monkeypatch.setattr(noxfile.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(noxfile.shutil, "which", lambda name: None)
    session = Session()
    with pytest.raises(SessionError, match="sudo apt-get install -y chromium chromium-driver"):
        noxfile._provide_browser(session)
    assert session.ran == []


def test_a_session_as_root_installs_and_then_checks_the_browser_is_there(
    noxfile: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    browser = (tmp_path / "chromium", tmp_path / "chromedriver")
    monkeypatch.setattr(noxfile, "BROWSER", browser)
    monkeypatch.setattr(noxfile.os, "geteuid", lambda: 0)
    monkeypatch.setattr(noxfile.shutil, "which", lambda name: f"/bin/{name}")
    session = Session()
    # The install "ran" but put nothing there: the session says so instead of letting six
    # browser tests error one by one.
    with pytest.raises(SessionError, match="chromium-driver"):
        noxfile._provide_browser(session)
    assert [command[-1] for command in session.ran] == ["-qq", "chromium-driver"]


def test_a_session_with_the_browser_in_place_installs_nothing(
    noxfile: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    browser = (tmp_path / "chromium", tmp_path / "chromedriver")
    for path in browser:
        path.write_text("")
    monkeypatch.setattr(noxfile, "BROWSER", browser)
    session = Session()
    noxfile._provide_browser(session)
    assert session.ran == []


@pytest.mark.parametrize(
    ("posargs", "needed"),
    [
        ([], True),
        (["-k", "usage"], True),
        (["tests"], True),
        (["tests/test_cli.py"], False),
        (["tests/test_cli.py", "-k", "usage"], False),
        (["tests/test_reporters_html.py::test_the_page"], True),
        (["-n", "0", "tests/test_cli.py", "tests/test_reporters_html.py"], True),
    ],
)
def test_only_a_run_that_holds_the_browser_tests_needs_the_browser(
    noxfile: ModuleType, posargs: list[str], needed: bool
) -> None:
    assert noxfile._needs_browser(posargs) is needed
