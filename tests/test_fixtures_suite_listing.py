"""Loading a suite from one directory listing (SPEC section 4, rule 9): the entry type the
listing gives is the check before a fixture is opened, and the open file is checked again,
so an entry that changes in between is refused as any other, never blocking; the names the
problems carry are the paths' own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import BUILTIN_SURFACE, finishes_within, lines, replay_trace, write_fixture

from harness.fixtures import listing, suite
from harness.fixtures.suite import fixture_paths, load_suite
from harness.io.problems import AdmissionError

FIFO = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")


def refused(directory: Path) -> list[str]:
    with pytest.raises(AdmissionError) as caught:
        load_suite(directory, "replay", BUILTIN_SURFACE)
    return lines(caught.value.problems)


@pytest.fixture
def listed_as_regular(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry listed as a regular file: as if each were swapped for what it is now
    between the listing and the reading."""
    monkeypatch.setattr(listing, "_irregular", lambda entries: set())


@FIFO
@pytest.mark.usefixtures("listed_as_regular")
def test_a_fifo_listed_as_a_file_is_refused_without_blocking(tmp_path: Path) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="a"))
    fifo = tmp_path / "b.json"
    os.mkfifo(fifo)
    try:
        assert finishes_within(5, lambda: refused(tmp_path)) == [
            f"{fifo}: $: not a regular file (FIFO)"
        ]
    finally:
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a reader that blocked would return
        os.close(fd)


@pytest.mark.usefixtures("listed_as_regular")
def test_a_directory_or_device_listed_as_a_file_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "a.json").mkdir()
    expected = [f"{tmp_path / 'a.json'}: $: not a regular file (directory)"]
    if Path("/dev/zero").exists():
        (tmp_path / "b.json").symlink_to("/dev/zero")
        expected.append(f"{tmp_path / 'b.json'}: $: not a regular file (character device)")
    assert refused(tmp_path) == expected


@pytest.mark.usefixtures("listed_as_regular")
def test_a_fixture_gone_since_the_listing_is_refused_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fixture(tmp_path, "a.json", replay_trace(model_name="a"))
    gone = write_fixture(tmp_path, "b.json", replay_trace(model_name="b"))
    listing = suite._listed(tmp_path)
    gone.unlink()
    monkeypatch.setattr(suite, "_listed", lambda directory: listing)
    assert refused(tmp_path) == [f"{gone}: $: cannot stat: No such file or directory"]


def test_a_symlinked_fixture_is_read_through_its_link(tmp_path: Path) -> None:
    target = write_fixture(tmp_path / "elsewhere", "real.json", replay_trace(model_name="a"))
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (suite_dir / "a.json").symlink_to(target)
    [case] = load_suite(suite_dir, "replay", BUILTIN_SURFACE)
    assert (case.id, case.path) == ("a", suite_dir / "a.json")


@pytest.mark.parametrize("where", [".", "suite", "./suite/"])
def test_problems_name_each_fixture_as_its_path_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    directory = tmp_path / "suite" if where != "." else tmp_path
    write_fixture(directory, "a.json", replay_trace(model_name="a"))
    write_fixture(directory, "b.json", "{")
    monkeypatch.chdir(tmp_path)
    suite_dir = Path(where)
    [path, broken] = fixture_paths(suite_dir)
    assert [listed.where for listed in suite._listed(suite_dir)] == [str(path), str(broken)]
    [problem] = refused(suite_dir)
    assert problem.startswith(f"{broken}: $: not valid JSON")
    assert str(broken) in ("b.json", os.path.join("suite", "b.json"))


class _Entry:
    """A listed entry whose type the listing could not say without a `stat`, which fails
    for one of them."""

    def __init__(self, name: str, regular: bool | None) -> None:
        self.name, self._regular = name, regular

    def is_file(self, follow_symlinks: bool = True) -> bool:
        if self._regular is None:
            raise PermissionError("stat refused")
        return self._regular


def test_an_entry_whose_type_cannot_be_asked_is_listed_as_not_regular() -> None:
    # One failing `stat` spoils no other entry's answer: each is asked again on its own.
    found = listing._irregular(
        [_Entry("a.json", True), _Entry("b.json", None), _Entry("c.json", False)]  # type: ignore[list-item]
    )
    assert found == {"b.json", "c.json"}


def test_a_suite_listed_a_few_entries_at_a_time_is_listed_whole_and_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "_CHUNK", 3)
    for n in (7, 3, 9, 1, 5, 0, 8, 2, 6, 4):
        write_fixture(tmp_path, f"f{n}.json", replay_trace(model_name=f"m{n}"))
    (tmp_path / "notes.txt").write_text("not a fixture", "utf-8")
    (tmp_path / ".json").write_text("{}", "utf-8")  # no name: not a fixture
    (tmp_path / "d.json").mkdir()
    (tmp_path / "l.json").symlink_to(tmp_path / "f0.json")
    found = listing.listed(tmp_path)
    assert found.names == sorted([f"f{n}.json" for n in range(10)] + ["d.json", "l.json"])
    assert found.irregular == {"d.json", "l.json"}
    assert found.part(0, 3) == (["d.json", "f0.json", "f1.json"], {"d.json"})
    assert found.part(3, 6) == (["f2.json", "f3.json", "f4.json"], set())
