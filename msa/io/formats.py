"""Output formats: FASTA written natively, the others by Biopython's ``Bio.Align`` writers.

FASTA is the format every run of 10^6 sequences uses, so it is written from
the row array directly; Clustal, Stockholm, PHYLIP and A2M go through a
``Bio.Align.Alignment`` (see :mod:`msa.io.bioalign`), where Biopython owns
the details of each format.
"""
from __future__ import annotations

import io
from typing import BinaryIO, Literal, Protocol, Sequence, get_args

import numpy as np

from msa import __version__
from msa.io.fasta import LINE_WIDTH, fasta_size, write_fasta
from msa.io.output import check_space, needing, regular_file

OutputFormat = Literal["fasta", "clustal", "stockholm", "phylip", "a2m"]
FORMATS: tuple[str, ...] = get_args(OutputFormat)
#: The file extension of each format (the names ``msa align -O`` gives its outputs).
FORMAT_SUFFIXES: dict[str, str] = {
    "fasta": ".fa", "clustal": ".aln", "stockholm": ".sto", "phylip": ".phy", "a2m": ".a2m",
}


class Rows(Protocol):
    """What a writer needs: ``msa.alignment.AlignedRows`` has it. ``place`` puts the residues
    of a block of records into wrapped rows, so FASTA is written a block at a time."""

    names: list[str]
    descriptions: list[str]
    width: int

    def place(self, flat: np.ndarray, line: int, width: int, lo: int, hi: int, clear: bool = False) -> None: ...

    @property
    def rows(self) -> np.ndarray: ...


def write_alignment(out: BinaryIO, aligned: Rows, fmt: str = "fasta") -> int | None:
    """Write ``aligned`` to the binary stream ``out`` in format ``fmt``; the bytes written
    (before compression), or None where they cannot be counted.

    Where ``out`` is a regular file, its free space is checked against the
    output's size first (exact for FASTA, an estimate for the others), so a
    full disk is reported before the rows are built.

    Raises:
        ValueError: ``fmt`` is not one of FORMATS.
        OSError: a full disk (ENOSPC, EDQUOT, EFBIG) with ``bytes_needed``, or another write error.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "fasta":
        return write_fasta(out, aligned.descriptions, aligned)
    needed = output_size(aligned.names, aligned.descriptions, aligned.width, fmt)
    at_least = fmt != "a2m"
    check_space(out, needed, at_least)
    start = _position(out)
    try:
        _write_with_biopython(out, aligned.names, aligned.descriptions, aligned.rows, fmt)
    except OSError as exc:
        raise needing(exc, needed if regular_file(out) is not None else None, at_least)
    end = _position(out)
    return end - start if start is not None and end is not None else None


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
    if fmt == "phylip":  # names cut or padded to 10
        return n * (10 + width + 1)
    if fmt == "stockholm":  # a line per row after a name column
        return n * (name_col + width + 1)
    if fmt == "clustal":  # blocks of 50 columns, a name column on every line
        return -(-width // 50) * n * (name_col + 51)
    raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _position(out: BinaryIO) -> int | None:
    """Where ``out`` is (uncompressed bytes for gzip), or None for a pipe."""
    try:
        return out.tell()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def _write_with_biopython(
    out: BinaryIO, names: Sequence[str], descriptions: Sequence[str], rows: np.ndarray, fmt: str
) -> None:
    from Bio import Align

    from msa.io.bioalign import to_alignment

    alignment = to_alignment(names, descriptions, rows)
    if fmt == "a2m":
        alignment.column_annotations["state"] = match_states(rows)
    batch = Align.Alignments([alignment])
    # Clustal readers (Biopython's among them) accept only files whose header
    # starts with a known program name, so the header says CLUSTAL.
    batch.metadata = {"Program": "CLUSTAL", "Version": f"format by msa {__version__}"}
    text = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", newline="\n")
    try:
        Align.write(batch, text, fmt)
        text.flush()
    finally:
        text.detach()


def match_states(rows: np.ndarray) -> str:
    """A2M column states: a match ('D') where at least half the rows have a residue.

    A2M marks insert columns by lower case, so unlike the other formats it
    changes the case of residues: upper in match columns, lower in inserts
    (the rule of HMMER's and HH-suite's ``--symfrac 0.5`` / ``-M 50``).
    """
    occupied = np.count_nonzero(rows != ord("-"), axis=0)
    match = 2 * occupied >= rows.shape[0]
    return np.where(match, ord("D"), ord("I")).astype(np.uint8).tobytes().decode("ascii")
