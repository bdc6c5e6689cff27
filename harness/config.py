"""Configuration: `[tool.zeroclaw.eval]` in pyproject.toml or `[eval]` in a `--config` file."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from harness.builtin_toolset import COMMAND_TOOL_REFUSAL, LIVE_DEFAULT_TOOLS, runs_commands
from harness.defaults import (
    DEFAULT_AGENT,
    DEFAULT_CASE_TIMEOUT,
    DEFAULT_CASE_WALL_CLOCK,
    DEFAULT_JOBS,
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    DEFAULT_SUITE_DIR,
    MAX_JOBS,
)
from harness.errors import HarnessError
from harness.io.files import InputError, read_bounded
from harness.io.problems import unsafe_name_problem
from harness.io.validation import SchemaFaults, convert
from harness.modes import Mode

Probability = Annotated[float, msgspec.Meta(ge=0, le=1)]
# A share a figure may grow by over its baseline (0.2: 20%); finite, as TOML's `inf` is not.
Share = Annotated[float, msgspec.Meta(ge=0, le=1e9)]
PerMillion = Annotated[float, msgspec.Meta(ge=0, le=1e9)]


class ModelPrice(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """What a model costs per million tokens (any one currency), for the cost gates."""

    input: PerMillion
    output: PerMillion


# What a replay does with a case whose request snapshot changed: `auto` fails a regression
# suite and warns in any other, `off` checks nothing (`harness.snapshots`).
SnapshotSetting = Literal["auto", "fail", "warn", "off"]
# What snapshots no case of a suite uses do after a run of the whole suite: warn, or fail.
UnusedSetting = Literal["warn", "fail"]


class EvalConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    suite_dir: str = DEFAULT_SUITE_DIR
    mode: Mode = "replay"
    agent: str = DEFAULT_AGENT
    # Bounded by what the platform can wait for: `inf` would make every case's wait overflow.
    case_timeout_secs: Annotated[float, msgspec.Meta(gt=0, le=threading.TIMEOUT_MAX)] = (
        DEFAULT_CASE_TIMEOUT
    )
    case_wall_clock_secs: Annotated[float, msgspec.Meta(gt=0, le=threading.TIMEOUT_MAX)] = (
        DEFAULT_CASE_WALL_CLOCK
    )
    # Cases (and repetitions) run at once: `--jobs`.
    jobs: Annotated[int, msgspec.Meta(ge=1, le=MAX_JOBS)] | Literal["auto"] = DEFAULT_JOBS
    # Every agent, every mode: the model call over this in one turn is the case's run error.
    max_model_calls_per_turn: Annotated[int, msgspec.Meta(gt=0)] = DEFAULT_MAX_MODEL_CALLS_PER_TURN
    # Every agent, every mode: an answer asking for more tool calls is the case's run error.
    max_tool_calls_per_step: Annotated[int, msgspec.Meta(gt=0)] = DEFAULT_MAX_TOOL_CALLS_PER_STEP
    # Live mode: an OpenAI-compatible Chat Completions endpoint. The key itself is never
    # configured here, only the name of the environment variable that holds it.
    live_base_url: str = ""
    live_model: str = ""
    live_api_key_env: str = "OPENAI_API_KEY"
    # The built-in tools a live case may use (its `tools` narrows this further). All of
    # them are sandboxed to the case workspace; command-running tools are never allowed.
    live_allowed_tools: tuple[str, ...] = LIVE_DEFAULT_TOOLS
    # The LLM judge of `expects.judge` (docs/judge.md): an OpenAI-compatible endpoint, as
    # the live provider's; the key only by the name of its variable.
    judge_base_url: str = ""
    judge_model: str = ""
    judge_api_key_env: str = "OPENAI_API_KEY"
    # Where the suite's recorded judge replies, labels and calibration live ("": the
    # suite directory's `judge/`), from the project root.
    judge_dir: str = ""
    # What a rubric's calibration must show before its judge grades gate.
    judge_min_agreement: Probability = 0.80  # Wilson 95% lower bound of agreement
    judge_min_kappa: Annotated[float, msgspec.Meta(ge=-1, le=1)] = 0.60  # Cohen's κ
    judge_min_labels_per_verdict: Annotated[int, msgspec.Meta(ge=1)] = 10
    judge_max_false_pass: Probability = 0.25  # 95% upper bound of the false-pass rate
    judge_max_flip_rate: Probability = 0.10  # re-asked verdicts that flipped
    # `module:function` building each case's run context (SDK) or deps (pydantic-ai) from
    # its `setup.context`: `--context`.
    context: str = ""
    # OpenAI Agents SDK agents: each case's conversation kept in a `Session`, "sqlite" (in
    # memory) or `module:function` making one from the case id: `--session`.
    session: str = ""
    # The token and cost gates against a `--baseline`: the share a case's (or the suite's)
    # tokens or cost may grow by; None: not gated. Cost needs live mode and a price for
    # `live_model` in `prices` (model -> {input, output} per million tokens).
    max_token_growth: Share | None = None
    max_suite_token_growth: Share | None = None
    max_cost_growth: Share | None = None
    max_suite_cost_growth: Share | None = None
    prices: dict[str, ModelPrice] = {}
    # Request snapshots: one setting for every suite, or one per suite directory (from the
    # project root; a suite not named gets `auto`): `--snapshots`.
    snapshots: SnapshotSetting | dict[str, SnapshotSetting] = "auto"
    # The same for the snapshots no case of a suite uses (a suite not named: `warn`).
    unused_snapshots: UnusedSetting | dict[str, UnusedSetting] = "warn"
    # `zeroclaw eval import`: RE2 patterns redacted besides the built-in ones (`--redact`).
    redact_patterns: tuple[str, ...] = ()

    def snapshots_for(self, suite: Path, root: Path) -> SnapshotSetting:
        """The snapshot setting of the suite at `suite` (a fixture: its directory's)."""
        return _by_suite(self.snapshots, suite, root, "auto")

    def unused_snapshots_for(self, suite: Path, root: Path) -> UnusedSetting:
        return _by_suite(self.unused_snapshots, suite, root, "warn")


_Setting = TypeVar("_Setting", bound=str)


def _by_suite(
    setting: _Setting | dict[str, _Setting], suite: Path, root: Path, default: _Setting
) -> _Setting:
    """A setting given once or per suite directory (from `root`), for the suite at `suite`."""
    if isinstance(setting, str):
        return setting
    directory = suite.parent if suite.suffix == ".json" else suite
    absolute = directory if directory.is_absolute() else root / directory
    for name, value in setting.items():
        if (root / name).resolve() == absolute.resolve():
            return value
    return default


def live_missing(config: EvalConfig, environ: Mapping[str, str]) -> list[str]:
    """What live mode still needs before it can run, each item saying where to set it."""
    missing = []
    if not config.live_base_url.strip():
        missing.append('live_base_url (e.g. "https://api.openai.com/v1") in [tool.zeroclaw.eval]')
    if not config.live_model.strip():
        missing.append("live_model in [tool.zeroclaw.eval]")
    if not environ.get(config.live_api_key_env, "").strip():
        missing.append(f"the API key in the environment variable {config.live_api_key_env}")
    return missing


def url_problem(base_url: str, key: str = "live_base_url") -> str | None:
    """What is wrong with a provider's `base_url` (set as `key`), checked before any call is
    made; None: an http:// or https:// URL."""
    if re.match(r"https?://[^/\s]", base_url):
        return None
    return (
        f'{key} {base_url!r} is not an http:// or https:// URL (e.g. "https://api.openai.com/v1")'
    )


def judge_missing(config: EvalConfig) -> list[str]:
    """What the judge still needs before it can be named in a request (replay included:
    the model is part of what the judge is sent)."""
    missing = []
    if not config.judge_base_url.strip():
        missing.append('judge_base_url (e.g. "https://api.openai.com/v1") in [tool.zeroclaw.eval]')
    if not config.judge_model.strip():
        missing.append("judge_model in [tool.zeroclaw.eval]")
    return missing


class ConfigError(HarnessError):
    """The configuration file or table cannot be used; the message names file and key."""


class LoadedConfig(msgspec.Struct, frozen=True):
    config: EvalConfig
    root: Path  # the project root: relative suite paths and report paths start here
    source: str  # where the settings came from, for messages
    file: Path | None = None  # the file they were read from; None: the defaults


def load_config(config_file: Path | None = None, cwd: Path | None = None) -> LoadedConfig:
    """Settings from `config_file` (`[eval]`), else the nearest pyproject.toml holding
    `[tool.zeroclaw.eval]`, else the defaults rooted at the working directory."""
    cwd = (cwd or Path.cwd()).resolve()
    if config_file is not None:
        table = _read_toml(config_file).get("eval")
        if table is None:
            raise ConfigError(f"{config_file}: no [eval] table")
        return LoadedConfig(
            _validate(table, f"{config_file}: [eval]"),
            config_file.resolve().parent,
            str(config_file),
            config_file,
        )
    for directory in (cwd, *cwd.parents):
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            table = _eval_table(_read_toml(pyproject), pyproject)
            if table is not None:
                where = f"{pyproject}: [tool.zeroclaw.eval]"
                return LoadedConfig(_validate(table, where), directory, str(pyproject), pyproject)
    return LoadedConfig(EvalConfig(), cwd, "defaults")


def _eval_table(document: dict[str, Any], pyproject: Path) -> Any:
    """`[tool.zeroclaw.eval]` of a pyproject document, or None; a non-table on the way is an
    error, not a crash."""
    section: Any = document
    for name in ("tool", "tool.zeroclaw"):
        section = section.get(name.rpartition(".")[2])
        if section is None:
            return None
        if not isinstance(section, dict):
            raise ConfigError(f"{pyproject}: [{name}] is not a table")
    return section.get("eval")


# A configuration is a few kilobytes at most: the cap only keeps a wrong name (a device, a
# log) from being read whole.
MAX_CONFIG_BYTES = 1 << 20


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES)
    except InputError as exc:
        if exc.missing:
            raise ConfigError(f"{path}: configuration file not found") from None
        raise ConfigError(f"{path}: {exc.reason}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8: invalid byte at offset {exc.start}") from None
    # Imported here: a run in a directory without configuration reads no TOML.
    import tomli

    try:
        return tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except ValueError:  # Python's integer-string digit limit, which tomli lets through
        raise ConfigError(f"{path}: not valid TOML: {_long_integer(text)}") from None
    except RecursionError:  # tomli's own bound on inline arrays and tables in one another
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None


