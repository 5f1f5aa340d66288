"""Hostile inputs and hostile surroundings: each class of failure forced on a real ``python -m msa``.

Every failure ends in exactly one ``msa: error:`` line (control characters escaped), a
non-zero exit and no traceback; a signal stops a run that waits on a read (130/143);
inputs are read with a bound; temporary outputs fit the name limit and carry a marker
by which a later run tells a dead run's leftovers from a live run's files; gzip output
is reproducible.
"""
from __future__ import annotations

import gzip
import importlib.util
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FASTA = b">a\nMKVLAAGIVG\n>b\nMKVLGIVG\n>c\nMKLAAGIV\n>d\nMRVLAAGLVG\n"
#: An address-space limit that a run of a small input fits, but not a gigabyte of text (bytes).
ADDRESS_SPACE = 2 << 30

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, /proc, rlimits")
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="Dask is not installed")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NUMBA_NUM_THREADS", "2")
    env.update(extra)
    return env


def _limit_address_space(nbytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    return apply


def msa(*args: object, cwd: Path, env: dict[str, str] | None = None, preexec=None, timeout: float = 300,
        stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "msa", *map(str, args)], cwd=cwd, env=env or _env(), preexec_fn=preexec,
        input=stdin, capture_output=True, timeout=timeout,
    )


def one_error(result: subprocess.CompletedProcess[bytes]) -> str:
    """The one line of a failed run (a non-zero exit, nothing else on stderr, no traceback)."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode not in (0, None) and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("msa: error: "), err
    return lines[0]


def parts(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".part"))


def gzip_bomb(path: Path, megabytes: int) -> None:
    """A valid FASTA record of ``megabytes`` MB of residues in a small multi-member gzip file."""
    block = gzip.compress((b"A" * 59 + b"\n") * (1 << 14))  # 0.94 MiB of text
    with open(path, "wb") as fh:
        fh.write(gzip.compress(b">bomb\n"))
        for _ in range(megabytes * (1 << 20) // ((1 << 14) * 60)):
            fh.write(block)


# --- 1. inputs read with a bound -------------------------------------------------------------


def test_a_gzip_bomb_is_streamed_and_stopped_at_the_limit(tmp_path: Path) -> None:
    """200 MB of text in a ~0.3 MB gzip file, read with a 16 MB limit: refused on the way,
    naming the input and the limit, without holding the whole text."""
    import tracemalloc

    from msa.io import InputError
    from msa.io.fasta import read_input

    bomb = tmp_path / "bomb.fa.gz"
    gzip_bomb(bomb, 200)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            read_input(bomb, limit=16 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(bomb) in str(caught.value) and f"{16 << 20:,} bytes" in str(caught.value)
    assert peak < 64 << 20, peak


def test_the_limit_follows_the_memory_free_to_msa(tmp_path: Path) -> None:
    """1.5 GB of text under a 2 GB address space: one line naming the input and its limit."""
    gzip_bomb(tmp_path / "bomb.fa.gz", 1536)
    line = one_error(msa("align", "bomb.fa.gz", "-o", "out.fa", cwd=tmp_path, preexec=_limit_address_space(ADDRESS_SPACE)))
    assert "bomb.fa.gz: more than" in line and "the limit of one input" in line, line
    assert os.listdir(tmp_path) == ["bomb.fa.gz"]


def test_dev_zero_is_one_line(tmp_path: Path) -> None:
    line = one_error(msa("align", "/dev/zero", cwd=tmp_path, preexec=_limit_address_space(ADDRESS_SPACE)))
    assert line == "msa: error: /dev/zero: binary data, not FASTA (byte 0x00 on line 1)"


def test_a_family_over_the_limit_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "good.fa").write_bytes(FASTA)
    gzip_bomb(tmp_path / "bomb.fa.gz", 1536)
    result = msa("align", "bomb.fa.gz", "good.fa", "-O", "out", "--device", "cpu", cwd=tmp_path,
                 preexec=_limit_address_space(ADDRESS_SPACE))
    err = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in err, err
    assert "msa: error: bomb.fa.gz: more than" in err and "msa: error: 1 of 2 families failed" in err, err
    assert sorted(os.listdir(tmp_path / "out")) == ["good.fa"]


def test_a_memory_error_fails_its_family_only(tmp_path: Path, monkeypatch) -> None:
    from msa.io import fasta
    from msa.params import AlignParams
    from msa.run import plan_run, run_families

    for name in ("a.fa", "b.fa"):
        (tmp_path / name).write_bytes(FASTA)
    real = fasta.parse_fasta

    def parse(data, label="input"):
        if label.endswith("a.fa"):
            raise MemoryError()
        return real(data, label)

    monkeypatch.setattr(fasta, "parse_fasta", parse)
    summary = run_families(plan_run([tmp_path / "a.fa", tmp_path / "b.fa"], tmp_path / "out"), AlignParams(device="cpu"))
    assert [r.status for r in summary.results] == ["failed", "done"]
    assert summary.results[0].error == f"{tmp_path / 'a.fa'}: MemoryError"


# --- 2. error paths ----------------------------------------------------------------------------


def test_numba_threads_zero_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    line = one_error(msa("align", "x.fa", cwd=tmp_path, env=_env(NUMBA_NUM_THREADS="0")))
    assert "Number of threads" in line and "cannot import name" not in line, line


@pytest.mark.parametrize("megabytes", [150, 300, 450])
def test_an_address_space_limit_is_one_line_or_a_whole_run(tmp_path: Path, megabytes: int) -> None:
    """Under an address-space limit a run either finishes or fails with one line, leaving no
    output; which one depends on what this host's imports map (150 MB is below any)."""
    (tmp_path / "x.fa").write_bytes(FASTA)
    result = msa("align", "x.fa", "-o", "out.fa", cwd=tmp_path, preexec=_limit_address_space(megabytes << 20))
    if result.returncode == 0 and megabytes > 150:
        assert "Traceback" not in result.stderr.decode() and (tmp_path / "out.fa").read_bytes().count(b">") == 4
        return
    line = one_error(result)
    assert "cannot import name" not in line, line
    assert os.listdir(tmp_path) == ["x.fa"]


