"""msa.interrupts in this process: signals noted, raised at checkpoints, held, ignored once finished."""
from __future__ import annotations

import os
import signal

import pytest

from msa import interrupts
from msa.interrupts import Interrupted, check, entered_whole, finished, handling, held
from msa.io import open_output


def send(sig: int = signal.SIGTERM) -> None:
    os.kill(os.getpid(), sig)
    signal.pthread_sigmask(signal.SIG_BLOCK, [])  # a syscall: Python runs the handler by the next bytecode


def test_a_signal_is_raised_at_the_next_checkpoint_only() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as caught:
        with handling():
            send()
            for _ in range(100):  # no checkpoint: the handler itself never raises
                pass
            check()
    assert caught.value.exit_status == 143 and isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_held_defers_and_later_signals_wait_for_the_cleanup() -> None:
    with handling():
        with pytest.raises(Interrupted) as caught:
            with held():
                send(signal.SIGINT)
                check()  # held: nothing
        assert caught.value.exit_status == 130
        send()  # while cleaning up after the first: noted nowhere
        check()


def test_finished_runs_ignore_signals() -> None:
    with handling():
        finished()
        send()
        check()


def test_entered_whole_leaves_no_temporary_file(tmp_path, monkeypatch) -> None:
    """A signal during open_output's __enter__ (once the temporary file is made) is raised once it can clean up."""
    from msa.io import output

    real = output._make_temporary

    def make_then_signal(*args, **kwargs):
        made = real(*args, **kwargs)
        send()
        check()  # held: does not raise here, between the file's creation and its cleanup handler
        return made

    monkeypatch.setattr(output, "_make_temporary", make_then_signal)
    with handling():
        with pytest.raises(Interrupted):
            with entered_whole(open_output(tmp_path / "out.fa")):
                pytest.fail("the body must not run")
    assert os.listdir(tmp_path) == []


def test_outside_a_command_nothing_changes() -> None:
    assert not interrupts._state.command
    check()
    with held():
        pass
    finished()
    assert not interrupts._state.finished
