"""The GPU profile-profile DP against its CPU oracle: equal column maps and parent counts,
on fresh random sequence and profile pairs of many shapes, in one batch and split in pieces,
with narrow and wide dp_fill blocks, one block per merge (dp_fill) and chunks of a merge on
concurrent blocks (dp_scan, row by row in either frame, and dp_pipe, a wavefront; their cell
scores from cell_scores, also checked against NumPy); and the device-resident progressive
driver against the CPU's."""
from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.backends.cpu.align import _first_is_p1
from msa.params import AlignParams, gap_costs
from msa.profile import GE, GO, TGE, TGO, AlignBatch, sequence_counts
from msa.testing import MATRIX, dense_profile, gaps, profile, related

pytestmark = pytest.mark.gpu

CPU = CpuBackend()
def batch_of(rng, shapes: list[tuple[int, int, int, int]], alphabet: int = 20) -> AlignBatch:
    """One batch with a merge per (n_a, len_a, n_b, len_b)."""
    tables, n_seqs = [], []
    for na, la, nb, lb in shapes:
        for n, length in ((na, la), (nb, lb)):
            tables.append(profile(rng, n, length, alphabet))
            n_seqs.append(n)
    return batch_from(tables, n_seqs)


def batch_from(tables: list[np.ndarray], n_seqs: list[int]) -> AlignBatch:
    """One batch merging tables 2k and 2k + 1 (``n_seqs`` sequences each)."""
    off = np.concatenate(([0], np.cumsum([len(t) for t in tables])))
    n_total = sum(n_seqs)
    return AlignBatch(np.concatenate(tables), off, np.array(n_seqs, dtype=np.int64), MATRIX, gaps(n_total))


def assert_same(gpu, cpu) -> None:
    """``gpu`` holds device arrays (maps, counts), ``cpu`` NumPy ones."""
    import cupy

    np.testing.assert_array_equal(gpu.col_offsets, cpu.col_offsets)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.maps), cpu.maps)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.counts), cpu.counts)


SHAPES = [
    (1, 1, 1, 1),  # one column each
    (1, 1, 1, 300),
    (1, 300, 1, 1),
    (1, 120, 1, 130),
    (1, 255, 1, 256),  # one dp_fill chunk exactly, then one more
    (1, 257, 1, 513),
    (1, 40, 1, 700),  # very unequal
    (1, 700, 1, 40),
    (3, 90, 1, 100),  # profile against a sequence, both orders
    (1, 100, 5, 90),
    (4, 60, 7, 80),
    (12, 200, 9, 300),
    (2, 5, 30, 400),
    (17, 1, 1, 2),
]


def test_mixed_batch(cuda_backend):
    batch = batch_of(np.random.default_rng(11), SHAPES)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.mark.parametrize("seed", range(4))
def test_random_shapes(cuda_backend, seed):
    rng = np.random.default_rng(100 + seed)
    shapes = [(int(rng.choice([1, 1, 2, 5, 20])), int(rng.integers(1, 400)),
               int(rng.choice([1, 1, 3, 8])), int(rng.integers(1, 400))) for _ in range(24)]
    batch = batch_of(rng, shapes)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_ties_low_complexity(cuda_backend):
    """Two-letter sequences tie everywhere: the comparison order decides every cell."""
    rng = np.random.default_rng(5)
    batch = batch_of(rng, [(1, 80, 1, 90), (1, 300, 1, 290), (4, 100, 3, 120), (1, 1, 6, 50)], alphabet=2)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_long_pair(cuda_backend):
    rng = np.random.default_rng(7)
    batch = batch_of(rng, [(6, 1500, 5, 1800), (1, 2000, 1, 1900)])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_pieces(cuda_backend, monkeypatch):
    """A budget of about one merge per piece gives the same result as one launch."""
    batch = batch_of(np.random.default_rng(3), SHAPES[:8])
    monkeypatch.setattr("msa.backends.cuda.memory.MEMORY_FRACTION", 1e-12)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.fixture(params=["scan", "pipe"])
