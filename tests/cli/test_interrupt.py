"""Real ``python -m msa align`` runs stopped by SIGINT or SIGTERM, and runs racing for one output.

A stopped run exits 130 (SIGINT) or 143 (SIGTERM) with the one line
``msa: interrupted`` and leaves no output and no temporary ``.part`` file; a
signal that comes once the output is whole lets the run finish (exit 0, the
output equal to an undisturbed run's). With ``-O`` every output that exists is
complete and equal to the undisturbed run's, and ``--skip-existing`` finishes
the rest. Signals are sent at seeded random moments and right after given
stages end (their ``-v`` lines), once the process has its handlers (read from
/proc, so a signal never lands before Python could catch it).

Three runs writing one ``-o`` path at once leave one complete alignment, equal
to one of them run alone, and no temporary file.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BALIFAM = "datasets/balifam/balifam1000/in"
#: ~2,000 sequences, ~2-3 s of CPU alignment: long enough to be stopped in each stage.
BIG = ("PF00009.1000", "PF00018.1000")
#: A many-family run of ~2 s: one family of ~1 s, then three of a few tenths.
MANY = ("PF00009.1000", "PF14604.1000", "PF00018.1000", "PF00037.1000")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
STAGE_LINE = ("msa: reading (", "msa: guide tree (", "msa: consistency library (", "msa: aligning profiles (", "msa: writing (")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX signals")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NUMBA_NUM_THREADS", "2")
    return env


def start(*args: object, cwd: Path) -> subprocess.Popen[bytes]:
    # SIGINT's default action restored: a background job of a non-interactive shell (CI) ignores
    # it, and Python then keeps ignoring it.
    return subprocess.Popen(
        [sys.executable, "-m", "msa", *map(str, args)], cwd=cwd, env=_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_handlers(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Until the process catches SIGTERM (SigCgt in /proc/PID/status): msa's handlers are in."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            break
        caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.005)


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def parts(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".part"))


@pytest.fixture(scope="module")
def big(shared_dir: Path, tmp_path_factory) -> tuple[Path, bytes, float]:
    """The input, its undisturbed output, and the undisturbed run's wall time."""
    folder = tmp_path_factory.mktemp("big")
    (folder / "big.fa").write_bytes(b"".join((shared_dir / BALIFAM / name).read_bytes() for name in BIG))
    began = time.monotonic()
    proc = start("align", "big.fa", "-o", "ref.fa", "--device", "cpu", "-q", cwd=folder)
    code, err = finish(proc)
    assert code == 0, err
    return folder, (folder / "ref.fa").read_bytes(), time.monotonic() - began


def check_stopped(code: int, err: str, sig: int, folder: Path, output: Path, reference: bytes) -> str:
    """Stopped: 128 + sig, one line, no output, no temporary file. Or finished whole (exit 0)."""
    assert "Traceback" not in err and "Error" not in err, err
    assert not parts(folder), parts(folder)
    if code == 0:
        assert output.read_bytes() == reference
        return "finished"
    assert code == 128 + sig, (code, err)
    lines = [line for line in err.splitlines() if not line.startswith(STAGE_LINE)]
    assert lines == ["msa: interrupted"], err
    assert not output.exists()
    return "stopped"


def test_signals_at_random_moments_leave_no_file(big) -> None:
    folder, reference, seconds = big
    rng = random.Random(13)
    outcomes = []
    for k in range(6):
        sig = SIGNALS[k % 2]
        out = folder / "out.fa"
        proc = start("align", "big.fa", "-o", out.name, "--device", "cpu", "-q", cwd=folder)
        wait_for_handlers(proc)
        time.sleep(rng.uniform(0.0, 0.9 * seconds))
        proc.send_signal(sig)
        code, err = finish(proc)
        outcomes.append(check_stopped(code, err, sig, folder, out, reference))
        out.unlink(missing_ok=True)
    assert outcomes.count("stopped") >= 3, outcomes


