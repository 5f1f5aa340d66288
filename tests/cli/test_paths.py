"""No output replaces an input or another output (msa.run.plan.check_paths): paths are compared
by identity (device and inode, through symlinks and hard links; a new name by its directory and
name) before any work; a clash is one ``msa: error:`` line naming both, exit 1, nothing written."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

FAMILY = b">a\nMKVLAAGIVGLLA\n>b\nMKVAAGIVGKLA\n>c\nMKVLAGIVGLLAQ\n"
ALIGNED = b">a\nMKVLAAGIVGLLA-\n>b\nMKV-AAGIVGKLA-\n>c\nMKVL-AGIVGLLAQ\n"
NEW = b">n1\nMKVLAGIVGLL\n"


def _snapshot(folder: Path) -> dict[str, tuple[bool, bytes, int]]:
    """Every entry of ``folder`` (recursively): whether a link, its bytes, its inode."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            found[str(path.relative_to(folder))] = (path.is_symlink(), path.read_bytes(), path.lstat().st_ino)
    return found


def _refused(run_msa, tmp_path: Path, *args: str, names: tuple[str, ...]) -> None:
    before = _snapshot(tmp_path)
    result = run_msa(*args, "--device", "cpu", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1 and result.stdout == b"", err
    assert err.startswith("msa: error: ") and err.count("\n") == 1, err
    for name in names:
        assert name in err, (name, err)
    assert _snapshot(tmp_path) == before  # nothing written, inputs untouched, no temporary file


@pytest.fixture
def family(tmp_path: Path) -> Path:
    (tmp_path / "same.fa").write_bytes(FAMILY)
    return tmp_path


@pytest.mark.parametrize(
    ("output", "extra"),
    [("same.fa", []), ("./same.fa", []), ("same.fa", ["--format", "clustal"]), ("link.fa", []), ("hard.fa", [])],
)
def test_align_output_naming_its_input_is_refused(run_msa, family: Path, output: str, extra: list[str]) -> None:
    os.symlink("same.fa", family / "link.fa")
    os.link(family / "same.fa", family / "hard.fa")
    _refused(run_msa, family, "align", "same.fa", "-o", output, *extra, names=("same.fa", output))


def test_tree_out_naming_the_input_is_refused(run_msa, family: Path) -> None:
    _refused(run_msa, family, "align", "same.fa", "--tree-out", "./same.fa", names=("same.fa", "./same.fa"))


def test_tree_out_equal_to_the_output_is_refused(run_msa, family: Path) -> None:
    _refused(run_msa, family, "align", "same.fa", "-o", "out.fa", "--tree-out", "./out.fa", names=("out.fa", "./out.fa"))


def test_output_naming_the_tree_file_is_refused(run_msa, family: Path) -> None:
    (family / "guide.nwk").write_bytes(b"((a,b),c);\n")
    _refused(run_msa, family, "align", "same.fa", "--tree", "guide.nwk", "-o", "guide.nwk", names=("guide.nwk",))


def test_tree_output_naming_its_input_is_refused(run_msa, family: Path) -> None:
    _refused(run_msa, family, "tree", "same.fa", "-o", "same.fa", names=("same.fa",))


@pytest.mark.parametrize("as_folder", [False, True])
def test_many_output_naming_another_input_is_refused(run_msa, tmp_path: Path, as_folder: bool) -> None:
    """F.fa's clustal output is DIR/F.aln, which is another input of the run."""
    folder = tmp_path / "DIR"
    folder.mkdir()
    (folder / "F.fa").write_bytes(FAMILY)
    (folder / "F.aln").write_bytes(FAMILY)
    inputs = ["DIR"] if as_folder else ["DIR/F.fa", "DIR/F.aln"]
    _refused(run_msa, tmp_path, "align", *inputs, "-O", "DIR", "--format", "clustal",
             names=("DIR/F.fa", "DIR/F.aln"))


@pytest.mark.parametrize(
    ("command", "output"),
    [("add", "A.fa"), ("add", "new.fa"), ("merge", "A.fa"), ("merge", "./B.fa")],
)
def test_add_and_merge_output_naming_an_input_is_refused(run_msa, tmp_path: Path, command: str, output: str) -> None:
    (tmp_path / "A.fa").write_bytes(ALIGNED)
    (tmp_path / "B.fa").write_bytes(ALIGNED.replace(b">", b">B"))
    (tmp_path / "new.fa").write_bytes(NEW)
    second = "new.fa" if command == "add" else "B.fa"
    _refused(run_msa, tmp_path, command, "A.fa", second, "-o", output, names=(output,))