def pipe_kind(request, monkeypatch) -> str:
    """The pipelined fill under test: dp_scan (for every shape) or dp_pipe."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_SCAN", request.param == "scan")
    monkeypatch.setattr("msa.backends.cuda.align.SCAN_ROW_STEPS", 0.0)
    return request.param


def test_scan_or_wavefront() -> None:
    """dp_scan for merges much narrower one way (rows), dp_pipe for square ones near the root."""
    from msa.backends.cuda.align import _merge_records

    def kind(*widths: int) -> str:
        return _merge_records(np.concatenate(([0], np.cumsum(widths))), few=True, pipeline=True)[3]

    assert kind(350, 10000) == "scan" and kind(10000, 350) == "scan" and kind(300, 1800) == "scan"
    assert kind(5700, 5700) == "pipe" and kind(5700, 5700, 300, 1800) == "pipe"


@pytest.mark.parametrize("pipeline", [False, True])
@pytest.mark.parametrize("few_threads", [32, 64])
def test_narrow_blocks(cuda_backend, monkeypatch, few_threads, pipeline, pipe_kind):
    """Narrow blocks force many chunks per merge (the last column carried in global memory):
    one after another in dp_fill, or on concurrent dp_pipe blocks (more tickets than SMs here,
    so blocks draw several)."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", few_threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", few_threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPELINE", pipeline)
    fills = count_fills(monkeypatch, cuda_backend)
    rng = np.random.default_rng(21 + few_threads)
    batch = batch_of(rng, SHAPES + [(1, 300, 16, 1000), (3, 517, 1, 290)])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind if pipeline else "fill": 1})


def count_fills(monkeypatch, backend) -> Counter:
    """Launches of the fill kernels from now on, by kind (fill, pipe, scan)."""
    fills: Counter = Counter()

    def counted(key, fn):
        def launch(*args, **kwargs):
            fills[key] += 1
            return fn(*args, **kwargs)

        return launch

    for key, fn in list(backend._fills.items()):
        monkeypatch.setitem(backend._fills, key, counted(key, fn))
    return fills


def exact_table(rng, n: int, length: int) -> np.ndarray:
    """A random sequence of exactly ``length`` residues (n == 1), else a profile of ``n`` related ones."""
    if n == 1:
        return sequence_counts(rng.integers(0, 20, length).astype(np.uint8))
    return profile(rng, n, length)


#: Merges whose P2 spans several 512-column chunks, (n_a, len_a, n_b, len_b); sequences (n = 1)
#: have exactly that length. P1 is a sequence if there is one (the first if both are).
PIPE_SHAPES = [
    (1, 600, 1, 513),  # W2 = block width + 1
    (1, 1024, 1, 1024),  # W2 a multiple of the block width
    (1, 1, 1, 3000),  # W1 = 1
    (1, 3000, 1, 1),  # W2 = 1: tickets are counted for the wider profile, all but one skipped
    (1, 40, 16, 2500),  # a short sequence against a wide profile
    (5, 900, 1, 700),  # a profile against a sequence (which plays P1)
    (8, 1500, 6, 2000),  # profile against profile
    (1, 2000, 1, 4100),  # a long sequence pair, 9 chunks
]


@functools.cache
def pipe_tables() -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """The tables and sizes of PIPE_SHAPES, built once (the profiles take CPU merges)."""
    rng = np.random.default_rng(31)
    tables, n_seqs = [], []
    for na, la, nb, lb in PIPE_SHAPES:
        for n, length in ((na, la), (nb, lb)):
            tables.append(exact_table(rng, n, length))
            n_seqs.append(n)
    return tuple(tables), tuple(n_seqs)


def pipe_batch(merges: list[int]) -> AlignBatch:
    """A batch of these merges of PIPE_SHAPES."""
    tables, n_seqs = pipe_tables()
    parts = [2 * q + r for q in merges for r in (0, 1)]
    return batch_from([tables[p] for p in parts], [n_seqs[p] for p in parts])


@pytest.mark.parametrize("q", range(len(PIPE_SHAPES)))
def test_pipeline_alone(cuda_backend, monkeypatch, q, pipe_kind):
    """One merge, its chunks of 512 columns on concurrent blocks."""
    fills = count_fills(monkeypatch, cuda_backend)
    batch = pipe_batch([q])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 1})


