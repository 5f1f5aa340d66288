"""Regressions of what the Hypothesis suite (tests/property) found, one test each, as plain examples."""
from __future__ import annotations

import re

import numpy as np
import pytest

from msa.io import parse_fasta
from msa.tree import NewickError, read_newick


def test_names_split_at_ascii_blanks_only() -> None:
    """A header's first word ends at an ASCII blank only; a no-break space (U+00A0) or a line
    separator (U+2028) in UTF-8 is part of the name, as for FAMSA, MAFFT and ``msa score``
    (found: '>' + U+00A0 was 'header has no name', and 'a' U+00A0 'b' was named 'a')."""
    db = parse_fasta(">\u00a0\nMKV\n>a\u00a0b c\nMK\n>x\u2028y\nMV\n".encode())
    assert db.names == ["\u00a0", "a\u00a0b", "x\u2028y"]
    assert db.descriptions == ["\u00a0", "a\u00a0b c", "x\u2028y"]


def test_score_reads_the_names_align_writes(tmp_path) -> None:
    """``msa score`` reads headers with bytes that are not UTF-8, as ``msa align`` reads and
    writes them back (found: UnicodeDecodeError, so msa could not score its own output)."""
    from msa.scoring import score_files

    (tmp_path / "out.fa").write_bytes(b">n\xffame\nMKVL\n>b\nMKL-\n")
    scores = score_files(tmp_path / "out.fa", tmp_path / "out.fa")
    assert scores["sp"] == 1.0 and scores["tc"] == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(a,b]);", "unexpected ']'"),  # found: characters that start no token were skipped
        ("(a,'b);", "unclosed quote"),
        ("(a,[b);", "unclosed quote or comment"),
        ("(a:1e999,b);", "not a finite number"),  # found: inf and nan became heights
        ("(a:nan,b);", "not a finite number"),
        ("(a,b):1:2;", "a second branch length"),
        ("(seq 1,b);", "a second label '1'"),  # unquoted blanks: the leaf was silently 'seq'
        ("(a,b)(c);", "'(' after a label or ')'"),
    ],
)
def test_newick_reader_refuses_what_it_used_to_skip(text: str, message: str) -> None:
    with pytest.raises(NewickError, match=re.escape(message)):
        read_newick(text, ["a", "b"])


def test_newick_reader_still_reads_what_newick_allows() -> None:
    for text in ["(a,,b);", "(a,b)x:1;", "(a:1,:2,b);", "('a',b)'x y':3;", "  (a , b ) ; ", "(a[x],b[y])[z];"]:
        assert read_newick(text, ["a", "b"]).children.tolist() == [[0, 1]], text


def test_a_bad_tree_file_is_named_in_its_error(tmp_path) -> None:
    """Found: 'msa: error: Newick text must be one tree ending with ';'' did not say which file;
    a tree file that is not UTF-8 was a bare UnicodeDecodeError."""
    from msa.pipeline import read_tree_file

    db = parse_fasta(b">a\nMK\n>b\nMV\n")
    reps = np.arange(2)
    (tmp_path / "t.nwk").write_bytes(b"(a,b)")
    with pytest.raises(NewickError, match=r"t\.nwk: Newick text must be one tree"):
        read_tree_file(str(tmp_path / "t.nwk"), db, reps)
    (tmp_path / "t.nwk").write_bytes(b"(a,\xffb);")
    with pytest.raises(NewickError, match=r"t\.nwk: not UTF-8 text \(byte 0xff at 3\)"):
        read_tree_file(str(tmp_path / "t.nwk"), db, reps)
    (tmp_path / "t.nwk").write_bytes("\ufeff(a,b);".encode())  # a byte-order mark is fine
    assert read_tree_file(str(tmp_path / "t.nwk"), db, reps).children.tolist() == [[0, 1]]


def test_score_reference_with_an_empty_last_row(tmp_path) -> None:
    """Found after the A3M reader landed: a reference whose last record has no residues was an
    IndexError (np.add.reduceat at the end of the text); it is one error naming the file, the line
    and the record."""
    from msa.io import InputError
    from msa.scoring import score_files

    (tmp_path / "t.fa").write_bytes(b">a\nA\n>b\n")
    (tmp_path / "r.fa").write_bytes(b">a\nA\n>b\n")
    with pytest.raises(InputError, match=r"r\.fa: line 3: record 'b' has no residues"):
        score_files(tmp_path / "t.fa", tmp_path / "r.fa")
