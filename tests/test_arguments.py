"""The command line's parser: each action built only when asked for, with the same help and
the same parsing as the whole parser; `--version` and `eval --help` import none of the
command's machinery."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import harness
from harness.arguments import ACTIONS, action_named, build_parser

ROOT = Path(__file__).resolve().parents[1]


def _subparser(parser: argparse.ArgumentParser, *names: str) -> argparse.ArgumentParser:
    for name in names:
        actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = actions.choices[name]
    return parser


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_an_action_built_alone_is_the_action_of_the_whole_parser(action: str) -> None:
    whole = _subparser(build_parser(), "eval", action)
    alone = _subparser(build_parser(["eval", action, "--help"]), "eval", action)
    assert alone.format_help() == whole.format_help()


@pytest.mark.parametrize("asked", [["eval", "-h", "check"], ["-h", "eval", "check"]])
def test_the_other_actions_are_listed_without_their_options(asked: list[str]) -> None:
    # A help asked before the action lists every action, as the whole parser does.
    parser = build_parser(asked)
    assert (
        _subparser(parser, "eval").format_help() == _subparser(build_parser(), "eval").format_help()
    )
    run = _subparser(parser, "eval", "run")
    assert [a.dest for a in run._actions] == ["help"]


def test_an_action_named_first_is_the_only_one_made() -> None:
    # `eval check …` can show no other action: none is made (a millisecond each).
    actions = _subparser(build_parser(["eval", "check", "--suite", "x"]), "eval")._actions
    choices = next(a for a in actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(choices) == ["check"]
    unknown = _subparser(build_parser(["eval", "chek"]), "eval")._actions
    listed = next(a for a in unknown if isinstance(a, argparse._SubParsersAction)).choices
    assert list(listed) == list(ACTIONS)  # the error lists every action


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["eval", "run", "--suite", "x"], "run"),
        (["-h", "eval", "list"], "list"),
        (["eval", "--help"], None),
        (["eval"], None),
        (["--version"], None),
        (["evil", "run"], None),
        (["eval", "calibrate", "label"], "calibrate"),
    ],
)
def test_the_action_named_is_the_second_word(argv: list[str], named: str | None) -> None:
    assert action_named(argv) == named


def test_parsed_alone_or_whole_the_arguments_are_the_same() -> None:
    argv = ["eval", "run", "--suite", "evals/regression", "--jobs", "2", "--format", "json"]
    assert vars(build_parser(argv).parse_args(argv)) == vars(build_parser().parse_args(argv))


def _modules_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", code + "\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    return set(done.stderr.split())


def test_version_is_answered_before_anything_else_is_imported() -> None:
    loaded = _modules_after(
        "import sys\nsys.argv = ['zeroclaw', '--version']\nfrom harness.console import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert "harness.console" in loaded
    assert not loaded & {"typing", "argparse", "harness.cli", "importlib.metadata"}


def test_eval_help_imports_neither_the_settings_nor_a_reporter() -> None:
    loaded = _modules_after(
        "import sys\nfrom harness import cli\ncli.main(['eval', '--help'], stdout=sys.stderr)"
    )
    assert "harness.arguments" in loaded
    assert not {m for m in loaded if m.startswith(("harness.settings", "harness.reporters"))}


def test_the_version_is_the_installed_distribution_s() -> None:
    assert harness.__version__ == version("zeroclaw-eval")


def test_check_imports_no_reporter_nor_the_judge_s_client_until_a_fixture_is_refused(
    tmp_path: Path,
) -> None:
    # The repository configures a judge (its capability suite's rubrics): `check` grades
    # nothing, and its reporters only ever tell a refusal.
    code = (
        "import sys\nfrom harness import cli\n"
        "code = cli.main(['eval', 'check', '--suite', sys.argv[1]], stdout=sys.stderr)\n"
        "assert code == int(sys.argv[2]), code"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    def modules(suite: Path, code_expected: int) -> set[str]:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                code + "\nprint(' '.join(sys.modules))",
                suite,
                str(code_expected),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    admitted = modules(ROOT / "evals" / "regression", 0)
    assert not {m for m in admitted if m.startswith(("httpx", "harness.reporters.registry"))}
    refused = tmp_path / "evals" / "regression"
    refused.mkdir(parents=True)
    (refused / "bad.json").write_text("{}", encoding="utf-8")
    assert "harness.reporters.registry" in modules(refused, 1)