@pytest.mark.parametrize("pipe_threads", [128, 256, 512])
def test_pipeline_batch(cuda_backend, monkeypatch, pipe_threads, pipe_kind):
    """Every PIPE_SHAPES merge in one launch (tickets of several merges, merge-major), at
    each dp_pipe block size."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", pipe_threads)
    fills = count_fills(monkeypatch, cuda_backend)
    batch = pipe_batch(list(range(len(PIPE_SHAPES))))
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 1})


def test_pipeline_pieces(cuda_backend, monkeypatch, pipe_kind):
    """A budget of about one merge per piece: each piece its own dp_pipe / dp_scan launch."""
    fills = count_fills(monkeypatch, cuda_backend)
    batch = pipe_batch([0, 4, 5, 7])
    monkeypatch.setattr("msa.backends.cuda.memory.MEMORY_FRACTION", 1e-12)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 4})


def test_cell_scores_out_of_memory_falls_back(cuda_backend, monkeypatch):
    """Cell scores that do not fit: the batch is halved down to single merges, and a merge whose
    scores still fail runs dp_fill (1 byte a cell) instead of crashing; same result."""
    import cupy

    def no_memory(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)

    monkeypatch.setattr(cuda_backend, "_cell_scores", no_memory)
    fills = count_fills(monkeypatch, cuda_backend)
    batch = pipe_batch([0, 4, 5])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills["fill"] == 3


@pytest.mark.parametrize("n_sm", [2, 3])
def test_pipeline_small_grid(cuda_backend, monkeypatch, n_sm, pipe_kind):
    """A grid of n_sm blocks for ~20 chunks a merge: every block draws many tickets, and a
    chunk's left neighbour may have been done by the same block."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", 32)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", 32)
    monkeypatch.setattr(cuda_backend, "n_sm", n_sm)
    fills = count_fills(monkeypatch, cuda_backend)
    rng = np.random.default_rng(40 + n_sm)
    shapes = [(1, 300, 1, 700), (3, 200, 1, 650)][: n_sm - 1]
    batch = batch_of(rng, shapes)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 1})


def test_pipeline_only_if_counted(cuda_backend, monkeypatch):
    """A batch of as many merges as SMs cut into one-merge pieces: its cost did not count cell
    scores, so its pieces run dp_fill, not dp_pipe."""
    monkeypatch.setattr(cuda_backend, "n_sm", 4)
    monkeypatch.setattr("msa.backends.cuda.memory.MEMORY_FRACTION", 1e-12)
    fills = count_fills(monkeypatch, cuda_backend)
    batch = pipe_batch([0, 4, 5, 7])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({"fill": 4})


def capture_scores(monkeypatch, backend) -> list[tuple[np.ndarray, np.ndarray]]:
    """(merge records, cell scores) of every cell_scores launch from now on, copied after it."""
    from msa.backends.cuda.align import N_INFO

    seen = []
    fn = backend._cell_scores

    def launch(grid, block, args, **kwargs):
        fn(grid, block, args, **kwargs)
        seen.append((args[0].get().reshape(-1, N_INFO), args[7].get()))  # then the frame flag and the bonuses

    monkeypatch.setattr(backend, "_cell_scores", launch)
    return seen


def assert_scores(batch: AlignBatch, records: np.ndarray, scores: np.ndarray, kind: str) -> None:
    """Each merge's cell scores are dp_path's, row-major from I_SC (for dp_scan with W1 > W2,
    column-major: its frame): S2[j][a] is P2's gap cost plus its counts times the matrix, so
    sc(i, j) = r2[j] gap1[i] + r1[i] gap2[j] + c1[i] M c2[j] (one piece: column offsets are the batch's)."""
    from msa.backends.cuda.align import N_INFO

    assert len(records) == batch.n_merges and N_INFO == 12
    c = batch.counts.astype(np.int64)
    g = np.repeat(batch.gap_rows(), np.diff(batch.col_offsets)[0::2] + np.diff(batch.col_offsets)[1::2], axis=0)
    gap = c[:, GO] * g[:, 0] + c[:, GE] * g[:, 1] + c[:, TGO] * g[:, 2] + c[:, TGE] * g[:, 3]
    res = c[:, :GO]
    r = res.sum(axis=1)
    m = np.asarray(batch.matrix, dtype=np.int64)
    for off1, w1, _, off2, w2, _, _, _, _, _, _, at in records:
        p1, p2 = slice(off1, off1 + w1), slice(off2, off2 + w2)
        want = np.outer(gap[p1], r[p2]) + np.outer(r[p1], gap[p2]) + res[p1] @ (res[p2] @ m).T
        if kind == "scan" and w1 > w2:
            want = want.T
        np.testing.assert_array_equal(scores[at : at + w1 * w2], want.ravel())


