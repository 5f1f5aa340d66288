"""Output formats: every one read back by Biopython's readers, Clustal's conservation line,
and the names a format cannot hold (no aligner needed, except the CLI test)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from Bio import Align, AlignIO, SeqIO

from msa.alignment import AlignedRows
from msa.io import FORMATS, write_alignment
from msa.io.bioalign import to_alignment
from msa.io.writers import a2m_match_columns, check_names, conservation_line
from msa.seqdb import SeqDB

LETTERS = b"ACDEFGHIKLMNPQRSTVWYacdefghiklmnpqrstvwyX"


def aligned_of(names: list[str], rows: np.ndarray, descriptions: list[str] | None = None) -> AlignedRows:
    """The AlignedRows of ``rows`` (gaps are b'-'); identical rows share one sequence (``index``),
    as the aligner's duplicates do."""
    descriptions = descriptions or list(names)
    keys = [r.tobytes() for r in rows]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    distinct = sorted(set(first.values()))
    slot = {keys[i]: s for s, i in enumerate(distinct)}
    sub = rows[distinct]
    residue = sub != ord("-")
    offsets = np.concatenate(([0], np.cumsum(residue.sum(axis=1))))
    db = SeqDB.from_arrays([names[i] for i in distinct], [descriptions[i] for i in distinct], sub[residue], offsets)
    index = np.array([slot[k] for k in keys], dtype=np.int64)
    return AlignedRows(names, descriptions, db, np.nonzero(residue)[1], rows.shape[1], index)


def random_rows(n: int, width: int, seed: int = 1) -> np.ndarray:
    """Rows of letters and gaps, every column holding a residue (Biopython's readers drop
    all-gap columns) and every row at least one."""
    rng = np.random.default_rng(seed)
    rows = np.frombuffer(LETTERS, np.uint8)[rng.integers(0, len(LETTERS), (n, width))]
    rows = np.where(rng.random((n, width)) < 0.3, ord("-"), rows).astype(np.uint8)
    others = [i for i in range(n) if i != 3]
    rows[rng.choice(others, width), np.arange(width)] = ord("K")
    rows[others, np.arange(len(others)) % width] = ord("K")
    if n > 3:
        rows[3] = rows[1]  # a duplicate: written from the sequence it shares
    return rows


NAMES = ["sp|P1|A", "b2", "c", "dup_of_b2", "e.5", "f", "g7", "h", "ii"]
LONG_NAMES = ["sp|P12345|A_VERY_LONG_NAME_PAST_THIRTY", "n\u00e9me_\u00fcnicode", "c", "d", "e", "f", "g",
              "h", "short"]


def written(aligned: AlignedRows, fmt: str) -> str:
    out = io.BytesIO()
    write_alignment(out, aligned, fmt)
    return out.getvalue().decode("utf-8")


def read_back(text: str, fmt: str) -> tuple[list[str], list[str]]:
    """(names, gapped rows) as Biopython reads ``text`` in ``fmt``."""
    if fmt == "phylip-relaxed":
        records = list(AlignIO.read(io.StringIO(text), "phylip-relaxed"))
        return [r.id for r in records], [str(r.seq) for r in records]
    if fmt == "a3m":  # no Biopython reader: records of FASTA whose inserts are lower case without gaps
        records = list(SeqIO.parse(io.StringIO(text), "fasta"))
        return [r.id for r in records], [str(r.seq) for r in records]
    alignment = Align.read(io.StringIO(text), fmt)
    return [s.id for s in alignment.sequences], [str(row) for row in alignment]


