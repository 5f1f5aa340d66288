"""Output files that appear whole or not at all."""
from __future__ import annotations

import contextlib
import gzip
import os
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str] | None) -> Iterator[BinaryIO]:
    """A binary stream for ``path`` (stdout for None or ``-``), gzipped for a ``.gz`` name.

    The data go to a hidden temporary file in the target directory, renamed
    onto ``path`` only when the ``with`` block ends without an error, so a
    failed or interrupted run never leaves a partial file (and never
    clobbers an existing one). A target that exists but is not a regular
    file (``/dev/null``, a named pipe) is written directly. Opening it early also reports an unwritable
    target before a long alignment rather than after.
    """
    if path is None or str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(target))
    if target.exists() and not target.is_file():  # /dev/null, a named pipe: no file to replace
        with open(target, "wb") as raw:
            yield raw
        return
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if target.suffix == ".gz":
                with gzip.GzipFile(filename=target.stem, mode="wb", fileobj=raw, compresslevel=6) as gz:
                    yield gz  # type: ignore[misc]
            else:
                yield raw
        os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _umask() -> int:
    """The process umask (mkstemp makes 0600 files; outputs should look like any other)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
