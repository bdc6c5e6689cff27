"""The snapshot files and their check: where a case's snapshot lives, how a run compares
what its agent showed the model with it, and when it writes one.

A case's snapshot is `<its fixture's directory>/__snapshots__/<agent setting>/<fixture
name>.snap`: per agent setting, since the same suite replays through several agents whose
requests differ (the SDK's and pydantic-ai's schemas of one tool), and by the fixture's
file name, which a mutant of the case shares. A run reads it and never writes it, but
under `--update-snapshots`. A changed request fails the case (`fail`) or is a warning
that decides nothing (`warn`); a snapshot missing is a failure under `CI=true` (a
forgotten update must not pass unnoticed) and otherwise says nothing, so a suite without
snapshots runs as before until they are taken."""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
import stat
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.config import SnapshotSetting
from harness.errors import HarnessError
from harness.expectations.base import Grade
from harness.io.atomic import write_atomic
from harness.io.files import InputError, read_bounded, read_known
from harness.io.text import clean, clean_lines
from harness.snapshots.surface import render
from harness.transcript import Exchange

SNAPSHOT_DIR = "__snapshots__"
SUFFIX = ".snap"
CHECK = "request_snapshot"
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def in_ci() -> bool:
    """Whether the run is a CI job's (`CI=true`, as GitHub Actions and most runners set)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@dataclass(frozen=True)
class SnapshotPlan:
    """How a run treats its cases' snapshots: under which agent setting's folder, whether
    a changed request fails or warns, whether it writes them, whether a missing one fails."""

    agent: str
    action: Literal["fail", "warn"] = "fail"
    update: bool = False
    ci: bool = False

    @functools.cached_property
    def folder(self) -> str:
        """The agent setting as a folder name (`openai-agents:app:build` is
        `openai-agents+app+build`)."""
        return _UNSAFE.sub("+", self.agent).strip("+.") or "agent"

    def path_of(self, fixture: Path) -> Path:
        folder, file = self._parts(fixture)
        return Path(os.path.join(folder, file))

    def _parts(self, fixture: Path | str) -> tuple[str, str]:
        """The folder of `fixture`'s snapshot and its file name, joined as strings: a path
        object's parts are parsed again at every step."""
        where, name = os.path.split(fixture)
        return os.path.join(where, SNAPSHOT_DIR, self.folder), _stem(name) + SUFFIX

    def _where(self, fixture: Path | str) -> tuple[str, bool]:
        """The snapshot of `fixture` as a path, and whether its folder's listing saw it as a
        regular file.

        Per folder, the names of the regular files it held when a case of this plan first
        looked: listed at once, so that reading each snapshot need not ask for its type by
        name first (the listing tells), which costs about as much as reading it. Only ever
        a hint: a snapshot not listed is looked up by name as always, and the open file is
        checked whatever the listing said. Not pickled with the plan."""
        fixture = os.fspath(fixture)
        # Keyed by the fixture's path up to its name, cut at its last separator: where
        # there is one kind of separator (POSIX), that is the directory `os.path.split`
        # finds, found without its work for each case; elsewhere it is that split.
        if os.altsep is None:
            cut = fixture.rfind(os.sep) + 1
            head, name = fixture[:cut], fixture[cut:]
        else:
            head, name = os.path.split(fixture)
        listed: dict[str, tuple[str, array[int]]] = self.__dict__.setdefault("_listed", {})
        known = listed.get(head)
        if known is None:
            folder = self._parts(fixture)[0]
            known = listed[head] = (folder, _regular_files(folder))
        file = _stem(name) + SUFFIX
        # A name (no separator in it) joined to a folder that ends in none: `os.path.join`'s.
        return f"{known[0]}{os.sep}{file}", _holds(known[1], file)

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_listed"}


def _regular_files(folder: str) -> array[int]:
    """The regular files in `folder` (none: there is no such folder), as the sorted hashes
    of their names: eight bytes a snapshot, where a set of 50,000 names held 5 MB for the
    whole run. Only a hint: a name sharing another's hash is read as a listed one is, and
    the open file is checked all the same."""
    try:
        with os.scandir(folder) as entries:
            return array(
                "q", sorted(hash(e.name) for e in entries if e.is_file(follow_symlinks=False))
            )
    except OSError:
        return array("q")