def kill_after_line(proc: subprocess.Popen[bytes], prefix: str, sig: int) -> tuple[int, str]:
    """Send ``sig`` as soon as a stderr line starts with ``prefix``; the exit code and stderr."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode()
            lines.append(line)
            if line.startswith(prefix) and proc.poll() is None:
                proc.send_signal(sig)

    reader = threading.Thread(target=read)
    reader.start()
    proc.wait(timeout=120)
    reader.join()
    return proc.returncode, "".join(lines)


@pytest.mark.parametrize(
    ("after", "sig"),
    [("msa: reading (", signal.SIGINT), ("msa: guide tree (", signal.SIGTERM),
     ("msa: aligning profiles (", signal.SIGTERM)],
    ids=["in-tree-SIGINT", "in-alignment-SIGTERM", "in-writing-SIGTERM"],
)
def test_a_signal_in_each_stage_leaves_no_file(big, after: str, sig: int) -> None:
    """Sent when the stage before ends (``-v`` prints it), the signal lands in the next one."""
    folder, reference, _ = big
    out = folder / "out.fa"
    proc = start("align", "big.fa", "-o", out.name, "--device", "cpu", "-v", cwd=folder)
    code, err = kill_after_line(proc, after, sig)
    outcome = check_stopped(code, err, sig, folder, out, reference)
    out.unlink(missing_ok=True)
    if not after.startswith("msa: aligning"):  # writing may end before the signal lands
        assert outcome == "stopped"


@pytest.fixture(scope="module")
def many(shared_dir: Path, tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    folder = tmp_path_factory.mktemp("many")
    (folder / "in").mkdir()
    for name in MANY:
        (folder / "in" / name).write_bytes((shared_dir / BALIFAM / name).read_bytes())
    code, err = finish(start("align", "in", "-O", "ref", "--device", "cpu", "-q", cwd=folder))
    assert code == 0, err
    return folder, {name: (folder / "ref" / f"{name}.fa").read_bytes() for name in MANY}


def check_partial_run(folder: Path, out: str, reference: dict[str, bytes]) -> int:
    """Every output there equals the undisturbed run's, no temporary file; how many there are."""
    names = os.listdir(folder / out)
    assert not [n for n in names if n.endswith(".part") or n.startswith(".")], names
    for name in names:
        assert (folder / out / name).read_bytes() == reference[name.removesuffix(".fa")], name
    return len(names)


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_many_families_stopped_keep_whole_outputs_and_resume(many, sig: int) -> None:
    """Stopped once the first family is written: it stays, whole; the others are absent; a
    --skip-existing run then writes exactly the rest."""
    folder, reference = many
    out = f"out-{sig}"
    proc = start("align", "in", "-O", out, "--device", "cpu", "-v", cwd=folder)
    code, err = kill_after_line(proc, f"msa: in/{MANY[0]}: ", sig)
    assert "Traceback" not in err, err
    assert code == 128 + sig, err
    assert [line for line in err.splitlines() if not line.startswith(STAGE_LINE)][-1] == "msa: interrupted"
    done = check_partial_run(folder, out, reference)
    assert 1 <= done < len(MANY)
    code, err = finish(start("align", "in", "-O", out, "--skip-existing", "--device", "cpu", cwd=folder))
    assert code == 0, err
    assert f"{done} skipped" in err
    assert check_partial_run(folder, out, reference) == len(MANY)


def test_many_families_stopped_at_random_moments(many) -> None:
    folder, reference = many
    rng = random.Random(7)
    for k, sig in enumerate(SIGNALS):
        out = f"rand-{k}"
        proc = start("align", "in", "-O", out, "--device", "cpu", "-q", cwd=folder)
        wait_for_handlers(proc)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(sig)
        code, err = finish(proc)
        assert code in (0, 128 + sig) and "Traceback" not in err, (code, err)
        assert err == ("" if code == 0 else "msa: interrupted\n"), err
        done = check_partial_run(folder, out, reference) if (folder / out).exists() else 0
        assert code != 0 or done == len(MANY)


def test_concurrent_runs_to_one_output_leave_one_whole_alignment(shared_dir: Path, tmp_path: Path) -> None:
    """Three families aligned at once to the same -o, twice: the file is one of them whole."""
    names = ("PF14604.1000", "PF00018.1000", "PF01381.1000")
    singles = {}
    for name in names:
        (tmp_path / name).write_bytes((shared_dir / BALIFAM / name).read_bytes())
        code, err = finish(start("align", name, "-o", f"{name}.ref", "--device", "cpu", "-q", cwd=tmp_path))
        assert code == 0, err
        singles[name] = (tmp_path / f"{name}.ref").read_bytes()
    assert len(set(singles.values())) == len(names)
    for _ in range(2):
        procs = [start("align", name, "-o", "same.fa", "--device", "cpu", "-q", cwd=tmp_path) for name in names]
        for proc in procs:
            code, err = finish(proc)
            assert code == 0, err
        assert (tmp_path / "same.fa").read_bytes() in singles.values()
        assert not parts(tmp_path) and not [n for n in os.listdir(tmp_path) if n.startswith(".")]


