"""`harness.verdict.receipts`: each case's fixture hash and the suite's receipt, in the JSON
report of a real run."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib.metadata import distributions, version
from pathlib import Path

import pytest
from conftest import Cli, echo_fixture, green_project, run_process

from harness.fixtures.schema import canonical_json, fixture_hash
from harness.verdict import receipts
from harness.verdict.receipts import GitState, ask_git, git_state, provider_ref

ROOT = Path(__file__).resolve().parents[1]


def test_the_fixture_hash_ignores_layout_and_sees_every_value() -> None:
    compact = '{"b":1,"a":[1,2],"c":"é"}'
    spaced = '{\n  "a": [1, 2],\n  "c": "\\u00e9",\n  "b": 1\n}'
    assert fixture_hash(compact) == fixture_hash(spaced)
    assert fixture_hash(compact) != fixture_hash('{"b":2,"a":[1,2],"c":"é"}')
    assert len(fixture_hash(compact)) == 64


def test_a_lone_surrogate_still_hashes() -> None:
    assert fixture_hash('{"a": "\\ud800"}') == fixture_hash('{"a":"\\ud800"}')


CANONICAL_EDGES = [
    "[1e16, 1e-7, 0.00001, 1.5E+3, -0.0, 5e-324, 1.7976931348623157e308, 100000.0]",
    '{"v": "1.5", "w": "version 2e5", "n": [1, -0, 18446744073709551616, 1000000000000000000000]}',
    '{"s": "a\\u0000b\\u001f\\u007f\\u2028\\ud7ff\\ud83d\\ude00 \u2028\u007f\U0001f600"}',
    '{"t": " \\" \\\\ \\/ \\b\\f\\n\\r\\t"}',
    '{"é": 1, "e": 2, "Z": [true, false, null], "\\uffff": {}, "\\ud83d\\ude00": []}',
    '{"\U0001f600!": 0, "\U0001f600": 1, "\uffff": 2}',
    '{"a": 1, "a": 2}',
    '{"a": NaN, "b": Infinity}',
    '{"a": "\\ud800"}',
]


@pytest.mark.parametrize("text", CANONICAL_EDGES)
def test_the_fast_canonical_form_is_the_json_one_or_none(text: str) -> None:
    # Hashes already in reports and baselines were made with `json`: the fast path must
    # spell every document as it did, or step aside.
    spelt = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    fast = canonical_json(text)
    assert fast is None or fast == spelt.encode("utf-8")
    assert fixture_hash(text) == hashlib.sha256(spelt.encode("utf-8", "surrogatepass")).hexdigest()


def test_the_fast_canonical_form_covers_the_suites_fixtures() -> None:
    texts = [p.read_text("utf-8") for p in sorted((ROOT / "evals").glob("*/*.json"))]
    regression = [p.read_text("utf-8") for p in (ROOT / "evals" / "regression").glob("*.json")]
    # Only a fixture holding a float literal takes the slow path (a string spelling one,
    # like a version "2e5", does not).
    floats: list[str] = []
    for text in regression:
        floats.clear()
        json.loads(text, parse_float=floats.append)
        assert (canonical_json(text) is None) == bool(floats)
    for text in texts:
        spelt = json.dumps(
            json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        assert fixture_hash(text) == hashlib.sha256(spelt.encode("utf-8")).hexdigest()


def test_provider_references_name_host_and_model_only() -> None:
    assert provider_ref("https://user:sk-secret@api.example.com/v1?key=x", "m1") == (
        "api.example.com/m1"
    )
    assert provider_ref("http://127.0.0.1:8080/v1", "tiny") == "127.0.0.1:8080/tiny"


def _committed(root: Path) -> Path:
    """A repository at `root` whose one commit holds `a.txt`."""
    root.mkdir()
    (root / "a.txt").write_text("a", encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "a")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_report_carries_hashes_and_the_receipt(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "fixtures")
    result = run_cli("eval", "run", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    for case in document["cases"]:
        text = (root / case["fixture"]).read_text(encoding="utf-8")
        assert case["fixture_sha256"] == fixture_hash(text)
    receipt = document["receipt"]
    commit, dirty = git_state(root)
    assert receipt == {
        "harness_version": version("zeroclaw-eval"),
        "agent": "openai-agents",
        "framework": "openai-agents",
        "framework_version": version("openai-agents"),
        "provider": "scripted",
        "python": platform.python_version(),
        "git_commit": commit,
        "git_dirty": False,
        "policy": {
            "kind": "regression",
            "gates_checks": True,
            "summary": "gated: exit 0 iff every case passed",
        },
        # The whole suite ran: no selection, no shard.
        "selection": None,
        "shard": None,
        "suite_sha256": None,
        # No --repeat: each case ran as its fixture says.
        "repeat": None,
    }
    assert commit is not None and len(commit) == 40 and dirty is False
    (root / "evals" / "regression" / "a_echo.json").write_text(
        json.dumps(echo_fixture("echo-case", "changed")), encoding="utf-8"
    )
    assert git_state(root) == (commit, True)


def test_the_receipt_sees_the_unused_snapshots_the_run_removed(tmp_path: Path) -> None:
    # git is asked once the run has removed what `--update-snapshots` finds unused, as its
    # cases begin: the receipt says the tree the cases ran in is dirty.
    root = green_project(tmp_path)
    taken = run_process("eval", "run", "--update-snapshots", cwd=root)
    assert taken.returncode == 0, taken.stderr
    [kept, *_] = sorted((root / "evals" / "regression" / "__snapshots__").rglob("*.snap"))
    unused = kept.with_name("zz_unused_case.snap")
    unused.write_bytes(kept.read_bytes())
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "fixtures")
    result = run_process("eval", "run", "--format", "json", "--update-snapshots", cwd=root)
    assert result.returncode == 0, result.stderr
    assert not unused.exists()
    assert json.loads(result.stdout)["receipt"]["git_dirty"] is True


def test_outside_a_git_work_tree_the_commit_is_unknown(tmp_path: Path) -> None:
    assert git_state(tmp_path) == (None, None)
    assert GitState(tmp_path / "nowhere").result() == (None, None)


def test_a_run_outside_any_work_tree_starts_no_git_to_be_told_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git finds a repository only through a `.git` above it (on the path as given or as
    # resolved) or `GIT_DIR`: without either, the answer is known and no process is forked.
    project = _committed(tmp_path / "project")
    started: list[list[str]] = []
    popen = subprocess.Popen

    def counted(args: list[str], *rest: object, **options: object) -> object:
        started.append(args)
        return popen(args, *rest, **options)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", counted)
    monkeypatch.delenv("GIT_DIR", raising=False)
    outside = tmp_path / "outside" / "deeper"
    outside.mkdir(parents=True)
    assert ask_git(outside).result() == (None, None)
    assert ask_git(tmp_path / "nowhere").result() == (None, None)
    assert started == []
    # A `.git` above (whatever it is), a link into a work tree, or `GIT_DIR`: git is asked.
    (project / "sub").mkdir()
    (tmp_path / "link").symlink_to(project / "sub")
    commit, dirty = ask_git(tmp_path / "link").result()
    assert commit is not None and dirty is False
    (tmp_path / "outside" / ".git").write_text("gitdir: nowhere\n", encoding="utf-8")
    assert ask_git(outside).result() == (None, None)
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))
    assert ask_git(tmp_path / "nowhere").result() == (None, None)
    assert len(started) == 3


def test_git_is_asked_as_the_run_starts_and_answers_for_that_tree(tmp_path: Path) -> None:
    # Asked as the run starts, read as it ends: git runs beside the cases, and a file the
    # run itself changes (a snapshot it updates) does not make the tree it ran dirty.
    root = _committed(tmp_path / "project")
    asked = GitState(root)
    assert asked._asked is not None
    asked._asked.wait(timeout=30)  # it has answered: the answer waits, unread
    (root / "a.txt").write_text("changed", encoding="utf-8")
    commit, dirty = asked.result()
    assert dirty is False and commit is not None and len(commit) == 40
    assert git_state(root) == (commit, True)


def test_git_still_running_is_told_to_end_so_it_takes_its_index_lock_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A refreshing `git status` holds the index lock and removes it when told to end
    # (SIGTERM); killed outright, it would leave the lock and fail the user's next git
    # command. This `git` holds a lock the way git does (its handler set before it takes
    # the lock), until it is told to end.
    lock, bin_dir = tmp_path / "index.lock", tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(
        f"#!/bin/sh\ntrap 'rm -f {lock}; kill $held; exit 143' TERM\n"
        f"sleep 30 &\nheld=$!\ntouch {lock}\nwait $held\n",
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    early = GitState(tmp_path)._asked
    assert early is not None
    for _ in range(500):  # until it holds the lock
        if lock.exists():
            break
        time.sleep(0.01)
    assert lock.exists()
    receipts._end(early)  # as `result` ends one that said nothing in time
    assert early.returncode is not None
    assert not lock.exists()


def test_a_repository_with_no_commit_yet_has_no_commit(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    assert git_state(tmp_path) == (None, None)


def test_git_is_asked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One process answers both questions: a run forks the harness's process once for git.
    root = _committed(tmp_path / "project")
    real = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    bin_dir, log = tmp_path / "bin", tmp_path / "git.log"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    git = shutil.which("git")
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {git} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert git_state(root) == (real.stdout.strip(), False)
    (root / "b.txt").write_text("new", encoding="utf-8")  # untracked: the tree has changes
    assert git_state(root) == (real.stdout.strip(), True)
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2  # once per ask


def _dist(entry: Path, directory: str, metadata: str | None) -> None:
    (entry / directory).mkdir(parents=True)
    if metadata is not None:
        (entry / directory / "METADATA").write_text(metadata, encoding="utf-8")


def test_versions_are_what_importlib_metadata_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read without importing importlib.metadata where the answer is plain, and the same
    # answer as it gives everywhere: the first entry of the path wins, names compare
    # normalised, an egg-info first or a folded header is left to importlib.metadata.
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "demo_pkg-1.0.dist-info", "Name: demo-pkg\nVersion: 1.0\n\nVersion: 9\n")
    _dist(second, "Demo.Pkg-2.0.dist-info", "Name: Demo.Pkg\nVersion: 2.0\n")
    _dist(second, "folded-1.dist-info", "Name: folded\nVersion: 1.0\n  .post1\n")
    _dist(second, "bare-1.dist-info", None)
    (first / "eggy-3.0.egg-info").write_text("Name: eggy\nVersion: 3.0\n", encoding="utf-8")
    _dist(second, "eggy-4.0.dist-info", "Name: eggy\nVersion: 4.0\n")
    _dist(second, "spaced-1.dist-info", "Name: spaced\nVersion:   1.5  \n")
    # A line that is no header: `email` takes the body to begin there, Version unread.
    _dist(second, "bodied-1.dist-info", "Name: bodied\nnot a header\nVersion: 6.6\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    names = ["demo-pkg", "Demo_Pkg", "demo.pkg", "folded", "bare", "eggy", "spaced", "bodied"]
    names.append("absent")
    for name in names:
        try:
            expected: str | None = version(name)
        except ImportError:
            expected = None
        assert receipts._version(name) == expected, name
    assert receipts._version("demo-pkg") == "1.0"


def test_a_path_object_on_the_path_leaves_the_version_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A conftest's `sys.path.insert(0, Path(...))`: the run's receipt is still made.
    monkeypatch.setattr(sys, "path", [tmp_path, *sys.path])
    assert receipts.harness_version() == version("zeroclaw-eval")


def test_installed_versions_are_what_importlib_metadata_says() -> None:
    installed = {d.metadata["Name"] for d in distributions()}
    assert "zeroclaw-eval" in installed
    for name in installed:
        assert receipts._version(name) == version(name), name
    assert receipts.harness_version() == version("zeroclaw-eval")


@pytest.mark.parametrize("agent", ["pydantic-ai"])
def test_the_framework_version_is_the_installed_one(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "--agent", agent, "--format", "json", cwd=root)
    receipt = json.loads(result.stdout)["receipt"]
    assert receipt["framework"] == "pydantic-ai"
    assert receipt["framework_version"] == version("pydantic-ai-slim")  # what the extra installs


def test_a_run_in_a_git_directory_whose_work_tree_is_elsewhere_is_asked_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No `.git` above it: the directory is a repository's git directory itself, which
    # `core.worktree` gives a work tree; git finds it, and the receipt has its commit.
    monkeypatch.delenv("GIT_DIR", raising=False)
    project = _committed(tmp_path / "project")
    moved = tmp_path / "repo.git"
    (project / ".git").rename(moved)
    git = ["git", f"--git-dir={moved}"]
    subprocess.run([*git, "config", "core.worktree", str(project)], check=True)
    commit, dirty = ask_git(moved).result()
    assert commit is not None and dirty is False
    assert (commit, dirty) == GitState(moved).result()