def test_a_closed_stdout_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    line = one_error(msa("align", "x.fa", cwd=tmp_path, preexec=lambda: os.close(1)))
    assert line.startswith("msa: error: stdout: "), line


# --- 3. signals while a read waits --------------------------------------------------------------


def _stopped_while_reading(args: list[str], cwd: Path, signum: int, stdin=None) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "msa", *args], cwd=cwd, env=_env(), stdin=stdin,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until it waits in the read (or open) of its input
            wchan = Path(f"/proc/{proc.pid}/wchan").read_text()
            stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] == "S" and ("pipe" in wchan or "fifo" in wchan):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=10)  # on main it waits for the writer: a timeout
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err.decode()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_run_waiting_for_a_fifo_writer(tmp_path: Path, signum: int) -> None:
    os.mkfifo(tmp_path / "in.fa")
    status, err = _stopped_while_reading(["align", "in.fa", "-o", "out.fa"], tmp_path, signum)
    assert status == 128 + signum and err == "msa: interrupted\n", err
    assert os.listdir(tmp_path) == ["in.fa"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_run_waiting_on_stdin(tmp_path: Path, signum: int) -> None:
    read_end, write_end = os.pipe()  # `sleep 60 | msa align -`: a writer that says nothing
    try:
        status, err = _stopped_while_reading(["align", "-", "-o", "out.fa"], tmp_path, signum, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert status == 128 + signum and err == "msa: interrupted\n", err
    assert os.listdir(tmp_path) == []


# --- 4. temporary names ------------------------------------------------------------------------


def test_an_output_name_of_250_bytes_is_written(tmp_path: Path) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    name = "n" * 247 + ".fa"
    result = msa("align", "x.fa", "-o", name, "--device", "cpu", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / name).read_bytes().startswith(b">a\n") and parts(tmp_path) == []


def test_temporary_names_carry_the_process_and_fit_the_name_limit(tmp_path: Path) -> None:
    from msa.io.output import is_stale, temporary_name

    name = os.path.basename(temporary_name(tmp_path / ("é" * 127), "abcd1234"))
    assert len(os.fsencode(name)) <= os.pathconf(tmp_path, "PC_NAME_MAX")
    assert f"-{os.getpid()}-" in name and name.endswith("-abcd1234.part")
    assert not is_stale(name)  # this process is alive
    assert not is_stale(".x.fa.3f2a91bc.part")  # no marker (another program's, an older msa's)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert is_stale(name.replace(f"-{os.getpid()}-", f"-{int(dead.stdout)}-"))


_KILLED_WRITER = """
import os, signal, sys
from msa.io import open_output
with open_output(sys.argv[1]) as out:
    out.write(b">a\\nMK")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_part_files_go_with_the_next_run(tmp_path: Path) -> None:
    """A run SIGKILLed while writing leaves its .part; a --skip-existing rerun that has nothing
    left to align removes it, and leaves another program's hidden .part file alone."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.fa").write_bytes(FASTA)
    (tmp_path / "in" / "y.fa").write_bytes(FASTA)
    first = msa("align", "in", "-O", "out", "--device", "cpu", "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr.decode()
    (tmp_path / "out" / "y.fa").unlink()
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, "out/y.fa"], cwd=tmp_path, env=_env())
    assert killed.returncode == -signal.SIGKILL and len(parts(tmp_path / "out")) == 1
    (tmp_path / "out" / "y.fa").write_bytes(b"done by hand\n")
    (tmp_path / "out" / ".x.fa.3f2a91bc.part").write_bytes(b"not msa's")
    again = msa("align", "in", "-O", "out", "--skip-existing", "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stderr.decode()
    assert parts(tmp_path / "out") == [".x.fa.3f2a91bc.part"]


@needs_dask
def test_a_dask_run_removes_only_the_files_it_made(tmp_path: Path) -> None:
    """A live run's temporary file and another program's survive a Dask run into their folder;
    Dask's scratch space goes with the run."""
    from msa.io.output import temporary_name

    (tmp_path / "x.fa").write_bytes(FASTA)
    (tmp_path / "out").mkdir()
    live = Path(temporary_name(tmp_path / "out" / "x.fa", "0live000"))  # this test process: alive
    live.write_bytes(b"being written")
    other = tmp_path / "out" / ".x.fa.3f2a91bc.part"
    other.write_bytes(b"not msa's")
    (tmp_path / "tmp").mkdir()
    result = msa("align", "x.fa", "-O", "out", "--device", "cpu", "--workers", "1", "-q", cwd=tmp_path,
                 env=_env(TMPDIR=str(tmp_path / "tmp")))
    assert result.returncode == 0, result.stderr.decode()
    assert parts(tmp_path / "out") == sorted([live.name, other.name])
    assert os.listdir(tmp_path / "tmp") == []


# --- 5. error lines and gzip output ------------------------------------------------------------


def test_control_characters_in_names_are_escaped(tmp_path: Path) -> None:
    bad = "bad\nname\x1b[31m.fa"
    (tmp_path / bad).write_bytes(b"not fasta\n")
    line = one_error(msa("align", bad, cwd=tmp_path))
    assert line == "msa: error: bad\\nname\\x1b[31m.fa: not FASTA (no line starts with '>')", line
    (tmp_path / "good.fa").write_bytes(FASTA)
    result = msa("align", bad, "good.fa", "-O", "out", "--device", "cpu", "-q", cwd=tmp_path)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 1 and lines == [
        "msa: error: bad\\nname\\x1b[31m.fa: not FASTA (no line starts with '>')",
        "msa: error: 1 of 2 families failed",
    ], lines


def test_gzip_output_is_reproducible_and_its_level_chosen(tmp_path: Path) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    for level in ("1", "6", "9"):
        result = msa("align", "x.fa", "-o", f"x{level}.fa.gz", "--gzip-level", level, "-q", cwd=tmp_path)
        assert result.returncode == 0, result.stderr.decode()
    head = (tmp_path / "x6.fa.gz").read_bytes()[:10]
    assert head[3] == 0 and head[4:8] == b"\0\0\0\0"  # no name, no time stamp: the same bytes every time
    assert (tmp_path / "x1.fa.gz").read_bytes()[8] == 4 and (tmp_path / "x9.fa.gz").read_bytes()[8] == 2  # XFL
    assert gzip.decompress((tmp_path / "x1.fa.gz").read_bytes()) == gzip.decompress((tmp_path / "x9.fa.gz").read_bytes())
    default = msa("align", "x.fa", "-o", "d.fa.gz", "-q", cwd=tmp_path)
    assert default.returncode == 0 and (tmp_path / "d.fa.gz").read_bytes() == (tmp_path / "x6.fa.gz").read_bytes()


# --- 6. a Dask scheduler that does not answer --------------------------------------------------


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never says a word; its address."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


@needs_dask
def test_a_silent_scheduler_is_one_line_within_the_timeout(tmp_path: Path, silent_server: str) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    line = one_error(msa("align", "x.fa", "-O", "out", "--scheduler", silent_server, "--connect-timeout", "1",
                         cwd=tmp_path, timeout=60))
    assert line == f"msa: error: {silent_server}: no answer within 1 s", line


@needs_dask
def test_a_refused_scheduler_port_fails_at_once(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    (tmp_path / "x.fa").write_bytes(FASTA)
    line = one_error(msa("align", "x.fa", "-O", "out", "--scheduler", address, cwd=tmp_path, timeout=25))
    assert line == f"msa: error: {address}: Connection refused", line


@needs_dask
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_run_waiting_for_its_scheduler(tmp_path: Path, silent_server: str, signum: int) -> None:
    (tmp_path / "x.fa").write_bytes(FASTA)
    proc = subprocess.Popen(
        [sys.executable, "-m", "msa", "align", "x.fa", "-O", "out", "--scheduler", silent_server,
         "--connect-timeout", "100"], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        time.sleep(4)  # imports done, waiting for the answer
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signum and err.decode() == "msa: interrupted\n", err