def test_cell_scores(cuda_backend, monkeypatch, pipe_kind):
    """cell_scores against NumPy, with few blocks per merge (each strides over many tiles)."""
    monkeypatch.setattr(cuda_backend, "n_sm", 3)
    seen = capture_scores(monkeypatch, cuda_backend)
    batch = pipe_batch([5, 6])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert len(seen) == 1
    assert_scores(batch, *seen[0], pipe_kind)


@functools.cache
def dense_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense profiles: wide (64 x ~2000), narrow and denser (128 x ~100), narrow and sparser
    (32 x ~100), so that the wide one plays P1 against the first and P2 against the second."""
    rng = np.random.default_rng(51)
    return dense_profile(rng, 64, 2000, 0.4), dense_profile(rng, 128, 100, 0.5), dense_profile(rng, 32, 100, 0.5)


@pytest.mark.parametrize("pipe_threads", [128, 512])
def test_pipeline_dense(cuda_backend, monkeypatch, pipe_threads, pipe_kind):
    """Many residue types per column of P1 (the substitution sums cell_scores takes off the
    wavefront), very unequal widths: P1 ~2000 x P2 ~100 (one chunk) and P1 ~100 x P2 ~2000."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", pipe_threads)
    fills = count_fills(monkeypatch, cuda_backend)
    seen = capture_scores(monkeypatch, cuda_backend)
    wide, denser, sparser = dense_tables()
    batch = batch_from([wide, denser, sparser, wide], [64, 128, 32, 64])
    assert _first_is_p1(wide, 64, denser, 128) and _first_is_p1(sparser, 32, wide, 64)
    for p1 in (wide, sparser):
        assert (p1[:, :GO] > 0).sum(axis=1).mean() > 9  # residue types per column of P1
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 1})
    assert len(seen) == 1
    assert_scores(batch, *seen[0], pipe_kind)


@pytest.mark.parametrize("few_threads", [32, 512])
@pytest.mark.parametrize("few", [False, True])
def test_boundary_bytes(monkeypatch, few_threads, few, pipe_kind):
    """The piece cost counts every boundary row buffer and progress counter _merge_records sizes."""
    from msa.backends.cuda.align import ROW_BYTES, _boundary_bytes, _merge_records

    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", few_threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", few_threads)
    rng = np.random.default_rng(few_threads)
    for _ in range(20):
        w = rng.integers(1, 3000, 2 * int(rng.integers(1, 6)))
        col_off = np.concatenate(([0], np.cumsum(w)))
        _, _, _, fill, sizes = _merge_records(col_off, few, pipeline=True)
        used = ROW_BYTES * sizes["rows"] + (8 * sizes["tickets"] if fill != "fill" else 0)
        assert used <= _boundary_bytes(w[0::2], w[1::2]).sum()


def gap_rows(rng, n_merges: int) -> np.ndarray:
    """A gap vector per merge, most of them different: the defaults rescaled for random family
    sizes (as merges of several families in one level have), and random costs with
    terminal open != terminal extension (every gap field read from the merge's own row)."""
    rows = []
    for n in rng.integers(1, 20000, n_merges):
        if rng.random() < 0.5:
            rows.append(gaps(int(n)))
        else:
            rows.append(-np.array([rng.integers(500, 30000), rng.integers(50, 4000),
                                   rng.integers(50, 3000), rng.integers(50, 3000)], dtype=np.int64))
    return np.array(rows, dtype=np.int64)


def with_gap_rows(batch: AlignBatch, rng) -> AlignBatch:
    """The batch with its own gap vector per merge; the CPU result is checked to depend on them."""
    batch.gaps = gap_rows(rng, batch.n_merges)
    assert len({tuple(r) for r in batch.gaps}) > batch.n_merges // 2
    return batch


@pytest.mark.parametrize("seed", range(3))
def test_gaps_per_merge(cuda_backend, seed):
    """Fresh random merges (sequences and profiles) with different gap costs per merge, in one
    batch of fewer merges than SMs (dp_fill with wide blocks, or the pipelined fills)."""
    rng = np.random.default_rng(900 + seed)
    shapes = [(int(rng.choice([1, 1, 2, 6])), int(rng.integers(1, 600)),
               int(rng.choice([1, 1, 4, 9])), int(rng.integers(1, 600))) for _ in range(20)]
    batch = with_gap_rows(batch_of(rng, shapes), rng)
    want = CPU.profile_align(batch)
    assert_same(cuda_backend.profile_align(batch), want)
    one = AlignBatch(batch.counts, batch.col_offsets, batch.n_seqs, batch.matrix, batch.gaps[0])
    assert not np.array_equal(CPU.profile_align(one).maps, want.maps)  # the rows matter


