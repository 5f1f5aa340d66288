"""Output files that appear whole or not at all, and a full disk that ends a run with one line."""
from __future__ import annotations

import contextlib
import errno
import functools
import gzip
import io
import os
import re
import stat
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from msa.params import AlignParams

#: errno values that mean "the output does not fit": no space, over quota, over a size limit.
SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: errno values of a posix_fallocate that the file system cannot do (write plainly instead).
NO_RESERVE_ERRNOS = frozenset({errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.ENODEV, errno.ESPIPE})
#: gzip's compression level of ``.gz`` outputs unless a run asks for another (1 fastest, 9 smallest).
GZIP_LEVEL = AlignParams.gzip_level
#: The end of a temporary output's name: ``.msa-HOST-PID-START-RANDOM.part``, where HOST
#: hashes the machine's name and START is the writing process's start time (clock ticks after
#: boot), so that a file whose process is gone (on this machine) is known to be stale, while
#: one of a live run, or of another machine on a shared file system, is left alone.
_MARKER = re.compile(r"\.msa-([0-9a-f]{6})-([0-9]+)-([0-9a-f]+)-[0-9a-z]+\.part\Z")


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str] | None, gzip_level: int = GZIP_LEVEL) -> Iterator[BinaryIO]:
    """A binary stream for ``path`` (stdout for None or ``-``), gzipped for a ``.gz`` name.

    gzip output is reproducible: the header holds no time stamp and no name, so the
    same data give the same bytes at ``gzip_level``.

    The data go to a hidden temporary file in the target directory (:func:`temporary_name`), renamed
    onto ``path`` only when the ``with`` block ends without an error, so a
    failed or interrupted run never leaves a partial file (and never
    clobbers an existing one). A target that exists but is not a regular
    file (``/dev/null``, a named pipe) is written directly. Opening it early also reports an unwritable
    target before a long alignment rather than after.

    A full disk (ENOSPC, EDQUOT or EFBIG from the writer, ``reserve`` or
    ``check_space``) leaves as an OSError naming ``path`` whose text gives the
    bytes needed and the bytes free: the CLI prints it as its one error line.
    """
    if path is None or str(path) == "-":
        if sys.stdout is None:  # started with stdout closed (`msa align x.fa >&-`)
            raise OSError(errno.EBADF, "closed (nowhere to write the output)", "stdout")
        with _space_errors("stdout", _regular_fd(sys.stdout), None):
            sys.stdout.flush()
            try:
                out = OutputWriter(io.FileIO(sys.stdout.fileno(), "w", closefd=False))
            except (OSError, ValueError, io.UnsupportedOperation):  # a replaced sys.stdout (tests)
                yield sys.stdout.buffer
                sys.stdout.buffer.flush()
                return
            with out:
                yield out
        return
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "is a directory; name a file to write", str(target))
    if target.exists() and not target.is_file():  # /dev/null, a named pipe: no file to replace
        with _space_errors(str(target), None, None), OutputWriter(io.FileIO(target, "w")) as raw:
            yield raw
        return
    with _space_errors(str(target), target.parent, None):
        try:
            fd, tmp_name = _make_temporary(target)
        except OSError as exc:  # name the file asked for, not the hidden temporary one
            if exc.errno in SPACE_ERRNOS:
                raise
            raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with _space_errors(str(target), target.parent, tmp_name):
            with OutputWriter(io.FileIO(fd, "w"), path=tmp_name) as raw:
                if target.suffix == ".gz":
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=gzip_level, mtime=0) as gz:
                        yield gz  # type: ignore[misc]
                else:
                    yield raw
        os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def temporary_name(target: str | os.PathLike[str], random: str = "") -> str:
    """The hidden name beside ``target`` that its data are written under before the rename:
    ``.NAME`` and this process's marker (see _MARKER), within the file system's name limit
    (NAME is cut short, never the marker)."""
    folder, name = os.path.split(os.fspath(target))
    tail = f".msa-{_host()}-{os.getpid()}-{_start_time(os.getpid()):x}-{random}.part"
    room = _name_max(folder or ".") - 1 - len(os.fsencode(tail))
    return os.path.join(folder, "." + os.fsdecode(os.fsencode(name)[: max(room, 1)]) + tail)


