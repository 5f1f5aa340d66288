"""msa's warm server (msa._runtime.server): a run it serves writes the bytes, status and lines a
run in its own process writes; signals reach the command; a server is started after a run that
found none, holds none of its caller's descriptors, and leaves when idle or told to.

Each test has a private runtime folder (``XDG_RUNTIME_DIR``) and stops its server at the end.
The first run of a test runs in its own process and starts the server (``subprocess.run``
returning at all shows the server holds none of the test's pipes).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from msa._runtime import client, server

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "datasets" / "examples" / "example.fa"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the server runs on Linux only")


@pytest.fixture
def served(tmp_path: Path):
    """The environment of runs that use a server of their own; the server is stopped after."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NUMBA_NUM_THREADS", "2")
    env.update(MSA_SERVER="on", XDG_RUNTIME_DIR=str(runtime), MSA_SERVER_IDLE="300")
    yield env
    for lock in (runtime / "msa").glob("*.lock"):
        pid = int(lock.read_text() or 0)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGTERM)
            _until(lambda: not _alive(pid), 30)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _until(done, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def msa(env: dict[str, str], *args: object, cwd: Path, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "msa", *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          timeout=300, **kw)


def socket_of(env: dict[str, str]) -> Path:
    folder = Path(env["XDG_RUNTIME_DIR"]) / "msa"
    _until(lambda: any(folder.glob("*.sock")), 60)
    return next(folder.glob("*.sock"))


def wait_for_server(env: dict[str, str]) -> int:
    """Until the server answers; its pid."""
    path = socket_of(env)

    def answers() -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            try:
                s.connect(str(path))
                return s.makefile("rb").readline() == b"ready\n"
            except OSError:
                return False

    _until(answers, 60)
    return int(Path(str(path) + ".lock").read_text())


def test_a_served_run_writes_what_a_run_of_its_own_writes(served, tmp_path):
    first = msa(served, "align", EXAMPLE, "-o", "own.fa", "-v", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert b"warm server" not in first.stderr
    wait_for_server(served)
    # relative paths (the client's folder), a umask of its own, -v's lines on the client's stderr
    again = msa(served, "align", "own.fa", "-o", "served.fa", "-v", "--refine", "off", cwd=tmp_path,
                preexec_fn=lambda: os.umask(0o077))
    alone = msa({**served, "MSA_SERVER": "off"}, "align", "own.fa", "-o", "alone.fa", "-v", "--refine", "off",
                cwd=tmp_path, preexec_fn=lambda: os.umask(0o077))
    assert again.returncode == alone.returncode == 0, again.stderr
    assert b"run by msa's warm server" in again.stderr and b"warm server" not in alone.stderr
    assert (tmp_path / "served.fa").read_bytes() == (tmp_path / "alone.fa").read_bytes()
    assert (tmp_path / "served.fa").stat().st_mode & 0o777 == (tmp_path / "alone.fa").stat().st_mode & 0o777 == 0o600
    second = msa(served, "align", EXAMPLE, "-o", "second.fa", cwd=tmp_path)
    assert (tmp_path / "second.fa").read_bytes() == (tmp_path / "own.fa").read_bytes()
    assert second.stdout == b""
    # stdin in, stdout out: the client's descriptors
    piped = msa(served, "align", "-", "--quiet", cwd=tmp_path, input=EXAMPLE.read_bytes())
    assert piped.returncode == 0 and piped.stderr == b""
    assert piped.stdout == (tmp_path / "own.fa").read_bytes()


def test_add_merge_and_tree_served(served, tmp_path):
    """The other commands a server runs (``add`` and ``merge`` read in a forked child of theirs)."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    (tmp_path / "a.fa").write_bytes(b"".join(lines[:200]))
    (tmp_path / "b.fa").write_bytes(b"".join(lines[200:]))
    msa(served, "align", "a.fa", "-o", "a.aln", "-q", cwd=tmp_path)
    wait_for_server(served)
    msa(served, "align", "b.fa", "-o", "b.aln", "-q", cwd=tmp_path)
    alone = {**served, "MSA_SERVER": "off"}
    for args in (["add", "a.aln", "b.fa"], ["merge", "a.aln", "b.aln"], ["tree", EXAMPLE]):
        got, want = (msa(env, *args, cwd=tmp_path) for env in (served, alone))
        assert got.returncode == want.returncode == 0, got.stderr
        assert got.stdout == want.stdout and got.stdout


def test_errors_and_statuses_are_the_commands(served, tmp_path):
    msa(served, "align", EXAMPLE, "-o", "a.fa", cwd=tmp_path)
    wait_for_server(served)
    (tmp_path / "bad.fa").write_bytes(b">a\nMKV\n>a\nMK1V\n")
    for args in (["align", "missing.fa", "-o", "x.fa"], ["align", "bad.fa", "-o", "x.fa"],
                 ["align", EXAMPLE, "--refine", "maybe"]):
        got = msa(served, *args, cwd=tmp_path)
        want = msa({**served, "MSA_SERVER": "off"}, *args, cwd=tmp_path)
        assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
        assert got.returncode != 0 and len(got.stderr.splitlines()) == 1, got.stderr
    assert not (tmp_path / "x.fa").exists()


@pytest.fixture
def waiting(tmp_path: Path):
    """An input that makes a run wait: a FIFO the test holds open and never writes, so the
    command is still reading it when the test acts, however fast the machine."""
    fifo = tmp_path / "in.fa"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)  # a writer that never writes: the command's read blocks
    yield fifo
    os.close(fd)


def command_of(server_pid: int, cwd: Path) -> tuple[int, int] | None:
    """(watcher, command) of the server's run working in ``cwd`` (the spare's works in /)."""
    for watcher in Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split():
        for pid in Path(f"/proc/{watcher}/task/{watcher}/children").read_text().split():
            try:
                if os.path.realpath(f"/proc/{pid}/cwd") == str(cwd.resolve()):
                    return int(watcher), int(pid)
            except OSError:
                continue
    return None


def start_waiting(served, tmp_path, fifo, **kw) -> tuple[subprocess.Popen, int, tuple[int, int]]:
    """A served run reading ``fifo``: (its client, the server's pid, (watcher, command))."""
    msa(served, "align", EXAMPLE, "-o", "a.fa", cwd=tmp_path)
    server_pid = wait_for_server(served)
    proc = subprocess.Popen([sys.executable, "-m", "msa", "align", fifo.name, "-o", "out.fa"], env=served,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    _until(lambda: command_of(server_pid, tmp_path) is not None, 120)
    return proc, server_pid, command_of(server_pid, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_reaches_the_command(served, tmp_path, waiting, sig):
    proc, _, (_, command) = start_waiting(
        served, tmp_path, waiting, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig
    assert err.endswith(b"msa: interrupted\n"), err
    _until(lambda: not _alive(command), 60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fa", "in.fa", "runtime"]


def test_a_client_killed_ends_its_command(served, tmp_path, waiting):
    proc, server_pid, (_, command) = start_waiting(served, tmp_path, waiting)
    proc.kill()
    proc.wait()
    _until(lambda: not _alive(command), 60)  # ended by its watcher
    assert _alive(server_pid)  # the server stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fa", "in.fa", "runtime"]


def test_a_watcher_killed_ends_the_run_once(served, tmp_path, waiting):
    """The server's side of a run gone mid-run: the client says so and exits 1, the command is
    ended, and nothing runs it a second time (the client does not read the input itself)."""
    proc, _, (watcher, command) = start_waiting(served, tmp_path, waiting)
    os.kill(watcher, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and err.startswith(b"msa: error: the msa server ended during the run"), err
    _until(lambda: not _alive(command), 60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fa", "in.fa", "runtime"]


def test_a_run_is_served_when_the_spare_is_gone(served, tmp_path):
    """The server keeps the next run's processes ready (the spare); killed, a run gets new ones."""
    msa(served, "align", EXAMPLE, "-o", "a.fa", cwd=tmp_path)
    pid = wait_for_server(served)
    msa(served, "align", EXAMPLE, "-o", "b.fa", cwd=tmp_path)  # the spare of the first wait is used
    children = lambda: Path(f"/proc/{pid}/task/{pid}/children").read_text().split()  # noqa: E731
    _until(lambda: len(children()) == 1, 30)  # the last run's watcher has ended: the next spare is left
    os.kill(int(children()[0]), signal.SIGKILL)
    got = msa(served, "align", EXAMPLE, "-o", "c.fa", "-v", cwd=tmp_path)
    assert got.returncode == 0 and b"run by msa's warm server" in got.stderr, got.stderr
    assert (tmp_path / "c.fa").read_bytes() == (tmp_path / "a.fa").read_bytes()
    assert _alive(pid)


def test_the_server_leaves_when_idle(served, tmp_path):
    served["MSA_SERVER_IDLE"] = "1"
    msa(served, "align", EXAMPLE, "-o", "a.fa", cwd=tmp_path)
    path = socket_of(served)
    pid = wait_for_server(served)
    _until(lambda: not _alive(pid), 60)
    assert not path.exists()


def test_the_socket_names_the_install_and_the_environment(monkeypatch, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("MSA_SERVER", "on")
    argv = ["msa", "align", "in.fa", "-o", "out.fa"]
    first = client.address(argv)
    assert first is not None and first.startswith(str(runtime / "msa") + os.sep)
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "1")
    assert client.address(argv) == first  # the command's own settings do not matter
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert client.address(argv) != first  # read when Numba loads: another server
    for other in (["msa", "--version"], ["msa"], ["msa", "align", "x", "--workers", "2"],
                  ["msa", "align", "x", "--gpus=2"], ["msa", "align", "x", "--scheduler", "tcp://h:1"]):
        assert client.address(other) is None
    monkeypatch.setenv("MSA_SERVER", "off")
    assert client.address(argv) is None
    monkeypatch.setenv("MSA_SERVER", "on")
    runtime.chmod(0o755)
    (runtime / "msa").mkdir(mode=0o755)  # a folder others may enter: no server
    assert client.address(argv) is None


def test_a_changed_file_makes_the_server_stale(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    before = server._stamp(str(package))
    assert server._stamp(str(package)) == before
    (package / "a.py").write_text("x = 22\n")
    assert server._stamp(str(package)) != before


@pytest.mark.gpu
def test_a_served_gpu_run_writes_the_cpus_bytes(served, tmp_path):
    """The server imports CuPy but makes no CUDA context: each command makes its own."""
    msa(served, "align", EXAMPLE, "-o", "cpu.fa", "--device", "cpu", cwd=tmp_path)
    wait_for_server(served)
    for name in ("gpu1.fa", "gpu2.fa"):  # two commands, each with a context of its own
        got = msa(served, "align", EXAMPLE, "-o", name, "--device", "cuda", "-v", cwd=tmp_path)
        assert got.returncode == 0, got.stderr
        assert b"run by msa's warm server" in got.stderr
        assert (tmp_path / name).read_bytes() == (tmp_path / "cpu.fa").read_bytes()