def test_gaps_per_merge_wide_batch(cuda_backend):
    """As many merges as SMs and more (dp_fill, one column per thread), gaps per merge."""
    rng = np.random.default_rng(911)
    shapes = [(int(rng.choice([1, 3])), int(rng.integers(1, 300)), 1, int(rng.integers(1, 300)))
              for _ in range(cuda_backend.n_sm + 9)]
    batch = with_gap_rows(batch_of(rng, shapes), rng)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_gaps_per_merge_pieces(cuda_backend, monkeypatch):
    """Gaps per merge in a batch cut into one-merge pieces: each piece uploads its merges' rows."""
    rng = np.random.default_rng(912)
    batch = with_gap_rows(batch_of(rng, SHAPES[:9]), rng)
    monkeypatch.setattr("msa.backends.cuda.memory.MEMORY_FRACTION", 1e-12)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.mark.parametrize("threads", [32, 128])
def test_gaps_per_merge_pipelined(cuda_backend, monkeypatch, threads, pipe_kind):
    """Gaps per merge through dp_pipe / dp_scan (many chunks a merge, tickets of several merges)
    and their cell scores."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", threads)
    fills = count_fills(monkeypatch, cuda_backend)
    seen = capture_scores(monkeypatch, cuda_backend)
    rng = np.random.default_rng(913 + threads)
    shapes = [(1, 300, 1, 700), (3, 517, 1, 290), (1, 40, 5, 900), (6, 400, 4, 450), (1, 1, 1, 800)]
    batch = with_gap_rows(batch_of(rng, shapes), rng)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({pipe_kind: 1})
    assert_scores(batch, *seen[0], pipe_kind)


def test_wide_batch(cuda_backend):
    """At least as many merges as SMs: one column per thread (the leaves' levels)."""
    rng = np.random.default_rng(9)
    shapes = [(1, int(rng.integers(1, 300)), 1, int(rng.integers(1, 300))) for _ in range(cuda_backend.n_sm + 8)]
    batch = batch_of(rng, shapes)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.mark.parametrize("seed", range(3))
def test_rows_fill(cuda_backend, monkeypatch, seed):
    """Batches of many merges that all have a one-sequence side run dp_rows (the sequence's rows
    on a warp's lanes, 256 a pass): sequences of 1 to ~1,100 residues (several passes, and
    lengths at and around a pass and a lane's 8 rows) against profiles and sequences of 1 to
    ~3,000 columns, either side first, gaps per merge; the same as the CPU and as dp_fill."""
    rng = np.random.default_rng(300 + seed)
    lengths = [1, 2, 7, 8, 9, 255, 256, 257, 511, 512, 513, 1100]
    tables, n_seqs = [], []
    for q in range(cuda_backend.n_sm + 20):
        seq = lengths[q] if q < len(lengths) else int(rng.integers(1, 700))
        n_other = int(rng.choice([1, 2, 5, 12]))
        other = int(rng.choice([1, 3, 40, 300, 3000])) if q % 3 == 0 else int(rng.integers(1, 900))
        pair = [(1, seq), (n_other, other)][:: 1 if q % 2 else -1]
        tables += [exact_table(rng, n, length) for n, length in pair]
        n_seqs += [n for n, _ in pair]
    batch = with_gap_rows(batch_from(tables, n_seqs), rng)
    want = CPU.profile_align(batch)
    fills = count_fills(monkeypatch, cuda_backend)
    assert_same(cuda_backend.profile_align(batch), want)
    monkeypatch.setattr("msa.backends.cuda.align.DP_ROWS", False)
    assert_same(cuda_backend.profile_align(batch), want)
    assert fills == Counter({"rows": 1, "fill": 1})
    batch.parents = False  # the maps only (msa add): build_parent writes no parent columns
    got, cpu = cuda_backend.profile_align(batch), CPU.profile_align(batch)
    assert got.counts is None and cpu.counts is None
    np.testing.assert_array_equal(got.maps.get(), want.maps)
    np.testing.assert_array_equal(got.col_offsets, want.col_offsets)


def test_rows_fill_ties(cuda_backend, monkeypatch):
    """Two-letter sequences against two-letter profiles in dp_rows: ties decide every cell."""
    rng = np.random.default_rng(320)
    shapes = [(1, int(rng.integers(1, 600)), int(rng.choice([1, 4])), int(rng.integers(1, 600)))
              for _ in range(cuda_backend.n_sm)]
    batch = batch_of(rng, shapes, alphabet=2)
    fills = count_fills(monkeypatch, cuda_backend)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))
    assert fills == Counter({"rows": 1})


