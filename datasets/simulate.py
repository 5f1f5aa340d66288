"""Simulate protein or nucleotide families with known true alignments, at any size, for accuracy benchmarks.

Model (deterministic per seed):

* **Tree.** A Yule (pure-birth) tree, or a Kingman coalescent, with ``n`` leaves in
  random order, scaled so that the root-to-tip height is ``height`` expected
  substitutions per site; each branch is then multiplied by a log-normal factor
  (``clock_sd``) so that lineages evolve at different speeds.
* **Substitutions.** A reversible 20-state Markov process with BLOSUM62-derived
  exchangeabilities (``2 ** (S[a, b] / 2)``, the target-frequency ratio BLOSUM is
  built from) and Robinson-Robinson background frequencies, normalised to one
  substitution per site per unit time. Sites have gamma-distributed rates (shape
  ``gamma_shape``); an inserted column draws a fresh rate. Sampled exactly by
  uniformization: a Poisson number of jumps per branch, each at a site picked in
  proportion to its rate.
* **Indels.** Per branch, Poisson(``indel_rate * t * (len + 1)``) events, half
  insertions and half deletions, with geometric lengths (mean ``indel_mean``,
  capped at ``indel_max``); inserted residues come from the background.
* **True alignment.** Every residue carries the id of the column it descends
  from. Columns live in one linked list: an insertion links its new columns right
  after the column of the residue before it, which keeps every sequence's
  columns in list order, so the list order is a valid alignment. Columns empty in
  all written sequences are dropped.

The tree walk is depth-first with one buffer per depth, so memory is the leaves'
residues plus ``O(depth * length)``.

Example:
    python datasets/simulate.py -n 10000 --length 300 --seed 1 --out fam.fa --true fam.true.fa
    python datasets/simulate.py --alphabet dna -n 1000 --length 600 --height 0.5 --out dna.fa --true dna.true.fa
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numba
import numpy as np

#: The 20 standard residues, in the order of the tables below.
AMINO = b"ARNDCQEGHILKMFPSTWYV"
#: Robinson & Robinson (1991) background frequencies, in AMINO order.
BACKGROUND = np.array([
    0.07805, 0.05129, 0.04487, 0.05364, 0.01925, 0.04264, 0.06295, 0.07377, 0.02199, 0.05142,
    0.09019, 0.05744, 0.02243, 0.03856, 0.05203, 0.07120, 0.05841, 0.01330, 0.03216, 0.06441,
])
#: BLOSUM62, AMINO order (Henikoff & Henikoff 1992), in half-bits.
BLOSUM62 = np.array([
    [4, -1, -2, -2, 0, -1, -1, 0, -2, -1, -1, -1, -1, -2, -1, 1, 0, -3, -2, 0],
    [-1, 5, 0, -2, -3, 1, 0, -2, 0, -3, -2, 2, -1, -3, -2, -1, -1, -3, -2, -3],
    [-2, 0, 6, 1, -3, 0, 0, 0, 1, -3, -3, 0, -2, -3, -2, 1, 0, -4, -2, -3],
    [-2, -2, 1, 6, -3, 0, 2, -1, -1, -3, -4, -1, -3, -3, -1, 0, -1, -4, -3, -3],
    [0, -3, -3, -3, 9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1],
    [-1, 1, 0, 0, -3, 5, 2, -2, 0, -3, -2, 1, 0, -3, -1, 0, -1, -2, -1, -2],
    [-1, 0, 0, 2, -4, 2, 5, -2, 0, -3, -3, 1, -2, -3, -1, 0, -1, -3, -2, -2],
    [0, -2, 0, -1, -3, -2, -2, 6, -2, -4, -4, -2, -3, -3, -2, 0, -2, -2, -3, -3],
    [-2, 0, 1, -1, -3, 0, 0, -2, 8, -3, -3, -1, -2, -1, -2, -1, -2, -2, 2, -3],
    [-1, -3, -3, -3, -1, -3, -3, -4, -3, 4, 2, -3, 1, 0, -3, -2, -1, -3, -1, 3],
    [-1, -2, -3, -4, -1, -2, -3, -4, -3, 2, 4, -2, 2, 0, -3, -2, -1, -2, -1, 1],
    [-1, 2, 0, -1, -3, 1, 1, -2, -1, -3, -2, 5, -1, -3, -1, 0, -1, -3, -2, -2],
    [-1, -1, -2, -3, -1, 0, -2, -3, -2, 1, 2, -1, 5, 0, -2, -1, -1, -1, -1, 1],
    [-2, -3, -3, -3, -2, -3, -3, -3, -1, 0, 0, -3, 0, 6, -4, -2, -2, 1, 3, -1],
    [-1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4, 7, -1, -1, -4, -3, -2],
    [1, -1, 1, 0, -1, 0, 0, 0, -1, -2, -2, 0, -1, -2, -1, 4, 1, -3, -2, -2],
    [0, -1, 0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1, 1, 5, -2, -2, 0],
    [-3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1, 1, -4, -3, -2, 11, 2, -3],
    [-2, -2, -2, -3, -2, -1, -2, -3, 2, -1, -1, -2, -1, 3, -3, -2, -2, 2, 7, -1],
    [0, -3, -3, -3, -1, -2, -2, -3, -3, 3, 1, -2, 1, -1, -2, -2, 0, -3, -1, 4],
])
#: Nucleotide letters (A C G T; RNA writes U for T) and HKY base frequencies, in that order.
NUCLEOTIDES = {"dna": b"ACGT", "rna": b"ACGU"}
NUC_BACKGROUND = np.array([0.3, 0.2, 0.2, 0.3])
#: Transitions in ACGT order: A<->G and C<->T.
_TRANSITION = np.array([[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=bool)
ALPHABETS = ("protein", "dna", "rna")


@dataclass(frozen=True)
class SimParams:
    """Every knob of the simulator, with the defaults the benchmarks use."""

    n: int = 1000
    length: int = 300
    seed: int = 1
    tree: str = "yule"
    height: float = 1.5
    clock_sd: float = 0.3
    gamma_shape: float = 1.0
    indel_rate: float = 0.01
    indel_mean: float = 2.5
    indel_max: int = 30
    #: ``protein`` (20 states, BLOSUM62-based) or ``dna``/``rna`` (4 states, HKY).
    alphabet: str = "protein"
    #: HKY transition/transversion rate ratio (nucleotides only).
    kappa: float = 2.0


@dataclass
class Family:
    """A simulated family: leaf residues, flat with offsets, and each residue's true column."""

    names: list[str]
    residues: np.ndarray  # uint8 letters, leaves concatenated in name order
    offsets: np.ndarray  # int64, n + 1
    columns: np.ndarray  # int32 true column of each residue, 0..width-1
    width: int

    def records(self) -> list[tuple[str, bytes]]:
        """The unaligned family: (name, residues) of every leaf, in name order."""
        return [(name, self.residues[self.offsets[i] : self.offsets[i + 1]].tobytes())
                for i, name in enumerate(self.names)]

    def true_columns(self, rows: np.ndarray) -> tuple[np.ndarray, int]:
        """Column of every true column within the alignment of ``rows`` (all-gap ones dropped), and its width."""
        used = np.zeros(self.width, dtype=bool)
        used[self.columns[self._take(rows)[0]]] = True
        return np.cumsum(used) - 1, int(used.sum())

    def true_rows(self, rows: np.ndarray, newcol: np.ndarray, width: int) -> np.ndarray:
        """The true alignment of ``rows`` as an (len(rows), width) uint8 matrix, given ``true_columns``."""
        take, lens = self._take(rows)
        mat = np.full((len(rows), width), ord("-"), dtype=np.uint8)
        mat[np.repeat(np.arange(len(rows)), lens), newcol[self.columns[take]]] = self.residues[take]
        return mat

    def _take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lens = np.diff(self.offsets)[rows]
        return _ranges(self.offsets[rows], lens), lens


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for each pair, without a Python loop."""
    total = int(lens.sum())
    ends = np.cumsum(lens)
    return np.arange(total) - np.repeat(ends - lens, lens) + np.repeat(starts, lens)


def background(alphabet: str = "protein") -> np.ndarray:
    """Equilibrium state frequencies of the alphabet's model."""
    return NUC_BACKGROUND if alphabet in NUCLEOTIDES else BACKGROUND