def _holds(hashes: array[int], name: str) -> bool:
    key = hash(name)
    at = bisect.bisect_left(hashes, key)
    return at < len(hashes) and hashes[at] == key


def _stem(name: str) -> str:
    return name[:-5] if name.endswith(".json") else Path(name).stem


def plan_for(setting: SnapshotSetting, kind: str, agent: str, update: bool) -> SnapshotPlan | None:
    """The run's snapshot plan; None when the check is off (and nothing is written)."""
    if setting == "off" and not update:
        return None
    action: Literal["fail", "warn"]
    if setting == "auto":
        action = "fail" if kind == "regression" else "warn"
    else:
        action = "warn" if setting == "warn" else "fail"
    return SnapshotPlan(agent, action, update, in_ci())


def read_snapshot(path: Path | str, *, regular: bool = False) -> str | None:
    """The snapshot's text; None: there is none. A snapshot that cannot be read is said
    as its check's failure by `check`. `regular`: a listing of its folder just saw it as a
    regular file (`read_bounded`'s)."""
    try:
        return read_bounded(path, MAX_SNAPSHOT_BYTES, regular=regular).decode("utf-8")
    except InputError as exc:
        # Asked only then: one system call less for every snapshot that is there.
        if exc.missing and not os.path.lexists(path):  # a dangling link is no snapshot
            return None
        raise


def write_snapshot(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))


def check(plan: SnapshotPlan, fixture: Path | str, text: str, root: Path) -> Grade | None:
    """The grade of a run whose requests render as `text` against the snapshot of
    `fixture` (reports name it from `root`); None: nothing to say (it matches, it was
    written, or it is missing outside CI)."""
    where, regular = plan._where(fixture)
    if regular and text and not plan.update:
        expected = _encoded(text)
        # Within the cap a snapshot is read under, or its read's refusal is the verdict.
        if len(expected) <= MAX_SNAPSHOT_BYTES and read_known(where, len(expected)) == expected:
            return None  # it matches: what most checks find, in one read
    try:
        kept = read_snapshot(where, regular=regular)
    except (OSError, InputError, UnicodeDecodeError) as exc:
        said = f"cannot read {_shown(Path(where), root)}: {clean(str(exc))}"
        return Grade(CHECK, False, said, "snapshot")
    if plan.update:
        if kept != text:
            write_snapshot(Path(where), text)
        return None
    if kept == text or (kept is None and not plan.ci):
        return None
    path = Path(where)
    shown = _shown(path, root)
    if kept is None:
        return Grade(
            CHECK,
            False,
            f"no request snapshot {shown} (CI=true: a missing snapshot fails; take it "
            "with `zeroclaw eval run --update-snapshots` and commit it)",
            "snapshot",
        )
    said = "changed" if plan.action == "fail" else "changed (warning)"
    detail = (
        f"what the agent shows the model {said} since {shown} was taken; if the "
        "change is meant, run with --update-snapshots and commit the snapshot:\n"
        + unified_diff(kept, text, shown)
    )
    return Grade(CHECK, False, detail, "snapshot", warn=plan.action == "warn")


# The last text checked, encoded: most cases of a run render the very same text object
# (`surface.render` keeps them), encoded once for all of them.
_ENCODED: list[tuple[str, bytes]] = [("", b"")]


def _encoded(text: str) -> bytes:
    last = _ENCODED[0]
    if last[0] is not text:
        last = _ENCODED[0] = (text, text.encode("utf-8"))
    return last[1]


def _shown(path: Path, root: Path) -> str:
    """The snapshot's path as reports name it: from the project root where it lies in it."""
    try:
        return clean(path.relative_to(root).as_posix())
    except ValueError:
        return clean(path.as_posix())


