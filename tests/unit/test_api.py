"""The Python API: msa.align / msa.build_tree on SeqRecords and (name, sequence) pairs."""
from __future__ import annotations

import io
import logging

import pytest
from Bio import Align
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

import msa

PAIRS = [
    ("one", "MKVLAAGIVGLLLAQ"),
    ("two", "MKVLAgivGLLAQ"),
    ("three", "MK-LAAGIVGLLLAQWU*"),
    ("four", "MKVLAAGIVGLLLAQ"),  # a duplicate of one
]


def ungapped(text: str) -> str:
    return text.replace("-", "").replace(".", "")


def test_exports() -> None:
    assert set(msa.__all__) >= {"align", "build_tree", "AlignParams", "GuideTree", "read_fasta"}
    assert msa.AlignParams().resolved().matrix == "PFASUM43"


def test_unknown_option_is_refused_before_any_work() -> None:
    with pytest.raises(TypeError, match="unknown option.*colour"):
        msa.align(PAIRS, colour="red")


def test_bad_sequence_is_an_input_error() -> None:
    with pytest.raises(msa.InputError, match="record 'b' has the character '7'"):
        msa.align([("a", "MKV"), ("b", "MK7")], quiet=True)


def test_align_pairs_returns_a_biopython_alignment() -> None:
    aln = msa.align(PAIRS, quiet=True, device="cpu")
    assert isinstance(aln, Align.Alignment)
    rows = [str(row) for row in aln]
    assert len({len(r) for r in rows}) == 1
    assert [ungapped(r) for r in rows] == [ungapped(s) for _, s in PAIRS]
    assert rows[0] == rows[3]
    assert [s.id for s in aln.sequences] == [name for name, _ in PAIRS]
    for fmt in ("fasta", "clustal", "stockholm"):
        text = io.StringIO()
        Align.write(aln, text, fmt)
        assert [str(r) for r in Align.read(io.StringIO(text.getvalue()), fmt)] == rows


def test_align_seqrecords_keeps_ids_and_descriptions() -> None:
    records = [
        SeqRecord(Seq(seq), id=name, description=f"{name} protein {i}") for i, (name, seq) in enumerate(PAIRS)
    ]
    aln = msa.align(records, quiet=True, device="cpu")
    assert [s.id for s in aln.sequences] == [r.id for r in records]
    assert [s.description for s in aln.sequences] == [f"protein {i}" for i in range(len(records))]
    assert format(aln, "fasta").startswith(">one protein 0\n")


def test_a_single_sequence_is_its_own_alignment() -> None:
    aln = msa.align([("solo", "MKV*lu")], quiet=True, device="cpu")
    assert [str(row) for row in aln] == ["MKV*lu"]


def test_build_tree_has_a_leaf_per_distinct_sequence() -> None:
    tree, names = msa.build_tree(PAIRS, quiet=True, device="cpu")
    assert isinstance(tree, msa.GuideTree)
    assert tree.n_leaves == 3 and names == ["one", "two", "three"]
    tree, names = msa.build_tree(PAIRS, quiet=True, device="cpu", keep_duplicates=True)
    assert tree.n_leaves == 4


def test_namespace_is_what_users_call() -> None:
    """``dir(msa)`` lists the public names only: no helper imports, no submodules."""
    msa.align  # loads msa.api and with it several submodules
    assert dir(msa) == sorted(msa.__all__)
    assert not {"Any", "TYPE_CHECKING", "importlib", "annotations"} & set(vars(msa))


def test_notes_are_logged_not_printed(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """The API prints nothing (the CLI's notes are INFO records of the ``msa`` logger), and
    ``quiet=True`` leaves out the notes."""
    with caplog.at_level(logging.DEBUG, logger="msa"):
        msa.align(PAIRS[:2])
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    notes = [r.getMessage() for r in caplog.records if r.name == "msa" and r.levelno == logging.INFO]
    assert "sequence type: protein (detected; --seq-type sets it)" in notes
    assert any(r.levelno == logging.DEBUG and r.getMessage().startswith("aligning profiles") for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="msa"):
        msa.align(PAIRS[:2], quiet=True)
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]
    assert capfd.readouterr() == ("", "")
