"""msa.run's planning: output names, input expansion, the output directory (no aligner runs)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from msa.run import expand_inputs, make_output_dir, output_name, plan_run


@pytest.mark.parametrize(
    ("name", "fmt", "gz", "expected"),
    [
        ("PF00078.10000", "fasta", False, "PF00078.10000.fa"),
        ("in/PF00078.fa.gz", "fasta", False, "PF00078.fa"),
        ("x.FASTA", "clustal", False, "x.aln"),
        ("x.faa", "stockholm", True, "x.sto.gz"),
        ("x.seq", "phylip", False, "x.phy"),
        ("x.mfa", "a2m", False, "x.a2m"),
        ("a.b.fa", "fasta", False, "a.b.fa"),  # one extension only
        ("notes.txt", "fasta", False, "notes.txt.fa"),
        (".fa", "fasta", False, ".fa.fa"),
    ],
)
def test_output_name(name: str, fmt: str, gz: bool, expected: str) -> None:
    assert output_name(name, fmt, gz) == expected


def test_expand_inputs_lists_directories_in_name_order(tmp_path: Path) -> None:
    for name in ["b.fa", "a.fa", ".hidden", "C.fa"]:
        (tmp_path / name).write_text(">a\nM\n")
    (tmp_path / "sub").mkdir()
    got = expand_inputs([tmp_path, "missing.fa"])
    assert got == [str(tmp_path / n) for n in ["C.fa", "a.fa", "b.fa"]] + ["missing.fa"]


def test_plan_run_orders_nothing_and_makes_the_dir_last(tmp_path: Path) -> None:
    (tmp_path / "big.fa").write_text(">a\nMKV\n" * 10)
    (tmp_path / "small.fa").write_text(">a\nM\n")
    families = plan_run([tmp_path / "small.fa", tmp_path / "big.fa", tmp_path / "gone.fa"], tmp_path / "o" / "p")
    assert [Path(f.output).name for f in families] == ["small.fa", "big.fa", "gone.fa"]
    assert [f.size for f in families] == [5, 70, -1]
    assert (tmp_path / "o" / "p").is_dir() and os.listdir(tmp_path / "o" / "p") == []


def test_make_output_dir_under_a_file_fails(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        make_output_dir(str(tmp_path / "file" / "sub"))
    with pytest.raises(NotADirectoryError):
        make_output_dir(str(tmp_path / "file"))


def test_plan_run_refuses_an_output_that_is_another_input(tmp_path: Path) -> None:
    (tmp_path / "F.fa").write_text(">a\nM\n")
    (tmp_path / "G.aln").write_text(">a\nM\n")
    (tmp_path / "F.aln").symlink_to("G.aln")  # F.fa's clustal output: the input G.aln by another name
    with pytest.raises(ValueError, match="its output .*F.aln would replace the input .*G.aln"):
        plan_run([tmp_path / "G.aln", tmp_path / "F.fa"], tmp_path, fmt="clustal")
    assert sorted(os.listdir(tmp_path)) == ["F.aln", "F.fa", "G.aln"]
