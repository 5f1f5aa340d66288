"""The readers of every format msa writes (msa.io.readers, msa.io.formats.read_alignment): what msa
writes reads back with the same rows, through msa and through Biopython, from 1 to 10^5 rows;
bad input is one error naming the file and the line."""
from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from Bio import AlignIO, SeqIO

from msa.alignment import AlignedRows
from msa.io import FORMATS, InputError, write_alignment
from msa.io.formats import read_alignment
from msa.io.readers import parse_alignment
from msa.seqdb import SeqDB

PROTEIN = b"ACDEFGHIKLMNPQRSTVWYacdefghiklmnpqrstvwyX"
DNA = b"ACGTNacgt"


def alignment(n: int, width: int, letters: bytes, seed: int = 3) -> tuple[list[str], np.ndarray, AlignedRows]:
    """``n`` rows of ``width`` columns, about a third gaps, every row and column with a residue."""
    rng = np.random.default_rng(seed)
    rows = np.frombuffer(letters, np.uint8)[rng.integers(0, len(letters), (n, width))]
    rows = np.where(rng.random((n, width)) < 0.35, ord("-"), rows).astype(np.uint8)
    rows[np.arange(n), rng.integers(0, width, n)] = ord("A")
    rows[rng.integers(0, n, width), np.arange(width)] = ord("C")
    names = [f"s{i}" for i in range(n)]
    residue = rows != ord("-")
    offsets = np.concatenate(([0], np.cumsum(residue.sum(axis=1))))
    db = SeqDB.from_arrays(names, [f"{nm} row {i}" for i, nm in enumerate(names)], rows[residue], offsets)
    return names, rows, AlignedRows(names, db.descriptions, db, np.nonzero(residue)[1], width)


def biopython_rows(text: bytes, fmt: str) -> tuple[list[str], list[str]]:
    """(names, rows as written) as Biopython reads them (AlignIO, linear in the rows; A2M and A3M
    as the FASTA records they are)."""
    handle = io.StringIO(text.decode())
    if fmt in ("a2m", "a3m"):
        records = list(SeqIO.parse(handle, "fasta"))
    else:
        records = list(AlignIO.read(handle, fmt))
    return [r.id for r in records], [str(r.seq) for r in records]


