"""`harness.config`: configuration (SPEC section 11): `[tool.zeroclaw.eval]` in pyproject.toml
or `--config`."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import (
    COMMAND,
    run_limited,
)

from harness.config import MAX_CONFIG_BYTES, ConfigError, EvalConfig, load_config

KNOWN = (
    "known keys: suite_dir, mode, agent, case_timeout_secs, case_wall_clock_secs, jobs, "
    "max_model_calls_per_turn, max_tool_calls_per_step, live_base_url, live_model, "
    "live_api_key_env, live_allowed_tools, judge_base_url, judge_model, judge_api_key_env, "
    "judge_dir, judge_min_agreement, judge_min_kappa, judge_min_labels_per_verdict, "
    "judge_max_false_pass, judge_max_flip_rate, context, session, max_token_growth, "
    "max_suite_token_growth, max_cost_growth, max_suite_cost_growth, prices, snapshots, "
    "unused_snapshots, redact_patterns"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_error(config_file: Path | None = None, cwd: Path | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, cwd)
    return str(caught.value)


def no_pyproject_above(directory: Path) -> None:
    for parent in (directory, *directory.parents):
        if (parent / "pyproject.toml").exists():
            pytest.skip(f"{parent / 'pyproject.toml'} exists above the temporary directory")


# --- defaults ----------------------------------------------------------------------------------


def test_defaults_without_any_configuration(tmp_path: Path) -> None:
    no_pyproject_above(tmp_path)
    loaded = load_config(cwd=tmp_path)
    assert loaded.config == EvalConfig()
    assert loaded.config.suite_dir == "evals/regression"
    assert loaded.config.mode == "replay"
    assert loaded.config.agent == "openai-agents"
    assert loaded.config.case_timeout_secs == 120
    assert loaded.root == tmp_path.resolve()
    assert loaded.source == "defaults"


def test_defaults_use_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_pyproject_above(tmp_path)
    monkeypatch.chdir(tmp_path)
    loaded = load_config()
    assert (loaded.root, loaded.source) == (tmp_path.resolve(), "defaults")


def test_pyproject_without_the_table_gives_defaults(tmp_path: Path) -> None:
    no_pyproject_above(tmp_path)
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 99\n')
    loaded = load_config(cwd=tmp_path)
    assert (loaded.config, loaded.source) == (EvalConfig(), "defaults")


# --- [tool.zeroclaw.eval] in pyproject.toml ---------------------------------------------------

FULL_TABLE = """\
[project]
name = "demo"