def unified_diff(kept: str, now: str, shown: str) -> str:
    """The change from the snapshot to this run, as a unified diff of lines made safe."""
    import difflib  # a changed snapshot's alone: a run whose snapshots all hold has no use

    lines = difflib.unified_diff(
        kept.splitlines(), now.splitlines(), f"{shown} (snapshot)", "this run", lineterm="", n=2
    )
    diff = list(lines)
    kept_lines = kept.splitlines()
    for index, line in enumerate(diff):
        match = _HUNK.match(line)
        if match is not None:
            # The hunk's leading context lines come before its first change.
            context = 0
            for later in diff[index + 1 :]:
                if not later.startswith(" "):
                    break
                context += 1
            diff[index] = _with_heading(line, kept_lines, int(match.group(1)) - 1 + context)
    return "\n".join(clean_lines(line) for line in diff)


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? ")


def _with_heading(line: str, kept: list[str], changed: int) -> str:
    """A hunk's header followed by the headings its first change falls under (the agent,
    the tool), as git names a hunk's function: the diff says which tool's schema changed
    even when the heading is far above the change."""
    above = kept[: max(changed, 0)]
    agent = next((k for k in reversed(above) if k.startswith("=== ")), "")
    part = next((k for k in reversed(above) if k.startswith(("--- ", "=== "))), "")
    heading = " / ".join(h for h in dict.fromkeys((agent, part)) if h)
    return f"{line} {heading}" if heading else line


def snapshot_grades(
    plan: SnapshotPlan | None, fixture: Path | str, exchanges: Iterable[Exchange], root: Path
) -> list[Grade]:
    """The snapshot check of one graded run, as the grades it adds (none, or one)."""
    if plan is None:
        return []
    found = check(plan, fixture, render(e.request for e in exchanges), root)
    return [] if found is None else [found]


def unused(plan: SnapshotPlan, suite: Path, fixtures: Iterable[str]) -> list[Path]:
    """The snapshots of `plan`'s agent setting in the suite's folder that no fixture of
    `fixtures` (the file names of the whole suite) uses, sorted: a deleted or renamed
    fixture's, as syrupy and Jest report theirs. Snapshots of other agent settings are
    theirs to judge: this run cannot tell whether that agent still runs the suite."""
    folder = plan.path_of(suite / "x.json").parent
    used = _used(list(fixtures))
    try:
        # Names alone (no entry object for each of a suite's snapshots), those used left
        # out in C (most of them): only one no fixture uses is asked what it is.
        unclaimed = itertools.filterfalse(used.__contains__, os.listdir(folder))
        names = [n for n in unclaimed if n.endswith(SUFFIX)]
        found = [folder / name for name in names if not _directory(folder / name)]
    except OSError:  # no folder (no snapshot taken yet), or none readable: nothing to say
        return []
    return sorted(found)


def _used(fixtures: list[str]) -> set[str]:
    """The names of the snapshots of `fixtures` (file names: a suite is one flat folder).
    A listed suite's all end in `.json`: then each is renamed in one pass over their text
    (NUL, which no file name holds, between them), in C, not one at a time."""
    joined = "\0".join(fixtures) + "\0"
    ends = len(fixtures)
    if joined.count("\0") == ends and joined.count(".json\0") == ends:
        return set(joined.replace(".json\0", SUFFIX + "\0").split("\0")[:-1])
    return {
        name[:-5] + SUFFIX if name.endswith(".json") else _stem(name) + SUFFIX for name in fixtures
    }


def _directory(path: Path) -> bool:
    """Whether `path` is a directory, not followed if it is a link (gone: it is not)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


class SnapshotRemovalError(HarnessError):
    """An unused snapshot `--update-snapshots` was to remove could not be."""


def remove_unused(paths: Iterable[Path], root: Path) -> None:
    """`--update-snapshots` on a run of the whole suite: the unused snapshots removed,
    before any case runs (a snapshot that cannot be removed stops the run, said)."""
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise SnapshotRemovalError(
                f"{_shown(path, root)}: cannot remove this unused snapshot: {clean(why)}"
            ) from None