def check_round_trip(tmp_path: Path, fmt: str, n: int, width: int, letters: bytes, gz: bool = False) -> None:
    names, rows, aligned = alignment(n, width, letters)
    out = io.BytesIO()
    write_alignment(out, aligned, fmt)
    text = out.getvalue()
    path = tmp_path / f"x.{fmt}{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(text, 1) if gz else text)
    table = parse_alignment(text, fmt)
    raw = [table.text[table.offsets[i] : table.offsets[i + 1]].tobytes().decode() for i in range(n)]
    assert table.names == names
    assert (table.names, raw) == biopython_rows(text, fmt)
    back = read_alignment(str(path), fmt)
    assert back.names == names
    if fmt == "a3m":  # inserts come back left-justified: the sequences and the match columns are kept
        assert [back.row(i).replace("-", "").upper() for i in range(n)] == [
            r.tobytes().decode().replace("-", "").upper() for r in rows]
    elif fmt == "a2m":  # case follows the column's state
        np.testing.assert_array_equal(np.char.upper(back.rows.view("S1")), np.char.upper(rows.view("S1")))
    else:
        np.testing.assert_array_equal(back.rows, rows)
    if fmt in ("stockholm", "fasta", "a2m", "a3m"):
        assert back.descriptions == list(aligned.descriptions)


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
@pytest.mark.parametrize("letters", [PROTEIN, DNA], ids=["protein", "dna"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_back_through_msa_and_biopython(tmp_path: Path, fmt: str, letters: bytes, n: int) -> None:
    check_round_trip(tmp_path, fmt, n, 123, letters, gz=n == 10)


@pytest.mark.slow
@pytest.mark.parametrize("letters", [PROTEIN, DNA], ids=["protein", "dna"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_back_at_ten_to_the_fifth_rows(tmp_path: Path, fmt: str, letters: bytes) -> None:
    check_round_trip(tmp_path, fmt, 100_000, 73, letters)


def test_clustal_of_other_tools_with_counts_and_crlf() -> None:
    text = (b"CLUSTAL W (1.83) multiple sequence alignment\r\n\r\n"
            b"a      MK-LV 4\r\nbb     MKILV 5\r\n       ** **\r\n\r\n"
            b"a      AA 6\r\nbb     -A 6\r\n")
    table = parse_alignment(text, "clustal")
    assert table.names == ["a", "bb"]
    assert table.text.tobytes() == b"MK-LVAAMKILV-A"


def test_stockholm_interleaved_with_annotations() -> None:
    text = (b"# STOCKHOLM 1.0\n#=GF ID x\n#=GS a DE first one\n\n"
            b"a MK-LV\n#=GR a SS ....\nb MKILV\n#=GC SS_cons xxxxx\n\n"
            b"a AA\nb -A\n//\n")
    table = parse_alignment(text, "stockholm")
    assert table.names == ["a", "b"] and table.descriptions == ["a first one", "b"]
    assert table.text.tobytes() == b"MK-LVAAMKILV-A"


@pytest.mark.parametrize("relaxed", [False, True])
def test_phylip_interleaved_and_sequential(relaxed: bool) -> None:
    fmt = "phylip-relaxed" if relaxed else "phylip"
    pad = "{:<11}" if relaxed else "{:<10}"
    head = [pad.format(n).encode() for n in ("a", "b")]
    interleaved = b"2 13\n" + head[0] + b"MK-LV AAGI\n" + head[1] + b"MKILV -AGI\n\nVGKL\nV-KL\n"
    sequential = b"2 13\n" + head[0] + b"MK-LV AAGI\nVGKL\n" + head[1] + b"MKILV -AGI\nV-KL\n"
    for text in (interleaved, sequential):
        table = parse_alignment(text, fmt)
        assert table.names == ["a", "b"]
        assert table.text.tobytes() == b"MK-LVAAGIVGKL" b"MKILV-AGIV-KL"


CLUSTAL = b"CLUSTAL\n\n\na  MK-LV\nb  MKILV\nc  MK-IV\n   ** *\n\na  AA\nb  -A\nc  GA\n\n"
STOCKHOLM = b"# STOCKHOLM 1.0\na MK-LV\nb MKILV\nc MK-IV\n//\n"
PHYLIP = b"3 5\na         MK-LV\nb         MKILV\nc         MK-IV\n"
BAD = {
    "clustal truncated block": ("clustal", CLUSTAL[:-7], "line 10: a block of 2 rows where the first block has 3"),
    "clustal row lengths": ("clustal", CLUSTAL.replace(b"b  -A", b"b  -AK"),
                            "line 10: 3 columns where the block's first row (line 9) has 2"),
    "clustal names": ("clustal", CLUSTAL.replace(b"b  -A", b"x  -A"), "line 10: the name 'x' where the first block has 'b'"),
    "clustal junk": ("clustal", CLUSTAL.replace(b"c  GA", b"c  G\x00"), "binary data"),
    "clustal character": ("clustal", CLUSTAL.replace(b"c  GA", b"c  G!"), "line 11: the character '!', which is not"),
    "clustal title": ("clustal", STOCKHOLM, "not Clustal"),
    "clustal line": ("clustal", CLUSTAL.replace(b"c  GA", b"c  G A Q"), "line 11: not a line of Clustal"),
    "stockholm truncated": ("stockholm", STOCKHOLM[:-3], "line 4: no '//' line"),
    "stockholm duplicate": ("stockholm", STOCKHOLM.replace(b"c MK", b"a MK"), "line 4: the name 'a' twice in a block"),
    "stockholm row lengths": ("stockholm", STOCKHOLM.replace(b"MKILV", b"MKILVV"),
                              "line 3: 6 columns where the block's first row (line 2) has 5"),
    "stockholm junk": ("stockholm", STOCKHOLM.replace(b"MKILV", b"MK\xffLV"), "line 3: the byte 0xff"),
    "stockholm second": ("stockholm", STOCKHOLM + STOCKHOLM, "line 6: text after '//'"),
    "phylip truncated": ("phylip", PHYLIP[:-16], "line 3: 2 rows where the first line says 3"),
    "phylip width": ("phylip", PHYLIP.replace(b"3 5", b"3 6"), "line 2: rows of 5 columns where the first line says 6"),
    "phylip row lengths": ("phylip", PHYLIP.replace(b"MKILV", b"MKIL"), "line 3: 4 columns where the block's first row"),
    "phylip junk": ("phylip", PHYLIP.replace(b"MKILV", b"MK\x01LV"), "binary data"),
    "phylip header": ("phylip", b"x y\n" + PHYLIP[4:], "not PHYLIP"),
    "relaxed without residues": ("phylip-relaxed", b"2 3\na MKV\nb\n", "line 3: a name without residues"),
    "fasta row lengths": ("fasta", b">a\nMK-LV\n>b\nMKIL\n", "line 3: not an alignment: record 'b' is 4 columns wide"),
    "fasta junk": ("fasta", b">a\nMK-LV\n>b\nMK\x02LV\n", "binary data"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_the_file_and_the_line(tmp_path: Path, case: str) -> None:
    fmt, data, message = BAD[case]
    path = tmp_path / "bad.aln"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        read_alignment(str(path), fmt)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text, text
    assert "\n" not in text


@pytest.mark.parametrize("case", ["clustal truncated block", "stockholm duplicate", "phylip row lengths"])
def test_bad_input_to_every_command_is_one_line_and_writes_nothing(run_msa, tmp_path: Path, case: str) -> None:
    fmt, data, message = BAD[case]
    (tmp_path / "bad.aln").write_bytes(data)
    (tmp_path / "ok.fa").write_bytes(b">a\nMK-LV\n>b\nMKILV\n>c\nMK-IV\n")
    (tmp_path / "new.fa").write_bytes(b">n\nMKLV\n")
    for args in (["score", "bad.aln", "ok.fa", "--ref-format", "fasta"], ["add", "bad.aln", "new.fa", "-o", "out.fa"],
                 ["merge", "bad.aln", "bad.aln", "-o", "out.fa"]):
        done = run_msa(*args, "--in-format", fmt, cwd=tmp_path)
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 1 and lines == [f"msa: error: bad.aln: {message}" + lines[0].split(message, 1)[1]], lines
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.aln", "new.fa", "ok.fa"]


def test_a_large_binary_file_is_refused_on_its_first_chunk_as_not_the_format(tmp_path: Path) -> None:
    (tmp_path / "x.aln").write_bytes(b"CLUSTAL\n\n" + bytes(2 << 20))
    with pytest.raises(InputError, match=r"x.aln: binary data, not Clustal \(byte 0x00 on line 3\)"):
        read_alignment(str(tmp_path / "x.aln"), "clustal")