[tool.zeroclaw.eval]
suite_dir = "evals/capability"
mode = "live"
agent = "my_agent:build"
case_timeout_secs = 30
"""


def test_pyproject_in_the_working_directory(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", FULL_TABLE)
    loaded = load_config(cwd=tmp_path)
    assert loaded.config == EvalConfig(
        suite_dir="evals/capability", mode="live", agent="my_agent:build", case_timeout_secs=30.0
    )
    assert isinstance(loaded.config.case_timeout_secs, float)
    assert loaded.root == tmp_path.resolve()
    assert loaded.source == str(pyproject)


def test_pyproject_in_a_parent_directory(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", FULL_TABLE)
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    loaded = load_config(cwd=deep)
    assert loaded.config.suite_dir == "evals/capability"
    assert loaded.root == tmp_path.resolve()
    assert loaded.source == str(pyproject)


def test_nearest_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", FULL_TABLE)
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    loaded = load_config(cwd=tmp_path / "sub")
    assert loaded.config.agent == "my_agent:build"
    assert loaded.root == tmp_path.resolve()


def test_nearest_pyproject_with_the_table_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", FULL_TABLE)
    inner = write(tmp_path / "sub" / "pyproject.toml", '[tool.zeroclaw.eval]\nmode = "replay"\n')
    loaded = load_config(cwd=tmp_path / "sub")
    assert loaded.config == EvalConfig(mode="replay")
    assert loaded.root == (tmp_path / "sub").resolve()
    assert loaded.source == str(inner)


def test_pyproject_from_the_working_directory_when_cwd_is_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", FULL_TABLE)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert load_config().config.suite_dir == "evals/capability"


def test_partial_table_keeps_the_other_defaults(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.zeroclaw.eval]\ncase_timeout_secs = 2.5\n")
    assert load_config(cwd=tmp_path).config == EvalConfig(case_timeout_secs=2.5)


def test_empty_table_is_all_defaults(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", "[tool.zeroclaw.eval]\n")
    loaded = load_config(cwd=tmp_path)
    assert (loaded.config, loaded.source) == (EvalConfig(), str(pyproject))


def test_unknown_key_in_pyproject_names_file_and_key(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", '[tool.zeroclaw.eval]\nsuite = "evals"\n')
    assert config_error(cwd=tmp_path) == (
        f"{pyproject}: [tool.zeroclaw.eval]: unknown key 'suite' (did you mean suite_dir?)"
    )


def test_unknown_key_far_from_any_lists_the_known_keys(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", "[tool.zeroclaw.eval]\nzzz = 1\n")
    assert config_error(cwd=tmp_path) == (
        f"{pyproject}: [tool.zeroclaw.eval]: unknown key 'zzz' ({KNOWN})"
    )


def test_wrong_type_in_pyproject(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", "[tool.zeroclaw.eval]\nsuite_dir = 3\n")
    assert config_error(cwd=tmp_path) == (
        f"{pyproject}: [tool.zeroclaw.eval]: Expected `str`, got `int` at `eval.suite_dir`"
    )


def test_eval_that_is_not_a_table_in_pyproject(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", '[tool.zeroclaw]\neval = "replay"\n')
    assert config_error(cwd=tmp_path) == f"{pyproject}: [tool.zeroclaw.eval]: expected a table"


@pytest.mark.parametrize(
    ("text", "name"), [("tool = 3\n", "tool"), ('[tool]\nzeroclaw = "x"\n', "tool.zeroclaw")]
)
def test_tool_section_that_is_not_a_table_is_an_error_not_a_crash(
    tmp_path: Path, text: str, name: str
) -> None:
    pyproject = write(tmp_path / "pyproject.toml", text)
    assert config_error(cwd=tmp_path) == f"{pyproject}: [{name}] is not a table"


def test_invalid_toml_in_pyproject(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", "[tool.zeroclaw.eval\nmode = 1\n")
    message = config_error(cwd=tmp_path)
    assert message.startswith(f"{pyproject}: not valid TOML: ")
    assert "line 1" in message


# --- --config FILE with [eval] ------------------------------------------------------------------


def test_config_file_with_eval_table(tmp_path: Path) -> None:
    config = write(
        tmp_path / "ci" / "eval.toml",
        '[eval]\nsuite_dir = "evals/live"\nmode = "live"\ncase_timeout_secs = 5\n',
    )
    loaded = load_config(config, cwd=tmp_path)
    assert loaded.config == EvalConfig(suite_dir="evals/live", mode="live", case_timeout_secs=5.0)
    assert loaded.root == (tmp_path / "ci").resolve()
    assert loaded.source == str(config)


def test_config_file_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", FULL_TABLE)
    config = write(tmp_path / "other.toml", '[eval]\nagent = "mine:make"\n')
    loaded = load_config(config, cwd=tmp_path)
    assert loaded.config == EvalConfig(agent="mine:make")
    assert loaded.source == str(config)


def test_config_file_ignores_other_tables(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[other]\nx = 1\n\n[eval]\nmode = "replay"\n')
    assert load_config(config, cwd=tmp_path).config == EvalConfig()


def test_unknown_key_in_config_file_names_file_and_key(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[eval]\nagnet = "openai-agents"\n')
    assert config_error(config, tmp_path) == (
        f"{config}: [eval]: unknown key 'agnet' (did you mean agent?)"
    )


def test_tool_table_in_config_file_is_not_eval(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[tool.zeroclaw.eval]\nmode = "replay"\n')
    assert config_error(config, tmp_path) == f"{config}: no [eval] table"


def test_config_file_without_eval_table(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[evaluation]\nmode = "replay"\n')
    assert config_error(config, tmp_path) == f"{config}: no [eval] table"


def test_empty_config_file_has_no_eval_table(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", "")
    assert config_error(config, tmp_path) == f"{config}: no [eval] table"


def test_eval_that_is_not_a_table_in_config_file(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", "eval = 3\n")
    assert config_error(config, tmp_path) == f"{config}: [eval]: expected a table"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("suite_dir = 3", "Expected `str`, got `int` at `eval.suite_dir`"),
        ('suite_dir = ["a"]', "Expected `str`, got `array` at `eval.suite_dir`"),
        ('mode = "lve"', "Invalid enum value 'lve' at `eval.mode`"),
        ("mode = true", "Expected `str`, got `bool` at `eval.mode`"),
        ("agent = 1", "Expected `str`, got `int` at `eval.agent`"),
        ('case_timeout_secs = "120"', "Expected `float`, got `str` at `eval.case_timeout_secs`"),
        ("case_timeout_secs = true", "Expected `float`, got `bool` at `eval.case_timeout_secs`"),
        ("case_timeout_secs = 0", "Expected `float` > 0.0 at `eval.case_timeout_secs`"),
        ("case_timeout_secs = -5", "Expected `float` > 0.0 at `eval.case_timeout_secs`"),
        ("case_timeout_secs = nan", "Expected `float` > 0.0 at `eval.case_timeout_secs`"),
        (
            "case_timeout_secs = inf",
            f"Expected `float` <= {threading.TIMEOUT_MAX} at `eval.case_timeout_secs`",
        ),
    ],
)
def test_wrong_type_or_value_in_config_file(tmp_path: Path, line: str, message: str) -> None:
    config = write(tmp_path / "eval.toml", f"[eval]\n{line}\n")
    assert config_error(config, tmp_path) == f"{config}: [eval]: {message}"


def test_invalid_toml_in_config_file(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[eval]\nmode = "replay\n')
    message = config_error(config, tmp_path)
    assert message.startswith(f"{config}: not valid TOML: ")
    assert "line 2" in message


def test_missing_config_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    assert config_error(missing, tmp_path) == f"{missing}: configuration file not found"


def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    directory = tmp_path / "eval.toml"
    directory.mkdir()
    assert config_error(directory, tmp_path) == f"{directory}: not a regular file (directory)"


# --- config: live_allowed_tools ------------------------------------------------------------------


def write_config(tmp_path: Path, tools: str) -> Path:
    path = tmp_path / "eval.toml"
    path.write_text(f"[eval]\nlive_allowed_tools = {tools}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("tool", ["shell", "bash", "execute_command", "my_shell_tool"])
def test_config_refuses_a_command_running_tool(tmp_path: Path, tool: str) -> None:
    path = write_config(tmp_path, f'["echo", "{tool}"]')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: [eval]: live_allowed_tools[1]: tool {tool!r} is refused: {COMMAND}"
    )


@pytest.mark.parametrize("blank", ['""', '"  "'])
def test_config_refuses_an_empty_tool_name(tmp_path: Path, blank: str) -> None:
    path = write_config(tmp_path, f'["echo", {blank}]')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: [eval]: live_allowed_tools[1]: empty tool name"


def test_pyproject_refuses_a_shell_tool(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.zeroclaw.eval]\nlive_allowed_tools = ["shell"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path)
    assert str(caught.value) == (
        f"{pyproject}: [tool.zeroclaw.eval]: live_allowed_tools[0]: tool 'shell' is refused: "
        f"{COMMAND}"
    )


def test_config_admits_safe_tools(tmp_path: Path) -> None:
    path = write_config(tmp_path, '["echo", "read_file", "write_file", "list_files"]')
    loaded = load_config(path)
    assert tuple(loaded.config.live_allowed_tools) == (
        "echo",
        "read_file",
        "write_file",
        "list_files",
    )


# --- config: files that are not small regular files, and values no run can use -------------


def check_with_config(config: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`zeroclaw eval check --config <config>` in a subprocess that can neither hang nor
    exhaust memory."""
    return run_limited("-m", "harness", "eval", "check", "--config", str(config), cwd=cwd)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.timeout(60)