@pytest.mark.parametrize("names", [NAMES, LONG_NAMES], ids=["short", "long"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_back_through_biopython(fmt: str, names: list[str]) -> None:
    if names is LONG_NAMES and fmt in ("phylip", "clustal"):
        pytest.skip("names cut to the format's width (test_clustal_cuts_names, test_strict_phylip_*)")
    rows = random_rows(len(names), 137)
    aligned = aligned_of(names, rows)
    got_names, got_rows = read_back(written(aligned, fmt), fmt)
    assert got_names == names
    expected = [r.tobytes().decode() for r in rows]
    sequences = [e.replace("-", "") for e in expected]
    if fmt in ("a2m", "a3m"):  # case follows the column's state there
        assert [g.replace("-", "").replace(".", "").upper() for g in got_rows] == [s.upper() for s in sequences]
    else:
        assert got_rows == expected
        assert [g.replace("-", "") for g in got_rows] == sequences


def test_clustal_is_biopythons_layout_with_the_conservation_line() -> None:
    from msa import __version__

    rows = random_rows(9, 137)
    rows[:, :3] = np.frombuffer(b"MSF", np.uint8)  # three columns of one residue each
    rows[:, 3] = np.frombuffer(b"STASTASTA", np.uint8)  # a strong group
    text = written(aligned_of(NAMES, rows), "clustal")
    line = conservation_line(rows).tobytes().decode()
    assert line.startswith("***:")
    reference = to_alignment(NAMES, NAMES, rows)  # Biopython's own writer, given the same line
    reference.column_annotations = {"clustal_consensus": line}
    batch = Align.Alignments([reference])
    batch.metadata = {"Program": "CLUSTAL", "Version": f"format by msa {__version__}"}
    expected = io.StringIO()
    Align.write(batch, expected, "clustal")
    assert text == expected.getvalue()
    assert Align.read(io.StringIO(text), "clustal").column_annotations["clustal_consensus"] == line


def test_clustal_cuts_names_to_thirty_characters() -> None:
    aligned = aligned_of(LONG_NAMES, random_rows(len(LONG_NAMES), 60))
    names, _ = read_back(written(aligned, "clustal"), "clustal")
    assert names == [n[:30] for n in LONG_NAMES]


COLUMNS = {  # a column's residues (one per row) and its mark
    "AAAA": "*", "aAaA": "*", "XXXX": "*", "****": "*",
    "STAS": ":", "NEQK": ":", "NHQK": ":", "NDEQ": ":", "QHRK": ":", "MILV": ":", "MILF": ":", "HYHY": ":",
    "FYWF": ":", "stas": ":",
    "CSAC": ".", "ATVA": ".", "SAGS": ".", "STNK": ".", "STPA": ".", "SGND": ".", "SNDE": ".", "DEHK": ".",
    "NERH": ".", "FVLI": ".", "HFYH": ".",
    "AWAW": " ", "A-AA": " ", "S-TA": " ", "ST*S": " ", "BZBZ": " ", "ACGT": " ",
}


def test_conservation_line_on_hand_made_columns() -> None:
    rows = np.array([list(col.encode()) for col in COLUMNS], dtype=np.uint8).T.copy()
    assert conservation_line(rows).tobytes().decode() == "".join(COLUMNS.values())


def test_nucleotides_get_only_stars() -> None:
    rows = np.array([list(col.encode()) for col in ("AAAA", "ACGT", "ACAC", "T-TT", "uUuU")], np.uint8).T.copy()
    assert conservation_line(rows, nucleotide=True).tobytes() == b"*   *"
    dna = np.array([list(b"ACGTACGTAC" * 6), list(b"ACGAACGTAC" * 6), list(b"ACGCACGTAC" * 6)], np.uint8)
    text = written(aligned_of(["a", "b", "c"], dna), "clustal")
    line = Align.read(io.StringIO(text), "clustal").column_annotations["clustal_consensus"]
    assert set(line) == {"*", " "} and line[3] == " "  # T/A/C: in a weak group as amino acids, not as bases


def test_strict_phylip_refuses_names_it_would_merge() -> None:
    names = ["ABCDEFGHIJ_1", "ABCDEFGHIJ_2", "c"]
    aligned = aligned_of(names, random_rows(3, 20))
    out = io.BytesIO()
    with pytest.raises(ValueError, match=r"'ABCDEFGHIJ_1' and 'ABCDEFGHIJ_2' both as 'ABCDEFGHIJ'.*phylip-relaxed"):
        write_alignment(out, aligned, "phylip")
    assert out.getvalue() == b""
    assert read_back(written(aligned, "phylip-relaxed"), "phylip-relaxed")[0] == names


def test_relaxed_phylip_reads_back_as_an_existing_alignment(tmp_path: Path) -> None:
    from msa.io.formats import read_alignment

    rows = random_rows(5, 70)
    (tmp_path / "x.phy").write_text(written(aligned_of(LONG_NAMES[:5], rows), "phylip-relaxed"))
    back = read_alignment(str(tmp_path / "x.phy"), "phylip-relaxed")
    assert back.names == LONG_NAMES[:5]
    np.testing.assert_array_equal(back.rows, rows)


def test_strict_phylip_keeps_ten_characters_and_repeated_names() -> None:
    names = ["x(1):y;z,w", "dup", "dup", "0123456789abc"]
    got, _ = read_back(written(aligned_of(names, random_rows(4, 30)), "phylip"), "phylip")
    assert got == ["x1|y|zw", "dup", "dup", "0123456789"]  # Biopython's cleaning; repeats were in the input


def test_relaxed_phylip_refuses_a_name_with_a_blank() -> None:
    with pytest.raises(ValueError, match="relaxed PHYLIP cannot hold the name 'a\\\\xa0b'"):
        check_names(["a\u00a0b", "c"], "phylip-relaxed")
    assert check_names(["a\u00a0b", "c"], "phylip") == ["a\u00a0b", "c"]


def test_stockholm_makes_repeated_names_unique() -> None:
    from msa.progress import NoteRecorder

    notes = NoteRecorder()
    names = ["a", "a", "a/2", "b", "a"]
    rows = random_rows(5, 40)
    with notes.running():
        text = written(aligned_of(names, rows), "stockholm")
    got, got_rows = read_back(text, "stockholm")
    assert got == ["a", "a/3", "a/2", "b", "a/4"]
    assert got_rows == [r.tobytes().decode() for r in rows]
    assert notes.notes == ["stockholm: 2 repeated names written as NAME/2, NAME/3, ... (its readers join the lines "
                           "of one name into one sequence)"]


def test_formats_without_sequences_are_refused() -> None:
    empty = aligned_of([], np.zeros((0, 0), np.uint8))
    with pytest.raises(ValueError, match="clustal cannot hold an alignment without sequences"):
        write_alignment(io.BytesIO(), empty, "clustal")


@pytest.mark.parametrize("fmt", ["phylip", "phylip-relaxed", "stockholm", "a2m", "clustal"])
def test_all_gap_columns_are_kept(fmt: str) -> None:
    rows = np.frombuffer(b"MK-LV" b"MK-IV" b"M--LV", np.uint8).reshape(3, 5)
    text = written(aligned_of(["a", "b", "c"], rows), fmt)
    assert ("MK-LV" if fmt != "a2m" else "MK.LV") in text  # Biopython's writers dropped the column


def test_a2m_states_and_the_description() -> None:
    rows = np.frombuffer(b"MK-a" b"M-Kc" b"M--d", np.uint8).reshape(3, 4)
    aligned = aligned_of(["x", "y", "z"], rows, ["x first  one", "y", "z"])
    assert a2m_match_columns(aligned).tolist() == [True, False, False, True]
    assert written(aligned, "a2m") == ">x first  one\nMk.A\n>y\nM.kC\n>z\nM..D\n"


def test_cli_refuses_phylip_in_one_line_and_writes_relaxed(tmp_path: Path, run_msa) -> None:
    (tmp_path / "in.fa").write_text(">ABCDEFGHIJ_1\nMKVLAAGIVG\n>ABCDEFGHIJ_2\nMKVLSAGIVG\n>c\nMKILAGIV\n")
    refused = run_msa("align", "in.fa", "-f", "phylip", "-o", "out.phy", "--device", "cpu", cwd=tmp_path)
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and lines[0].startswith("msa: error: strict PHYLIP")
    assert "--format phylip-relaxed" in lines[0] and not (tmp_path / "out.phy").exists()
    done = run_msa("align", "in.fa", "-f", "phylip-relaxed", "-o", "out.phy", "--device", "cpu", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = [r.id for r in AlignIO.read(tmp_path / "out.phy", "phylip-relaxed")]
    assert names == ["ABCDEFGHIJ_1", "ABCDEFGHIJ_2", "c"]


@pytest.mark.parametrize("many", [False, True])
def test_names_a_format_cannot_hold_are_refused_before_the_alignment(tmp_path: Path, run_msa, many: bool) -> None:
    """The refusal comes before the guide tree (-v lists no stage past reading), for -o and -O."""
    (tmp_path / "in.fa").write_text(">ABCDEFGHIJ_1\nMKVLAAGIVG\n>ABCDEFGHIJ_2\nMKVLSAGIVG\n>c\nMKILAGIV\n")
    where = ("-O", "out") if many else ("-o", "out.phy")
    refused = run_msa("align", "in.fa", "-f", "phylip", *where, "--device", "cpu", "-v", cwd=tmp_path)
    err = refused.stderr.decode()
    assert refused.returncode == 1 and "strict PHYLIP" in err and "--format phylip-relaxed" in err, err
    assert "guide tree" not in err and "profiles" not in err, err
