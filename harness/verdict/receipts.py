"""Receipts: what a report was made from, so a green artifact proves which bar it passed.

Each case carries the hash of its canonical fixture; the suite report carries what ran it
(harness, agent and framework versions, the provider, Python, the git commit and whether
the tree was dirty) and the gate policy applied. `zeroclaw eval verify` recomputes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from harness.modes import Mode, SuiteKind
from harness.verdict.policy import policy_for

# Each framework's distribution names, in the order they are looked up.
_DISTRIBUTIONS = {
    "openai-agents": ("openai-agents",),
    "pydantic-ai": ("pydantic-ai", "pydantic-ai-slim"),
}
GIT_SECS = 5.0
GIT_END_SECS = 1.0  # for git to end once told to (and take its index lock away)
# What git is asked, in one process: the commit checked out (the `# branch.oid` header) and
# whether the tree has changes (any other line).
_ASKED = ("status", "--porcelain=v2", "--branch", "--untracked-files=normal")
_COMMIT = "# branch.oid "


class Policy(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """The gate a report was judged by."""

    kind: SuiteKind
    gates_checks: bool
    summary: str
    # Confirmed regressions against the baseline failed the gate too (`--fail-on-regression`);
    # left out of the document when not, so reports without baselines keep their shape.
    fail_on_regression: bool = False


class SuiteReceipt(msgspec.Struct, kw_only=True, frozen=True):
    harness_version: str
    agent: str
    framework: str | None  # None: the user's own loop or adapter
    framework_version: str | None
    provider: str  # "scripted" in replay; "<host>/<model>" in live
    python: str
    git_commit: str | None  # None: not in a git work tree, or git is not installed
    git_dirty: bool | None
    policy: Policy
    # A run of part of the suite (-k, --case, --shard): what it picked, which shard, and
    # the digest of the whole admitted suite (so shards prove they are of one suite). A
    # partial run's gate is never the suite's.
    selection: str | None = None
    shard: tuple[int, int] | None = None
    suite_sha256: str | None = None
    # `--repeat`: the runs of every live case, overriding the fixtures' `repeat`; None: each
    # case ran as its fixture says. What makes a repeat block of a case admissible.
    repeat: int | None = None

    @property
    def partial(self) -> bool:
        return self.selection is not None


def policy_of(kind: SuiteKind, fail_on_regression: bool = False) -> Policy:
    policy = policy_for(kind)
    return Policy(
        kind=kind,
        gates_checks=policy.gates_checks,
        summary=policy.summary,
        fail_on_regression=fail_on_regression,
    )


def harness_version() -> str:
    """The installed distribution's version ("unknown" in a source tree never installed)."""
    return _version("zeroclaw-eval") or "unknown"


def framework_version(framework: str | None) -> str | None:
    for name in _DISTRIBUTIONS.get(framework or "", ()):
        found = _version(name)
        if found is not None:
            return found
    return None


