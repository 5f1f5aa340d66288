"""The CUDA guide-tree stage against its CPU oracle: equal struct arrays, counts, distances, trees,
for protein and nucleotide 6-mers."""
from __future__ import annotations

import numpy as np
import pytest

from msa.alphabet import encode
from msa.backends.cpu import CpuBackend
from msa.backends.cpu.kmers import build_kmer_tables
from msa.distances.kmers import PROTEIN, kmer_alphabet
from msa.params import AlignParams
from msa.seqdb import SeqDB
from msa.tree.build import build_guide_tree

pytestmark = pytest.mark.gpu

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
UNKNOWN = np.frombuffer(b"X", dtype=np.uint8)
#: Bases as they may be written (U is T), and the letters the nucleotide 6-mers drop.
BASES = np.frombuffer(b"ACGTUacgtu", dtype=np.uint8)
AMBIGUOUS = np.frombuffer(b"NnRYSWKMBDHV", dtype=np.uint8)
CPU = CpuBackend()


def family(n: int, mean_len: int, n_anc: int, rate: float, seed: int, x_rate: float = 0.01,
           letters: np.ndarray = AMINO, unknown: np.ndarray = UNKNOWN):
    """Letters and offsets of ``n`` mutated copies of ``n_anc`` random ancestors (lengths vary),
    a share ``x_rate`` of the residues replaced by ``unknown`` letters."""
    rng = np.random.default_rng(seed)
    max_len = 3 * mean_len + 8
    anc = letters[rng.integers(0, len(letters), (n_anc, max_len))]
    lens = np.clip(rng.normal(mean_len, 0.3 * mean_len + 1, n).astype(np.int64), 0, max_len)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    seq = np.repeat(np.arange(n), lens)
    pos = np.arange(offsets[-1]) - offsets[seq]
    res = anc[rng.integers(0, n_anc, n)[seq], pos]
    mutate = rng.random(len(res)) < rate
    res[mutate] = letters[rng.integers(0, len(letters), int(mutate.sum()))]
    odd = rng.random(len(res)) < x_rate
    res[odd] = unknown[rng.integers(0, len(unknown), int(odd.sum()))]
    return res, offsets


def dna_family(n: int, mean_len: int, n_anc: int, rate: float, seed: int, x_rate: float = 0.02):
    """:func:`family` over the bases (either case, U and T), with N and IUPAC codes."""
    return family(n, mean_len, n_anc, rate, seed, x_rate, BASES, AMBIGUOUS)


def concat(*parts):
    """Join (letters, offsets) pairs into one set."""
    res = np.concatenate([p[0] for p in parts])
    lens = np.concatenate([np.diff(p[1]) for p in parts])
    return res, np.concatenate(([0], np.cumsum(lens)))


def repeats():
    """Low-complexity sequences: 6-mer counts above 255 (and one above 65535, saturated)."""
    seqs = [b"A" * 400, b"AG" * 300, b"A" * 300 + b"C" * 50, b"W" * 70000, b"AAAAA", b"", b"XXXXXXXXX", b"AXAXAXAXAXAX"]
    return _joined(seqs)


def dna_repeats():
    """Low-complexity DNA: 6-mer counts above 255 and 65535, runs broken by N, only N."""
    seqs = [b"A" * 400, b"AC" * 300, b"ACGTAC" * 100 + b"T" * 600, b"T" * 70000, b"ANANANANANANAN",
            b"AAAAANAAAAANAAAAAN" * 20, b"NNNNNNNNNN", b"ACGTN", b""]
    return _joined(seqs)


def _joined(seqs: list[bytes]):
    lens = np.array([len(s) for s in seqs])
    return np.frombuffer(b"".join(seqs), dtype=np.uint8).copy(), np.concatenate(([0], np.cumsum(lens)))


#: Input shapes; those named dna_* are nucleotide families (the nucleotide alphabet and lenfac).
SHAPES = {
    "short": lambda: family(300, 5, 3, 0.1, 1),
    "equal_lengths": lambda: family_equal(500, 60, 7),
    "one": lambda: family(1, 40, 1, 0.0, 3),
    "mixed": lambda: concat(family(3000, 115, 40, 0.15, 4), repeats(), family(70, 3, 2, 0.0, 5)),
    "long": lambda: family(200, 1500, 5, 0.2, 6),
    "dna_short": lambda: dna_family(300, 7, 3, 0.1, 21),
    "dna_mixed": lambda: concat(dna_family(3000, 400, 40, 0.1, 22), dna_repeats(), dna_family(70, 4, 2, 0.0, 23)),
    "dna_long": lambda: dna_family(150, 3000, 4, 0.15, 24, 0.05),
}


def seq_type(shape: str) -> str:
    return "dna" if shape.startswith("dna_") else "protein"


def family_equal(n: int, length: int, seed: int):
    """Sequences of one length (whole sections of equal width)."""
    rng = np.random.default_rng(seed)
    res = AMINO[rng.integers(0, 20, n * length)]
    return res, np.arange(0, n * length + 1, length, dtype=np.int64)


