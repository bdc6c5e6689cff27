"""`harness.io.atomic`: report files are written whole or not at all."""

from __future__ import annotations

import io
import os
import signal
import stat
from pathlib import Path

import pytest
from conftest import Cli, green_project

from harness.io import atomic
from harness.io.atomic import ReportWriteError, copy_into, write_atomic

# --- atomic report files --------------------------------------------------------------------


def test_write_atomic_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "deep" / "report.json"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]


def test_write_atomic_refuses_when_parent_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "reports"
    blocker.write_text("not a directory")
    with pytest.raises(ReportWriteError, match="cannot write report"):
        write_atomic(blocker / "junit.xml", b"<x/>")
    assert blocker.read_text() == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_write_atomic_leaves_no_partial_file_when_target_is_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.mkdir()
    with pytest.raises(ReportWriteError, match=r"junit\.xml"):
        write_atomic(target, b"<x/>")
    assert target.is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"old, complete")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(ReportWriteError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old, complete"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


# --- the report files of one run --------------------------------------------------------------


def test_files_renamed_into_place_are_not_cut_in_half_by_a_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT arriving between the two renames is delivered after both: the JUnit and JSON
    files on disk always come from the same run."""
    junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
    junit.write_bytes(b"old junit")
    report.write_bytes(b"old json")
    files = atomic.ReportFiles()
    for path, data in ((junit, b"new junit"), (report, b"new json")):
        files.stage(files.plan(path), data)
    replace = os.replace
    calls: list[object] = []

    def interrupted_replace(src: str, dst: str) -> None:
        replace(src, dst)
        calls.append(dst)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(atomic.os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        files.commit()
    assert len(calls) == 2
    assert (junit.read_bytes(), report.read_bytes()) == (b"new junit", b"new json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.json"]


def test_an_aborted_run_leaves_no_temporary_file_and_the_old_reports(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.write_bytes(b"old")
    files = atomic.ReportFiles()
    files.stage(files.plan(target), b"new")
    assert len(list(tmp_path.glob("*.partial"))) == 1
    files.abort()
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]
    assert target.read_bytes() == b"old"
    assert files.account() == [f"not written (any previous file left as it was): {target}"]


def test_a_symlink_is_never_written_through_nor_replaced(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("precious")
    link = tmp_path / "junit.xml"
    link.symlink_to(outside)
    with pytest.raises(ReportWriteError, match="symbolic link"):
        atomic.ReportFiles().plan(link)
    with pytest.raises(ReportWriteError, match="symbolic link"):
        write_atomic(link, b"<x/>")
    assert link.is_symlink() and outside.read_text() == "precious"


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_character_device_is_written_through_not_replaced(tmp_path: Path) -> None:
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the null device
    write_atomic(device, b"<x/>")
    assert stat.S_ISCHR(device.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    with pytest.raises(ReportWriteError, match="not a regular file"):
        write_atomic(fifo, b"<x/>")


def test_one_file_for_two_reports_is_a_usage_error(tmp_path: Path) -> None:
    files = atomic.ReportFiles()
    files.plan(tmp_path / "r.xml")
    with pytest.raises(atomic.ReportPathError, match="named for two reports") as caught:
        files.plan(tmp_path / "sub" / ".." / "r.xml")
    assert caught.value.exit_code == 2


def test_staging_interrupted_by_sigterm_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.runtime import interrupts

    def terminated(fd: int) -> None:
        signal.raise_signal(signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    interrupts.install()
    try:
        monkeypatch.setattr(atomic.os, "fsync", terminated)
        files = atomic.ReportFiles()
        with pytest.raises(interrupts.Interrupted):
            files.stage(files.plan(tmp_path / "junit.xml"), b"<x/>")
        files.abort()
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, previous)
    assert list(tmp_path.iterdir()) == []


# --- a report never replaces what the run reads ---------------------------------------------


def _baselined(root: Path, run_cli: Cli) -> Path:
    baseline = root / "baseline.json"
    assert run_cli("eval", "run", "--write-baseline", baseline, cwd=root).returncode == 0
    return baseline


@pytest.mark.parametrize(
    "option", ["--json-report", "--junit-xml", "--summary", "--html", "--history"]
)
def test_a_report_aimed_at_the_baseline_is_refused_before_the_run(
    tmp_path: Path, run_cli: Cli, option: str
) -> None:
    root = green_project(tmp_path)
    baseline = _baselined(root, run_cli)
    before = baseline.read_bytes()
    result = run_cli(
        "eval", "run", "--baseline", "baseline.json", option, "baseline.json", cwd=root
    )
    assert result.returncode == 2, result
    assert "baseline.json: is the --baseline file" in result.stderr
    assert baseline.read_bytes() == before


def test_a_hard_link_to_the_baseline_is_the_baseline(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    baseline = _baselined(root, run_cli)
    before = baseline.read_bytes()
    os.link(baseline, root / "report.json")
    result = run_cli(
        "eval", "run", "--baseline", baseline, "--json-report", "report.json", cwd=root
    )
    assert result.returncode == 2, result
    assert "report.json: is the --baseline file" in result.stderr
    assert baseline.read_bytes() == before


def test_writing_the_new_baseline_over_the_one_compared_with_is_a_refresh(
    tmp_path: Path, run_cli: Cli
) -> None:
    root = green_project(tmp_path)
    _baselined(root, run_cli)
    result = run_cli(
        "eval", "run", "--baseline", "baseline.json", "--write-baseline", "baseline.json", cwd=root
    )
    assert result.returncode == 0, result


def test_a_report_aimed_at_a_fixture_is_refused_and_the_fixture_kept(
    tmp_path: Path, run_cli: Cli
) -> None:
    root = green_project(tmp_path)
    fixture = root / "evals" / "regression" / "a_echo.json"
    before = fixture.read_bytes()
    result = run_cli("eval", "run", "--junit-xml", fixture, cwd=root)
    assert result.returncode == 2, result
    assert "a_echo.json: a .json file in the suite directory" in result.stderr
    assert fixture.read_bytes() == before


def test_a_hard_link_to_a_fixture_outside_the_suite_is_the_fixture(
    tmp_path: Path, run_cli: Cli
) -> None:
    root = green_project(tmp_path)
    fixture = root / "evals" / "regression" / "a_echo.json"
    before = fixture.read_bytes()
    os.link(fixture, root / "junit.xml")
    result = run_cli("eval", "run", "--junit-xml", "junit.xml", cwd=root)
    assert result.returncode == 2, result
    assert "junit.xml: is a fixture of the suite" in result.stderr
    assert fixture.read_bytes() == before


def test_a_new_json_report_in_the_suite_would_be_a_case_next_time(
    tmp_path: Path, run_cli: Cli
) -> None:
    root = green_project(tmp_path)
    result = run_cli("eval", "run", "--json-report", "evals/regression/report.json", cwd=root)
    assert result.returncode == 2, result
    assert "is one of its fixtures" in result.stderr
    assert not (root / "evals" / "regression" / "report.json").exists()
    # Beside the suite, not in it, is where reports go; a non-JSON file there is no case.
    ok = run_cli("eval", "run", "--junit-xml", "evals/regression/junit.xml", cwd=root)
    assert ok.returncode == 0, ok


def test_a_report_aimed_at_the_fixture_run_alone_is_refused(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    fixture = root / "evals" / "regression" / "b_hi.json"
    before = fixture.read_bytes()
    result = run_cli("eval", "run", "--suite", fixture, "--summary", fixture, cwd=root)
    assert result.returncode == 2, result
    assert fixture.read_bytes() == before


def test_a_report_aimed_at_the_configuration_is_refused(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    before = (root / "pyproject.toml").read_bytes()
    result = run_cli("eval", "run", "--summary", "pyproject.toml", cwd=root)
    assert result.returncode == 2, result
    assert "pyproject.toml: is the configuration file" in result.stderr
    assert (root / "pyproject.toml").read_bytes() == before


def test_a_report_name_holding_a_nul_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    # The command line cannot pass a NUL; the Python API (Output values, run_suite) can.
    with pytest.raises(atomic.ReportPathError, match="cannot hold a NUL") as caught:
        atomic.ReportFiles().plan(tmp_path / "r\0.json")
    assert caught.value.exit_code == 2
    with pytest.raises(atomic.ReportPathError, match="cannot hold a NUL"):
        write_atomic(tmp_path / "a\0b", b"{}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kernel", [True, False], ids=["copy_file_range", "no copy_file_range"])
def test_copy_into_appends_the_range_with_or_without_the_kernels_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: bool
) -> None:
    # `os.copy_file_range` is Linux's alone: elsewhere every spooled report was a traceback.
    if not kernel:
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    source = tmp_path / "source"
    source.write_bytes(b"0123456789" * 1000)
    fd = os.open(source, os.O_RDONLY)
    try:
        with (tmp_path / "out").open("wb") as out:
            out.write(b"head:")
            copy_into(out, fd, 5, 9990)
            out.write(b":tail")
        memory = io.BytesIO(b"head:")
        memory.seek(0, io.SEEK_END)
        copy_into(memory, fd, 5, 10)
    finally:
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == b"head:" + source.read_bytes()[5:9995] + b":tail"
    assert memory.getvalue() == b"head:5678901234"


def test_a_spool_holds_bytes_of_other_files_where_they_are_and_copies_them_in_order(
    tmp_path: Path,
) -> None:
    worker = tmp_path / "parts"
    worker.write_bytes(b"xxAAAAyyBBBzz")
    spool = atomic.Spool(tmp_path)
    with open(worker, "rb", buffering=0) as held:
        spool.write(b"head,")
        spool.refer(held, 2, 4)
        spool.write(b",")
        spool.refer(held, 8, 3)
        spool.refer(held, 0, 0)  # nothing: nothing held
        spool.write(b",tail")
        worker.unlink()  # its files go at the end of the pool: the spool holds them open
        assert spool.size == len(b"head,AAAA,BBB,tail")
        # Nothing of them copied into the spool's own file on the way.
        assert spool._own == len(b"head,,,tail")
        with pytest.raises(ValueError, match="copied whole"):
            spool.slices([(0, 4)])
        for _ in range(2):  # copied again, the same
            out = io.BytesIO()
            spool.copy_to(out)  # type: ignore[arg-type]  # a binary stream, as a file is
            assert out.getvalue() == b"head,AAAA,BBB,tail"
        copied = tmp_path / "report"
        with open(copied, "wb") as file:
            atomic.write_parts(file, [b"[", spool, b"]"])
        assert copied.read_bytes() == b"[head,AAAA,BBB,tail]"
        only_held = atomic.Spool(tmp_path)
        only_held.refer(held, 2, 4)
        out = io.BytesIO()
        only_held.copy_to(out)  # type: ignore[arg-type]
        assert out.getvalue() == b"AAAA"
    spool.close()
    only_held.close()


def test_a_spool_holds_few_files_open_and_copies_in_the_bytes_of_any_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every worker a death brings writes files of its own: held open for the run, a suite
    # whose cases kill their workers would run out of file descriptors.
    monkeypatch.setattr(atomic, "REFERRED_FILES", 3)
    spool = atomic.Spool(tmp_path)
    files, expected = [], b""
    for k in range(6):
        path = tmp_path / f"parts-{k}"
        path.write_bytes(b"..%d%d%d.." % (k, k, k))
        files.append(open(path, "rb", buffering=0))  # noqa: SIM115 (closed below)
        spool.refer(files[-1], 2, 3)
        spool.refer(files[-1], 3, 1)  # a file held already stays held
        spool.write(b",")
        expected += b"%d%d%d%d," % (k, k, k, k)
    held = {id(file) for _, file, _, _ in spool._held}
    assert held == {id(f) for f in files[:3]}
    assert spool.size == len(expected)
    for file in files[3:]:
        file.close()  # the bytes of the files past the first three were copied in already
    out = io.BytesIO()
    spool.copy_to(out)  # type: ignore[arg-type]
    assert out.getvalue() == expected
    for file in files[:3]:
        file.close()
    spool.close()
    assert (spool.size, spool._held) == (0, [])
    out = io.BytesIO()
    spool.copy_to(out)  # type: ignore[arg-type]  # closed, it holds nothing
    assert out.getvalue() == b""


def test_a_suite_is_listed_for_its_fixtures_only_when_a_planned_report_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "evals"
    suite.mkdir()
    (suite / "case.json").write_text("{}", "utf-8")
    listed: list[Path] = []
    real = atomic._fixture_identities

    def listing(path: Path) -> set[tuple[int, int] | None]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(atomic, "_fixture_identities", listing)
    inputs = [atomic.RunInput(suite, "a fixture of the suite", suite=True)]
    files = atomic.ReportFiles()
    files.plan(tmp_path / "new.json")
    files.refuse_inputs(inputs)  # a file still to be made is no fixture
    assert listed == []
    files = atomic.ReportFiles()
    os.link(suite / "case.json", tmp_path / "linked.json")
    files.plan(tmp_path / "linked.json")
    with pytest.raises(atomic.ReportPathError, match="which the run reads"):
        files.refuse_inputs(inputs)
    assert listed == [suite]
