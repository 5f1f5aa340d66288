"""Progress reporting stays off stdout and off entirely when quiet."""
from __future__ import annotations

import pytest

from msa import progress


def test_notes_go_to_stderr_unless_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    progress.Progress(quiet=False).note("aligned 3 sequences")
    progress.Progress(quiet=True).note("hidden")
    out, err = capsys.readouterr()
    assert out == "" and err == "msa: aligned 3 sequences\n"


def test_stages_report_through_current() -> None:
    reporter = progress.Progress(quiet=True)
    assert progress.current() is not reporter
    with reporter.running():
        assert progress.current() is reporter
        with progress.current().stage("aligning", total=3) as advance:
            advance(3)
    assert progress.current() is not reporter


def test_verbose_stages_leave_their_time_unless_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    for quiet, verbose in ((False, True), (True, True), (False, False)):
        with progress.Progress(quiet=quiet, verbose=verbose).running() as reporter:
            with reporter.stage("guide tree"):
                pass
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("msa: guide tree (") and err.count("\n") == 1