@pytest.fixture(scope="module", params=sorted(SHAPES))
def tables_pair(request, cuda_backend):
    res, off = SHAPES[request.param]()
    kind = seq_type(request.param)
    codes, alphabet = encode(res, kind), kmer_alphabet(kind)
    return build_kmer_tables(codes, off, alphabet), cuda_backend.kmer_tables(codes, off, alphabet)


def test_struct_arrays_equal(tables_pair):
    cpu, gpu = tables_pair
    assert gpu.alphabet is cpu.alphabet
    for field in ("lengths", "self_scores", "n_distinct", "slot", "start", "section_off", "kcodes", "kcounts"):
        a, b = getattr(cpu, field), getattr(gpu, field)
        assert a.dtype == b.dtype, field
        np.testing.assert_array_equal(a, b, err_msg=field)


def _nodes(rng, n_seqs: int, n_nodes: int, max_refs: int):
    """Random disjoint member sets and references of ``n_nodes`` nodes."""
    perm = rng.permutation(n_seqs)
    cuts = np.sort(rng.choice(np.arange(1, n_seqs), size=min(n_nodes - 1, n_seqs - 1), replace=False))
    node_off = np.concatenate(([0], cuts, [n_seqs]))
    n_refs = rng.integers(1, max_refs + 1, len(node_off) - 1)
    ref_ids = rng.integers(0, n_seqs, int(n_refs.sum()))
    ref_off = np.concatenate(([0], np.cumsum(n_refs)))
    member_node = np.repeat(np.arange(len(node_off) - 1), np.diff(node_off))
    return ref_ids, ref_off, perm, member_node


@pytest.mark.parametrize("n_nodes,max_refs", [(1, 1), (1, 4), (1, 2281), (7, 50), (400, 9)])
def test_nearest_reference_equal(tables_pair, cuda_backend, n_nodes, max_refs):
    cpu, gpu = tables_pair
    n = len(cpu)
    rng = np.random.default_rng(n_nodes * 1000 + max_refs)
    ref_ids, ref_off, members, member_node = _nodes(rng, n, min(n_nodes, n), max_refs)
    want = CPU.nearest_reference(cpu, ref_ids, ref_off, members, member_node)
    got = cuda_backend.nearest_reference(gpu, ref_ids, ref_off, members, member_node)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])  # bit-exact float64


def test_nearest_reference_of_host_tables(tables_pair, cuda_backend):
    """Host-built (CPU) tables are uploaded and give the same answer."""
    cpu, _ = tables_pair
    n = len(cpu)
    ids = np.arange(n)
    refs = np.array([0, n // 2, n - 1])
    want = CPU.nearest_reference(cpu, refs, np.array([0, 3]), ids, np.zeros(n, np.int64))
    got = cuda_backend.nearest_reference(cpu, refs, np.array([0, 3]), ids, np.zeros(n, np.int64))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("sizes", [[1], [2], [50, 1, 0, 3], [700], [5] * 300])
def test_kmer_distance_matrix_equal(tables_pair, cuda_backend, sizes):
    cpu, gpu = tables_pair
    n = len(cpu)
    rng = np.random.default_rng(len(sizes))
    sizes = np.minimum(np.array(sizes), n)
    ids = rng.integers(0, n, int(sizes.sum()))
    group_off = np.concatenate(([0], np.cumsum(sizes)))
    want, want_off = CPU.kmer_distance_matrix(cpu, ids, group_off)
    got, got_off = cuda_backend.kmer_distance_matrix(gpu, ids, group_off)
    np.testing.assert_array_equal(got_off, want_off)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("exact_tree_max", [16, 200])
def test_guide_tree_equal(cuda_backend, exact_tree_max):
    res, off = concat(family(6000, 115, 60, 0.2, 11), repeats())
    names = [f"s{i}" for i in range(len(off) - 1)]
    db = SeqDB.from_arrays(names, names, res, off)
    params = AlignParams(guide_tree="parttree", exact_tree_max=exact_tree_max, seed=5)
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, cuda_backend)
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)


@pytest.mark.parametrize("exact_tree_max", [16, 200])
def test_dna_parttree_of_6mers_equal(cuda_backend, exact_tree_max):
    """MAFFT's PartTree over nucleotide 6-mers (picks, 6-mer exact subtrees) builds the CPU's tree."""
    res, off = concat(dna_family(5000, 300, 50, 0.1, 31), dna_repeats())
    names = [f"s{i}" for i in range(len(off) - 1)]
    db = SeqDB.from_arrays(names, names, res, off).encoded("dna")
    params = AlignParams(seq_type="dna", guide_tree="parttree", parttree_split="picks", parttree_distance="kmer",
                         distance="kmer", linkage="upgma", exact_tree_max=exact_tree_max, seed=5)
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, cuda_backend)
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)


# ---- work cut into pieces: a low memory limit, and out-of-memory halving

