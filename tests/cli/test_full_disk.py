"""A full disk ends a run with one ``msa: error:`` line and exit 1 on every writer path, leaving
no output or temporary file and any existing file at ``-o`` as it was."""
from __future__ import annotations

import errno
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import msa.io.output
from msa.cli import app
from msa.io.output import OutputWriter
from tests.conftest import REPO

EXAMPLE = REPO / "datasets" / "examples" / "example.fa"
EXAMPLE_FASTA_BYTES = 84_600  # the aligned example as FASTA: 200 x ('>seqNNN\n' + 408 columns wrapped)
OLD = b"an earlier result\n"


class _FullDiskWriter(OutputWriter):
    """A file that takes ``room`` bytes, the last write partly (as write(2) does when the disk
    fills up in the middle of it), then fails with ENOSPC."""

    room = 4096

    def _write_some(self, view: memoryview) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        part = view[: self.room]
        self.room -= len(part)
        return super()._write_some(part)


def _no_reserve(fd: int, offset: int, size: int) -> None:
    raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))


def _no_space(fd: int, offset: int, size: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _align(out: Path, *extra: str):
    return CliRunner().invoke(app, ["align", str(EXAMPLE), "--device", "cpu", "-o", str(out), *extra])


def _assert_one_line_and_nothing_left(result, out: Path, *, old: bytes | None) -> str:
    assert result.exit_code == 1, (result.exit_code, result.stderr, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("msa: error: "), result.stderr
    assert lines[0].startswith(f"msa: error: {out}: ") and re.search(r"[\d,]+ bytes( \(.*\))? free$", lines[0]), lines[0]
    assert result.stdout == ""
    left = sorted(os.listdir(out.parent))
    if old is None:
        assert left == []
    else:
        assert left == [out.name] and out.read_bytes() == old
    return lines[0]


@pytest.mark.parametrize("old", [None, OLD], ids=["new", "existing"])
def test_mapped_fasta_reservation_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old) -> None:
    """The mapped writer's posix_fallocate reports no space: the exact size in the line."""
    out = tmp_path / "out.fa"
    if old is not None:
        out.write_bytes(old)
    monkeypatch.setattr(os, "posix_fallocate", _no_space)
    line = _assert_one_line_and_nothing_left(_align(out), out, old=old)
    assert "No space left on device" in line and f"{EXAMPLE_FASTA_BYTES:,} bytes" in line


@pytest.mark.parametrize("fmt", ["fasta", "clustal", "stockholm"])
def test_write_fails_on_a_file_without_reservation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt) -> None:
    """A file system that cannot reserve space (EOPNOTSUPP): FASTA goes through the block writer,
    the other formats through Biopython; the write that finds the disk full ends the run."""
    out = tmp_path / f"out.{fmt}"
    out.write_bytes(OLD)
    monkeypatch.setattr(os, "posix_fallocate", _no_reserve)
    monkeypatch.setattr(msa.io.output, "OutputWriter", _FullDiskWriter)
    line = _assert_one_line_and_nothing_left(_align(out, "-f", fmt), out, old=OLD)
    assert "the output needs" in line
    if fmt == "fasta":
        assert f"{EXAMPLE_FASTA_BYTES:,} bytes" in line


def test_gzip_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.fa.gz"
    out.write_bytes(OLD)
    monkeypatch.setattr(_FullDiskWriter, "room", 100)
    monkeypatch.setattr(msa.io.output, "OutputWriter", _FullDiskWriter)
    line = _assert_one_line_and_nothing_left(_align(out), out, old=OLD)
    assert "No space left on device" in line


def test_quota_and_size_limit_are_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for code in (errno.EDQUOT, errno.EFBIG):
        def fail(fd: int, offset: int, size: int, code=code) -> None:
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(os, "posix_fallocate", fail)
        line = _assert_one_line_and_nothing_left(_align(tmp_path / "out.fa"), tmp_path / "out.fa", old=None)
        assert os.strerror(code) in line


def test_too_little_space_fails_before_the_alignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Less free space than even the unaligned rows need: refused before any alignment work."""
    import msa.pipeline

    out = tmp_path / "out.fa"
    monkeypatch.setattr("msa.io.output.free_bytes", lambda where: 1000)
    monkeypatch.setattr(msa.pipeline, "align_prepared", _must_not_run)
    line = _assert_one_line_and_nothing_left(_align(out), out, old=None)
    assert line.endswith("1,000 bytes (1.0 kB) free") and "the output needs at least 55,000 bytes" in line


def test_too_little_space_for_the_width_fails_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Room for the unaligned rows but not for the aligned width: refused once the width is
    known, with the exact size, before any space is reserved or written."""
    out = tmp_path / "out.fa"
    out.write_bytes(OLD)
    monkeypatch.setattr("msa.io.output.free_bytes", lambda where: EXAMPLE_FASTA_BYTES - 1)
    monkeypatch.setattr(os, "posix_fallocate", _must_not_run)
    line = _assert_one_line_and_nothing_left(_align(out), out, old=OLD)
    assert f"needs {EXAMPLE_FASTA_BYTES:,} bytes" in line and f"{EXAMPLE_FASTA_BYTES - 1:,} bytes" in line


def test_exactly_enough_space_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.fa"
    monkeypatch.setattr("msa.io.output.free_bytes", lambda where: EXAMPLE_FASTA_BYTES)
    result = _align(out, "-v")
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size == EXAMPLE_FASTA_BYTES and os.listdir(tmp_path) == ["out.fa"]
    assert f"msa: wrote {EXAMPLE_FASTA_BYTES:,} bytes to {out}" in result.stderr.splitlines()


def _must_not_run(*args, **kwargs):
    raise AssertionError("reached past the free-space check")


@pytest.mark.parametrize("fmt", ["fasta", "clustal"])
def test_closed_stdout_ends_quietly(fmt: str) -> None:
    """``msa align x.fa | head -c 10``: no traceback, no error line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen(
        [sys.executable, "-m", "msa", "align", str(EXAMPLE), "--device", "cpu", "-f", fmt],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) in (0, 1) and err == b"", err.decode()


@pytest.fixture
def small_fs(tmp_path: Path):
    """A 72 KiB tmpfs (fits the unaligned example, not the aligned one); skipped without mount rights."""
    mount = tmp_path / "small"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=72k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def _run_real(args: list[str], cwd: Path, patch: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys, msa.io.output as o\n{patch}\nfrom msa.cli import main\nsys.argv[0] = 'msa'\nmain()\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.mark.parametrize("check", ["early", "reservation"])
def test_real_small_file_system(small_fs: Path, check: str) -> None:
    """On a real full tmpfs: the early check, or with it disabled the kernel's ENOSPC from
    posix_fallocate; never a bus error, nothing left, the old file kept."""
    out = small_fs / "out.fa"
    out.write_bytes(OLD)
    patch = "o.free_bytes = lambda where: 1 << 50" if check == "reservation" else ""
    done = _run_real(["align", str(EXAMPLE), "--device", "cpu", "-o", str(out)], small_fs, patch)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"msa: error: {out}: No space left on device: the output needs {EXAMPLE_FASTA_BYTES:,}")
    assert os.listdir(small_fs) == ["out.fa"] and out.read_bytes() == OLD
