"""SP/TC scoring against qscore's rules, and the alignment invariant checker."""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from msa.alignment import check_alignment
from msa.io import read_aligned_fasta
from msa.scoring import score_alignments, score_files

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
BALIFAM = SHARED / "datasets" / "balifam" / "balifam100"


def naive_score(test: dict[str, str], ref: dict[str, str]) -> tuple[int, int, int, int]:
    """qscore's FastQ written the slow, obvious way, as the oracle."""
    def placed(row: str) -> list[tuple[int, str]]:
        return [(c, ch) for c, ch in enumerate(row) if ch not in "-.~+#"]

    names = list(ref)
    tpos = {n: placed(test[n]) for n in names}
    rpos = {n: placed(ref[n]) for n in names}
    cols: dict[int, list[tuple[int, bool]]] = {}
    for n in names:
        for (rc, rch), (tc, tch) in zip(rpos[n], tpos[n]):
            if rch.isupper():
                cols.setdefault(rc, []).append((tc, tch.isupper()))
    ref_pairs = correct_pairs = columns = correct_columns = 0
    for members in cols.values():
        ref_pairs += len(members) * (len(members) - 1) // 2
        correct_pairs += sum(a[0] == b[0] and a[1] and b[1] for a, b in combinations(members, 2))
        if len(members) > 1:
            columns += 1
            correct_columns += all(up for _, up in members) and len({c for c, _ in members}) == 1
    return ref_pairs, correct_pairs, columns, correct_columns


def random_pair(rng: np.random.Generator, nseq: int, length: int) -> tuple[dict[str, str], dict[str, str]]:
    """Two random alignments of the same sequences, the reference with lower-case regions."""
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), rng.integers(1, length))) for _ in range(nseq)]

    def aligned(width: int) -> list[str]:
        rows = []
        for s in seqs:
            slots = np.sort(rng.choice(width, len(s), replace=False))
            row = np.array(["-"] * width)
            row[slots] = list(s)
            rows.append(row)
        return rows

    width = 2 * length
    test = {f"s{i}": "".join(r) for i, r in enumerate(aligned(width))}
    ref_rows = aligned(width + 3)
    lower = rng.random(width + 3) < 0.3
    ref = {}
    for i, r in enumerate(ref_rows):
        r = np.where(lower, np.char.lower(r), r)
        ref[f"s{i}"] = "".join(np.where(r == "-", rng.choice(["-", "."]), r))
    return test, ref


def test_small_counts() -> None:
    s = score_alignments({"a": "AC-D", "b": "ACD-"}, {"a": "ACD", "b": "ACD"})
    assert (s.ref_pairs, s.correct_pairs, s.columns, s.correct_columns) == (3, 2, 3, 2)
    assert s.sp == pytest.approx(2 / 3) and s.tc == pytest.approx(2 / 3)


def test_identity_scores_one() -> None:
    ref = {"a": "MK-LV", "b": "MKELV", "c": "-KEL-"}
    s = score_alignments(ref, ref)
    assert s.sp == 1.0 and s.tc == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_matches_naive_oracle(seed: int) -> None:
    test, ref = random_pair(np.random.default_rng(seed), 7, 12)
    s = score_alignments(test, ref)
    assert (s.ref_pairs, s.correct_pairs, s.columns, s.correct_columns) == naive_score(test, ref)


def test_lower_case_reference_columns_do_not_count() -> None:
    ref = {"a": "MkL", "b": "MkL"}
    s = score_alignments({"a": "MK-L", "b": "M-KL"}, ref)
    assert (s.ref_pairs, s.correct_pairs, s.columns) == (2, 2, 2)


def test_lower_case_test_letter_counts_as_unaligned() -> None:
    s = score_alignments({"a": "MKL", "b": "MkL"}, {"a": "MKL", "b": "MKL"})
    assert (s.correct_pairs, s.correct_columns) == (2, 2)


def test_reference_subset_and_dot_gaps() -> None:
    test = {"a": "MK-L", "x": "MKEL", "b": "MKE-"}
    s = score_alignments(test, {"a": "MK.L", "b": "MKE."})
    assert s.sp == 1.0 and s.tc == 1.0


def test_missing_reference_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="'b'"):
        score_alignments({"a": "MK"}, {"a": "MK", "b": "MK"})


def test_different_sequences_are_an_error() -> None:
    with pytest.raises(ValueError, match="differs"):
        score_alignments({"a": "MKL", "b": "MKL"}, {"a": "MKL", "b": "MKV"})
    with pytest.raises(ValueError, match="residues"):
        score_alignments({"a": "MKL", "b": "MK-"}, {"a": "MKL", "b": "MKL"})


def test_mixed_case_column_is_an_error() -> None:
    with pytest.raises(ValueError, match="upper- and lower-case"):
        score_alignments({"a": "MK", "b": "MK"}, {"a": "MK", "b": "Mk"})


def test_score_files(tmp_path: Path) -> None:
    (tmp_path / "t.fa").write_text(">a desc\nMKL-\n>b\nMKE\nL\n")
    (tmp_path / "r.fa").write_text(">a\nMK.L\n>b\nMKEL\n")
    got = score_files(tmp_path / "t.fa", tmp_path / "r.fa")
    assert got["sp"] == pytest.approx(2 / 3) and got["columns"] == 3 and got["correct_columns"] == 2
    assert read_aligned_fasta(tmp_path / "t.fa") == {"a": b"MKL-", "b": b"MKEL"}


def test_balifam_reference_scores_one_against_itself(tmp_path: Path) -> None:
    if not BALIFAM.is_dir():
        pytest.skip(f"{BALIFAM} is absent")
    case = (BALIFAM / "info" / "ids.txt").read_text().split()[0]
    ref = read_aligned_fasta(BALIFAM / "ref" / case)
    test = {n: r.upper().replace(b".", b"-") for n, r in ref.items()}
    unaligned = read_aligned_fasta(BALIFAM / "in" / case)
    test.update({n: s for n, s in unaligned.items() if n not in test})
    s = score_alignments(test, ref)
    assert s.sp == 1.0 and s.tc == 1.0 and s.columns > 0


def test_check_alignment_accepts_valid_rows() -> None:
    inputs = [("a", b"MKL"), ("b", b"M-K")]
    check_alignment(inputs, ["a", "b"], [b"MKL-", b"M-K-"])
    check_alignment(inputs, ["a", "b"], np.frombuffer(b"MKL--MK-", dtype=np.uint8).reshape(2, 4))


@pytest.mark.parametrize(
    ("names", "rows", "message"),
    [
        (["a", "b"], [b"MKL", b"MK"], "wide"),
        (["b", "a"], [b"MKL", b"MK-"], "named"),
        (["a"], [b"MKL"], "names for"),
        (["a", "b"], [b"MKL", b"MKK"], "residues"),
        (["a", "b"], [b"MKL-", b"M-V-"], "differs"),
    ],
)
def test_check_alignment_rejects(names: list[str], rows: list[bytes], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_alignment([("a", b"MKL"), ("b", b"MK")], names, rows)