#: Bytes a piece may plan to use in the limited backend: tens of pieces on the "mixed" shape.
LOW_LIMIT = 1 << 16
#: Groups of the split kmer_distance_matrix runs (each ~14 kB of planned memory).
MATRIX_SIZES = [60] * 40 + [1, 0, 3]


def _record(monkeypatch, owner, name: str, size_of, fail_first: int = 0) -> list[int]:
    """Sizes (units) of every call of ``owner.name``; the first ``fail_first`` calls run out
    of device memory at their first real CuPy allocation."""
    import cupy as cp

    sizes: list[int] = []
    original = getattr(owner, name)
    pool = cp.get_default_memory_pool()

    def oom(size: int):
        raise cp.cuda.memory.OutOfMemoryError(size, pool.total_bytes())

    def recorded(*args, **kwargs):
        sizes.append(size_of(args))
        if len(sizes) <= fail_first:
            cp.cuda.set_allocator(oom)
        try:
            return original(*args, **kwargs)
        finally:
            cp.cuda.set_allocator(pool.malloc)

    monkeypatch.setattr(owner, name, recorded)
    return sizes


def _split_calls_equal_cpu(monkeypatch, backend, fail_first: int) -> dict[str, list[int]]:
    """Tables, nearest references and matrices of the "mixed" shape through ``backend``,
    checked equal to the CPU; returns the units of every piece each one ran."""
    res, off = SHAPES["mixed"]()
    codes = encode(res)
    n = len(off) - 1
    pieces = {
        "tables": _record(monkeypatch, backend, "_piece_runs", lambda a: a[3] - a[2], fail_first),
        "nearest": _record(monkeypatch, backend, "_nearest_piece", lambda a: len(a[3]), fail_first),
        "matrix": _record(monkeypatch, backend, "_matrix_piece", lambda a: len(a[2]) - 1, fail_first),
    }
    cpu, gpu = build_kmer_tables(codes, off, PROTEIN), backend.kmer_tables(codes, off, PROTEIN)
    for field in ("lengths", "self_scores", "n_distinct", "slot", "start", "section_off", "kcodes", "kcounts"):
        np.testing.assert_array_equal(getattr(gpu, field), getattr(cpu, field), err_msg=field)
    rng = np.random.default_rng(9)
    ref_ids, ref_off, members, member_node = _nodes(rng, n, 7, 50)
    want = CPU.nearest_reference(cpu, ref_ids, ref_off, members, member_node)
    got = backend.nearest_reference(gpu, ref_ids, ref_off, members, member_node)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    sizes = np.array(MATRIX_SIZES)
    ids = rng.integers(0, n, int(sizes.sum()))
    group_off = np.concatenate(([0], np.cumsum(sizes)))
    want_m, want_off = CPU.kmer_distance_matrix(cpu, ids, group_off)
    got_m, got_off = backend.kmer_distance_matrix(gpu, ids, group_off)
    np.testing.assert_array_equal(got_off, want_off)
    np.testing.assert_array_equal(got_m, want_m)
    assert sum(pieces["tables"]) == n + sum(pieces["tables"][:fail_first])
    assert sum(pieces["nearest"]) == n + sum(pieces["nearest"][:fail_first])
    assert sum(pieces["matrix"]) == len(sizes) + sum(pieces["matrix"][:fail_first])
    return pieces


def test_pieces_under_a_memory_limit(monkeypatch):
    """A low memory_limit cuts every guide-tree call into many pieces; results stay the CPU's."""
    from msa.backends.cuda import CudaBackend

    pieces = _split_calls_equal_cpu(monkeypatch, CudaBackend(memory_limit=LOW_LIMIT), fail_first=0)
    for name, sizes in pieces.items():
        assert len(sizes) > 3, name


def test_out_of_memory_is_retried_once_then_halves_the_piece(monkeypatch, cuda_backend):
    """A piece whose allocation fails is retried once as it is (after the pool's cache is
    released), then halved; results stay the CPU's."""
    pieces = _split_calls_equal_cpu(monkeypatch, cuda_backend, fail_first=2)
    for name, sizes in pieces.items():
        assert len(sizes) >= 4, name  # the failed whole, its failed retry, then at least two halves
        assert sizes[1] == sizes[0] and max(sizes[2:]) < sizes[0], name


def test_one_out_of_memory_is_retried_whole(monkeypatch, cuda_backend):
    """A single failure (e.g. the pool's cache in the way) costs one retry of the same piece."""
    pieces = _split_calls_equal_cpu(monkeypatch, cuda_backend, fail_first=1)
    for name, sizes in pieces.items():
        assert sizes[1] == sizes[0], name


def test_guide_tree_under_a_memory_limit():
    """The whole PartTree driver through many small pieces builds the CPU's tree."""
    from msa.backends.cuda import CudaBackend

    res, off = concat(family(6000, 115, 60, 0.2, 11), repeats())
    names = [f"s{i}" for i in range(len(off) - 1)]
    db = SeqDB.from_arrays(names, names, res, off)
    params = AlignParams(guide_tree="parttree", exact_tree_max=200, seed=5)
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, CudaBackend(memory_limit=LOW_LIMIT))
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)