_DIGITS = re.compile(r"[0-9][0-9_]*")


def _long_integer(text: str) -> str:
    """Where the integer too long for Python to convert is, for the message."""
    limit = sys.get_int_max_str_digits()
    for match in _DIGITS.finditer(text):
        digits = len(match.group().replace("_", ""))
        if digits > limit:
            line = text.count("\n", 0, match.start()) + 1
            return f"line {line}: an integer of {digits} digits, over the {limit}-digit limit"
    return f"an integer over the {limit}-digit limit"


def _validate(table: Any, where: str) -> EvalConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    try:
        config = convert(table, EvalConfig, root="eval")
    except SchemaFaults as exc:
        first = exc.faults[0]
        key = first.path.removeprefix("eval.")
        if first.message.startswith("unknown key"):
            raise ConfigError(
                f"{where}: {first.message.replace('unknown key', f'unknown key {key!r}', 1)}"
            ) from None
        raise ConfigError(f"{where}: {first.message} at `{first.path}`") from None
    if not config.suite_dir:  # Path("") is the project root: never a suite by accident
        raise ConfigError(
            f"{where}: suite_dir: empty path: name the suite directory "
            f"(without the key it is {DEFAULT_SUITE_DIR!r})"
        )
    if "\0" in config.suite_dir:  # TOML's \u0000 escape; no system call takes it
        raise ConfigError(f"{where}: suite_dir: holds a NUL character, which no path can")
    for i, name in enumerate(config.live_allowed_tools):
        if not name.strip():
            raise ConfigError(f"{where}: live_allowed_tools[{i}]: empty tool name")
        unsafe = unsafe_name_problem("tool name", name)
        if unsafe is not None:
            raise ConfigError(f"{where}: live_allowed_tools[{i}]: {unsafe}")
        if runs_commands(name):
            raise ConfigError(
                f"{where}: live_allowed_tools[{i}]: tool {name!r} is refused: "
                f"{COMMAND_TOOL_REFUSAL}"
            )
    return config
