"""Alignment formats: every output format written natively from the rows; alignments read back
(``msa add``/``merge``/``score``) natively in every format msa writes (:mod:`msa.io.readers`),
in any other format through Biopython.

FASTA is the format every run of 10^6 sequences uses, so it is written from
the residues' columns directly, never as a row matrix; A3M (HH-suite,
ColabFold) is written a block of rows at a time; Clustal, Stockholm, PHYLIP
(strict and relaxed) and A2M are laid out a block of lines at a time by
:mod:`msa.io.writers`, byte for byte as Biopython's writers laid them out.

A3M follows HH-suite's ``reformat.pl`` (its default ``-M first`` for a3m
output): the match columns are those where the first sequence (the query)
has a residue; residues are upper case there and gaps ``-``; every other
column is an insert column, its residues lower case and its gaps left out,
so rows differ in length. A column holding a ``*`` is also a match column
(``*`` has no lower case, so a reader could not tell it from a match state).
Reading A2M/A3M expands the inserts back into columns, left-justified
between their match columns (:func:`msa.alignment.insert_columns`).
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import BinaryIO, Callable, Sequence

import numpy as np

from msa import __version__, interrupts
from msa.alignment import AlignedRows, insert_columns
from msa.alphabet import detect_seq_type, lookup
from msa.io.fasta import (
    ALIGNED_BYTE_CLASS, BAD, GAP, LINE_WIDTH, RESIDUE, InputError, _label, describe_byte, fasta_size, read_input, write_fasta,
)
from msa.io.output import check_space, needing, regular_file
from msa.io.readers import BLOCK_FORMATS, FORMAT_NAMES, Table, parse_alignment
from msa.io import writers
from msa.io.writers import Rows
from msa.params import FORMATS, NUCLEOTIDE_TYPES, OutputFormat  # defined with the other choices (the CLI's, without NumPy)
from msa.progress import current

#: The file extension of each format (the names ``msa align -O`` gives its outputs).
FORMAT_SUFFIXES: dict[str, str] = {
    "fasta": ".fa", "clustal": ".aln", "stockholm": ".sto", "phylip": ".phy", "phylip-relaxed": ".phy",
    "a2m": ".a2m", "a3m": ".a3m",
}
#: Input formats of an existing alignment read by msa itself (msa.io.readers): ``auto`` (by the
#: file name: .a2m/.a3m, else aligned FASTA, read as A3M when its rows differ in width and it has
#: lower-case letters) and every format msa writes; any other name Biopython's
#: ``Bio.Align.read`` knows is read by Biopython.
NATIVE_IN_FORMATS = ("auto", "fasta", "a2m", "a3m", *BLOCK_FORMATS)


def write_alignment(
    out: BinaryIO, aligned: Rows, fmt: str = "fasta", backend=None, seq_type: str | None = None
) -> int | None:
    """Write ``aligned`` to the binary stream ``out`` in format ``fmt``; the bytes written
    (before compression), or None where they cannot be counted.

    Where ``out`` is a regular file, its free space is checked against the
    output's size first (exact for FASTA, an estimate for the others), so a
    full disk is reported before the rows are built. ``backend`` lays out the rows of every
    format but A3M (AlignedRows.fill); default: the CPU's threads. ``seq_type``
    (``protein``, ``dna``, ``rna``; default: detected) picks Clustal's conservation marks.

    Raises:
        ValueError: ``fmt`` is not one of FORMATS, or cannot hold the names (check_names).
        OSError: a full disk (ENOSPC, EDQUOT, EFBIG) with ``bytes_needed``, or another write error.
    """

    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "fasta":
        return write_fasta(out, aligned.descriptions, aligned, backend=backend)
    needed = output_size(aligned.names, aligned.descriptions, aligned.width, fmt)
    names = writers.check_names(aligned.names, fmt)
    if fmt == "stockholm" and names != aligned.names:
        renamed = sum(a != b for a, b in zip(names, aligned.names))
        current().note(f"stockholm: {renamed} repeated name{'s' if renamed > 1 else ''} written as NAME/2, "
                       "NAME/3, ... (its readers join the lines of one name into one sequence)")
    at_least = fmt != "a2m"
    check_space(out, needed, at_least)
    start = _position(out)
    try:
        if fmt == "a3m":
            writers.write_a3m(out, aligned)
        elif fmt == "a2m":
            rests = list(map(writers.rest_of_header, aligned.names, aligned.descriptions))
            writers.write_a2m(out, aligned, names, rests, writers.a2m_match_columns(aligned), backend)
        elif fmt == "clustal":
            title = f"CLUSTAL format by msa {__version__} multiple sequence alignment".encode()
            writers.write_clustal(out, aligned, names, title, _nucleotide(aligned, seq_type), backend)
        elif fmt == "stockholm":
            rests = list(map(writers.rest_of_header, aligned.names, aligned.descriptions))
            writers.write_stockholm(out, aligned, names, rests, backend)
        else:
            writers.write_phylip(out, aligned, names, fmt == "phylip-relaxed", backend)
    except OSError as exc:
        raise needing(exc, needed if regular_file(out) is not None else None, at_least)
    end = _position(out)
    return end - start if start is not None and end is not None else None


def _nucleotide(aligned: Rows, seq_type: str | None) -> bool:
    """Whether the rows are DNA or RNA: ``seq_type``, else detected from the letters."""
    if seq_type is None:
        seq_type = detect_seq_type(aligned.distinct.residues, aligned.distinct.offsets)
    return seq_type in NUCLEOTIDE_TYPES


def output_size(names: Sequence[str], descriptions: Sequence[str], width: int, fmt: str = "fasta") -> int:
    """Bytes of the output of ``len(names)`` rows of ``width`` columns in format ``fmt``:
    exact for FASTA (the headers as ASCII) and A2M, a lower bound for the others (so an early
    check never refuses an output that would fit)."""
    n = len(names)
    if n == 0:
        return 0
    headers = sum(map(len, descriptions)) + 2 * n  # '>' and newline
    name_col = max(map(len, names)) + 1
    if fmt == "fasta":
        return fasta_size(headers, n, width, LINE_WIDTH)
    if fmt == "a2m":  # one line per row
        return headers + n * (width + 1)
    if fmt == "a3m":  # insert columns' gaps dropped: at least a newline a row
        return headers + n
    if fmt == "phylip":  # names cut or padded to 10
        return n * (10 + width + 1)
    if fmt in ("stockholm", "phylip-relaxed"):  # a line per row after a name column
        return n * (name_col + width + 1)
    if fmt == "clustal":  # blocks of 50 columns, a 36-byte name column on every line, a conservation line
        return (n + 1) * (-(-width // 50) * 37 + width)
    raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _position(out: BinaryIO) -> int | None:
    """Where ``out`` is (uncompressed bytes for gzip), or None for a pipe."""
    try:
        return out.tell()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


@dataclass
class Inserts:
    """Where the bytes of A2M/A3M rows go once inserts are columns: match state ``k`` of every row
    to column ``old[k]``, insert byte ``ins[j]`` (of row ``row[j]``) to column ``new[j]``, in
    ``width`` columns. Only the inserts have positions of their own: the ``k``-th match byte of
    the text is match state ``k % len(old)`` of its row."""

    insert: np.ndarray  # bool, each byte of the text
    old: np.ndarray
    ins: np.ndarray
    row: np.ndarray
    new: np.ndarray
    width: int

    def columns(self) -> np.ndarray:
        """The column of every byte of the text (gaps too)."""
        columns = np.empty(len(self.insert), dtype=np.int64)
        columns[~self.insert] = np.tile(self.old, int(np.count_nonzero(~self.insert)) // max(len(self.old), 1))
        columns[self.ins] = self.new
        return columns

    def matrix(self, text: np.ndarray, n: int) -> np.ndarray:
        """The ``(n, width)`` rows, b'-' where a row has no byte."""
        out = np.full((n, self.width), ord("-"), dtype=np.uint8)
        out[:, self.old] = text[~self.insert].reshape(n, len(self.old))
        out.reshape(-1)[self.row * self.width + self.new] = text[self.ins]
        return out


def expand_inserts(text: np.ndarray, offsets: np.ndarray, label: str = "input",
                   line: Callable[[int], int] | None = None) -> tuple[Inserts | None, int]:
    """Where the bytes of A2M/A3M rows (``text[offsets[i]:offsets[i+1]]``) go once inserts are
    columns (:class:`Inserts`), and the width.

    Match states are upper-case letters, ``*`` and ``-``; insert states lower-case
    letters and ``.``. Every row must have the same number of match states. None in place of
    the Inserts where every byte's column is its place in its row (A2M whose rows all have
    their inserts in the same places). ``line(i)``: the line of row ``i``, for the error.

    Raises:
        InputError: rows with different numbers of match states.
    """
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    insert = lookup(_INSERT, text).view(bool)
    if n and np.all(lengths == lengths[0]) and (insert.reshape(n, -1) == insert[: lengths[0]]).all():
        return None, int(lengths[0])  # inserts in the same columns of every row: aligned as they are
    ins = np.flatnonzero(insert)
    interrupts.check()
    ins_row = np.searchsorted(offsets, ins, side="right") - 1
    first_ins = np.searchsorted(ins, offsets)  # inserts before each row's start
    per_row = lengths - np.diff(first_ins)  # match states of each row
    if n and np.any(per_row != per_row[0]):
        bad = int(np.flatnonzero(per_row != per_row[0])[0])
        where = f"line {line(bad)}: " if line is not None else ""
        raise InputError(
            f"{label}: {where}not an alignment: row {bad + 1} has {per_row[bad]} match columns (upper case and '-'), "
            f"row 1 has {per_row[0]}"
        )
    width = int(per_row[0]) if n else 0
    rank_in_row = np.arange(len(ins)) - first_ins[ins_row]  # inserts before it in its row
    slot = ins - offsets[ins_row] - rank_in_row  # match states before it in its row
    new_run = np.ones(len(ins), dtype=bool)
    new_run[1:] = (ins_row[1:] != ins_row[:-1]) | (slot[1:] != slot[:-1]) | (ins[1:] != ins[:-1] + 1)
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(len(ins)), 0))
    rank = np.arange(len(ins)) - run_start
    old, new, total = insert_columns(width, np.arange(width), slot, rank)
    interrupts.check()
    return Inserts(insert, old, ins, ins_row, new, total), total


#: A2M/A3M insert states: lower-case letters and ``.`` (1), as a lookup table.
_INSERT = np.zeros(256, dtype=np.uint8)
_INSERT[ord("a") : ord("z") + 1] = 1
_INSERT[ord(".")] = 1


def read_alignment(source: str, in_format: str = "auto"):
    """An existing alignment (a file or ``-``, gzipped or not) as ``msa.alignment.AlignedRows``,
    rows in file order.

    ``in_format``: ``auto`` or a format msa writes (see NATIVE_IN_FORMATS), or another
    Biopython ``Bio.Align`` format name (``nexus``, ``msf``, ...). Case is kept; ``-`` and
    ``.`` are gaps.

    Raises:
        InputError: an empty file, not an alignment (rows of unequal width), a bad
            record, or a file Biopython cannot read in ``in_format``.
    """
    rows, inserts, width = read_rows(source, in_format)
    columns = inserts.columns() if inserts is not None else None
    interrupts.check()
    return AlignedRows.from_text(rows.names, rows.descriptions, rows.text, rows.offsets, columns, width)


def read_rows(source: str, in_format: str = "auto", table: np.ndarray | None = None) -> tuple[Table, Inserts | None, int]:
    """The rows of an existing alignment as read (:class:`msa.io.readers.Table`), where A2M/A3M
    inserts go as columns (:class:`Inserts`; None where a byte's column is its place in its row)
    and the width. ``table``: the byte classes (msa.io.readers.parse_alignment).

    Raises:
        InputError: see read_alignment.
    """
    label = _label(source)
    fmt = in_format
    if fmt == "auto":
        name = label.lower()[:-3] if label.lower().endswith(".gz") else label.lower()
        fmt = "a3m" if name.endswith((".a3m", ".a2m")) else "fasta"
    if fmt not in NATIVE_IN_FORMATS:
        rows = _read_with_biopython(source, fmt, label)
    else:
        kind = FORMAT_NAMES.get(fmt, "FASTA")
        rows = parse_alignment(read_input(source, kind=kind), fmt, label, ALIGNED_BYTE_CLASS if table is None else table)
    text, offsets = rows.text, rows.offsets
    lengths = np.diff(offsets)
    if fmt == "fasta" and np.any(lengths != lengths[0]):
        lower = (text >= ord("a")) & (text <= ord("z"))
        if not lower.any():
            bad = int(np.flatnonzero(lengths != lengths[0])[0])
            raise InputError(
                f"{label}: line {rows.line(bad)}: not an alignment: record {rows.names[bad]!r} is "
                f"{lengths[bad]} columns wide, record {rows.names[0]!r} {lengths[0]}"
            )
        fmt = "a3m"  # lower-case inserts without their gaps: A3M
    interrupts.check()
    if fmt in ("a2m", "a3m"):
        inserts, width = expand_inserts(text, offsets, label, rows.line)
        return rows, inserts, width
    return rows, None, int(lengths[0])


def _read_with_biopython(source: str, fmt: str, label: str) -> Table:
    """The rows of an alignment in a format msa does not write, read by Biopython's ``Bio.Align``."""
    from Bio import Align

    data = read_input(source)
    if not data.strip():
        raise InputError(f"{label}: empty input")
    try:
        alignment = Align.read(io.StringIO(data.decode("utf-8", "surrogateescape")), fmt)
        sequences, gapped = alignment.sequences, list(alignment)
    except Exception as exc:  # Biopython raises many types (ValueError, KeyError, ...) on bad input
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"{label}: cannot read as {fmt}: {text}") from None
    names = [str(s.id) for s in sequences]
    descriptions = [
        str(s.description) if str(getattr(s, "description", "")).startswith(str(s.id)) else str(s.id)
        for s in sequences
    ]
    rows = [str(row).encode("utf-8", "surrogateescape") for row in gapped]
    text = np.frombuffer(b"".join(rows), dtype=np.uint8).copy()
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    cls = ALIGNED_BYTE_CLASS[text]
    bad = np.flatnonzero(cls == BAD)
    if len(bad):
        rec = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise InputError(f"{label}: record {names[rec]!r} has {describe_byte(int(text[bad[0]]))}, "
                         "which is not a residue letter")
    residues = np.add.reduceat((cls == RESIDUE).astype(np.int64), offsets[:-1]) if len(text) else []
    empty = [i for i, k in enumerate(residues) if k == 0]
    if not names or empty:
        raise InputError(f"{label}: " + (f"record {names[empty[0]]!r} has no residues" if names else "no sequences"))
    text[cls == GAP] = ord("-")
    return Table(names, descriptions, text, offsets, lambda i: 0)