def test_config_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "eval.toml"
    os.mkfifo(fifo)
    result = check_with_config("eval.toml", tmp_path)
    assert result.returncode == 1
    assert result.stderr == "zeroclaw eval: eval.toml: not a regular file (FIFO)\n"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.timeout(60)
def test_config_that_is_a_device_is_refused_unread(tmp_path: Path) -> None:
    result = check_with_config("/dev/zero", tmp_path)
    assert result.returncode == 1
    assert result.stderr == "zeroclaw eval: /dev/zero: not a regular file (character device)\n"


def test_config_over_the_size_limit(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", "[eval]\n" + "#" * MAX_CONFIG_BYTES + "\n")
    size = config.stat().st_size
    assert config_error(config, tmp_path) == (
        f"{config}: {size} bytes exceeds the {MAX_CONFIG_BYTES}-byte limit"
    )


def test_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_bytes(b'[eval]\nagent = "\xff"\n')
    assert config_error(config, tmp_path) == f"{config}: not UTF-8: invalid byte at offset 16"


def test_integer_too_long_to_convert_names_its_line(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", "[eval]\n\ncase_timeout_secs = " + "1" * 5001 + "\n")
    assert config_error(config, tmp_path) == (
        f"{config}: not valid TOML: line 3: an integer of 5001 digits, over the "
        f"{sys.get_int_max_str_digits()}-digit limit"
    )


def test_empty_suite_dir_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "eval.toml", '[eval]\nsuite_dir = ""\n')
    assert config_error(config, tmp_path) == (
        f"{config}: [eval]: suite_dir: empty path: name the suite directory "
        "(without the key it is 'evals/regression')"
    )


@pytest.mark.parametrize("nested", ["[" * 5000 + "]" * 5000, "{a = " * 5000 + "1" + "}" * 5000])
def test_a_value_nested_too_deeply_is_not_valid_toml(tmp_path: Path, nested: str) -> None:
    config = write(tmp_path / "eval.toml", f"[eval]\nsuite_dir = {nested}\n")
    assert config_error(config, tmp_path) == f"{config}: not valid TOML: nested too deeply"


def test_a_suite_dir_holding_a_nul_is_refused(tmp_path: Path) -> None:
    # TOML's escape puts the one character no path can hold into the value.
    config = write(tmp_path / "eval.toml", '[eval]\nsuite_dir = "evals/re\\u0000gression"\n')
    assert config_error(config, tmp_path) == (
        f"{config}: [eval]: suite_dir: holds a NUL character, which no path can"
    )


@pytest.mark.parametrize("char", ["\\u001b", "\\u0085", "\\u2028", "\\u202e", "\\u2066"])
def test_config_refuses_a_tool_name_with_a_control_character(tmp_path: Path, char: str) -> None:
    path = write_config(tmp_path, f'["echo", "ec{char}ho"]')
    message = config_error(path, tmp_path)
    shown = char.replace("\\u00", "\\x")
    assert message == (
        f"{path}: [eval]: live_allowed_tools[1]: tool name 'ec{shown}ho' holds control or "
        f"format characters ({shown}): they can forge, hide or reorder what reports and "
        "terminals show"
    )
    assert message.isprintable()


def test_snapshots_is_one_setting_or_one_per_suite_directory(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", '[tool.zeroclaw.eval]\nsnapshots = "often"\n')
    assert "eval.snapshots" in config_error(cwd=tmp_path)
    write(pyproject, '[tool.zeroclaw.eval.snapshots]\n"evals/capability" = "off"\n')
    config = load_config(cwd=tmp_path).config
    assert config.snapshots_for(Path("evals/capability"), tmp_path) == "off"
    assert config.snapshots_for(tmp_path / "evals" / "capability" / "c.json", tmp_path) == "off"
    assert config.snapshots_for(Path("evals/regression"), tmp_path) == "auto"