def test_device_batch(cuda_backend):
    """Counts already on the device (as the progressive driver passes them) give the same result."""
    import cupy

    batch = batch_of(np.random.default_rng(13), SHAPES[:6])
    want = CPU.profile_align(batch)
    batch.counts = cupy.asarray(batch.counts)
    assert_same(cuda_backend.profile_align(batch), want)


@pytest.mark.parametrize("few_threads", [512, 32])
@pytest.mark.parametrize("shape", ["caterpillar", "balanced"])
def test_progressive_on_device(cuda_backend, monkeypatch, shape, few_threads, pipe_kind):
    """The one progressive driver: device-resident on CUDA, the same columns as on the CPU
    (with 32-column chunks, the levels of fewer merges than SMs run dp_pipe)."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", few_threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", few_threads)
    from msa.progressive import progressive_align
    from msa.tree.guide_tree import GuideTree

    rng = np.random.default_rng(17)
    seqs = related(rng, 70, 120)
    from msa.seqdb import SeqDB

    db = SeqDB.from_pairs([(f"s{k}", bytes(b"ARNDCQEGHILKMFPSTWYV"[c] for c in s)) for k, s in enumerate(seqs)])
    n = len(db)
    if shape == "caterpillar":
        children = [[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)]
    else:
        nodes, children = list(range(n)), []
        while len(nodes) > 1:
            nxt = []
            for a, b in zip(nodes[0::2], nodes[1::2]):
                children.append([a, b])
                nxt.append(n + len(children) - 1)
            nodes = nxt + nodes[len(nodes) // 2 * 2 :]
    tree = GuideTree(n, np.array(children), np.arange(n - 1, dtype=float))
    g = gap_costs(AlignParams(), n)
    want = progressive_align(db, tree, MATRIX, g, CPU)
    got = progressive_align(db, tree, MATRIX, g, cuda_backend)
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("few_threads", [512, 32])
def test_progressive_many_on_device(cuda_backend, monkeypatch, few_threads, pipe_kind):
    """Many families in shared level batches on the device (each merge with its family's gap
    costs and sequence weights, the tree's or random): every family's columns equal its CPU
    progressive_align alone, 1- and 2-sequence
    families and deep and shallow trees among them."""
    monkeypatch.setattr("msa.backends.cuda.align.DP_FEW_THREADS", few_threads)
    monkeypatch.setattr("msa.backends.cuda.align.DP_PIPE_THREADS", few_threads)
    from msa.progressive import progressive_align, progressive_align_many
    from msa.seqdb import SeqDB
    from msa.tree import build_guide_tree
    from msa.tree.guide_tree import GuideTree

    rng = np.random.default_rng(71)
    dbs, trees, gap_list = [], [], []
    for f, n in enumerate([1, 2, 40, 3, 90, 1, 17, 2, 60]):
        seqs = related(rng, n, int(rng.integers(20, 400)))
        db = SeqDB.from_pairs([(f"s{k}", bytes(b"ARNDCQEGHILKMFPSTWYV"[c] for c in s)) for k, s in enumerate(seqs)])
        if f % 3 == 2 and n > 2:  # a caterpillar: one merge a level
            tree = GuideTree(n, np.array([[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)]), np.arange(n - 1.0))
        else:
            tree = build_guide_tree(db, AlignParams(), CPU)
        dbs.append(db)
        trees.append(tree)
        gap_list.append(gap_costs(AlignParams() if f % 2 else AlignParams(gap_open=4.0), n * (f + 1)))
    from msa.tree.weights import tree_weights

    weights = [tree_weights(t) if f % 2 else rng.integers(1, 30, len(db)) for f, (t, db) in enumerate(zip(trees, dbs))]
    got = progressive_align_many(dbs, trees, MATRIX, gap_list, cuda_backend, weights)
    for db, tree, g, w, (columns, width) in zip(dbs, trees, gap_list, weights, got):
        want_columns, want_width = progressive_align(db, tree, MATRIX, g, CPU, w)
        assert width == want_width
        np.testing.assert_array_equal(columns, want_columns)
