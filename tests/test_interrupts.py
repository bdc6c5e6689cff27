"""`harness.interrupts`: SIGINT and SIGTERM become `Interrupted`; `held` blocks are whole."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from harness import interrupts


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

    def importing() -> None:  # a Ctrl-C as the reporters' modules are imported
        raise interrupts.Interrupted(signum)

    monkeypatch.setattr(cli, "build_parser", importing)
    assert cli.main(["eval", "run"]) == code
    said = capsys.readouterr().err
    assert (
        said
        == f"zeroclaw eval: interrupted by {signal.Signals(signum).name}; no report was written\n"
    )
