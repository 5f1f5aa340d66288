"""msa merge and msa add on the CPU backend: profiles from aligned rows, column order, existing rows kept."""
from __future__ import annotations

import numpy as np
import pytest

from msa.alignment import AlignedRows, check_alignment
from msa.backends.cpu import CpuBackend
from msa.io.formats import read_alignment
from msa.merge import add_sequences, merge_alignments
from msa.params import AlignParams
from msa.profile import GO, block_counts, gap_counts_from_rows
from msa.seqdb import SeqDB
from msa.testing import merge_maps

BASE = "MKVLAAGIVGLLLAQPTRSWEHNDCYFGKIVLSTRAEQMPWHDNYKCFGAVLITRSPEQWHMNDKYCFG"


def _aligned(tmp_path, name: str, records: list[tuple[str, str]]) -> AlignedRows:
    path = tmp_path / name
    path.write_text("".join(f">{n}\n{r}\n" for n, r in records))
    return read_alignment(str(path))


def _rows(aligned: AlignedRows) -> list[bytes]:
    return [r.tobytes() for r in aligned.rows]


def _project(rows: list[bytes], keep: slice) -> list[bytes]:
    """Rows ``keep`` with the columns that are gaps in all of them removed."""
    mat = np.frombuffer(b"".join(rows[keep]), dtype=np.uint8).reshape(len(rows[keep]), -1)
    return [r.tobytes() for r in mat[:, (mat != ord("-")).any(axis=0)]]


def _family(rng: np.random.Generator, n: int, prefix: str) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        seq = list(BASE[rng.integers(0, 6) : len(BASE) - rng.integers(0, 6)])
        for _ in range(4):
            k = rng.integers(0, len(seq))
            op = rng.integers(0, 3)
            if op == 0:
                seq[k] = "ACDEFGHIKLMNPQRSTVWY"[rng.integers(0, 20)]
            elif op == 1 and len(seq) > 10:
                del seq[k]
            else:
                seq.insert(k, "ACDEFGHIKLMNPQRSTVWY"[rng.integers(0, 20)])
        out.append((f"{prefix}{i}", "".join(seq)))
    return out


def _align(tmp_path, name: str, records: list[tuple[str, str]]) -> AlignedRows:
    from msa.pipeline import align_db

    aligned = align_db(SeqDB.from_pairs(records), AlignParams(device="cpu", quiet=True), CpuBackend())
    return _aligned(tmp_path, name, list(zip(aligned.names, (r.tobytes().decode() for r in aligned.rows))))


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fam")
    rng = np.random.default_rng(7)
    a = _align(tmp, "a.fa", _family(rng, 12, "a"))
    b = _align(tmp, "b.fa", _family(rng, 9, "b"))
    new = _family(rng, 7, "n")
    return a, b, new


def test_block_counts_match_the_row_definition() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        n, w = int(rng.integers(1, 8)), int(rng.integers(1, 12))
        gaps = rng.random((n, w)) < rng.random()
        gaps[np.arange(n), rng.integers(0, w, n)] = False  # a residue in every row
        res = ~gaps
        cols = np.nonzero(res)[1]
        offsets = np.concatenate(([0], np.cumsum(res.sum(axis=1))))
        codes = rng.integers(0, 24, len(cols)).astype(np.uint8)
        counts = block_counts(codes, offsets, cols, w)
        np.testing.assert_array_equal(counts[:, GO:], gap_counts_from_rows(gaps))
        want = np.zeros((w, GO), dtype=np.int64)
        np.add.at(want, (cols, codes), 1)
        np.testing.assert_array_equal(counts[:, :GO], want)


def test_weighted_block_counts_are_those_of_copies() -> None:
    """With weights, sequence i counts weights[i] times: the table of its weights[i] copies."""
    rng = np.random.default_rng(2)
    for _ in range(100):
        n, w = int(rng.integers(1, 8)), int(rng.integers(1, 12))
        gaps = rng.random((n, w)) < rng.random()
        gaps[np.arange(n), rng.integers(0, w, n)] = False
        res = ~gaps
        cols = np.nonzero(res)[1]
        lengths = res.sum(axis=1)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        codes = rng.integers(0, 24, len(cols)).astype(np.uint8)
        weights = rng.integers(1, 6, n)
        copies = np.repeat(np.arange(n), weights)
        pick = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in copies])
        want = block_counts(codes[pick], np.concatenate(([0], np.cumsum(lengths[copies]))), cols[pick], w)
        np.testing.assert_array_equal(block_counts(codes, offsets, cols, w, weights), want)


