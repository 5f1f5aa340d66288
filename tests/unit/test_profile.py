"""Profile tables: one-sequence profiles, gap typing, and FAMSA's non-zero count."""
import numpy as np

from msa.backends.cpu.align import nonzero_cells
from msa.profile import GO, N_COUNTS, TGE, TGO, gap_counts_from_rows, sequence_counts


def test_sequence_counts_one_hot():
    codes = np.array([0, 5, 22, 5], dtype=np.uint8)
    table = sequence_counts(codes)
    assert table.shape == (4, N_COUNTS) and table.dtype == np.int32
    assert (table.sum(axis=1) == 1).all()
    assert (table.argmax(axis=1) == codes).all()


def test_gap_counts_from_rows_types_runs():
    rows = np.array(
        [
            list("--AB-C--"),
            list("A--BCD-E"),
            list("ABCDEFGH"),
        ]
    ) == "-"
    counts = gap_counts_from_rows(rows)
    # row 0: leading run cols 0-1 (TGO, TGE), inner col 4 (GO), trailing cols 6-7 (TGO, TGE)
    # row 1: inner runs cols 1-2 (GO, GE) and col 6 (GO)
    expect = np.zeros((8, 4), dtype=np.int64)
    expect[0, 2] = expect[1, 3] = 1
    expect[4, 0] = 1
    expect[6, 2] = expect[7, 3] = 1
    expect[1, 0] = expect[2, 1] = 1
    expect[6, 0] += 1
    np.testing.assert_array_equal(counts, expect)


def test_nonzero_cells_counts_total_gap_row():
    table = np.zeros((2, N_COUNTS), dtype=np.int32)
    table[0, 3] = 2
    table[0, GO] = 1
    table[1, 4] = 1
    table[1, TGO] = 1
    table[1, TGE] = 1
    # column 0: residue + GO + any-gap row = 3; column 1: residue + TGO + TGE + any-gap = 4
    assert nonzero_cells(table) == 7