#: The most seconds from a signal to the end of a stopped run.
LATENCY_S = 1.0


def synthetic_alignment(n: int, width: int, seed: int) -> bytes:
    """Aligned FASTA of ``n`` random protein rows of ``width`` columns, a third of them gaps."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)[rng.integers(0, 20, (n, width))]
    rows[rng.random((n, width)) < 0.3] = ord("-")
    rows[:, 0] = ord("M")
    lines = np.full((n, width + 1), ord("\n"), dtype=np.uint8)
    lines[:, :width] = rows
    return b"".join(b">s%d\n%s" % (i, line.tobytes()) for i, line in enumerate(lines))


def stop_at_random_moments(args: list[str], folder: Path, output: Path | None, seconds: float, seed: int,
                           runs: int = 4) -> list[float]:
    """``msa ARGS`` signalled at seeded random moments of its ``seconds``: each run stopped (130/143,
    ``msa: interrupted``, no output, no temporary file) within LATENCY_S, or finished whole. A run
    that finished whole before its signal shortens ``seconds`` to when it was signalled, and up to ``runs``
    more are tried until one is stopped (a loaded machine's timed run can be twice as long as the
    next ones). The latencies of the stopped runs."""
    rng = random.Random(seed)
    latencies: list[float] = []
    for k in range(2 * runs):
        if k >= runs and latencies:
            break
        sig = SIGNALS[k % 2]
        if output is not None:
            output.unlink(missing_ok=True)  # a run before this one may have finished whole
        proc = start(*args, cwd=folder)
        wait_for_handlers(proc)
        began = time.monotonic()
        time.sleep(rng.uniform(0.1, 0.8) * seconds)
        sent = time.monotonic()
        proc.send_signal(sig)
        code, err = finish(proc)
        assert "Traceback" not in err and not parts(folder), err
        if code == 0:
            seconds = min(seconds, time.monotonic() - began)
            continue
        latencies.append(time.monotonic() - sent)
        assert code == 128 + sig and err == "msa: interrupted\n", (code, err)
        assert output is None or not output.exists()
    assert latencies and max(latencies) < LATENCY_S, latencies
    return latencies


def timed(args: list[str], folder: Path) -> float:
    """Seconds of an undisturbed run, once compiled code is cached (the second of two runs)."""
    for _ in range(2):
        began = time.monotonic()
        code, err = finish(start(*args, cwd=folder))
        assert code == 0, err
    return time.monotonic() - began


@pytest.fixture(scope="module")
def alignments(tmp_path_factory) -> Path:
    """Two alignments of 5 x 10^4 rows (scored against itself, merged with the other) and a
    few new sequences (add)."""
    folder = tmp_path_factory.mktemp("alignments")
    (folder / "a.fa").write_bytes(synthetic_alignment(50_000, 300, 1))
    (folder / "b.fa").write_bytes(synthetic_alignment(50_000, 300, 2))
    (folder / "new.fa").write_bytes(b">n1\nMKVLAAGIVGLLLAAGCSS\n>n2\nMKKLLPTAAAGLLLLAAQPAMA\n")
    return folder


def test_score_stops_within_a_second(alignments: Path) -> None:
    args = ["score", "a.fa", "a.fa"]
    stop_at_random_moments(args, alignments, None, timed(args, alignments), seed=3)


@pytest.mark.parametrize("command", ["add", "merge"])
def test_add_and_merge_stop_within_a_second(alignments: Path, command: str) -> None:
    out = alignments / f"{command}.fa"
    args = [command, "a.fa", "new.fa" if command == "add" else "b.fa", "-o", out.name, "--device", "cpu", "-q"]
    seconds = timed(args, alignments)
    out.unlink()
    stop_at_random_moments(args, alignments, out, seconds, seed=5)


def test_tree_stops_within_a_second(tmp_path: Path) -> None:
    """PartTree over 2 x 10^4 sequences (groups of up to 2,000 get Prim's exact tree): its long
    kernels run a slice of their pairs at a time."""
    (tmp_path / "in.fa").write_bytes(synthetic_alignment(20_000, 200, 4).replace(b"-", b""))
    args = ["tree", "in.fa", "-o", "t.nwk", "--device", "cpu", "--mst-tree-max", "2000", "-q"]
    seconds = timed(args, tmp_path)
    (tmp_path / "t.nwk").unlink()
    stop_at_random_moments(args, tmp_path, tmp_path / "t.nwk", seconds, seed=7)
