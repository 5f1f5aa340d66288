"""Download and verify the public benchmarks into a folder, each with BaliFam's ``in/ ref/ info/`` layout.

    python -m datasets.fetch balifam [exthomfam] [--dest DIR]

``balifam``: BaliFam 100/1000/10000 (github.com/rcedgar/balifam at a pinned commit) into
``DIR/balifam/balifam{100,1000,10000}/``; every file is checked against the SHA-256 manifest
``datasets/manifests/balifam.sha256`` (built from that commit's git objects), and the archive
must hold exactly those files.

``exthomfam``: extHomFam 2 (zenodo.org/record/6524237) into
``DIR/exthomfam/{small,medium,large,xlarge,huge}/{in,ref,info}/``: the zip's
``extHomFam-v2/<size>/<family>`` becomes ``<size>/in/<family>``, its reference
``extHomFam-v2/ref/<family>`` becomes ``<size>/ref/<family>``, and ``info/ids.txt`` lists the
families. Every member's CRC is checked while it is unpacked and every family must have a
reference; the archive's hash is not pinned (no published checksum was at hand).

The archive goes to a temporary file in DIR and is unpacked into a temporary folder there,
which is renamed into place only once verified: an interrupted or failed fetch leaves nothing
half-made, and a rerun where the folder exists does nothing. Only the standard library is used,
so this runs before msa is installed. DIR defaults to ``data/`` in the checkout, where
``benchmarks/end_to_end.sh`` looks.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import http.client
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Callable

REPO = Path(__file__).resolve().parents[1]
#: Where the benchmarks look for fetched data unless given another folder.
DEFAULT_DEST = REPO / "data"
MANIFESTS = Path(__file__).resolve().parent / "manifests"
BALIFAM_COMMIT = "f2a46ac425834b4acecce7e0d7cd1439090ffca2"
EXTHOMFAM_SIZES = ("small", "medium", "large", "xlarge", "huge")
#: Seconds to wait for a connection or for the next block of a download.
TIMEOUT_S = 60.0
_BLOCK = 1 << 20


class FetchError(Exception):
    """A failed download, checksum or layout check: one line for the user."""


@dataclass(frozen=True)
class Source:
    """Where a benchmark comes from and how its archive becomes the folder ``DEST/<name>``."""

    url: str
    #: SHA-256 of the whole archive, where one is established.
    archive_sha256: str | None
    #: ``unpack(archive, folder)`` writes the verified layout into the empty ``folder``.
    unpack: Callable[[Path, Path], None]


def read_manifest(path: Path) -> dict[str, str]:
    """``{relative path: sha256}`` from a ``sha256sum``-style file."""
    entries = {}
    for line in path.read_text().splitlines():
        digest, _, name = line.partition("  ")
        entries[name] = digest
    return entries


def _copy(src: IO[bytes], dst: Path) -> str:
    """Stream ``src`` into the new file ``dst``; its SHA-256."""
    digest = hashlib.sha256()
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "xb") as out:
        while block := src.read(_BLOCK):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def _relative(name: str, top: str | None = None) -> PurePosixPath:
    """An archive member's path below its top folder (``top`` where given), refused if it could escape."""
    parts = PurePosixPath(name).parts
    if name.startswith("/") or ".." in parts or len(parts) < 2 or top not in (None, parts[0]):
        raise FetchError(f"unexpected path in the archive: {name}")
    return PurePosixPath(*parts[1:])


def unpack_balifam(archive: Path, folder: Path) -> None:
    """The GitHub archive's files into ``folder``, each checked against the manifest, none missing or extra."""
    expected = read_manifest(MANIFESTS / "balifam.sha256")
    seen = set()
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if member.isdir():
                continue
            rel = str(_relative(member.name))
            if not member.isfile() or rel not in expected:
                raise FetchError(f"{rel}: not a file of BaliFam {BALIFAM_COMMIT[:7]}")
            src = tar.extractfile(member)
            assert src is not None  # a regular file
            if _copy(src, folder / rel) != expected[rel]:
                raise FetchError(f"checksum mismatch: {rel}")
            seen.add(rel)
    if missing := sorted(expected.keys() - seen):
        raise FetchError(f"the archive lacks {len(missing)} BaliFam files, e.g. {missing[0]}")


