"""datasets/fetch.py on small archives made here and served by ``file://`` URLs: the layout,
the checks (a bad checksum, CRC or layout fails in one line and leaves nothing), and the real
download where the network is there."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from datasets import fetch  # noqa: E402

BALIFAM_FILES = {
    "LICENSE": b"CC0\n",
    "balifam100/info/ids.txt": b"PF1.100\n",
    "balifam100/in/PF1.100": b">a\nMKV\n>b\nMRV\n",
    "balifam100/ref/PF1.100": b">a\nMKV\n>b\nMRV\n",
}


def _tar_gz(path: Path, files: dict[str, bytes], top: str = f"balifam-{fetch.BALIFAM_COMMIT}") -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def balifam(tmp_path: Path, monkeypatch) -> Path:
    """A fake BaliFam archive, its manifest in place of the real one; the archive's path."""
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "balifam.sha256").write_text(
        "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in BALIFAM_FILES.items()))
    monkeypatch.setattr(fetch, "MANIFESTS", manifests)
    archive = tmp_path / "balifam.tar.gz"
    _tar_gz(archive, BALIFAM_FILES)
    _serve(monkeypatch, "balifam", archive)
    return archive


def _serve(monkeypatch, name: str, archive: Path, **changes) -> None:
    source = dataclasses.replace(fetch.SOURCES[name], url=archive.as_uri(), **changes)
    monkeypatch.setitem(fetch.SOURCES, name, source)


def _fails_cleanly(capsys, dest: Path, name: str, message: str) -> None:
    """``fetch NAME`` exits 1 with one ``fetch: error:`` line holding ``message``, and leaves ``dest`` empty."""
    assert fetch.main([name, "--dest", str(dest)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("fetch: error: ") and message in err[-1], err
    assert list(dest.iterdir()) == []


def test_balifam_is_unpacked_verified_and_renamed_into_place(balifam: Path, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "data"
    assert fetch.main(["balifam", "--dest", str(dest)]) == 0
    assert capsys.readouterr().out.strip() == str(dest / "balifam")
    assert [p.name for p in dest.iterdir()] == ["balifam"]  # no temporary file or folder left
    for name, data in BALIFAM_FILES.items():
        assert (dest / "balifam" / name).read_bytes() == data
    # A rerun on the complete folder does nothing: no download (the archive is gone).
    balifam.unlink()
    assert fetch.main(["balifam", "--dest", str(dest)]) == 0
    assert "already there" in capsys.readouterr().err


@pytest.mark.parametrize("change, message", [
    ({"balifam100/in/PF1.100": b">a\nMKV\n>b\nMRW\n"}, "checksum mismatch: balifam100/in/PF1.100"),
    ({"balifam100/in/PF2.100": b">a\nM\n"}, "balifam100/in/PF2.100: not a file of BaliFam"),
    ({"balifam100/ref/PF1.100": None}, "lacks 1 BaliFam files, e.g. balifam100/ref/PF1.100"),
    ({"../escape": b"x"}, "unexpected path in the archive"),
])
def test_a_balifam_archive_unlike_the_manifest_fails_and_leaves_nothing(
        balifam: Path, tmp_path: Path, capsys, change: dict, message: str) -> None:
    files = {name: data for name, data in {**BALIFAM_FILES, **change}.items() if data is not None}
    _tar_gz(balifam, files)
    dest = tmp_path / "data"
    _fails_cleanly(capsys, dest, "balifam", message)


def test_a_pinned_archive_checksum_is_checked(balifam: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    _serve(monkeypatch, "balifam", balifam, archive_sha256="0" * 64)
    _fails_cleanly(capsys, tmp_path / "data", "balifam", "checksum mismatch: file://")
    _serve(monkeypatch, "balifam", balifam, archive_sha256=hashlib.sha256(balifam.read_bytes()).hexdigest())
    assert fetch.main(["balifam", "--dest", str(tmp_path / "data")]) == 0


def test_a_damaged_archive_fails_and_leaves_nothing(balifam: Path, tmp_path: Path, capsys) -> None:
    balifam.write_bytes(balifam.read_bytes()[:100])
    _fails_cleanly(capsys, tmp_path / "data", "balifam", "damaged archive")


def test_a_failed_download_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    _serve(monkeypatch, "exthomfam", tmp_path / "absent.zip")
    _fails_cleanly(capsys, tmp_path / "data", "exthomfam", "cannot download file://")


def _zip(path: Path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("extHomFam-v2/", b"")
        for name, data in files.items():
            zf.writestr(f"extHomFam-v2/{name}", data)


EXTHOMFAM_FILES = {
    **{f"{size}/fam{size}": f">s1\nMKVL{size}\n".encode() for size in fetch.EXTHOMFAM_SIZES},
    **{f"ref/fam{size}": f">s1\nMKVL-{size}\n".encode() for size in fetch.EXTHOMFAM_SIZES},
    "small/zeta": b">z\nMMM\n",
    "ref/zeta": b">z\nMM-M\n",
}


def test_exthomfam_gets_balifams_layout(tmp_path: Path, monkeypatch) -> None:
    archive = tmp_path / "ext.zip"
    _zip(archive, EXTHOMFAM_FILES)
    _serve(monkeypatch, "exthomfam", archive)
    dest = tmp_path / "data"
    assert fetch.main(["exthomfam", "--dest", str(dest)]) == 0
    root = dest / "exthomfam"
    assert sorted(p.name for p in root.iterdir()) == sorted(fetch.EXTHOMFAM_SIZES)
    for size in fetch.EXTHOMFAM_SIZES:
        families = [f"fam{size}", "zeta"] if size == "small" else [f"fam{size}"]
        assert (root / size / "info" / "ids.txt").read_text().split() == families
        for family in families:
            assert (root / size / "in" / family).read_bytes() == EXTHOMFAM_FILES[f"{size}/{family}"]
            assert (root / size / "ref" / family).read_bytes() == EXTHOMFAM_FILES[f"ref/{family}"]
    assert [p.name for p in dest.iterdir()] == ["exthomfam"]


def test_exthomfam_without_a_reference_fails_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    archive = tmp_path / "ext.zip"
    _zip(archive, {k: v for k, v in EXTHOMFAM_FILES.items() if k != "ref/zeta"})
    _serve(monkeypatch, "exthomfam", archive)
    _fails_cleanly(capsys, tmp_path / "data", "exthomfam", "1 small families have no reference")


def test_exthomfam_with_a_bad_crc_fails_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    archive = tmp_path / "ext.zip"
    _zip(archive, EXTHOMFAM_FILES)
    data = archive.read_bytes()
    archive.write_bytes(data.replace(b"MM-M", b"MMXM"))  # stored, so the member's bytes are there as written
    _serve(monkeypatch, "exthomfam", archive)
    _fails_cleanly(capsys, tmp_path / "data", "exthomfam", "damaged zip: Bad CRC-32")


def test_the_module_runs_from_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "balifam").mkdir()
    result = subprocess.run([sys.executable, "-m", "datasets.fetch", "balifam", "--dest", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "balifam") and "already there" in result.stderr


def test_the_manifest_matches_the_shared_balifam(shared_dir: Path) -> None:
    """The committed manifest against the copy in ../shared (balifam10000-dev: 18 of the 36 sets, its own ids.txt)."""
    root = shared_dir / "datasets" / "balifam"
    if not root.is_dir():
        pytest.skip("no ../shared/datasets/balifam")
    checked = 0
    for name, digest in fetch.read_manifest(fetch.MANIFESTS / "balifam.sha256").items():
        path = root / name.replace("balifam10000/", "balifam10000-dev/")
        if name == "README.md" or name.startswith("balifam10000/") and (name.endswith("ids.txt") or not path.exists()):
            continue
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
        checked += 1
    assert checked == 307 - 36 - 1 - 1  # all but the 18 sets not in -dev, its ids.txt, and the edited README


def test_the_real_balifam_download(tmp_path: Path) -> None:
    """The pinned archive from GitHub, checked against the manifest (skipped without network)."""
    try:
        socket.create_connection(("codeload.github.com", 443), timeout=3).close()
    except OSError:
        pytest.skip("no network")
    assert fetch.main(["balifam", "--dest", str(tmp_path)]) == 0
    for size, sets in (("100", 59), ("1000", 56), ("10000", 36)):
        assert len((tmp_path / "balifam" / f"balifam{size}" / "info" / "ids.txt").read_text().split()) == sets