def rate_model(alphabet: str = "protein", kappa: float = 2.0) -> tuple[np.ndarray, float]:
    """Cumulative jump matrix of the uniformized substitution process and its jump rate."""
    bg = background(alphabet)
    exch = np.where(_TRANSITION, kappa, 1.0) if alphabet in NUCLEOTIDES else 2.0 ** (BLOSUM62 / 2.0)
    q = exch * bg[None, :]
    np.fill_diagonal(q, 0.0)
    q /= (bg * q.sum(axis=1)).sum()  # one substitution per site per unit time
    np.fill_diagonal(q, -q.sum(axis=1))
    mu = float((-np.diag(q)).max())
    jump = np.eye(len(bg)) + q / mu
    return np.cumsum(jump, axis=1), mu


@numba.njit(cache=True, nogil=True)
def _tree(n: int, seed: int, kingman: bool, height: float, clock_sd: float):
    """Merge order, per-node parent and branch length of a random ultrametric tree, relaxed."""
    np.random.seed(seed)
    active = np.arange(n)
    children = np.empty((n - 1, 2), dtype=np.int64)
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    h = np.zeros(2 * n - 1)
    t = 0.0
    k = n
    for j in range(n - 1):
        rate = k * (k - 1) / 2.0 if kingman else float(k)
        t += np.random.exponential(1.0 / rate)
        a = np.random.randint(k)
        b = np.random.randint(k - 1)
        if b >= a:
            b += 1
        node = n + j
        children[j, 0] = active[a]
        children[j, 1] = active[b]
        parent[active[a]] = node
        parent[active[b]] = node
        h[node] = t
        active[b] = active[k - 1]
        k -= 1
        if a == k:
            a = b
        active[a] = node
    blen = np.zeros(2 * n - 1)
    scale = height / t if t > 0 else 0.0
    for v in range(2 * n - 2):
        blen[v] = (h[parent[v]] - h[v]) * scale * np.exp(clock_sd * np.random.standard_normal())
    return children, parent, blen