def test_merge_keeps_each_sides_columns_and_rows(families) -> None:
    a, b, _ = families
    merged = merge_alignments(a, b, AlignParams(device="cpu"), CpuBackend())
    rows = _rows(merged)
    inputs = [(n, r.replace(b"-", b"")) for n, r in zip(a.names + b.names, _rows(a) + _rows(b))]
    check_alignment(inputs, merged.names, rows)
    assert _project(rows, slice(0, len(a.names))) == _project(_rows(a), slice(None))
    assert _project(rows, slice(len(a.names), None)) == _project(_rows(b), slice(None))
    again = merge_alignments(a, b, AlignParams(device="cpu"), CpuBackend())
    assert _rows(again) == rows  # deterministic


def test_merge_drops_all_gap_columns_and_takes_single_rows(tmp_path) -> None:
    a = _aligned(tmp_path, "a.fa", [("x", "MK--VL"), ("y", "MK-WVL")])
    b = _aligned(tmp_path, "b.fa", [("z", "MKWVL")])
    merged = merge_alignments(a, b, AlignParams(device="cpu"), CpuBackend())
    assert _rows(merged) == [b"MK-VL", b"MKWVL", b"MKWVL"]


@pytest.mark.parametrize("keep_length", [False, True])
def test_add_keeps_existing_rows(families, keep_length: bool) -> None:
    a, _, new = families
    new_db = SeqDB.from_pairs(new)
    result, dropped = add_sequences(a, new_db, AlignParams(device="cpu"), CpuBackend(), keep_length)
    rows = _rows(result)
    assert result.names == a.names + [n for n, _ in new]
    assert len({len(r) for r in rows}) == 1
    old = _rows(a)
    if keep_length:
        assert rows[: len(old)] == old  # byte-identical, gaps included
        assert result.width == a.width
        got = [r.replace(b"-", b"") for r in rows[len(old):]]
        assert sum(len(s) for _, s in new) - sum(map(len, got)) == dropped
        for g, (_, s) in zip(got, new):  # what is left is the sequence less its insertions, in order
            it = iter(s.encode())
            assert all(ch in it for ch in g)
    else:
        assert dropped == 0
        check_alignment([(n, r.replace(b"-", b"")) for n, r in zip(a.names, old)] +
                        [(n, s.encode()) for n, s in new], result.names, rows)
        assert _project(rows, slice(0, len(old))) == _project(old, slice(None))  # only gap columns put in
    again, _ = add_sequences(a, new_db, AlignParams(device="cpu"), CpuBackend(), keep_length)
    assert _rows(again) == rows


def test_add_in_several_batches_gives_the_same_rows(families, monkeypatch) -> None:
    import msa.backends.cpu

    a, _, new = families
    one, _ = add_sequences(a, SeqDB.from_pairs(new), AlignParams(device="cpu"), CpuBackend())
    monkeypatch.setattr(msa.backends.cpu, "ADD_BATCH_BYTES", 1)  # one merge per batch
    many, _ = add_sequences(a, SeqDB.from_pairs(new), AlignParams(device="cpu"), CpuBackend())
    assert _rows(many) == _rows(one)


def test_add_puts_an_insertion_in_new_columns(tmp_path) -> None:
    a = _aligned(tmp_path, "a.fa", [("x", "MKV-LAGIV"), ("y", "MK-WLAGIV")])
    result, _ = add_sequences(a, SeqDB.from_pairs([("n", "MKVWWWWLAGIV")]), AlignParams(device="cpu"), CpuBackend())
    rows = _rows(result)
    assert rows[2].replace(b"-", b"") == b"MKVWWWWLAGIV"
    assert _project(rows, slice(0, 2)) == [b"MKV-LAGIV", b"MK-WLAGIV"]
    assert result.width > a.width


@pytest.mark.parametrize("seed", range(4))
def test_residue_slots_count_the_profile_columns_left_of_each_residue(seed: int) -> None:
    """msa add's reading of a batch's maps, against a count per residue."""
    rng = np.random.default_rng(seed)
    width = int(rng.integers(1, 30))
    lengths = rng.integers(0, 25, int(rng.integers(1, 12)))
    maps, off = merge_maps(rng, width, lengths)
    slot, hit = CpuBackend.residue_slots(maps, off, width)
    want_slot, want_hit = [], []
    for k in range(len(lengths)):
        prof = maps[off[2 * k] : off[2 * k + 1]]
        for c in maps[off[2 * k + 1] : off[2 * k + 2]]:
            want_slot.append(int((prof < c).sum()))
            want_hit.append(bool((prof == c).any()))
    assert slot.tolist() == want_slot and hit.tolist() == want_hit
