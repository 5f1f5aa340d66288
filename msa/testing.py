"""Random families and profiles for the tests and the benchmarks (one module both import).

The GPU tests check kernels against the CPU oracle on these inputs, and the
benchmarks time the same shapes; profiles are built by the CPU's pairwise merges.
"""
from __future__ import annotations

import numpy as np

from msa.alphabet import load_matrix
from msa.backends.cpu.align import align_batch
from msa.params import AlignParams, gap_costs
from msa.profile import gap_vector, sequence_counts
from msa.run import split

#: The default substitution matrix (fixed-point).
MATRIX = load_matrix("PFASUM43")


def gaps(n: int) -> np.ndarray:
    """The gap vector (msa.profile) of a run of ``n`` sequences with the default parameters."""
    return gap_vector(gap_costs(AlignParams(), n))


def related(rng, n: int, length: int, alphabet: int = 20) -> list[np.ndarray]:
    """Codes of ``n`` mutated copies (substitutions, short indels) of one random ancestor."""
    anc = rng.integers(0, alphabet, length)
    out = []
    for _ in range(n):
        s = anc.copy()
        sub = rng.random(len(s)) < 0.3
        s[sub] = rng.integers(0, alphabet, int(sub.sum()))
        keep = rng.random(len(s)) > 0.08
        s = s[keep] if keep.any() else s[:1]
        ins = rng.integers(0, alphabet, int(rng.integers(0, 1 + length // 10)))
        at = int(rng.integers(0, len(s) + 1))
        out.append(np.concatenate((s[:at], ins, s[at:])).astype(np.uint8))
    return out


def profile(rng, n: int, length: int, alphabet: int = 20) -> np.ndarray:
    """A profile table of ``n`` related sequences, built by pairwise CPU merges."""
    return profile_of(related(rng, n, length, alphabet))


def dense_profile(rng, n: int, length: int, sub: float) -> np.ndarray:
    """A profile of ``n`` copies of one random ancestor with a share ``sub`` of substitutions
    (no indels, so columns stay aligned): many residue types per column (~14 of 20 for
    64 copies at sub = 0.4), as in the wide profiles near the root of a large family."""
    anc = rng.integers(0, 20, length)
    seqs = []
    for _ in range(n):
        s = anc.copy()
        hit = rng.random(length) < sub
        s[hit] = rng.integers(0, 20, int(hit.sum()))
        seqs.append(s.astype(np.uint8))
    return profile_of(seqs)


def profile_of(seqs: list[np.ndarray]) -> np.ndarray:
    """The profile table of these sequences (codes), built by pairwise CPU merges."""
    n = len(seqs)
    tables = [sequence_counts(s) for s in seqs]
    sizes = [1] * n
    g = gaps(n)
    while len(tables) > 1:
        pairs = len(tables) // 2
        counts = np.concatenate(tables[: 2 * pairs])
        off = np.concatenate(([0], np.cumsum([len(t) for t in tables[: 2 * pairs]])))
        _, parents, poff = align_batch(counts, off, np.array(sizes[: 2 * pairs]), MATRIX, g)
        new = [parents[poff[k] : poff[k + 1]] for k in range(pairs)]
        new_sizes = [sizes[2 * k] + sizes[2 * k + 1] for k in range(pairs)]
        tables = new + tables[2 * pairs :]
        sizes = new_sizes + sizes[2 * pairs :]
    return tables[0]


def merge_maps(rng, width: int, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Random maps of profile-sequence merges as profile_align returns them: merge k's profile
    (``width`` columns) and sequence k (``lengths[k]`` residues) each rise through the merge's
    parent columns, every parent column holding one or both. ``(maps, col_offsets)``."""
    maps, widths = [], []
    for n in lengths.tolist():
        both = int(rng.integers(0, min(width, n) + 1))
        steps = rng.permutation(np.repeat([0, 1, 2], [both, width - both, n - both]))  # both, profile, residue
        maps += [np.flatnonzero(steps != 2), np.flatnonzero(steps != 1)]
        widths += [width, n]
    return np.concatenate(maps).astype(np.int64), np.concatenate(([0], np.cumsum(widths))).astype(np.int64)


def split_output(family, tree, pieces: int, backend, path) -> bytes:
    """A family (msa.pipeline.PreparedFamily) aligned along ``tree`` by msa.run.split's steps in one
    process, written to ``path``: plan, each piece aligned, the top merged, the rows written in
    place by each piece (last piece first): the bytes. The tests compare it with the whole run."""
    import os

    plan, parts = split.plan_split(family, tree, pieces)
    aligned = [split.align_piece(p, plan, backend) for p in parts]
    maps, width = split.merge_top(plan, [done.profiles for done in aligned], backend)
    with open(path, "wb") as out:
        out.truncate(plan.output_size(width))
    for part, done in reversed(list(zip(parts, aligned))):
        split.write_piece(os.fspath(path), part, done, maps, width)
    with open(path, "rb") as out:
        return out.read()