@numba.njit(cache=True, nogil=True)
def _geometric(mean: float, cap: int) -> int:
    p = 1.0 / mean
    k = 1
    while k < cap and np.random.random() >= p:
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def _pick(cum: np.ndarray, u: float) -> int:
    i = np.searchsorted(cum, u, side="right")
    return min(i, cum.size - 1)


@numba.njit(cache=True, nogil=True)
def _evolve(children, parent, blen, n, length, seed, jump_cum, mu, bg_cum,
            gamma_shape, indel_rate, indel_mean, indel_max):
    """Walk the tree depth first; return leaf codes/column ids (leaf order) and the column list."""
    np.random.seed(seed)
    nnodes = 2 * n - 1
    root = nnodes - 1
    depth = np.zeros(nnodes, dtype=np.int64)
    for v in range(nnodes - 2, -1, -1):
        depth[v] = depth[parent[v]] + 1
    maxd = depth.max()
    cap = 3 * length + 4 * indel_max + 16
    seqbuf = np.empty((maxd + 1, cap), dtype=np.uint8)
    colbuf = np.empty((maxd + 1, cap), dtype=np.int32)
    lens = np.zeros(maxd + 1, dtype=np.int64)
    cum = np.empty(cap)
    # column 0 is the list head; columns 1..length are the root's
    ncols = length + 1
    nxt = np.empty(max(16, 4 * ncols), dtype=np.int64)
    crate = np.empty(nxt.size)
    nxt[0] = 1
    for i in range(length):
        seqbuf[0, i] = _pick(bg_cum, np.random.random())
        colbuf[0, i] = i + 1
        nxt[i + 1] = i + 2
        crate[i + 1] = np.random.gamma(gamma_shape, 1.0 / gamma_shape)
    nxt[length] = -1
    lens[0] = length
    # leaves
    lcap = n * (length + length // 2) + 16
    lres = np.empty(lcap, dtype=np.uint8)
    lcol = np.empty(lcap, dtype=np.int32)
    lstart = np.zeros(n, dtype=np.int64)
    llen = np.zeros(n, dtype=np.int64)
    lused = 0
    stack = np.empty(nnodes, dtype=np.int64)
    sp = 0
    if n == 1:
        stack[0] = root
        sp = 1
    else:
        stack[0] = children[root - n, 1]
        stack[1] = children[root - n, 0]
        sp = 2
    while sp > 0:
        sp -= 1
        v = stack[sp]
        d = depth[v]
        seq = seqbuf[d]
        col = colbuf[d]
        m = lens[d - 1] if v != root else lens[0]
        if v != root:
            seq[:m] = seqbuf[d - 1, :m]
            col[:m] = colbuf[d - 1, :m]
        t = blen[v]
        nev = np.random.poisson(indel_rate * t * (m + 1))
        for _ in range(nev):
            k = _geometric(indel_mean, indel_max)
            if np.random.random() < 0.5:
                if m + k > cap:
                    continue
                p = np.random.randint(m + 1)
                seq[p + k:m + k] = seq[p:m].copy()
                col[p + k:m + k] = col[p:m].copy()
                prev = col[p - 1] if p > 0 else 0
                for i in range(k):
                    if ncols == nxt.size:
                        grown = np.empty(2 * nxt.size, dtype=np.int64)
                        grown[:ncols] = nxt[:ncols]
                        nxt = grown
                        grate = np.empty(2 * crate.size)
                        grate[:ncols] = crate[:ncols]
                        crate = grate
                    c = ncols
                    ncols += 1
                    nxt[c] = nxt[prev]
                    nxt[prev] = c
                    crate[c] = np.random.gamma(gamma_shape, 1.0 / gamma_shape)
                    prev = c
                    seq[p + i] = _pick(bg_cum, np.random.random())
                    col[p + i] = c
                m += k
            elif m > 0:
                p = np.random.randint(m)
                k = min(k, m - p)
                seq[p:m - k] = seq[p + k:m].copy()
                col[p:m - k] = col[p + k:m].copy()
                m -= k
        if m > 0:
            acc = 0.0
            for i in range(m):
                acc += crate[col[i]]
                cum[i] = acc
            nsub = np.random.poisson(mu * t * acc)
            for _ in range(nsub):
                i = min(np.searchsorted(cum[:m], np.random.random() * acc, side="right"), m - 1)
                seq[i] = _pick(jump_cum[seq[i]], np.random.random())
        lens[d] = m
        if v < n:
            if lused + m > lres.size:
                size = 2 * lres.size + m
                g1 = np.empty(size, dtype=np.uint8)
                g1[:lused] = lres[:lused]
                lres = g1
                g2 = np.empty(size, dtype=np.int32)
                g2[:lused] = lcol[:lused]
                lcol = g2
            lres[lused:lused + m] = seq[:m]
            lcol[lused:lused + m] = col[:m]
            lstart[v] = lused
            llen[v] = m
            lused += m
        else:
            stack[sp] = children[v - n, 1]
            stack[sp + 1] = children[v - n, 0]
            sp += 2
    # leaves in id order, and list rank of every column
    offsets = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        offsets[v + 1] = offsets[v] + llen[v]
    res = np.empty(offsets[n], dtype=np.uint8)
    cols = np.empty(offsets[n], dtype=np.int32)
    for v in range(n):
        res[offsets[v]:offsets[v + 1]] = lres[lstart[v]:lstart[v] + llen[v]]
        cols[offsets[v]:offsets[v + 1]] = lcol[lstart[v]:lstart[v] + llen[v]]
    rank = np.empty(ncols, dtype=np.int32)
    r = 0
    c = nxt[0]
    while c != -1:
        rank[c] = r
        r += 1
        c = nxt[c]
    return res, cols, offsets, rank, r


def simulate(params: SimParams) -> Family:
    """Simulate one family; the same params always give the same family."""
    if params.n < 1 or params.length < 1:
        raise ValueError(f"need n >= 1 and length >= 1, got n={params.n}, length={params.length}")
    if params.tree not in ("yule", "coalescent"):
        raise ValueError(f"tree must be 'yule' or 'coalescent', got {params.tree!r}")
    if params.alphabet not in ALPHABETS:
        raise ValueError(f"alphabet must be one of {', '.join(ALPHABETS)}, got {params.alphabet!r}")
    rng = np.random.SeedSequence(params.seed).generate_state(2)
    children, parent, blen = _tree(params.n, int(rng[0]), params.tree == "coalescent",
                                   params.height, params.clock_sd)
    jump_cum, mu = rate_model(params.alphabet, params.kappa)
    bg = background(params.alphabet)
    codes, cols, offsets, rank, ncols = _evolve(
        children, parent, blen, params.n, params.length, int(rng[1]), jump_cum, mu,
        np.cumsum(bg / bg.sum()), params.gamma_shape, params.indel_rate,
        params.indel_mean, params.indel_max)
    letters = np.frombuffer(NUCLEOTIDES.get(params.alphabet, AMINO), dtype=np.uint8)[codes]
    digits = len(str(params.n))
    names = [f"seq{i:0{digits}d}" for i in range(params.n)]
    return Family(names, letters, offsets, rank[cols], int(ncols))


def _write_fasta(fh: BinaryIO, names: list[str], residues: np.ndarray, offsets: np.ndarray,
                 chunk: int) -> None:
    """FASTA, one line per sequence, built ``chunk`` records at a time with array slicing."""
    for lo in range(0, len(names), chunk):
        part = names[lo:lo + chunk]
        heads = np.frombuffer("".join(f">{n}\n" for n in part).encode(), dtype=np.uint8)
        hlen = np.fromiter((len(n) + 2 for n in part), dtype=np.int64, count=len(part))
        slen = np.diff(offsets[lo:lo + len(part) + 1])
        rec = hlen + slen + 1
        start = np.cumsum(rec) - rec
        out = np.full(int(rec.sum()), ord("\n"), dtype=np.uint8)
        out[_ranges(start, hlen)] = heads
        out[_ranges(start + hlen, slen)] = residues[offsets[lo]:offsets[lo + len(part)]]
        fh.write(out.tobytes())


def write_family(fam: Family, out: Path | None, true: Path | None, ref_size: int | None = None,
                 seed: int = 0, chunk: int = 4096) -> None:
    """Write the unaligned FASTA and the true alignment (all rows, or ``ref_size`` sampled rows).

    Both files are written a chunk of records at a time (the true alignment as
    fixed-width records), so that writing adds memory for one chunk only.
    """
    if out is not None:
        with open(out, "wb") as fh:
            _write_fasta(fh, fam.names, fam.residues, fam.offsets, 16 * chunk)
    if true is None:
        return
    n = len(fam.names)
    rows = np.arange(n)
    if ref_size is not None and ref_size < n:
        rows = np.sort(np.random.default_rng(seed).choice(n, ref_size, replace=False))
    newcol, width = fam.true_columns(rows)
    namew = len(fam.names[0])  # names are zero-padded to one width
    with open(true, "wb") as fh:
        for lo in range(0, rows.size, chunk):
            part = rows[lo:lo + chunk]
            rec = np.empty((part.size, namew + 3 + width), dtype=np.uint8)
            rec[:, 0] = ord(">")
            rec[:, 1:namew + 1] = np.frombuffer(
                "".join(fam.names[i] for i in part).encode(), dtype=np.uint8).reshape(part.size, namew)
            rec[:, namew + 1] = ord("\n")
            rec[:, namew + 2:-1] = fam.true_rows(part, newcol, width)
            rec[:, -1] = ord("\n")
            fh.write(rec.tobytes())


def main(argv: list[str] | None = None) -> None:
    """Command line: simulate a family and write its FASTA files."""
    d = SimParams()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=d.n, help="number of sequences")
    ap.add_argument("--length", type=int, default=d.length, help="root sequence length")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--tree", choices=["yule", "coalescent"], default=d.tree)
    ap.add_argument("--height", type=float, default=d.height,
                    help="root-to-tip substitutions per site")
    ap.add_argument("--clock-sd", type=float, default=d.clock_sd,
                    help="log-normal sd of per-branch rate factors")
    ap.add_argument("--gamma-shape", type=float, default=d.gamma_shape,
                    help="shape of the gamma site-rate distribution")
    ap.add_argument("--indel-rate", type=float, default=d.indel_rate,
                    help="indel events per site per substitution unit")
    ap.add_argument("--indel-mean", type=float, default=d.indel_mean, help="mean indel length")
    ap.add_argument("--indel-max", type=int, default=d.indel_max, help="longest indel")
    ap.add_argument("--alphabet", choices=ALPHABETS, default=d.alphabet,
                    help="protein (20 states, BLOSUM62-based) or dna/rna (HKY, 4 states)")
    ap.add_argument("--kappa", type=float, default=d.kappa,
                    help="HKY transition/transversion rate ratio (dna/rna)")
    ap.add_argument("--out", type=Path, help="unaligned FASTA")
    ap.add_argument("--true", type=Path, help="true alignment FASTA")
    ap.add_argument("--ref-size", type=int,
                    help="write the true alignment of this many random sequences only")
    a = ap.parse_args(argv)
    params = SimParams(a.n, a.length, a.seed, a.tree, a.height, a.clock_sd, a.gamma_shape,
                       a.indel_rate, a.indel_mean, a.indel_max, a.alphabet, a.kappa)
    fam = simulate(params)
    write_family(fam, a.out, a.true, a.ref_size, a.seed)


if __name__ == "__main__":
    main()