def _make_temporary(target: Path) -> tuple[int, str]:
    """A new temporary file for ``target`` (mode 0600), its descriptor and name."""
    for _ in range(100):
        name = temporary_name(target, os.urandom(4).hex())  # secrets.token_hex(4), without its 6 ms import
        try:
            return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target))


def is_stale(name: str) -> bool:
    """Whether ``name`` is a temporary output of a process of this machine that is gone (its pid
    is free, or taken by a process that started at another time). Names without the marker
    (another program's, or an older msa's) are never stale: they are not msa's to remove."""
    found = _MARKER.search(os.path.basename(name))
    if found is None or found[1] != _host():
        return False
    pid, start = int(found[2]), int(found[3], 16)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    return start != 0 and _start_time(pid) not in (start, 0)


def remove_stale_parts(folder: str | os.PathLike[str], targets: Iterable[str] | None = None) -> int:
    """Remove the temporary outputs in ``folder`` that dead runs left (:func:`is_stale`), only
    those of ``targets`` (file names in ``folder``) where given; how many were removed."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return 0
    wanted = None if targets is None else {os.fsencode(t) for t in targets}
    removed = 0
    for entry in entries:
        if not (entry.startswith(".") and entry.endswith(".part") and is_stale(entry)):
            continue
        if wanted is not None and not _made_for(entry, wanted, _name_max(os.fspath(folder))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, entry))
            removed += 1
    return removed


def _made_for(entry: str, targets: set[bytes], name_max: int) -> bool:
    """Whether the temporary name ``entry`` was made for one of ``targets`` (its NAME whole, or
    cut short to the name limit)."""
    raw = os.fsencode(entry)
    stem = raw[1 : raw.rindex(b".msa-")]
    return stem in targets or (len(raw) >= name_max and any(t.startswith(stem) for t in targets))


@functools.cache
def _host() -> str:
    """Six hex digits that tell this machine's temporary files from other machines' (shared file systems)."""
    if hasattr(os, "uname"):  # socket.gethostname(), without importing socket (POSIX)
        host = os.uname().nodename
    else:
        import socket

        host = socket.gethostname()
    return f"{zlib.crc32(host.encode()) & 0xFFFFFF:06x}"


def _start_time(pid: int) -> int:
    """When process ``pid`` started (clock ticks after boot, Linux); 0 where this cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return 0


