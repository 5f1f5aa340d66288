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
from msa.io.fasta import write_fasta

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


def write_alignment(out: BinaryIO, aligned: Rows, fmt: str = "fasta") -> None:
    """Write ``aligned`` to the binary stream ``out`` in format ``fmt``.

    Raises:
        ValueError: ``fmt`` is not one of FORMATS.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "fasta":
        write_fasta(out, aligned.descriptions, aligned)
        return
    _write_with_biopython(out, aligned.names, aligned.descriptions, aligned.rows, fmt)


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