def _version(name: str) -> str | None:
    """`importlib.metadata.version(name)`, None for a distribution not installed. Read
    straight from the `.dist-info` directory the metadata finder would find first where
    it can be: importing `importlib.metadata` (zipfile, email and their imports) is a tenth
    of what a one-case run costs, for one line of one file."""
    try:
        found = _dist_info_version(name)
    except Exception:  # a shortcut only: whatever it met, the library answers
        found = None
    if found is not None:
        return found or None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _dist_info_version(name: str) -> str | None:
    """The version the first `<name>-*.dist-info` on `sys.path` holds; "" when no entry of
    `sys.path` has one; None when the finder might find another (a finder of distributions
    besides the path's, a zip file on the path, an `.egg-info` first, a `METADATA` without
    a plain `Version` header): then only `importlib.metadata` can say."""
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return None
    wanted = _normalized(name)
    for entry in sys.path:
        if not isinstance(entry, str):  # a Path, bytes: as the finder takes it, not this
            return None
        try:
            children = os.listdir(entry or ".")
        except NotADirectoryError:  # a zip file on the path: its own lookup
            return None
        except OSError:  # not there: the finder finds nothing in it either
            continue
        if entry.lower().endswith(".egg") and any(c.lower() == "egg-info" for c in children):
            return None  # an egg on the path: found by its own rule
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if _normalized(low.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            if not low.endswith(".dist-info"):
                return None
            return _metadata_version(os.path.join(entry or ".", child, "METADATA"))
    return ""


def _normalized(name: str) -> str:
    """A distribution's name as the metadata finder compares it (PEP 503, underscores)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _metadata_version(path: str) -> str | None:
    """The `Version` header of a `METADATA` file as `email` reads it; None if it has no
    header of one line (or cannot be read)."""
    headers: list[str] = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break  # the headers end; the description follows
                headers.append(line)
    except (OSError, UnicodeDecodeError):
        return None
    for at, line in enumerate(headers):
        key, colon, value = line.partition(":")
        if not colon and line[:1] not in (" ", "\t"):
            return None  # no header: `email` takes the body to begin here
        if colon and key.lower() == "version":
            folded = at + 1 < len(headers) and headers[at + 1][:1] in (" ", "\t")
            return None if folded else value.lstrip(" \t").rstrip("\r\n") or None
    return None


class GitState:
    """git asked about `root` now (the commit checked out, whether its tree has changes),
    its answer read later: a run asks as it starts and reads as it ends, so git, a process
    of its own and slow in a large work tree, runs beside the cases instead of after them.
    The tree is the one the run started from (its unused snapshots removed)."""

    def __init__(self, root: Path, ask: bool = True) -> None:
        self._asked: subprocess.Popen[str] | None = None
        if not ask:  # known to be no work tree: the answer is (None, None)
            return
        with contextlib.suppress(OSError):  # no git: nothing to ask
            self._asked = subprocess.Popen(
                ["git", "-C", str(root), *_ASKED],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
            )

    def result(self) -> tuple[str | None, bool | None]:
        """The commit and whether the tree has changes (None, None when it is no git work
        tree, has no commit yet, or git cannot say in time)."""
        asked = self._asked
        if asked is None:
            return None, None
        try:
            status = _answer(asked)
        except (OSError, subprocess.SubprocessError):
            return None, None
        finally:
            _end(asked)
        lines = status.splitlines()
        commit = next((line[len(_COMMIT) :] for line in lines if line.startswith(_COMMIT)), "")
        if not commit.strip() or commit.startswith("("):  # "(initial)": no commit yet
            return None, None
        return commit.strip(), any(not line.startswith("# ") for line in lines if line)


def _end(asked: subprocess.Popen[str]) -> None:
    """`asked` ended (a no-op once it has answered) and waited for. SIGTERM first: git
    removes the index lock a refreshing `status` holds on it, which SIGKILL would leave
    behind, failing the user's next git command in the tree."""
    asked.terminate()
    try:
        asked.wait(timeout=GIT_END_SECS)
    except subprocess.TimeoutExpired:
        asked.kill()
        asked.wait()
    if asked.stdout is not None:
        asked.stdout.close()


def _answer(asked: subprocess.Popen[str]) -> str:
    out, _ = asked.communicate(timeout=GIT_SECS)
    if asked.returncode != 0:
        raise subprocess.CalledProcessError(asked.returncode, asked.args)
    return out


def ask_git(root: Path) -> GitState:
    """`GitState(root)`, except that where git could find no repository it is not started
    to say so: git finds one only through a `.git` entry in the directory it is run in or
    in one above it (on its path as given or as the file system resolves it), a directory
    there that is a git directory itself (its `HEAD`: one with `core.worktree` set is a
    work tree's), or `GIT_DIR`. A run outside a work tree (a temporary directory, a
    container holding a copy of the sources) forks no process for an answer known
    beforehand."""
    if "GIT_DIR" in os.environ:
        return GitState(root)
    for start in {os.path.abspath(root), os.path.realpath(root)}:
        path = start
        while True:
            if os.path.lexists(os.path.join(path, ".git")) or os.path.lexists(
                os.path.join(path, "HEAD")
            ):
                return GitState(root)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return GitState(root, ask=False)


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """The commit checked out at `root` and whether its tree has changes (None, None when
    it is no git work tree or git cannot say in time)."""
    return GitState(root).result()


def provider_ref(base_url: str, model: str) -> str:
    """A live provider as receipts name it: its host (and port) and the model, never the
    URL's path, query or credentials."""
    parts = urlsplit(base_url)
    host = parts.hostname or "unknown-host"
    return f"{host}:{parts.port}/{model}" if parts.port else f"{host}/{model}"


def suite_receipt(
    *,
    agent: str,
    framework: str | None,
    mode: Mode,
    kind: SuiteKind,
    root: Path,
    provider: str | None = None,
    fail_on_regression: bool = False,
    selection: Any = None,
    repeat: int | None = None,
    git: GitState | None = None,
) -> SuiteReceipt:
    """What ran the suite; `selection` (a `harness.fixtures.selection.Selection`) when it ran part
    of it, `repeat` when `--repeat` set every live case's runs; `git`: what git was asked
    as the run started (else it is asked now)."""
    commit, dirty = (git or GitState(root)).result()
    return SuiteReceipt(
        harness_version=harness_version(),
        agent=agent,
        framework=framework,
        framework_version=framework_version(framework),
        provider="scripted" if mode != "live" else (provider or "live"),
        python=platform.python_version(),
        git_commit=commit,
        git_dirty=dirty,
        policy=policy_of(kind, fail_on_regression),
        selection=selection.describe() if selection is not None else None,
        shard=selection.shard if selection is not None else None,
        suite_sha256=selection.suite_sha256 if selection is not None else None,
        repeat=repeat if mode == "live" else None,
    )


def suite_hash(hashes: Iterable[tuple[str, str]]) -> str:
    """SHA-256 over a whole admitted suite: each fixture's path (as reports show it) and
    canonical hash (`harness.fixtures.schema.fixture_hash`, in hex), in suite order."""
    digest = hashlib.sha256()
    for shown, sha256 in hashes:
        digest.update(shown.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(sha256.encode("ascii") + b"\n")
    return digest.hexdigest()
