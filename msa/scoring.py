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

Everything is whole-array NumPy over the residues of a block of rows at a time.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from os import PathLike

import numpy as np

from msa import interrupts
from msa.alphabet import lookup
from msa.io.fasta import ALIGNED_BYTE_CLASS, GAP, InputError
from msa.io.formats import read_rows

#: qscore's gap characters.
SCORE_GAPS = b"-.~+#"

#: The readers' byte classes with qscore's gap characters as gaps.
_SCORE_CLASS = ALIGNED_BYTE_CLASS.copy()
_SCORE_CLASS[np.frombuffer(SCORE_GAPS, dtype=np.uint8)] = GAP
_RESIDUE = np.ones(256, dtype=np.uint8)  # 0/1 tables, looked up by msa.alphabet.lookup and viewed as bool
_RESIDUE[np.frombuffer(SCORE_GAPS, dtype=np.uint8)] = 0
_UPPER = np.zeros(256, dtype=np.uint8)
_UPPER[ord("A") : ord("Z") + 1] = 1
#: Rows are scored a block of about this many bytes at a time (a checkpoint each).
BLOCK_BYTES = 1 << 22
#: Pairs of columns (reference, test) up to this many are counted in a histogram, more by sorting.
DENSE_PAIRS = 1 << 22
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
    the sequence ``names[i]``), a block of rows at a time (a checkpoint each).

    Each upper-case reference residue gives a key (its reference column, its test column) when
    its test letter is upper case too: correct pairs are pairs of equal keys, and a reference
    column is correct when all of its residues gave a key and all their keys are one."""
    n, rw = rmat.shape
    tw = tmat.shape[1]
    dense = rw * tw <= DENSE_PAIRS  # the keys counted in a histogram, else sorted
    hist = np.zeros(rw * tw if dense else 0, dtype=np.int64)
    found: list[tuple[np.ndarray, np.ndarray]] = []
    k = np.zeros(rw, dtype=np.int64)  # upper-case reference residues of each column
    wrong = np.zeros(rw, dtype=np.int64)  # those of them whose test letter is not upper case
    seen_upper = np.zeros(rw, dtype=bool)
    step = max(1, BLOCK_BYTES // max(rw, tw, 1))
    for lo in range(0, n, step):
        interrupts.check()
        r, t = rmat[lo : lo + step], tmat[lo : lo + step]
        rres, tres = lookup(_RESIDUE, r).view(bool), lookup(_RESIDUE, t).view(bool)
        rlen, tlen = rres.sum(axis=1), tres.sum(axis=1)
        bad = np.flatnonzero(rlen != tlen)
        if bad.size:
            i = bad[0]
            raise ValueError(f"sequence {names[lo + i]!r}: {tlen[i]} residues in test, {rlen[i]} in reference")
        rcol = np.nonzero(rres)[1]  # row-major: residues of each row in order
        tcol = np.nonzero(tres)[1]
        rch, tch = r[rres], t[tres]
        diff = np.flatnonzero(lookup(_FOLD, rch) != lookup(_FOLD, tch))
        if diff.size:
            d = diff[0]
            row = lo + int(np.searchsorted(np.cumsum(rlen), d, side="right"))
            raise ValueError(f"sequence {names[row]!r} differs between test and reference: "
                             f"{chr(rch[d])!r} vs {chr(tch[d])!r} (reference column {rcol[d]})")
        upper = lookup(_UPPER, r).view(bool)
        _check_mixed_case(upper, rres & ~upper, seen_upper)
        up = lookup(_UPPER, rch).view(bool)
        col = rcol[up]
        ok = lookup(_UPPER, tch[up]).view(bool)
        k += np.bincount(col, minlength=rw)
        wrong += np.bincount(col[~ok], minlength=rw)
        key = col[ok] * tw + tcol[up][ok]
        if dense:
            hist += np.bincount(key, minlength=rw * tw)
        else:
            found.append(np.unique(key, return_counts=True))
    interrupts.check()
    if dense:
        keys = np.flatnonzero(hist)
        same = hist[keys]
    else:
        keys, same = _merged(found)
    ref_pairs = int((k * (k - 1) // 2).sum())
    correct_pairs = int((same * (same - 1) // 2).sum())
    aligned = k > 1
    one_column = np.bincount(keys // tw, minlength=rw) == 1
    columns = int(aligned.sum())
    correct_columns = int((aligned & (wrong == 0) & one_column).sum())
    return Score(
        sp=correct_pairs / ref_pairs if ref_pairs else 0.0,
        tc=correct_columns / columns if columns else 0.0,
        ref_pairs=ref_pairs,
        correct_pairs=correct_pairs,
        columns=columns,
        correct_columns=correct_columns,
    )


def _merged(found: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys of the blocks' ``(keys, counts)`` and their total counts."""
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = np.concatenate([f[0] for f in found])
    counts = np.concatenate([f[1] for f in found]).astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    first = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    return keys[first], np.add.reduceat(counts, first)


def _check_mixed_case(upper: np.ndarray, other: np.ndarray, seen_upper: np.ndarray) -> None:
    """Reject a reference column where a residue that is not upper case comes after an upper-case
    one (in row order), as qscore does. ``upper``, ``other``: a block of rows' masks; ``seen_upper``:
    the columns with an upper-case residue in the blocks before (updated)."""
    rows = len(upper)
    any_upper, any_other = upper.any(axis=0), other.any(axis=0)
    first_upper = np.argmax(upper, axis=0)
    last_other = rows - 1 - np.argmax(other[::-1], axis=0)
    late = any_other & (seen_upper | (any_upper & (last_other > first_upper)))
    if late.any():
        raise ValueError(f"reference column {int(np.flatnonzero(late)[0])} has both upper- and lower-case letters")
    seen_upper |= any_upper


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
    rows, inserts, width = read_rows(str(path), in_format, _SCORE_CLASS)
    names = rows.names
    if len(set(names)) != len(names):
        seen: set[str] = set()
        twice = next(i for i, n in enumerate(names) if n in seen or seen.add(n))
        raise InputError(f"{path}: line {rows.line(twice)}: the name {names[twice]!r} again (rows are matched "
                         "by name)")
    n = len(names)
    return names, rows.text.reshape(n, width) if inserts is None else inserts.matrix(rows.text, n)
