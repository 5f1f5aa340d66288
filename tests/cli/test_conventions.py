"""What users of other aligners expect of the command: help that renders as written, ``-h``,
``--in-format`` wherever an alignment is read, and no advice to use a GPU that is not there."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from msa.cli import app

from test_cli import one_line_error

REF = b">a\nMK-V\n>b\nMKLV\n"
TEST = b">a\nMKV-\n>b\nMKLV\n"
#: TEST and REF in Clustal format, as Biopython writes them.
TEST_CLUSTAL = b"CLUSTAL W multiple sequence alignment\n\n\na      MKV-\nb      MKLV\n\n\n"
REF_CLUSTAL = b"CLUSTAL W multiple sequence alignment\n\n\na      MK-V\nb      MKLV\n\n\n"


def _help_texts() -> list[tuple[str, str]]:
    """(where, text) of every help string of the app, its commands and their parameters."""
    group = typer.main.get_command(app)
    texts = [("msa", group.help or "")]
    for name, command in group.commands.items():
        texts.append((name, command.help or ""))
        texts += [(f"{name} {p.name}", getattr(p, "help", None) or "") for p in command.params]
    return texts


def test_help_texts_render_as_written() -> None:
    """Rich reads ``[...]`` as markup: ``msa[dask]`` printed as ``msa``. Every help string
    renders to itself, ``\\[`` escapes aside."""
    texts = _help_texts()
    assert any("msa\\[dask]" in text for _, text in texts)
    for where, text in texts:
        assert Text.from_markup(text).plain == text.replace("\\[", "["), where


def test_align_help_names_the_extras() -> None:
    result = CliRunner().invoke(app, ["align", "--help"], prog_name="msa", env={"COLUMNS": "400"})
    assert result.exit_code == 0
    out = " ".join(result.output.split())
    assert "Needs msa[dask]." in out and "Needs msa[dask-gpu]." in out


def test_top_level_help_describes_the_default_tree(run_msa, tmp_path: Path) -> None:
    out = " ".join(run_msa("--help", cwd=tmp_path).stdout.decode().split())
    assert "single-linkage" in out and "PartTree guide trees" not in out


@pytest.mark.parametrize("command", [[], ["align"], ["add"], ["merge"], ["tree"], ["score"]])
def test_h_is_help(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "-h"], prog_name="msa")
    assert result.exit_code == 0 and "Usage: msa" in result.output


def test_h_prints_the_help(run_msa, tmp_path: Path) -> None:
    short, long = (run_msa("score", flag, cwd=tmp_path) for flag in ("-h", "--help"))
    assert short.returncode == 0 and short.stdout == long.stdout and b"--ref-format" in short.stdout


def _score(run_msa, tmp_path: Path, *args: str) -> list[str]:
    result = run_msa("score", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode().splitlines()


def test_score_reads_other_formats(run_msa, tmp_path: Path) -> None:
    """``--in-format`` reads TEST and REF, ``--ref-format`` REF alone; the scores are FASTA's."""
    for name, data in {"t.fa": TEST, "r.fa": REF, "t.aln": TEST_CLUSTAL, "r.aln": REF_CLUSTAL}.items():
        (tmp_path / name).write_bytes(data)
    expected = _score(run_msa, tmp_path, "t.fa", "r.fa")
    assert expected == ["SP (Q)\t0.6667", "TC\t0.6667"]
    assert _score(run_msa, tmp_path, "t.aln", "r.aln", "--in-format", "clustal") == expected
    assert _score(run_msa, tmp_path, "t.fa", "r.aln", "--ref-format", "clustal") == expected
    assert _score(run_msa, tmp_path, "t.aln", "r.fa", "--in-format", "clustal", "--ref-format", "auto") == expected


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["add", "x.aln", "new.fa"], "--in-format"),
        (["merge", "r.fa", "x.aln"], "--in-format"),
        (["score", "x.aln", "r.fa"], "--in-format"),
        (["score", "r.fa", "x.aln"], "--ref-format"),
    ],
)
def test_not_fasta_names_the_format_option(run_msa, tmp_path: Path, args: list[str], option: str) -> None:
    (tmp_path / "x.aln").write_bytes(TEST_CLUSTAL)
    (tmp_path / "r.fa").write_bytes(REF)
    (tmp_path / "new.fa").write_bytes(b">n\nMKV\n")
    err = one_line_error(run_msa(*args, "--device", "cpu", cwd=tmp_path) if args[0] != "score"
                         else run_msa(*args, cwd=tmp_path))
    assert "x.aln: not FASTA" in err and f"give its format with {option} clustal" in err


def test_new_sequences_that_are_not_fasta_get_no_format_advice(run_msa, tmp_path: Path) -> None:
    """``add``'s NEW is FASTA only: --in-format is no help there."""
    (tmp_path / "r.fa").write_bytes(REF)
    (tmp_path / "x.aln").write_bytes(TEST_CLUSTAL)
    err = one_line_error(run_msa("add", "r.fa", "x.aln", "--device", "cpu", cwd=tmp_path))
    assert "x.aln: not FASTA" in err and "--in-format" not in err


needs_no_cupy = pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")


@needs_no_cupy
def test_no_gpu_advice_without_cupy(run_msa, tmp_path: Path) -> None:
    """A small input under ``--device auto`` takes the CPU; without CuPy nothing points at --device cuda."""
    (tmp_path / "in.fa").write_bytes(TEST)
    result = run_msa("align", "in.fa", "-o", "out.fa", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert b"--device cuda" not in result.stderr and b"small input" not in result.stderr
    assert result.stderr.decode().startswith("msa: aligned 2 sequences")


@needs_no_cupy
def test_device_cuda_without_cupy_says_how_to_get_it(run_msa, tmp_path: Path) -> None:
    (tmp_path / "in.fa").write_bytes(TEST)
    err = one_line_error(run_msa("align", "in.fa", "-o", "out.fa", "--device", "cuda", cwd=tmp_path))
    assert "--device cuda: CuPy is not installed" in err and "pip install 'msa[gpu]'" in err


def test_help_states_the_exit_statuses_and_what_the_seed_seeds() -> None:
    """``msa --help`` gives every exit status; ``--seed`` names each draw it seeds."""
    top = " ".join(CliRunner().invoke(app, ["--help"], prog_name="msa", env={"COLUMNS": "400"}).output.split())
    for status in ("0 success", "1 failure", "2 usage error", "130 or 143"):
        assert status in top
    seed = next(p.help for p in typer.main.get_command(app).commands["align"].params if p.name == "seed")
    for draw in ("PartTree", "refinement", "--consistency"):
        assert draw in seed