def _name_max(folder: str) -> int:
    """The longest file name (bytes) the file system of ``folder`` takes."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


class OutputWriter(io.BufferedWriter):
    """A buffered writer whose ``write`` writes every byte or raises.

    ``io.BufferedWriter.write`` may return a short count when the system call
    wrote part of the data (a disk that fills up in the middle of a write, a
    pipe whose reader went away), and ``io.TextIOWrapper`` (Biopython's
    writers) ignores that count: the rest would be lost without an error.
    Writing the rest raises the ENOSPC or EPIPE instead.

    ``path`` names the file it writes (the temporary one, until open_output renames it), where
    other processes write too (the rows of a family split across workers: msa.run.split).
    """

    def __init__(self, raw, buffer_size: int = io.DEFAULT_BUFFER_SIZE, path: str | None = None) -> None:
        super().__init__(raw, buffer_size)
        self.path = path

    def write(self, data) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        done = self._write_some(view)
        while 0 <= done < len(view):
            step = self._write_some(view[done:])
            if step <= 0:
                raise OSError(errno.EIO, f"write made no progress after {done} of {len(view)} bytes")
            done += step
        return len(view)

    def _write_some(self, view: memoryview) -> int:
        return super().write(view) or 0


def regular_file(out: BinaryIO) -> int | None:
    """The descriptor of ``out`` if it writes bytes straight into a regular file (not through
    gzip, not a pipe, terminal or device); else None."""
    if not isinstance(out, (io.BufferedWriter, io.BufferedRandom)):  # not gzip, not a text layer
        return None
    try:
        fd = out.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def free_bytes(where: int | str | os.PathLike[str]) -> int:
    """Bytes an unprivileged writer may still use on the file system of ``where`` (a path or a descriptor)."""
    info = os.statvfs(where)
    return info.f_bavail * info.f_frsize


def check_space(out: BinaryIO, needed: int, at_least: bool = False) -> None:
    """Fail now, before any byte is written, if ``needed`` bytes (a lower bound where
    ``at_least``) cannot fit where ``out`` writes.

    Checked only for a regular file written directly (not stdout to a pipe or
    terminal, not a device, not gzip, whose size is not known in advance).

    Raises:
        OSError: ENOSPC, with ``bytes_needed`` (``open_output`` names the path).
    """
    fd = regular_file(out)
    if fd is None:
        return
    try:
        free = free_bytes(fd)
    except OSError:
        return
    if needed > free:
        exc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        raise needing(exc, needed, at_least, free)


def reserve(fd: int, offset: int, size: int) -> bool:
    """Allocate ``size`` bytes of the file ``fd`` from ``offset`` (the file grows to hold them),
    so writing there, through a mapping too, can no longer run out of space. False where the
    file system cannot reserve space (the caller writes plainly, never through a mapping).

    Raises:
        OSError: ENOSPC, EDQUOT or EFBIG, with ``bytes_needed``; the file is as it was.
    """
    if size <= 0 or not hasattr(os, "posix_fallocate"):
        return False
    try:
        os.posix_fallocate(fd, offset, size)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, offset)  # an emulated allocation may have grown the file
        if exc.errno in NO_RESERVE_ERRNOS:
            return False
        needing(exc, size)
        raise
    return True


def needing(exc: BaseException, nbytes: int | None, at_least: bool = False, free: int | None = None) -> BaseException:
    """Record on a full-disk error how many bytes the output needs (or at least needs), and
    the bytes free where known; what an inner writer recorded already is kept."""
    if isinstance(exc, OSError) and exc.errno in SPACE_ERRNOS and getattr(exc, "bytes_needed", None) is None:
        exc.bytes_needed = nbytes  # type: ignore[attr-defined]
        exc.bytes_at_least = at_least  # type: ignore[attr-defined]
        exc.bytes_free = free  # type: ignore[attr-defined]
    return exc


@contextlib.contextmanager
def _space_errors(label: str, folder: Path | int | None, tmp_name: str | None) -> Iterator[None]:
    """A full-disk OSError raised in the block becomes one naming ``label``, the bytes needed
    and the bytes free (of the file system of ``folder``, a path or a descriptor); other
    errors pass unchanged."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in SPACE_ERRNOS:
            raise
        needed = _first_attr(exc, "bytes_needed")
        free = _first_attr(exc, "bytes_free")
        if free is None and folder is not None:
            with contextlib.suppress(OSError):
                free = free_bytes(folder)
        written = None
        if needed is None and tmp_name is not None:
            with contextlib.suppress(OSError):
                written = os.stat(tmp_name).st_size
        at_least = bool(_first_attr(exc, "bytes_at_least"))
        raise OSError(exc.errno, _space_text(exc, needed, at_least, free, written), label) from None


def _regular_fd(stream) -> int | None:
    """The descriptor of ``stream`` where it is a regular file (stdout sent to a file)."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _first_attr(exc: BaseException | None, name: str) -> int | None:
    """``name`` of ``exc`` or of an error it was raised during (a close after a failed write)."""
    seen = 0
    while exc is not None and seen < 8:
        value = getattr(exc, name, None)
        if value is not None:
            return int(value)
        exc, seen = exc.__context__, seen + 1
    return None


def _space_text(exc: OSError, needed: int | None, at_least: bool, free: int | None, written: int | None) -> str:
    reason = exc.strerror or os.strerror(exc.errno or errno.ENOSPC)
    if needed is not None:
        need = f"the output needs {'at least ' if at_least else ''}{_size(needed)}"
    elif written:
        need = f"the output needs more than the {_size(written)} written"
    else:
        need = "the output does not fit"
    have = f", {_size(free)} free" if free is not None else ""
    return f"{reason}: {need}{have}"


def _size(nbytes: int) -> str:
    """Bytes exactly, and in the largest unit that reads well (``24,700,000,000 bytes (24.7 GB)``)."""
    text = f"{nbytes:,} bytes"
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if nbytes >= scale:
            return f"{text} ({nbytes / scale:.1f} {unit})"
    return text


def _umask() -> int:
    """The process umask (mkstemp makes 0600 files; outputs should look like any other)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
