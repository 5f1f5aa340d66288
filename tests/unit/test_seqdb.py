"""SeqDB.unique against a dictionary of the raw bytes, on sets with empty sequences and many duplicates
(and with every hash colliding); subsets and the compiled range gather."""
from __future__ import annotations

import numpy as np
import pytest

from msa.seqdb import SeqDB


@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_unique_matches_a_dictionary(seed: int, collide: bool, monkeypatch) -> None:
    if collide:  # every sequence of a length hashes alike: the byte-for-byte fallback decides
        import msa.seqops

        monkeypatch.setattr(msa.seqops, "hash_sequences", lambda residues, offsets: np.zeros(len(offsets) - 1, np.uint64))
    rng = np.random.default_rng(seed)
    pool = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWYx"), int(rng.integers(0, 40)))) for _ in range(30)]
    pool += ["", "A", "AA", "a"]  # empty and near-identical sequences
    seqs = [pool[i] for i in rng.integers(0, len(pool), 300)]
    db = SeqDB.from_pairs([(f"s{i}", s) for i, s in enumerate(seqs)])
    reps, inverse = db.unique()
    first: dict[str, int] = {}
    for i, s in enumerate(seqs):
        first.setdefault(s, i)
    assert reps.tolist() == sorted(first.values())
    assert [seqs[reps[k]] for k in inverse] == seqs


def test_subset_in_order_and_shuffled_give_the_same_sequences() -> None:
    rng = np.random.default_rng(7)
    pairs = [(f"s{i}", "".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(rng.integers(1, 30))))) for i in range(50)]
    db = SeqDB.from_pairs(pairs)
    for index in (np.arange(0, 50, 3), rng.permutation(50)[:20], np.array([5, 5, 2])):
        sub = db.subset(index)
        assert [sub.sequence(k) for k in range(len(index))] == [db.sequence(int(i)) for i in index]
        assert sub.names == [db.names[i] for i in index] and np.array_equal(sub.codes, np.concatenate(
            [db.codes[db.offsets[i] : db.offsets[i + 1]] for i in index]))


def test_take_ranges_and_same_sequences_match_numpy() -> None:
    from msa.seqops import same_sequences, take_ranges

    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 9, 40)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    residues = rng.integers(65, 68, int(offsets[-1])).astype(np.uint8)
    pick = rng.integers(0, 40, 25)
    want = np.concatenate([residues[offsets[i] : offsets[i + 1]] for i in pick])
    assert np.array_equal(take_ranges(residues, offsets[pick], lengths[pick]), want)
    a, b = rng.integers(0, 40, 200), rng.integers(0, 40, 200)
    same = [residues[offsets[i] : offsets[i + 1]].tobytes() == residues[offsets[j] : offsets[j + 1]].tobytes()
            for i, j in zip(a, b)]
    assert same_sequences(residues, offsets, a, b).tolist() == same
