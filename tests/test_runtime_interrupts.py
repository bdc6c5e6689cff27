"""`harness.runtime.interrupts`: SIGINT and SIGTERM become `Interrupted`; `held` blocks are
whole."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.runtime import interrupts


@pytest.fixture
def installed() -> Iterator[None]:
    previous = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    interrupts.install()
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_raises_interrupted_with_the_shells_exit_code(
    installed: None, signum: int, code: int
) -> None:
    with pytest.raises(interrupts.Interrupted) as caught:
        signal.raise_signal(signum)
    assert caught.value.signum == signum
    assert caught.value.exit_code == code
    assert isinstance(caught.value, KeyboardInterrupt)


def test_a_held_block_runs_whole_and_the_signal_arrives_after_it(installed: None) -> None:
    done: list[str] = []
    with pytest.raises(interrupts.Interrupted) as caught, interrupts.held():
        signal.raise_signal(signal.SIGTERM)
        done.append("after the signal")
    assert done == ["after the signal"]
    assert caught.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is interrupts._raise  # put back


def test_a_held_block_without_a_signal_changes_nothing(installed: None) -> None:
    with interrupts.held():
        pass
    assert signal.getsignal(signal.SIGINT) is interrupts._raise


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interruption_while_the_command_line_is_read_is_said_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], signum: int, code: int
) -> None:
    from harness import cli

    def importing(argv: object) -> None:  # a Ctrl-C as the reporters' modules are imported
        raise interrupts.Interrupted(signum)

    monkeypatch.setattr(cli, "build_parser", importing)
    assert cli.main(["eval", "run"]) == code
    said = capsys.readouterr().err
    assert (
        said
        == f"zeroclaw eval: interrupted by {signal.Signals(signum).name}; no report was written\n"
    )


def test_a_second_signal_as_an_interruption_is_tidied_up_is_said_once_and_leaves_no_file(
    installed: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A CI runner follows its SIGINT with a SIGTERM: the second cut the tidying up short
    # (a traceback, and the report's temporary file left beside it).
    from harness import cli
    from harness.io.atomic import ReportFiles

    report = tmp_path / "report.json"
    report.write_text("previous", encoding="utf-8")

    def interrupted(command: cli.Invocation) -> int:  # a Ctrl-C as the report is staged
        command.files.stage(command.files.plan(report), b"{}")
        raise interrupts.Interrupted(signal.SIGINT)

    tidy = ReportFiles.abort

    def abort_under_a_second_signal(files: ReportFiles) -> None:
        signal.raise_signal(signal.SIGTERM)
        tidy(files)

    monkeypatch.setitem(cli._ACTIONS, "run", interrupted)
    monkeypatch.setattr(ReportFiles, "abort", abort_under_a_second_signal)
    try:
        code = cli.main(["eval", "run"])
    except KeyboardInterrupt:
        pytest.fail("the second signal went through the command line")
    assert code == 130
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    assert report.read_text(encoding="utf-8") == "previous"
    assert capsys.readouterr().err == (
        "zeroclaw eval: interrupted by SIGINT; not written (any previous file left as it "
        f"was): {report}\n"
    )
    assert signal.getsignal(signal.SIGTERM) is interrupts._raise  # put back
