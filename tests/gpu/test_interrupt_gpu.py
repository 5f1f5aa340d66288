"""On the GPU, too, SIGINT and SIGTERM stop a command within a second at any moment, with exit
130/143, one line and no file: between kernel launches the run reaches the same checkpoints
(msa.interrupts) as on the CPU. The helpers are tests/cli/test_interrupt.py's."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_interrupt import stop_at_random_moments, synthetic_alignment, timed

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("command", ["align", "tree"])
def test_a_gpu_run_stops_within_a_second(tmp_path: Path, command: str) -> None:
    """2 x 10^4 sequences: the guide tree, the levels on the device and the writing all take
    part of the run, so the random moments fall in each."""
    (tmp_path / "in.fa").write_bytes(synthetic_alignment(20_000, 200, 11).replace(b"-", b""))
    out = tmp_path / ("out.fa" if command == "align" else "out.nwk")
    args = [command, "in.fa", "-o", out.name, "--device", "cuda", "-q"]
    seconds = timed(args, tmp_path)
    out.unlink()
    stop_at_random_moments(args, tmp_path, out, seconds, seed=17)
