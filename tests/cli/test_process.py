"""A command is a plain Unix process: nothing it started runs after it returns, and the caller's
limits, descriptors and signals apply to its work (each run marked: conftest.ProcessMark).
Linux only (``/proc``, process substitution)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FASTA = b">a\nMKVLAAGIVG\n>b\nMKVLGIVG\n>c\nMKLAAGIV\n>d\nMRVLAAGLVG\n"
ALIGNED_A = b">a\nMKVLAAGIVG\n>b\nMKVL--GIVG\n"
ALIGNED_B = b">c\nMKLAAGIV--\n>d\nMRVLAAGLVG\n"
INPUTS = ["A.fa", "B.fa", "new.fa", "x.fa"]
COMMANDS = {
    "align": ["align", "x.fa", "-o", "out.fa", "-q", "--device", "cpu"],
    "add": ["add", "A.fa", "new.fa", "-o", "out.fa", "-q", "--device", "cpu"],
    "merge": ["merge", "A.fa", "B.fa", "-o", "out.fa", "-q", "--device", "cpu"],
    "tree": ["tree", "x.fa", "-o", "out.nwk", "-q", "--device", "cpu"],
    "score": ["score", "A.fa", "A.fa"],
}

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("bash") is None,
                                reason="/proc and bash")


def inputs(folder: Path) -> Path:
    (folder / "x.fa").write_bytes(FASTA)
    (folder / "A.fa").write_bytes(ALIGNED_A)
    (folder / "B.fa").write_bytes(ALIGNED_B)
    (folder / "new.fa").write_bytes(b">e\nMKVLAAGIVGG\n")
    return folder


def msa(*args: object, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "msa", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          timeout=600)


def reference(folder: Path, process_mark) -> tuple[dict[str, str], bytes]:
    """The inputs written to ``folder``, the marked environment, and ``x.fa``'s alignment on stdout."""
    inputs(folder)
    env = process_mark.env()
    return env, msa("align", "x.fa", "-q", "--device", "cpu", cwd=folder, env=env).stdout


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """``script`` in bash, ``MSA`` in it standing for ``python -m msa``."""
    return subprocess.run(["bash", "-c", script.replace("MSA", f"{sys.executable} -m msa")], cwd=cwd, env=env,
                          capture_output=True, timeout=600)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_process_outlives_a_command(tmp_path: Path, command: str, process_mark) -> None:
    """Twice each, so that a second run could find anything a first one left to serve it."""
    inputs(tmp_path)
    for _ in range(2):
        result = msa(*COMMANDS[command], cwd=tmp_path, env=process_mark.env())
        assert result.returncode == 0, result.stderr.decode()
        assert process_mark.processes() == [], f"left running after msa {command}"


def test_an_output_on_an_inherited_descriptor_reaches_its_reader(tmp_path: Path, process_mark) -> None:
    """``-o /dev/fd/N`` writes to the caller's descriptor N, here a process substitution's pipe."""
    env, expected = reference(tmp_path, process_mark)
    result = bash("MSA align x.fa -q --device cpu -o /dev/fd/7 7> >(cat > got.fa); wait", tmp_path, env)
    assert result.returncode == 0, result.stderr.decode()
    deadline = time.monotonic() + 10
    while (tmp_path / "got.fa").read_bytes() != expected and time.monotonic() < deadline:
        time.sleep(0.05)  # the substitution's cat may finish just after the shell
    assert (tmp_path / "got.fa").read_bytes() == expected


def test_a_process_substitution_is_an_input(tmp_path: Path, process_mark) -> None:
    env, expected = reference(tmp_path, process_mark)
    result = bash("MSA align <(cat x.fa) -q --device cpu", tmp_path, env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected
    result = bash("MSA add A.fa <(cat new.fa) -q --device cpu", tmp_path, env)
    assert result.returncode == 0 and result.stdout.count(b">") == 3, result.stderr.decode()


def test_a_small_address_space_limit_is_one_line_and_no_output(tmp_path: Path, process_mark) -> None:
    """``ulimit -v`` of the caller's shell binds the work: one line, a non-zero exit, no file."""
    inputs(tmp_path)
    result = bash("ulimit -v 150000; MSA align x.fa -o out.fa -q --device cpu", tmp_path, process_mark.env())
    err = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and err.startswith("msa: error: "), err
    assert sorted(os.listdir(tmp_path)) == INPUTS


@pytest.mark.parametrize("command", ["align", "add"])
def test_sigkill_of_msa_leaves_nothing_running(tmp_path: Path, command: str, process_mark) -> None:
    """Killed while it waits for an input's writer (a FIFO no one opens: ``add`` reads it in a
    forked child, ``align`` on its main thread beside the backend's start), msa leaves no process."""
    inputs(tmp_path)
    os.mkfifo(tmp_path / "fifo.fa")
    args = {"align": ["align", "fifo.fa", "-o", "out.fa", "--device", "cpu"],
            "add": ["add", "A.fa", "fifo.fa", "-o", "out.fa", "--device", "cpu"]}[command]
    proc = subprocess.Popen([sys.executable, "-m", "msa", *args], cwd=tmp_path, env=process_mark.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wanted, deadline = (2 if command == "add" else 1), time.monotonic() + 60
    while len(process_mark.processes()) < wanted and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # well into the wait
    assert proc.poll() is None and len(process_mark.processes()) == wanted
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 2
    while process_mark.processes() and time.monotonic() < deadline:
        time.sleep(0.02)
    left = process_mark.processes()
    for pid in left:  # not to leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert left == []


@pytest.mark.skipif(shutil.which("nohup") is None, reason="nohup")
def test_nohup_keeps_a_run_through_sighup(tmp_path: Path, process_mark) -> None:
    """``nohup msa ...``: a hangup while the run waits for its input leaves it running to a
    whole output, as for any command (the signal's disposition is the caller's)."""
    env, expected = reference(tmp_path, process_mark)
    os.mkfifo(tmp_path / "fifo.fa")
    proc = subprocess.Popen(["nohup", sys.executable, "-m", "msa", "align", "fifo.fa", "-o", "out.fa", "-q",
                             "--device", "cpu"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not process_mark.processes() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.0)  # the interpreter started, waiting for the FIFO's writer
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    assert proc.poll() is None
    (tmp_path / "fifo.fa").write_bytes(FASTA)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode() if proc.stderr else ""
    assert (tmp_path / "out.fa").read_bytes() == expected


def test_ctrl_z_stops_the_work_itself(tmp_path: Path, process_mark) -> None:
    """SIGTSTP (a terminal's Ctrl-Z) stops the process that does the work, and SIGCONT goes on."""
    inputs(tmp_path)
    os.mkfifo(tmp_path / "fifo.fa")
    # A process group of its own, as a shell's job: the kernel drops a stop signal sent to an
    # orphaned group, which pytest's own group is where its parent has gone (a detached job).
    proc = subprocess.Popen([sys.executable, "-m", "msa", "align", "fifo.fa", "-o", "out.fa", "-q", "--device",
                             "cpu"], cwd=tmp_path, env=process_mark.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=os.setpgrp)
    deadline = time.monotonic() + 60
    while not process_mark.processes() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTSTP)
    state = ""
    while state != "T" and time.monotonic() < deadline:
        time.sleep(0.02)
        state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state == "T" and process_mark.processes() == [proc.pid]
    proc.send_signal(signal.SIGCONT)
    (tmp_path / "fifo.fa").write_bytes(FASTA)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode() if proc.stderr else ""
    assert (tmp_path / "out.fa").read_bytes().count(b">") == 4
