"""FASTA reading and writing, output formats and atomic output files (no aligner needed)."""
from __future__ import annotations

import errno
import gzip
import io
import os
from pathlib import Path

import numpy as np
import pytest
from Bio import Align

from msa.io import InputError, open_output, parse_fasta, read_fasta, write_alignment
from msa.io.bioalign import to_alignment
from msa.io.fasta import write_fasta
from msa.io.writers import a2m_match_columns
from msa.io.records import db_from_records
from msa.alignment import AlignedRows


def seqs(db) -> list[bytes]:
    return [db.sequence(i) for i in range(len(db))]


def test_reads_names_descriptions_and_residues_exactly() -> None:
    data = b">sp|P1|A  first  protein \nMKV-la.U\n*OJbzX\n>b\nMK\n>a dup name\nAC\n"
    db = parse_fasta(data)
    assert db.names == ["sp|P1|A", "b", "a"]
    assert db.descriptions == ["sp|P1|A  first  protein ", "b", "a dup name"]
    assert seqs(db) == [b"MKVlaU*OJbzX", b"MK", b"AC"]
    assert db.offsets.tolist() == [0, 12, 14, 16]
    assert db.codes[:3].tolist() == [12, 11, 19]  # M K V in ALPHABET order
    assert db.codes[5] == 22 and db.codes[6] == 23  # U is scored as X, * as itself


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_endings(newline: bytes) -> None:
    data = newline.join([b">a x", b"MK", b"LV", b">b", b"W", b""])
    db = parse_fasta(data)
    assert db.descriptions == ["a x", "b"]
    assert seqs(db) == [b"MKLV", b"W"]


def test_bom_blank_lines_and_a_very_long_line() -> None:
    long = b"ACDEFGHIKLMNPQRSTVWY" * 50_000
    db = parse_fasta(b"\xef\xbb\xbf\n\n>a\n" + long + b"\n\n>b\n  M K \tV\n")
    assert seqs(db) == [long, b"MKV"]


