"""Alignment accuracy: SP/Q and TC against a reference (the invariant checker is msa.alignment's).

The scores follow Robert Edgar's qscore (``FastQ`` in ``rcedgar/qscore``
``src/fastq.cpp``), which is how BAliBASE and BaliFam numbers are published:

* Gap characters are ``- . ~ + #`` in both files (qscore's ``IsGap``).
* Sequences are matched by name (the first word of the FASTA header). Test
  sequences absent from the reference are ignored; a reference name missing
  from the test is an error. Each reference residue is matched to the test
  residue with the same index in the ungapped sequence, and the ungapped
  sequences must agree case-insensitively (qscore quits on a difference too).
* Only upper-case reference residues are scored. A reference column counts for
  SP with ``k * (k - 1) / 2`` pairs, ``k`` its upper-case residues; a pair is
  correct when both residues sit in the same test column **and** both are
  upper case in the test (qscore treats a lower-case test letter as
  unaligned). SP (qscore's Q) = correct pairs / reference pairs.
* TC: a reference column is *aligned* when it has at least two upper-case
  residues; it is correct when all of them are upper case in the test and sit
  in one test column. TC = correct columns / aligned columns.
* A reference column whose upper-case residue is followed (in reference row
  order) by a lower-case or non-letter residue is an error, as in qscore.
* Empty denominators give 0, as in qscore. Set means are plain means of the
  per-alignment scores.

Everything is whole-array NumPy over the flat residues of the reference rows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from os import PathLike

import numpy as np

from msa import interrupts
from msa.io.fasta import ALIGNED_BYTE_CLASS, GAP

#: qscore's gap characters.
SCORE_GAPS = b"-.~+#"

#: The readers' byte classes with qscore's gap characters as gaps.
_SCORE_CLASS = ALIGNED_BYTE_CLASS.copy()
_SCORE_CLASS[np.frombuffer(SCORE_GAPS, dtype=np.uint8)] = GAP
_GAP = np.zeros(256, dtype=bool)
_GAP[np.frombuffer(SCORE_GAPS, dtype=np.uint8)] = True
_UPPER = np.zeros(256, dtype=bool)
_UPPER[ord("A") : ord("Z") + 1] = True
_FOLD = np.arange(256, dtype=np.uint8)
_FOLD[ord("a") : ord("z") + 1] -= 32


@dataclass(frozen=True)
class Score:
    """Accuracy of one test alignment against one reference, with the counts behind it."""

    sp: float
    tc: float
    ref_pairs: int
    correct_pairs: int
    columns: int
    correct_columns: int


def _as_bytes(row: bytes | str) -> bytes:
    return row.encode() if isinstance(row, str) else bytes(row)


def _matrix(rows: list[bytes]) -> np.ndarray:
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError("alignment rows differ in width")
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), width)


def score_alignments(test: dict[str, bytes | str], ref: dict[str, bytes | str]) -> Score:
    """SP (qscore's Q) and TC of ``test`` against ``ref``; see the module docstring for the rules.

    Raises:
        ValueError: a reference name absent from the test, ungapped sequences that
            differ, rows of unequal width, or a column mixing upper and lower case.

    Example:
        >>> s = score_alignments({"a": "AC-D", "b": "ACD-"}, {"a": "ACD", "b": "ACD"})
        >>> (s.correct_pairs, s.ref_pairs, s.correct_columns, s.columns)
        (2, 3, 2, 3)
    """
    if not ref:
        raise ValueError("reference alignment is empty")
    names = list(ref)
    _matching(names, list(test))
    return _score(names, _matrix([_as_bytes(ref[n]) for n in names]), _matrix([_as_bytes(test[n]) for n in names]))


def _matching(ref: list[str], test: list[str]) -> np.ndarray:
    """The test row of each reference name; a reference name missing from the test is an error."""
    where = {name: i for i, name in enumerate(test)}
    index = np.fromiter((where.get(name, -1) for name in ref), dtype=np.int64, count=len(ref))
    if np.any(index < 0):
        missing = np.flatnonzero(index < 0)
        raise ValueError(f"reference sequence {ref[missing[0]]!r} not in the test alignment "
                         f"({len(missing)} missing)")
    return index


def _score(names: list[str], rmat: np.ndarray, tmat: np.ndarray) -> Score:
    """SP and TC of the test rows ``tmat`` against the reference rows ``rmat`` (row ``i`` of both:
    the sequence ``names[i]``)."""
    rres = ~_GAP[rmat]
    tres = ~_GAP[tmat]
    rrow, rcol = np.nonzero(rres)  # row-major: residues of each row in order
    trow, tcol = np.nonzero(tres)
    interrupts.check()
    rlen = rres.sum(axis=1)
    tlen = tres.sum(axis=1)
    bad = np.flatnonzero(rlen != tlen)
    if bad.size:
        i = bad[0]
        raise ValueError(f"sequence {names[i]!r}: {tlen[i]} residues in test, {rlen[i]} in reference")
    rch = rmat[rrow, rcol]
    tch = tmat[trow, tcol]
    diff = np.flatnonzero(_FOLD[rch] != _FOLD[tch])
    if diff.size:
        k = diff[0]
        raise ValueError(f"sequence {names[rrow[k]]!r} differs between test and reference: "
                         f"{chr(rch[k])!r} vs {chr(tch[k])!r} (reference column {rcol[k]})")
    interrupts.check()
    up = _UPPER[rch]
    _check_mixed_case(rrow, rcol, up, rmat.shape[1])
    col = rcol[up]
    ok = _UPPER[tch[up]]
    width = np.int64(tmat.shape[1])
    k = np.bincount(col, minlength=rmat.shape[1]).astype(np.int64)
    ref_pairs = int((k * (k - 1) // 2).sum())
    _, same = np.unique(col[ok].astype(np.int64) * width + tcol[up][ok], return_counts=True)
    interrupts.check()
    correct_pairs = int((same.astype(np.int64) * (same - 1) // 2).sum())
    # A column is correct when its k upper residues are all upper in the test and
    # share one test column: min == max test column over the column, no lower case.
    tc_of = np.where(ok, tcol[up], -1).astype(np.int64)
    lo = np.full(rmat.shape[1], np.iinfo(np.int64).max)
    hi = np.full(rmat.shape[1], -2, dtype=np.int64)
    np.minimum.at(lo, col, tc_of)
    np.maximum.at(hi, col, tc_of)
    aligned = k > 1
    columns = int(aligned.sum())
    correct_columns = int((aligned & (lo == hi) & (lo >= 0)).sum())
    return Score(
        sp=correct_pairs / ref_pairs if ref_pairs else 0.0,
        tc=correct_columns / columns if columns else 0.0,
        ref_pairs=ref_pairs,
        correct_pairs=correct_pairs,
        columns=columns,
        correct_columns=correct_columns,
    )


def _check_mixed_case(rrow: np.ndarray, rcol: np.ndarray, up: np.ndarray, width: int) -> None:
    """Reject a reference column where a non-upper residue follows an upper one, as qscore does."""
    first_up = np.full(width, np.iinfo(np.int64).max)
    np.minimum.at(first_up, rcol[up], rrow[up].astype(np.int64))
    late = ~up & (rrow > first_up[rcol])
    if late.any():
        raise ValueError(f"reference column {int(rcol[late][0])} has both upper- and lower-case letters")


def score_files(
    test_path: str | PathLike[str], ref_path: str | PathLike[str], in_format: str = "auto",
    ref_format: str | None = None,
) -> dict[str, float | int]:
    """Score a test alignment against a reference alignment (files or ``-``, gzipped or not).

    ``in_format``: the test's format (``auto``: aligned FASTA or A3M, or a format of
    :func:`msa.io.formats.read_alignment`); ``ref_format``: the reference's (default: ``in_format``).

    Returns:
        ``sp``, ``tc``, ``ref_pairs``, ``correct_pairs``, ``columns``, ``correct_columns``.
    """
    names, rmat = _read(ref_path, in_format if ref_format is None else ref_format)
    if not names:
        raise ValueError("reference alignment is empty")
    test_names, tmat = _read(test_path, in_format)
    index = _matching(names, test_names)
    in_order = len(index) == len(tmat) and np.array_equal(index, np.arange(len(index)))
    return asdict(_score(names, rmat, tmat if in_order else tmat[index]))


def _read(path: str | PathLike[str], in_format: str = "auto") -> tuple[list[str], np.ndarray]:
    """The names and the ``(n, width)`` rows of an alignment, read by msa.io.formats.read_rows with
    qscore's gap characters; A2M/A3M rows get their insert columns back. A name read twice is an
    error (rows are matched by name)."""
    from msa.io.fasta import InputError
    from msa.io.formats import read_rows

    rows, columns, width = read_rows(str(path), in_format, _SCORE_CLASS)
    names = rows.names
    if len(set(names)) != len(names):
        seen: set[str] = set()
        twice = next(i for i, n in enumerate(names) if n in seen or seen.add(n))
        raise InputError(f"{path}: line {rows.line(twice)}: the name {names[twice]!r} again (rows are matched "
                         "by name)")
    n = len(names)
    if columns is None:
        return names, rows.text.reshape(n, width)
    out = np.full((n, width), ord("-"), dtype=np.uint8)
    out[np.repeat(np.arange(n), np.diff(rows.offsets)), columns] = rows.text
    return names, out