def unpack_exthomfam(archive: Path, folder: Path) -> None:
    """extHomFam 2's zip into ``<size>/{in,ref,info}`` (CRCs checked on reading), every family with its reference."""
    refs = folder / ".ref"
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                rel = _relative(info.filename, "extHomFam-v2")
                if len(rel.parts) == 2 and rel.parts[0] in EXTHOMFAM_SIZES:
                    dst = folder / rel.parts[0] / "in" / rel.parts[1]
                elif len(rel.parts) == 2 and rel.parts[0] == "ref":
                    dst = refs / rel.parts[1]
                else:
                    dst = folder / rel
                with zf.open(info) as src:  # raises BadZipFile at the end of a member whose CRC is wrong
                    _copy(src, dst)
    except zipfile.BadZipFile as exc:
        raise FetchError(f"damaged zip: {exc}") from None
    for size in EXTHOMFAM_SIZES:
        families = sorted(p.name for p in (folder / size / "in").glob("*"))
        if not families:
            raise FetchError(f"extHomFam-v2/{size}/ is missing or empty")
        if lacking := [f for f in families if not (refs / f).is_file()]:
            raise FetchError(f"{len(lacking)} {size} families have no reference in extHomFam-v2/ref/, "
                             f"e.g. {lacking[0]}")
        (folder / size / "ref").mkdir()
        for family in families:
            shutil.copyfile(refs / family, folder / size / "ref" / family)
        (folder / size / "info").mkdir()
        (folder / size / "info" / "ids.txt").write_text("".join(f + "\n" for f in families))
    shutil.rmtree(refs)


SOURCES: dict[str, Source] = {
    "balifam": Source(f"https://codeload.github.com/rcedgar/balifam/tar.gz/{BALIFAM_COMMIT}", None, unpack_balifam),
    "exthomfam": Source("https://zenodo.org/record/6524237/files/extHomFam-v2.zip", None, unpack_exthomfam),
}


def download(url: str, dst: IO[bytes]) -> str:
    """``url`` into ``dst``; its SHA-256."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            while block := response.read(_BLOCK):
                digest.update(block)
                dst.write(block)
    except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError and timeouts are OSErrors
        reason = exc if isinstance(exc, urllib.error.HTTPError) else getattr(exc, "reason", exc)
        raise FetchError(f"cannot download {url}: {reason}") from None
    return digest.hexdigest()


def fetch(name: str, dest: Path) -> Path:
    """``dest/<name>``, downloaded, verified and renamed into place unless it is already there."""
    target = dest / name
    if target.exists():
        print(f"fetch: {target} is already there", file=sys.stderr)
        return target
    source = SOURCES[name]
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest))
    try:
        archive = staging / "archive"
        print(f"fetch: downloading {source.url}", file=sys.stderr)
        with open(archive, "xb") as out:
            digest = download(source.url, out)
        print(f"fetch: {archive.stat().st_size / 1e6:.1f} MB; verifying and unpacking", file=sys.stderr)
        if source.archive_sha256 is not None and digest != source.archive_sha256:
            raise FetchError(f"checksum mismatch: {source.url} has SHA-256 {digest}, expected {source.archive_sha256}")
        folder = staging / name
        folder.mkdir()
        try:
            source.unpack(archive, folder)
        except (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError) as exc:
            raise FetchError(f"damaged archive {source.url}: {exc}") from None
        os.rename(folder, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m datasets.fetch", description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="+", choices=sorted(SOURCES), metavar="NAME", help=" or ".join(sorted(SOURCES)))
    p.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"folder to fetch into (default {DEFAULT_DEST})")
    a = p.parse_args(argv)
    for name in a.names:
        try:
            print(fetch(name, a.dest))
        except FetchError as exc:
            print(f"fetch: error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("fetch: interrupted", file=sys.stderr)
            return 130
        except OSError as exc:  # the destination: not writable, disk full
            print(f"fetch: error: {exc.strerror or exc}: {exc.filename or a.dest}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