def test_last_record_without_newline_and_one_sequence() -> None:
    db = parse_fasta(b">only one\nMKV")
    assert db.names == ["only"] and seqs(db) == [b"MKV"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty input"),
        (b"\n \r\n\t\n", "empty input"),
        (b"CLUSTAL W\n\nA  MK\n", "not FASTA"),
        (b"MKV\n>a\nMK\n", "line 1 comes before the first '>'"),
        (b"\x00\x01\x02binary\xff", "binary data"),
        (b">a\nMK\n>b\nMK3V\n", "line 4: record 'b' has the character '3'"),
        (b">a\nMK#V\n", "the character '#'"),
        (b">a\nMK\xc3\xa9V\n", "the byte 0xc3"),
        (b">a\nMK\n>b\n\n>c\nV\n", "line 3: record 'b' has no residues"),
        (b">a\n---..\n", "record 'a' has no residues"),
        (b">a\nMK\n>\nMK\n", "line 3: header has no name"),
        (b">a\nMK\n>b", "line 3: record 'b' has no residues"),
    ],
)
def test_bad_input_names_the_problem(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("|", r"\|")) as info:
        parse_fasta(data, "in.fa")
    assert str(info.value).startswith("in.fa: ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("blank", [b"", b" ", b"\r", b"-"])
def test_reading_does_not_depend_on_blocks_or_blanks(monkeypatch: pytest.MonkeyPatch, blank: bytes) -> None:
    """Lines and classes are found a block at a time, and a record's length is taken from its
    lines unless it has blanks (or gaps) to drop: every way gives the same records."""
    import msa.alphabet
    import msa.io.fasta as fasta

    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWYx*", dtype=np.uint8)
    seqs_in = [letters[rng.integers(0, len(letters), size=rng.integers(1, 90))].tobytes() for _ in range(40)]
    lines = [line for i, seq in enumerate(seqs_in)
             for line in (b">s%d d" % i, *(seq[k:k + 13] + blank for k in range(0, len(seq), 13)))]
    data = b"\n".join(lines) + b"\n"
    want = parse_fasta(data)
    assert seqs(want) == seqs_in and want.names == [f"s{i}" for i in range(40)]
    monkeypatch.setattr(msa.alphabet, "LOOKUP_BLOCK", 7)
    monkeypatch.setattr(fasta._positions, "__defaults__", (5,))
    got = parse_fasta(data)
    assert seqs(got) == seqs_in and got.descriptions == want.descriptions
    np.testing.assert_array_equal(got.codes, want.codes)


def test_reads_gzip_by_content(tmp_path: Path) -> None:
    path = tmp_path / "x.fasta"  # no .gz suffix: detection is by magic bytes
    path.write_bytes(gzip.compress(b">a\nMK\n>b\nLV\n"))
    assert seqs(read_fasta(path)) == [b"MK", b"LV"]


def test_damaged_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.fa.gz"
    path.write_bytes(gzip.compress(b">a\nMK\n" * 100)[:30])
    with pytest.raises(InputError, match="damaged gzip"):
        read_fasta(path)


def test_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BytesIO(b">a\nMK\n")

    monkeypatch.setattr("sys.stdin", Stdin())
    assert read_fasta("-").names == ["a"]


def test_fasta_writer_wraps_at_60_and_keeps_header_bytes() -> None:
    rows = np.frombuffer(b"A" * 125 + b"-" * 60 + b"c" * 65, dtype=np.uint8).reshape(2, 125)
    header = b"x \xff odd".decode("utf-8", "surrogateescape")
    out = io.BytesIO()
    write_fasta(out, [header, "y"], rows)
    lines = out.getvalue().split(b"\n")
    assert lines[0] == b">x \xff odd"
    assert [len(line) for line in lines] == [8, 60, 60, 5, 2, 60, 60, 5, 0]
    assert b"".join(lines[5:8]) == rows[1].tobytes()


def test_fasta_writer_blocks_give_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    rows = rng.choice(np.frombuffer(b"ACD-", dtype=np.uint8), size=(50, 130))
    names = [f"s{i} d{'x' * i}" for i in range(50)]
    whole = io.BytesIO()
    write_fasta(whole, names, rows)
    text = whole.getvalue().decode()
    expected = "".join(
        f">{n}\n" + "".join(r.tobytes().decode()[k : k + 60] + "\n" for k in range(0, 130, 60))
        for n, r in zip(names, rows)
    )
    assert text == expected


def test_fasta_writer_builds_rows_block_by_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """AlignedRows makes each record's row from the residue columns, duplicates from their
    representative; blocks of one, a few or all records give the bytes of the whole array."""
    from msa.seqdb import SeqDB

    distinct = SeqDB.from_pairs([("a", "MKV"), ("b", "KV"), ("c", "W")])
    columns = np.array([0, 1, 3, 1, 2, 4])
    index = np.array([2, 0, 0, 1, 2])
    names = [f"r{i}" for i in range(len(index))]
    aligned = AlignedRows(names, names, distinct, columns, 5, index)
    assert [aligned.row(i) for i in range(5)] == ["----W", "MK-V-", "MK-V-", "-KV--", "----W"]
    whole = io.BytesIO()
    write_fasta(whole, names, aligned.rows, width=2)
    for block_bytes in (1, 16, 1 << 20):  # at least one record per block
        monkeypatch.setattr("msa.io.fasta.BLOCK_BYTES", block_bytes)
        blocks = io.BytesIO()
        write_fasta(blocks, names, aligned, width=2)
        assert blocks.getvalue() == whole.getvalue()


def test_fasta_writer_maps_an_empty_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new regular file open for reading and writing is reserved and written in place (every
    record at once); a write-only one is reserved and goes through the block writer, an
    appending one through the block writer only: the same bytes."""
    from msa.io.fasta import _empty_file, _readable
    from msa.seqdb import SeqDB

    rng = np.random.default_rng(5)
    seqs = ["".join(rng.choice(list("ACDEFGHIK"), int(rng.integers(1, 200)))) for _ in range(40)]
    distinct = SeqDB.from_pairs([(f"s{i}", s) for i, s in enumerate(seqs)])
    width = 250
    columns = np.concatenate([np.sort(rng.choice(width, len(s), replace=False)) for s in seqs])
    index = rng.integers(0, len(seqs), 60)
    names = [f"r{i} {'d' * int(i)}" for i in range(len(index))]
    aligned = AlignedRows(names, names, distinct, columns, width, index)
    blocks = io.BytesIO()
    write_fasta(blocks, names, aligned)
    mapped = tmp_path / "mapped.fa"
    with open(mapped, "w+b") as out:  # read and write, as the -o temporary file
        assert _empty_file(out) is not None
        write_fasta(out, names, aligned)
    assert mapped.read_bytes() == blocks.getvalue()
    with open(tmp_path / "write-only.fa", "wb") as out:
        assert _empty_file(out) is not None and not _readable(out.fileno())
        assert write_fasta(out, names, aligned) == len(blocks.getvalue())
    assert (tmp_path / "write-only.fa").read_bytes() == blocks.getvalue()
    monkeypatch.setattr("msa.io.fasta.MAP_BYTES", 5000)  # many windows, none on a page boundary
    with open(mapped, "w+b") as out:
        out.truncate(0)
        write_fasta(out, names, aligned)
    assert mapped.read_bytes() == blocks.getvalue()
    appended = tmp_path / "appended.fa"
    appended.write_bytes(b">old\nMK\n")
    with open(appended, "ab") as out:
        assert _empty_file(out) is None
        write_fasta(out, names, aligned)
    assert appended.read_bytes() == b">old\nMK\n" + blocks.getvalue()


def test_fasta_round_trip() -> None:
    data = b">a desc\nMK-V\n>b\nM--V\n"
    db = parse_fasta(data)
    rows = np.frombuffer(b"MKVM-V", dtype=np.uint8).reshape(2, 3)
    out = io.BytesIO()
    write_alignment(out, aligned_from_rows(db.names, db.descriptions, rows), "fasta")
    assert out.getvalue() == b">a desc\nMKV\n>b\nM-V\n"


ROWS = [b"MKV-lA-", b"-K*uLAW", b"MKVULA-", b"-----AW"]


def aligned_example() -> AlignedRows:
    rows = np.frombuffer(b"".join(ROWS), dtype=np.uint8).reshape(len(ROWS), -1)
    names = ["sp|P1|one", "two", "three", "four"]
    descriptions = ["sp|P1|one first protein", "two", "three  spaced", "four"]
    return aligned_from_rows(names, descriptions, rows)


def aligned_from_rows(names: list[str], descriptions: list[str], rows: np.ndarray) -> AlignedRows:
    """The AlignedRows whose rows are ``rows`` (gaps are b'-')."""
    from msa.seqdb import SeqDB

    residue = rows != ord("-")
    offsets = np.concatenate(([0], np.cumsum(residue.sum(axis=1))))
    distinct = SeqDB.from_arrays(names, descriptions, rows[residue], offsets)
    return AlignedRows(names, descriptions, distinct, np.nonzero(residue)[1], rows.shape[1])


def test_to_alignment_gives_rows_ids_and_descriptions_back() -> None:
    aligned = aligned_example()
    aln = to_alignment(aligned.names, aligned.descriptions, aligned.rows)
    assert [str(row) for row in aln] == [r.decode() for r in ROWS]
    assert [s.id for s in aln.sequences] == aligned.names
    assert [s.description for s in aln.sequences] == ["first protein", "", "spaced", ""]
    assert aln.coordinates.shape[1] < len(ROWS[0]) + 1  # only the columns where gaps switch


def test_a2m_match_columns_half_occupied() -> None:
    rows = np.frombuffer(b"A-A" + b"AAA" + b"A--" + b"A--", dtype=np.uint8).reshape(4, 3)
    aligned = aligned_from_rows(list("abcd"), list("abcd"), rows)
    assert a2m_match_columns(aligned).tolist() == [True, False, True]


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown output format 'nexus'"):
        write_alignment(io.BytesIO(), aligned_example(), "nexus")


def test_open_output_renames_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out.fa"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with open_output(target) as fh:
            fh.write(b"partial")
            raise RuntimeError("alignment failed")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["out.fa"]
    with open_output(target) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["out.fa"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_open_output_gzips_by_suffix(tmp_path: Path) -> None:
    target = tmp_path / "out.fa.gz"
    with open_output(target) as fh:
        fh.write(b">a\nMK\n")
    assert gzip.decompress(target.read_bytes()) == b">a\nMK\n"


def test_open_output_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        with open_output(tmp_path):
            pass


def test_open_output_writes_special_files_in_place(tmp_path: Path) -> None:
    """/dev/null and named pipes are written directly, never replaced by a renamed file."""
    with open_output(os.devnull) as fh:
        fh.write(b">a\nMK\n")
    assert not Path(os.devnull).is_file()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    import threading

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with open_output(fifo) as fh:
        fh.write(b">a\nMK\n")
    reader.join(timeout=10)
    assert got == [b">a\nMK\n"] and sorted(os.listdir(tmp_path)) == ["pipe"]


def test_records_from_pairs_and_seqrecords() -> None:
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    db = db_from_records(
        [
            ("p1", "MK-vL"),
            SeqRecord(Seq("AC*"), id="r1", description="r1 full header"),
            SeqRecord(Seq("W"), id="r2", description="other words"),
            SeqRecord(Seq("Y"), id="r3"),
        ]
    )
    assert db.names == ["p1", "r1", "r2", "r3"]
    assert db.descriptions == ["p1", "r1 full header", "r2 other words", "r3"]
    assert seqs(db) == [b"MKvL", b"AC*", b"W", b"Y"]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([], "no sequences"),
        ([("a", "MK"), ("b", "M1K")], "record 'b' has the character '1' at position 2"),
        ([("a", "MK"), ("b", "--")], "record 'b' has no residues"),
        ([("a\nb", "MK")], "bad name"),
    ],
)
def test_bad_records(records: list, message: str) -> None:
    with pytest.raises(InputError, match=message):
        db_from_records(records)


def test_output_writer_writes_every_byte_of_short_writes() -> None:
    """A system call that writes part of the data (a pipe, a disk filling up) is followed by
    another for the rest: BufferedWriter alone returns the short count, which Biopython's text
    layer ignores. When the rest fails, the error comes out instead of a lost tail."""
    from msa.io.output import OutputWriter

    class Short(io.RawIOBase):
        def __init__(self, step: int, room: int = 1 << 30) -> None:
            self.got, self.step, self.room = bytearray(), step, room

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            if len(self.got) >= self.room:
                raise OSError(errno.ENOSPC, "No space left on device")
            part = bytes(data[: self.step])
            self.got += part
            return len(part)

    raw = Short(7000)
    out = OutputWriter(raw, buffer_size=4096)
    data = bytes(range(256)) * 1000
    assert out.write(data) == len(data)
    out.flush()
    assert bytes(raw.got) == data
    with pytest.raises(OSError) as caught:
        OutputWriter(Short(7000, room=50_000), buffer_size=4096).write(data)
    assert caught.value.errno == errno.ENOSPC


# A3M out, A2M/A3M in (msa.io.formats).

def _a3m_records(text: bytes) -> list[tuple[str, bytes]]:
    lines = text.decode().split("\n")
    assert lines[-1] == ""
    return [(lines[i][1:], lines[i + 1].encode()) for i in range(0, len(lines) - 1, 2)]


def test_a3m_output_follows_hhsuite_first_sequence_rule() -> None:
    aligned = aligned_example()  # ROWS: lower case, '*', an all-gap first-row column
    out = io.BytesIO()
    write_alignment(out, aligned, "a3m")
    records = _a3m_records(out.getvalue())
    assert [h for h, _ in records] == aligned.descriptions
    match = [c for c in range(len(ROWS[0])) if ROWS[0][c] != ord("-") or any(r[c] == ord("*") for r in ROWS)]
    for (_, line), row in zip(records, ROWS):
        # Match states: one per match column, upper case or '-'; inserts: lower case, no gaps.
        states = [ch for ch in line.decode() if not ch.islower()]
        assert len(states) == len(match)
        assert all(ch == "-" or not ch.isalpha() or ch.isupper() for ch in states)
        assert "." not in line.decode()
        want = row.replace(b"-", b"").replace(b".", b"").upper()
        assert line.replace(b"-", b"").upper() == want  # the input sequence, case aside
    assert records[0][1] == b"MKVLA"  # the query: all match states, no inserts


def test_a3m_round_trip_gives_a_valid_alignment(tmp_path: Path) -> None:
    from msa.alignment import check_alignment
    from msa.io.formats import read_alignment

    aligned = aligned_example()
    out = io.BytesIO()
    write_alignment(out, aligned, "a3m")
    path = tmp_path / "x.a3m"
    path.write_bytes(b"#4 1\n" + out.getvalue())  # HH-suite's title line is skipped
    back = read_alignment(str(path))
    inputs = [(n, r.replace(b"-", b"")) for n, r in zip(aligned.names, ROWS)]
    rows = back.rows
    check_alignment([(n, s.upper()) for n, s in inputs], back.names, [r.tobytes().upper() for r in rows])
    # Match columns come back where they were, with every residue; the same file without the
    # extension is recognised as A3M by its unequal rows and lower-case letters.
    plain = tmp_path / "x.txt"
    plain.write_bytes(out.getvalue())
    np.testing.assert_array_equal(read_alignment(str(plain)).rows, rows)
    again = io.BytesIO()
    write_alignment(again, back, "a3m")
    assert again.getvalue() == out.getvalue()


@pytest.mark.parametrize(
    "name, text",
    [
        ("x.a3m", b">q\nAC-D\n>b\nAkkCeD-\n>c\naA-CD\n"),
        ("x.a2m", b">q\n.A..C.-D\n>b\n.AkkCeD-\n>c\naA..-.CD\n"),  # A2M: '.' pads the inserts
    ],
)
def test_a3m_and_a2m_inserts_become_columns_left_justified(tmp_path: Path, name: str, text: bytes) -> None:
    from msa.io.formats import read_alignment

    (tmp_path / name).write_bytes(text)
    got = read_alignment(str(tmp_path / name))
    assert [r.tobytes() for r in got.rows] == [b"-A--C--D", b"-AkkCeD-", b"aA----CD"]


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("x.fa", b">a\nMK-V\n>b\nMKV\n", "not an alignment: record 'b' is 3 columns wide, record 'a' 4"),
        ("x.a3m", b">a\nMK-V\n>b\nMKvV\n", "not an alignment: row 2 has 3 match columns"),
        ("x.fa", b"", "empty input"),
        ("x.fa", b">a\n--\n", "record 'a' has no residues"),
    ],
)
def test_bad_alignments_are_input_errors(tmp_path: Path, name: str, text: bytes, message: str) -> None:
    from msa.io.formats import read_alignment

    (tmp_path / name).write_bytes(text)
    with pytest.raises(InputError, match=message):
        read_alignment(str(tmp_path / name))


def test_alignment_in_a_biopython_format(tmp_path: Path) -> None:
    from msa.io.formats import read_alignment

    aligned = aligned_example()
    out = io.BytesIO()
    write_alignment(out, aligned, "stockholm")
    (tmp_path / "x.sto").write_bytes(out.getvalue())
    back = read_alignment(str(tmp_path / "x.sto"), "stockholm")
    assert back.names == aligned.names
    np.testing.assert_array_equal(back.rows, aligned.rows)
    with pytest.raises(InputError, match="not Clustal"):
        read_alignment(str(tmp_path / "x.sto"), "clustal")
    with pytest.raises(InputError, match="cannot read as msf"):  # a format msa does not write: Biopython's reader
        read_alignment(str(tmp_path / "x.sto"), "msf")


def test_score_reads_a3m(tmp_path: Path) -> None:
    from msa.scoring import score_files

    aligned = aligned_example()
    rows = np.frombuffer(b"".join(ROWS).upper().replace(b"*", b"X"), dtype=np.uint8).reshape(len(ROWS), -1)
    aligned = aligned_from_rows(aligned.names, aligned.descriptions, rows)
    for fmt, name in (("a3m", "r.a3m"), ("fasta", "t.fa")):
        out = io.BytesIO()
        write_alignment(out, aligned, fmt)
        (tmp_path / name).write_bytes(out.getvalue())
    # The A3M as the reference: its match states (upper case) are scored, and they are where
    # the same alignment written as FASTA has them.
    got = score_files(tmp_path / "t.fa", tmp_path / "r.a3m")
    assert got["sp"] == 1.0 and got["tc"] == 1.0 and got["ref_pairs"] > 0
