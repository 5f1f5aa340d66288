"""Numba kernels of the progressive stage: FAMSA 2's profile-profile Gotoh DP, in integers.

One merge follows FAMSA 2.5's ``CProfile::AlignSeqSeq`` (src/core/profile_seq.cpp) and
``CProfile::AlignProfProf`` (src/core/profile.cpp): three states (D column-column, H gap column put into P1, V gap column
put into P2), typed gap insertion costs, re-typing corrections on D steps, H<->V
transitions (ALWAYS_3_DIRS) except between two single sequences, FAMSA's
borders and tie-breaking, int64 scores with -inf = -2**62. The traceback yields
column maps, and the parent profile is assembled as ``ConstructProfile`` does.
A batch of merges runs in parallel, one merge per thread; each merge has its own
gap costs (row ``k`` of ``g``: merges of different families share a batch). A batch of one
large merge spreads its DP over the threads instead (:func:`dp_path_wave`).
"""
from __future__ import annotations

import warnings

import numba
import numpy as np
from numba.core import types
from numba.core.errors import NumbaPerformanceWarning
from numba.extending import intrinsic

from msa.jit import njit
from msa.profile import GE, GO, N_COUNTS, TGE, TGO, merge_gap_rows

NEG_INF = -(1 << 62)
#: Candidate value of a transition FAMSA does not allow there; below any
#: reachable score (NEG_INF plus penalties), so it never wins a comparison.
EXCLUDED = -(1 << 63)
#: A path step (and a direction): a column of both, a gap column put into P1 (H), into P2 (V).
D_STEP, H_STEP, V_STEP = 0, 1, 2
_ROW0 = H_STEP | (H_STEP << 2) | (H_STEP << 4)  # border row: every state came from H
_COL0 = V_STEP | (V_STEP << 2) | (V_STEP << 4)  # border column: every state came from V
_NRES = GO
#: The ``bonus`` of merges that have none.
NO_BONUS = np.zeros(0, dtype=np.int64)
#: What a function that only needs its ``prange`` loops asks of Numba's parallel pipeline: none
#: of its other rewrites (array creation, array expressions), which would wake the thread pool
#: for every small array made.
PRANGE_ONLY = {"prange": True, "numpy": False, "comprehension": False, "setitem": False, "reduction": False,
               "stencil": False, "fusion": False, "inplace_binop": False}
# Numba warns, when it compiles such a function that only calls others that are parallel, that
# the pipeline found nothing to run in parallel: true, and meant so. Only that warning about
# these files is silenced.
warnings.filterwarnings(
    "ignore", r"(?s).*'parallel=True' was specified but no transformation.*msa.backends.cpu.(align|forest)\.py",
    NumbaPerformanceWarning,
)


@njit(cache=True, nogil=True)
def _start_counts(c: np.ndarray, n: int, i: int) -> tuple[int, int, int, int]:
    """(open, ext, term_open, term_ext) of a gap column put after column i (1-based, i >= 1)."""
    w = c.shape[0]
    if i >= w:
        te = c[w - 1, TGO] + c[w - 1, TGE]
        return 0, 0, n - te, te
    to = c[i, TGO]
    te = c[i - 1, TGO] + c[i - 1, TGE]
    e = c[i - 1, GO] + c[i - 1, GE]
    return n - e - to - te, e, to, te


@njit(cache=True, nogil=True)
def _cont_counts(c: np.ndarray, n: int, i: int) -> tuple[int, int]:
    """(ext, term_ext) of a further gap column after column i, as the DP prices it."""
    w = c.shape[0]
    if i >= w:
        return 0, n
    te = c[i, TGO] + c[i - 1, TGO] + c[i - 1, TGE]
    return n - te, te


@njit(cache=True, nogil=True)
def nonzero_cells(c: np.ndarray) -> int:
    """FAMSA's ``get_num_of_non_zeros``: residue and gap-type counters plus its total-gap row."""
    total = 0
    for i in range(c.shape[0]):
        gaps = 0
        for k in range(N_COUNTS):
            if c[i, k] != 0:
                total += 1
            if k >= _NRES:
                gaps += c[i, k]
        if gaps != 0:
            total += 1
    return total


@njit(cache=True, nogil=True)
def _start(w1: int, r2: np.ndarray, n1: int, tgo: int, tge: int) -> tuple:
    """A DP's direction bytes (row 0 filled: every state from H) and its six rows, the three of
    the row before filled with row 0 (``r2[j]``: residues of P2's column j; P1 of ``n1``
    sequences): D only at the origin, H a terminal gap run along P2, V none."""
    stride = len(r2)
    w2 = stride - 1
    dirs = np.empty((w1 + 1) * stride, dtype=np.uint8)
    dp_ = np.empty(stride, dtype=np.int64)
    hp = np.empty(stride, dtype=np.int64)
    vp = np.empty(stride, dtype=np.int64)
    dp_[0] = 0
    hp[0] = NEG_INF
    vp[0] = NEG_INF
    for j in range(1, w2 + 1):
        dp_[j] = NEG_INF
        vp[j] = NEG_INF
        if j == 1:
            hp[j] = n1 * r2[1] * tgo
        else:
            hp[j] = hp[j - 1] + n1 * r2[j] * tge
        dirs[j] = _ROW0
    hp[w2] = NEG_INF
    return (dirs, dp_, hp, vp, np.empty(stride, dtype=np.int64), np.empty(stride, dtype=np.int64),
            np.empty(stride, dtype=np.int64))


@njit(cache=True, nogil=True)
def _gap_costs(c: np.ndarray, n: int, i: int, g: np.ndarray) -> tuple[int, int, int, int]:
    """Column i's (1-based) gap costs of a profile of n sequences under gap vector g: its own gap
    counts' cost, a gap column put after it (start, continue), and the re-typing correction."""
    go, ge, tgo, tge = g[0], g[1], g[2], g[3]
    col = c[i - 1]
    o, e, to, te = _start_counts(c, n, i)
    start = o * go + e * ge + to * tgo + te * tge
    e, te = _cont_counts(c, n, i)
    return (col[GO] * go + col[GE] * ge + col[TGO] * tgo + col[TGE] * tge, start, e * ge + te * tge,
            col[GO] * (ge - go) + col[TGO] * (tge - tgo))


@njit(cache=True, nogil=True)
def _p2_columns(c2: np.ndarray, n2: int, m: np.ndarray, g: np.ndarray) -> tuple:
    """Per column ``j`` (1-based) of P2: its score table (FAMSA's ``CProfile::CalculateCountersScores``,
    residue-major so a row's column scores are one vectorizable sweep over j), residues, V's
    gap costs (start, continue), re-typing correction, and the residues of columns 1..j."""
    w2 = c2.shape[0]
    s2 = np.empty((_NRES, w2 + 1), dtype=np.int64)
    r2 = np.zeros(w2 + 1, dtype=np.int64)
    v_start = np.zeros(w2 + 1, dtype=np.int64)
    v_cont = np.zeros(w2 + 1, dtype=np.int64)
    retype2 = np.zeros(w2 + 1, dtype=np.int64)
    for j in range(1, w2 + 1):
        col = c2[j - 1]
        gap_cost, v_start[j], v_cont[j], retype2[j] = _gap_costs(c2, n2, j, g)
        for a in range(_NRES):
            s2[a, j] = gap_cost
        r = 0
        for b in range(_NRES):
            cb = col[b]
            if cb != 0:
                r += cb
                for a in range(_NRES):
                    s2[a, j] += cb * m[b, a]
        r2[j] = r
    return s2, r2, v_start, v_cont, retype2, np.cumsum(r2)


@njit(cache=True, nogil=True)
def _p1_rows(c1: np.ndarray, n1: int, g: np.ndarray) -> tuple:
    """Per row ``i`` (1-based) of P1: its residue codes and counts (``nnz`` of them), residues,
    gap cost, H's gap costs (start, continue) and re-typing correction."""
    w1 = c1.shape[0]
    codes = np.zeros((w1 + 1, _NRES), dtype=np.int64)
    mult = np.zeros((w1 + 1, _NRES), dtype=np.int64)
    nnz = np.zeros(w1 + 1, dtype=np.int64)
    r1 = np.zeros(w1 + 1, dtype=np.int64)
    gap1 = np.zeros(w1 + 1, dtype=np.int64)
    h_start = np.zeros(w1 + 1, dtype=np.int64)
    h_cont = np.zeros(w1 + 1, dtype=np.int64)
    retype1 = np.zeros(w1 + 1, dtype=np.int64)
    for i in range(1, w1 + 1):
        col = c1[i - 1]
        k = 0
        for a in range(_NRES):
            if col[a] != 0:
                codes[i, k] = a
                mult[i, k] = col[a]
                k += 1
                r1[i] += col[a]
        nnz[i] = k
        gap1[i], h_start[i], h_cont[i], retype1[i] = _gap_costs(c1, n1, i, g)
    return codes, mult, nnz, r1, gap1, h_start, h_cont, retype1


@njit(cache=True, nogil=True)
def _dp_setup(
    c1: np.ndarray, n1: int, c2: np.ndarray, n2: int, m: np.ndarray, g: np.ndarray, col_bounds: np.ndarray,
) -> tuple:
    """What every tile of a DP reads: P2's columns, P1's rows, the direction bytes (row 0 and
    column 0 filled), the last row computed in each column (row 0 now), and ``edge[0]``: column 0's
    (D, H, V) in every row; ``edge[t + 1]`` will hold the last column of block ``t``
    (``col_bounds[t]:col_bounds[t + 1]``), row by row (row 0 now)."""
    w1 = c1.shape[0]
    tgo, tge = g[2], g[3]
    cols = _p2_columns(c2, n2, m, g)
    rows = _p1_rows(c1, n1, g)
    r1 = rows[3]
    dirs, last_d, last_h, last_v = _start(w1, cols[1], n1, tgo, tge)[:4]
    stride = c2.shape[0] + 1
    n_blocks = len(col_bounds) - 1
    edge = np.empty((3, n_blocks + 1, w1 + 1), dtype=np.int64)
    for t in range(n_blocks + 1):
        j = col_bounds[t] - 1
        edge[0, t, 0], edge[1, t, 0], edge[2, t, 0] = last_d[j], last_h[j], last_v[j]
    for i in range(1, w1 + 1):
        edge[0, 0, i] = NEG_INF
        edge[1, 0, i] = NEG_INF
        if i < w1:
            dv = max(edge[0, 0, i - 1], edge[2, 0, i - 1])
            edge[2, 0, i] = dv + n2 * r1[i] * (tgo if i == 1 else tge)
        else:
            edge[2, 0, i] = NEG_INF
        dirs[i * stride] = _COL0
    return cols, rows, dirs, last_d, last_h, last_v, edge


@njit(cache=True, nogil=True)
def _dp_tile(
    r0: int, r1_: int, t: int, col_bounds: np.ndarray, w1: int, g: np.ndarray, seqseq: bool, n2: int,
    cols: tuple, rows: tuple, dirs: np.ndarray, last_d: np.ndarray, last_h: np.ndarray, last_v: np.ndarray,
    edge: np.ndarray, bonus: np.ndarray, bonus_tr: bool,
) -> None:
    """Rows ``r0:r1_`` of the DP over the columns of block ``t``, from the row above each column
    (``last_*``) and the block on the left's last column (``edge[:, t]``); leaves its own
    last row in ``last_*`` and its last column in ``edge[:, t + 1]``. A tile needs only the
    tiles above it and on its left (:func:`dp_path_wave` runs them as a wavefront).

    The cells are FAMSA's choices in a branch-free form: every state takes the maximum of its
    candidates, and the direction encodes FAMSA's tie order (D only when strictly best; then H
    or V as each state prefers). A transition that is not allowed gets EXCLUDED, which never
    wins. D and V read only the row before, so they are one sweep over j that the compiler
    vectorizes (the progressive stage of balifam1000 families 1.5-1.7x faster on 2 cores than a
    cell at a time). H is the chain along the row: H[j] = max(cand[j], H[j - 1] + r2[j] *
    h_cont), cand from D and V. With ext[j] = h_cont * (r2[1] + .. + r2[j]), H[j] - ext[j] is
    a running maximum of cand[j] - ext[j]: the serial part is one max a cell, between two
    vectorized sweeps (the candidates; H's directions from the finished row)."""
    codes, mult, nnz, r1s, gap1s, h_starts, h_conts, retype1s = rows
    j0, j1 = col_bounds[t], col_bounds[t + 1]
    bw = j1 - j0
    w2 = cols[1].shape[0] - 1
    stride = w2 + 1
    three_dirs = not seqseq
    # The block's columns as views from column j0 - 1, so that index x is column j0 - 1 + x
    # (x = 0: the block on the left's last column) and every index is provably >= 0: Numba
    # then makes no wraparound test, which would keep the sweeps from vectorizing.
    s2 = cols[0][:, j0 - 1 : j1]
    r2 = cols[1][j0 - 1 : j1]
    v_start = cols[2][j0 - 1 : j1]
    v_cont = cols[3][j0 - 1 : j1]
    retype2 = cols[4][j0 - 1 : j1]
    r2_sum = cols[5][j0 - 1 : j1]
    pd = np.empty(bw + 1, dtype=np.int64)
    ph = np.empty(bw + 1, dtype=np.int64)
    pv = np.empty(bw + 1, dtype=np.int64)
    cd = np.empty(bw + 1, dtype=np.int64)
    ch = np.empty(bw + 1, dtype=np.int64)
    cv = np.empty(bw + 1, dtype=np.int64)
    trow = np.empty(bw + 1, dtype=np.int64)
    rowdir = np.empty(bw + 1, dtype=np.uint8)  # a row's D and V directions
    cand = np.empty(bw + 1, dtype=np.int64)  # H's candidates from D and V, less the extensions to j
    pd[0], ph[0], pv[0] = edge[0, t, r0 - 1], edge[1, t, r0 - 1], edge[2, t, r0 - 1]
    pd[1:] = last_d[j0:j1]
    ph[1:] = last_h[j0:j1]
    pv[1:] = last_v[j0:j1]
    for i in range(r0, r1_):
        r1 = r1s[i]
        gap1 = gap1s[i]
        h_start = h_starts[i]
        h_cont = h_conts[i]
        retype1 = retype1s[i]
        cd[0], ch[0], cv[0] = edge[0, t, i], edge[1, t, i], edge[2, t, i]
        row_dirs = dirs[i * stride + j0 - 1 : i * stride + j1]
        # Column scores of row i, t(i, j) = sum_k c1_i[k] * S2_j[k], as separate sweeps over j.
        for x in range(1, bw + 1):
            trow[x] = r2[x] * gap1
        for k in range(nnz[i]):
            s2a = s2[codes[i, k]]
            c = mult[i, k]
            for x in range(1, bw + 1):
                trow[x] += c * s2a[x]
        if bonus.shape[0] > 0:
            if bonus_tr:
                cells = bonus[(j0 - 1) * w1 + i - 1 : (j1 - 1) * w1 : w1]
            else:
                cells = bonus[(i - 1) * w2 + j0 - 1 : (i - 1) * w2 + j1 - 1]
            for x in range(1, bw + 1):
                trow[x] += cells[x - 1]
        three_row = three_dirs and i > 1
        first3 = three_row & (j0 > 1)  # use3 at x = 1 (column j0); true at every later column of a row
        for x in range(1, bw + 1):
            rj = r2[x]
            use3 = first3 if x == 1 else three_row
            # D: column i of P1 against column j of P2.
            t_d = pd[x - 1]
            t_h = ph[x - 1] + rj * retype1
            t_v = pv[x - 1] + r1 * retype2[x]
            cd[x] = max(t_d, max(t_h, t_v)) + trow[x]
            not_d = 1 - int((t_d > t_h) & (t_d > t_v))
            prefer_h = int((t_h > t_v) | (seqseq & (t_h == t_v)))
            d_dir = not_d * (2 - prefer_h)
            # V: a gap column put into P2 after its column j, against column i of P1.
            corr = r1 * v_start[x]
            t_d = pd[x] + corr
            t_v = pv[x] + r1 * v_cont[x]
            t_h = ph[x] + corr if use3 else EXCLUDED
            cv[x] = max(t_d, max(t_h, t_v))
            not_d = 1 - int((t_d > t_h) & (t_d > t_v))
            v_dir = not_d * (2 - int(t_h > t_v))
            rowdir[x] = d_dir | (v_dir << 4)
        # H: a gap column put into P1 after its column i, against column j of P2.
        for x in range(1, bw + 1):
            use3 = first3 if x == 1 else three_row
            corr = r2[x] * h_start
            t_d = cd[x - 1] + corr
            t_v = cv[x - 1] + corr if use3 else EXCLUDED
            cand[x] = max(t_d, t_v) - h_cont * r2_sum[x]
        u = ch[0] - h_cont * r2_sum[0]  # the running maximum left of the block
        for x in range(1, bw + 1):
            u = max(u, cand[x])
            ch[x] = u + h_cont * r2_sum[x]
        for x in range(1, bw + 1):
            use3 = first3 if x == 1 else three_row
            rj = r2[x]
            corr = rj * h_start
            t_d = cd[x - 1] + corr
            t_h = ch[x - 1] + rj * h_cont
            t_v = cv[x - 1] + corr if use3 else EXCLUDED
            not_d = 1 - int((t_d > t_h) & (t_d > t_v))
            h_dir = not_d * (1 + int(t_v > t_h))
            row_dirs[x] = rowdir[x] | (h_dir << 2)
        edge[0, t + 1, i], edge[1, t + 1, i], edge[2, t + 1, i] = cd[bw], ch[bw], cv[bw]
        pd, cd = cd, pd
        ph, ch = ch, ph
        pv, cv = cv, pv
    last_d[j0:j1] = pd[1:]
    last_h[j0:j1] = ph[1:]
    last_v[j0:j1] = pv[1:]


@njit(cache=True, nogil=True)
def dp_path(
    c1: np.ndarray, n1: int, c2: np.ndarray, n2: int, m: np.ndarray, g: np.ndarray,
    seqseq: bool, path: np.ndarray, bonus: np.ndarray, bonus_tr: bool,
) -> tuple[int, int]:
    """Fill the DP of P1 against P2 and write the traceback into ``path`` (last step first).

    Returns ``(path length, best score)``. States in ``path`` are 0=D, 1=H, 2=V. ``bonus``
    (empty: none) adds to each cell's column score (msa.consistency): ``bonus[(i - 1) * w2 + j
    - 1]``, or with ``bonus_tr`` (the table is laid out for P2 against P1) ``bonus[(j - 1) * w1
    + i - 1]``. One tile of every row and column, on this thread (:func:`dp_path_wave` spreads
    a large one over the threads).
    """
    w1, w2 = c1.shape[0], c2.shape[0]
    col_bounds = np.array([1, w2 + 1], dtype=np.int64)
    cols, rows, dirs, last_d, last_h, last_v, edge = _dp_setup(c1, n1, c2, n2, m, g, col_bounds)
    _dp_tile(1, w1 + 1, 0, col_bounds, w1, g, seqseq, n2, cols, rows, dirs, last_d, last_h, last_v, edge, bonus,
             bonus_tr)
    return _traceback(dirs, w1, w2, edge[0, 1, w1], edge[1, 1, w1], edge[2, 1, w1], path)


def _int64_vector(array: types.Type) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C" and array.dtype == types.int64


@intrinsic
def _load_acquire(typingctx, array, index):
    """``array[index]`` of a contiguous int64 vector, read atomically with acquire order: what
    another thread wrote before its release store of this element is visible after, and the
    read is not hoisted out of a waiting loop."""
    if not _int64_vector(array):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load_atomic(builder.gep(data, [args[1]]), "acquire", 8)

    return types.int64(array, index), codegen


@intrinsic
def _store_release(typingctx, array, index, value):
    """``array[index] = value`` of a contiguous int64 vector, written atomically with release order."""
    if not _int64_vector(array):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        builder.store_atomic(args[2], builder.gep(data, [args[1]]), "release", 8)
        return context.get_dummy_value()

    return types.void(array, index, types.int64), codegen


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def _wavefront(
    n_blocks: int, n_strips: int, row_bounds: np.ndarray, col_bounds: np.ndarray, w1: int, g: np.ndarray,
    seqseq: bool, n2: int, cols: tuple, rows: tuple, dirs: np.ndarray, last_d: np.ndarray, last_h: np.ndarray,
    last_v: np.ndarray, edge: np.ndarray, bonus: np.ndarray, bonus_tr: bool,
) -> None:
    """The tiles of :func:`dp_path_wave`: a block of columns an iteration, each strip once the
    block on its left has finished it (``done``: the strips each block has finished, written
    with release and read with acquire order). Every array it fills is its caller's: arrays
    made in a function that holds a parallel loop and read after the loop came back as other
    memory in Numba 0.68 when that function was called from another compiled one."""
    done = np.zeros(n_blocks, dtype=np.int64)
    for t in numba.prange(n_blocks):
        for s in range(n_strips):
            if t > 0:
                while _load_acquire(done, t - 1) <= s:
                    pass
            _dp_tile(row_bounds[s], row_bounds[s + 1], t, col_bounds, w1, g, seqseq, n2, cols, rows, dirs,
                     last_d, last_h, last_v, edge, bonus, bonus_tr)
            _store_release(done, t, s + 1)


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def dp_path_wave(
    c1: np.ndarray, n1: int, c2: np.ndarray, n2: int, m: np.ndarray, g: np.ndarray,
    seqseq: bool, path: np.ndarray, bonus: np.ndarray, bonus_tr: bool, n_blocks: int, n_strips: int,
) -> tuple[int, int]:
    """:func:`dp_path` of one large merge over the threads: the columns cut into ``n_blocks``
    blocks, one thread each, and the rows into ``n_strips`` strips, which each block computes
    in order once the block on its left has finished that strip (tile (s, t) after (s - 1, t)
    and (s, t - 1): a wavefront, :func:`_wavefront`, with no wait for the whole pool between
    anti-diagonals). Every cell is computed
    as dp_path computes it, so the path and score are its own. The blocks are the iterations
    of one parallel loop; a block waits only on a lower one, which any order that runs a
    thread's iterations in turn (Numba's OpenMP and workqueue pools, or one thread) reaches
    first."""
    w1, w2 = c1.shape[0], c2.shape[0]
    n_blocks = max(1, min(n_blocks, w2))
    n_strips = max(1, min(n_strips, w1))
    col_bounds = np.empty(n_blocks + 1, dtype=np.int64)
    for t in range(n_blocks + 1):
        col_bounds[t] = 1 + t * w2 // n_blocks
    row_bounds = np.empty(n_strips + 1, dtype=np.int64)
    for s in range(n_strips + 1):
        row_bounds[s] = 1 + s * w1 // n_strips
    cols, rows, dirs, last_d, last_h, last_v, edge = _dp_setup(c1, n1, c2, n2, m, g, col_bounds)
    _wavefront(n_blocks, n_strips, row_bounds, col_bounds, w1, g, seqseq, n2, cols, rows, dirs, last_d, last_h, last_v,
               edge, bonus, bonus_tr)
    return _traceback(dirs, w1, w2, edge[0, n_blocks, w1], edge[1, n_blocks, w1], edge[2, n_blocks, w1], path)


@njit(cache=True, nogil=True)
def _traceback(
    dirs: np.ndarray, w1: int, w2: int, last_d: int, last_h: int, last_v: int, path: np.ndarray
) -> tuple[int, int]:
    """The path from the last cell's best state (FAMSA's order on ties: D, then H, then V)
    back to the origin by the directions, last step first: (path length, best score)."""
    if last_d >= last_h and last_d >= last_v:
        state, best = D_STEP, last_d
    elif last_h > last_v:
        state, best = H_STEP, last_h
    else:
        state, best = V_STEP, last_v
    stride = w2 + 1
    i, j, k = w1, w2, 0
    while i > 0 or j > 0:
        cell = dirs[i * stride + j]
        path[k] = state
        k += 1
        if state == D_STEP:
            state = cell & 3
            i -= 1
            j -= 1
        elif state == H_STEP:
            state = (cell >> 2) & 3
            j -= 1
        else:
            state = (cell >> 4) & 3
            i -= 1
    return k, best


@njit(cache=True, nogil=True)
def _residues(c: np.ndarray) -> np.ndarray:
    """The residue code of each column of a one-sequence table."""
    out = np.zeros(c.shape[0], dtype=np.int64)
    for i in range(c.shape[0]):
        for a in range(_NRES):
            if c[i, a] != 0:
                out[i] = a
    return out


@njit(cache=True, nogil=True)
def dp_seqseq(c1: np.ndarray, c2: np.ndarray, m: np.ndarray, g: np.ndarray, path: np.ndarray) -> tuple[int, int]:
    """:func:`dp_codes` of two one-sequence profile tables."""
    return dp_codes(_residues(c1), _residues(c2), m, g, path)


@njit(cache=True, nogil=True, inline="always")
def dp_codes(a: np.ndarray, b: np.ndarray, m: np.ndarray, g: np.ndarray, path: np.ndarray) -> tuple[int, int]:
    """:func:`dp_path` of two sequences of weight 1 without bonuses (``seqseq``: every count 1,
    no gap counts), its recurrence with the counts taken out: the same scores, directions and
    path. The consistency library is all such merges (~10^8 cells a family of 10^3), where
    dp_path takes ~8 ns a cell on one core of a 2-core machine, this ~2.3.

    A row's D and V read only the row before: one sweep the compiler vectorizes, writing the
    directions. H is the chain along the row, and its extension cost is the same in every
    column (one sequence: no gap counts), so with ``u[j] = H[j] - j * ext`` it is a running
    maximum, ``u[j] = max(u[j - 1], D[j - 1] + open - j * ext)``, whose candidates the first
    sweep makes: the serial part is one max and one compare a cell.

    Inlined into its callers before they are compiled (``inline="always"``): a caller loaded
    from Numba's cache otherwise calls a copy of this function that LLVM optimized twice (alone,
    then again linked into the caller's module), which ran the library 1.65x as long."""
    w1, w2 = a.shape[0], b.shape[0]
    go, ge, tgo, tge = g[0], g[1], g[2], g[3]
    s2 = np.empty((_NRES, w2 + 1), dtype=np.int64)  # s2[x, j]: residue x against column j of P2
    for j in range(1, w2 + 1):
        for x in range(_NRES):
            s2[x, j] = m[b[j - 1], x]
    stride = w2 + 1
    dirs, dp_, hp, vp, dc, hc, vc = _start(w1, np.ones(stride, dtype=np.int64), 1, tgo, tge)
    ev = np.empty(stride, dtype=np.int64)  # ev[j - 1]: H's candidate from D at column j, minus j * ext
    v_start = np.full(stride, go, dtype=np.int64)  # a gap column into P2 after its column j: open
    v_cont = np.full(stride, ge, dtype=np.int64)
    v_start[w2], v_cont[w2] = tgo, tge  # after its last column: terminal
    for i in range(1, w1 + 1):
        h_start, h_cont = (go, ge) if i < w1 else (tgo, tge)
        dc[0] = NEG_INF
        hc[0] = NEG_INF
        vc[0] = max(dp_[0], vp[0]) + (tgo if i == 1 else tge) if i < w1 else NEG_INF
        ev[0] = NEG_INF + h_start - h_cont
        base = i * stride
        row = dirs[base : base + stride]
        row[0] = _COL0
        score = s2[a[i - 1]]
        for j in range(1, w2 + 1):
            t_d = dp_[j - 1]
            t_h = hp[j - 1]
            t_v = vp[j - 1]
            d = max(t_d, max(t_h, t_v)) + score[j]
            dc[j] = d
            ev[j] = d + h_start - (j + 1) * h_cont
            not_d = 1 - int((t_d > t_h) & (t_d > t_v))
            d_dir = not_d * (2 - int(t_h >= t_v))
            t_d = dp_[j] + v_start[j]
            t_v = vp[j] + v_cont[j]
            vc[j] = max(t_d, t_v)
            row[j] = d_dir | ((1 - int(t_d > t_v)) << 5)
        u = hc[0]
        for j in range(1, w2 + 1):
            e = ev[j - 1]
            row[j] |= (1 - int(e > u)) << 2
            u = max(u, e)
            hc[j] = u + j * h_cont
        dp_, dc = dc, dp_
        hp, hc = hc, hp
        vp, vc = vc, vp
    return _traceback(dirs, w1, w2, dp_[w2], hp[w2], vp[w2], path)


@njit(cache=True, nogil=True)
def _add_column(out: np.ndarray, p: int, c: np.ndarray, i: int, shift: int, tshift: int) -> None:
    """Add column i of a child into parent column p, re-typing opens that now continue a run."""
    for k in range(N_COUNTS):
        out[p, k] += c[i, k]
    out[p, GO] -= shift
    out[p, GE] += shift
    out[p, TGO] -= tshift
    out[p, TGE] += tshift


@njit(cache=True, nogil=True)
def build_parent(
    path: np.ndarray, length: int, c1: np.ndarray, n1: int, c2: np.ndarray, n2: int,
    map1: np.ndarray, map2: np.ndarray, out: np.ndarray,
) -> None:
    """Walk the path forward: fill the column maps and the parent's typed counts (``ConstructProfile``)."""
    w1, w2 = c1.shape[0], c2.shape[0]
    i = 0
    j = 0
    prev = D_STEP
    shift1 = tshift1 = shift2 = tshift2 = 0
    l1o = l1e = l1to = l1te = 0  # gap types of the previous inserted column, per side
    l2o = l2e = l2to = l2te = 0
    for p in range(length):
        state = path[length - 1 - p]
        if state == D_STEP:
            _add_column(out, p, c1, i, shift1, tshift1)
            _add_column(out, p, c2, j, shift2, tshift2)
            shift1 = tshift1 = shift2 = tshift2 = 0
            map1[i] = p
            map2[j] = p
            i += 1
            j += 1
        elif state == H_STEP:
            if prev == H_STEP:
                if i == 0 or i == w1:
                    o, e, to, te = 0, 0, 0, n1
                else:
                    e = l1o + l1e
                    te = l1to + l1te
                    o, to = n1 - e - te, 0
            elif i == 0:
                o, e, to, te = 0, 0, n1, 0
                tshift1 = c1[0, TGO]
            else:
                o, e, to, te = _start_counts(c1, n1, i)
                if i < w1:
                    tshift1 = to
                    shift1 += c1[i, GO]
            l1o, l1e, l1to, l1te = o, e, to, te
            out[p, GO] += o
            out[p, GE] += e
            out[p, TGO] += to
            out[p, TGE] += te
            _add_column(out, p, c2, j, shift2, tshift2)
            shift2 = tshift2 = 0
            map2[j] = p
            j += 1
        else:
            if prev == V_STEP:
                if j == 0 or j == w2:
                    o, e, to, te = 0, 0, 0, n2
                else:
                    e = l2o + l2e
                    te = l2to + l2te
                    o, to = n2 - e - te, 0
            elif j == 0:
                o, e, to, te = 0, 0, n2, 0
                tshift2 = c2[0, TGO]
            else:
                o, e, to, te = _start_counts(c2, n2, j)
                if j < w2:
                    tshift2 = to
                    shift2 += c2[j, GO]
            l2o, l2e, l2to, l2te = o, e, to, te
            _add_column(out, p, c1, i, shift1, tshift1)
            shift1 = tshift1 = 0
            out[p, GO] += o
            out[p, GE] += e
            out[p, TGO] += to
            out[p, TGE] += te
            map1[i] = p
            i += 1
        prev = state


@njit(cache=True, nogil=True)
def _first_is_p1(ca: np.ndarray, na: int, cb: np.ndarray, nb: int) -> bool:
    """FAMSA's choice of which profile plays P1 (``CProfile::Align``); it decides ties."""
    if na == 1:
        return True
    if nb == 1:
        return False
    return nonzero_cells(ca) * cb.shape[0] < nonzero_cells(cb) * ca.shape[0]


@njit(cache=True, nogil=True)
def _merge_sides(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, k: int, bonus: np.ndarray, bonus_off: np.ndarray,
) -> tuple:
    """Merge ``k`` of a batch as its DP takes it: (P1's table, its sequences, P2's, its
    sequences, whether child a plays P1, whether both are single sequences, the cell bonuses
    ``bonus[bonus_off[k]:bonus_off[k + 1]]``, laid out child a's columns by child b's, or none)."""
    ca = counts[col_offsets[2 * k] : col_offsets[2 * k + 1]]
    cb = counts[col_offsets[2 * k + 1] : col_offsets[2 * k + 2]]
    na, nb = n_seqs[2 * k], n_seqs[2 * k + 1]
    seqseq = na == 1 and nb == 1
    bk = bonus[bonus_off[k] : bonus_off[k + 1]]
    if _first_is_p1(ca, na, cb, nb):
        return ca, na, cb, nb, True, seqseq, bk
    return cb, nb, ca, na, False, seqseq, bk


@njit(cache=True, nogil=True)
def _merge_path(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, m: np.ndarray, g: np.ndarray,
    k: int, path: np.ndarray, bonus: np.ndarray, bonus_off: np.ndarray,
) -> tuple[int, bool]:
    """DP of merge ``k`` of a batch into ``path`` (gap costs ``g[k]``, :func:`_merge_sides`):
    (path length, whether child a plays P1)."""
    p1, n1, p2, n2, first, seqseq, bk = _merge_sides(counts, col_offsets, n_seqs, k, bonus, bonus_off)
    if seqseq and bk.shape[0] == 0:  # two single sequences: child a plays P1
        return dp_seqseq(p1, p2, m, g[k], path)[0], first
    return dp_path(p1, n1, p2, n2, m, g[k], seqseq, path, bk, not first)[0], first


@njit(cache=True, nogil=True)
def _merge_parent(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, k: int,
    path: np.ndarray, length: int, a_first: bool, maps: np.ndarray, out: np.ndarray,
) -> None:
    """Column maps and parent counts of merge ``k`` from its traceback."""
    sa, sb, se = col_offsets[2 * k], col_offsets[2 * k + 1], col_offsets[2 * k + 2]
    na, nb = n_seqs[2 * k], n_seqs[2 * k + 1]
    if a_first:
        build_parent(path, length, counts[sa:sb], na, counts[sb:se], nb, maps[sa:sb], maps[sb:se], out)
    else:
        build_parent(path, length, counts[sb:se], nb, counts[sa:sb], na, maps[sb:se], maps[sa:sb], out)


@njit(cache=True, nogil=True)
def _path_offsets(col_offsets: np.ndarray, n_merges: int) -> np.ndarray:
    """Room for each merge's path: at most its two input widths."""
    path_off = np.zeros(n_merges + 1, dtype=np.int64)
    for k in range(n_merges):
        path_off[k + 1] = path_off[k] + col_offsets[2 * k + 2] - col_offsets[2 * k]
    return path_off


@njit(cache=True, nogil=True)
def _parent_offsets(lengths: np.ndarray) -> np.ndarray:
    parent_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    for k in range(len(lengths)):
        parent_off[k + 1] = parent_off[k] + lengths[k]
    return parent_off


@njit(cache=True, nogil=True, parallel=True)
def _align_batch(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, m: np.ndarray, g: np.ndarray,
    bonus: np.ndarray, bonus_off: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every merge of a batch, one merge per thread: returns (maps, parent counts, parent column
    offsets). ``bonus``/``bonus_off``: each merge's cell bonuses (:func:`_merge_path`)."""
    n_merges = len(n_seqs) // 2
    path_off = _path_offsets(col_offsets, n_merges)
    paths = np.empty(path_off[n_merges], dtype=np.uint8)
    lengths = np.zeros(n_merges, dtype=np.int64)
    a_first = np.zeros(n_merges, dtype=np.bool_)
    for k in numba.prange(n_merges):
        lengths[k], a_first[k] = _merge_path(
            counts, col_offsets, n_seqs, m, g, k, paths[path_off[k] : path_off[k + 1]], bonus, bonus_off
        )
    parent_off = _parent_offsets(lengths)
    parents = np.zeros((parent_off[n_merges], N_COUNTS), dtype=np.int32)
    maps = np.empty(col_offsets[2 * n_merges], dtype=np.int64)
    for k in numba.prange(n_merges):
        _merge_parent(
            counts, col_offsets, n_seqs, k, paths[path_off[k] : path_off[k + 1]], lengths[k], a_first[k],
            maps, parents[parent_off[k] : parent_off[k + 1]],
        )
    return maps, parents, parent_off


@njit(cache=True, nogil=True)
def _align_serial(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, m: np.ndarray, g: np.ndarray,
    bonus: np.ndarray, bonus_off: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_align_batch` on the calling thread, merge after merge.

    Deep trees are mostly levels of one or two small merges, where waking the
    thread pool costs more than the merges (2.7x on the progressive stage of
    PF00079.1000 with the cores shared). A function of its own, not
    ``_align_batch`` compiled twice: Numba's cache keys on the Python function
    and the argument types only, so a serial and a parallel build of one
    function share one cache entry and both would run whichever was compiled first.
    """
    n_merges = len(n_seqs) // 2
    path_off = _path_offsets(col_offsets, n_merges)
    paths = np.empty(path_off[n_merges], dtype=np.uint8)
    lengths = np.zeros(n_merges, dtype=np.int64)
    a_first = np.zeros(n_merges, dtype=np.bool_)
    for k in range(n_merges):
        lengths[k], a_first[k] = _merge_path(
            counts, col_offsets, n_seqs, m, g, k, paths[path_off[k] : path_off[k + 1]], bonus, bonus_off
        )
    parent_off = _parent_offsets(lengths)
    parents = np.zeros((parent_off[n_merges], N_COUNTS), dtype=np.int32)
    maps = np.empty(col_offsets[2 * n_merges], dtype=np.int64)
    for k in range(n_merges):
        _merge_parent(
            counts, col_offsets, n_seqs, k, paths[path_off[k] : path_off[k + 1]], lengths[k], a_first[k],
            maps, parents[parent_off[k] : parent_off[k + 1]],
        )
    return maps, parents, parent_off


#: A level of one merge of at least this many DP cells spreads the merge over the threads
#: (:func:`dp_path_wave`): ~1 ms of DP on one core.
WAVE_CELLS = 1 << 18
#: The rows of a wavefront tile: a block hands on each strip of this many rows (a few
#: microseconds of DP) to the block on its right.
WAVE_ROWS = 16


@njit(cache=True, nogil=True)
def wave_tiles(w1: int, w2: int, threads: int) -> tuple[int, int]:
    """(blocks of columns, strips of rows) for :func:`dp_path_wave` on ``threads``: a block per
    thread, of at least 32 columns, and strips of about WAVE_ROWS rows."""
    return max(1, min(threads, w2 // 32)), max(1, w1 // WAVE_ROWS)


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def _align_wave(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, m: np.ndarray, g: np.ndarray,
    bonus: np.ndarray, bonus_off: np.ndarray, threads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_align_serial` of a batch of one large merge, its DP spread over ``threads`` (the
    calling thread's Numba threads; :func:`dp_path_wave`); the same path, so the same parent."""
    path = np.empty(col_offsets[2], dtype=np.uint8)
    p1, n1, p2, n2, first, seqseq, bk = _merge_sides(counts, col_offsets, n_seqs, 0, bonus, bonus_off)
    if seqseq and bk.shape[0] == 0:
        length = dp_seqseq(p1, p2, m, g[0], path)[0]
    else:
        blocks, strips = wave_tiles(p1.shape[0], p2.shape[0], threads)
        length = dp_path_wave(p1, n1, p2, n2, m, g[0], seqseq, path, bk, not first, blocks, strips)[0]
    parents = np.zeros((length, N_COUNTS), dtype=np.int32)
    maps = np.empty(col_offsets[2], dtype=np.int64)
    _merge_parent(counts, col_offsets, n_seqs, 0, path, length, first, maps, parents)
    parent_off = np.zeros(2, dtype=np.int64)
    parent_off[1] = length
    return maps, parents, parent_off


#: Batches of fewer DP cells than this (and batches of one merge) run on the calling thread:
#: a merge costs ~5-10 ns a cell on one core (a 2-core machine), and waking
#: the pool ~40 us.
SERIAL_CELLS = 1 << 14


def align_batch(
    counts: np.ndarray, col_offsets: np.ndarray, n_seqs: np.ndarray, m: np.ndarray, g: np.ndarray,
    bonus: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every merge of a batch, threaded only when there is enough work to share out.

    ``g``: one gap vector for every merge, or one row per merge (``(n_merges, 4)``); ``bonus``:
    the merges' cell bonuses (AlignBatch.bonus)."""
    w = np.diff(col_offsets)
    serial = len(n_seqs) <= 2 or int(np.dot(w[0::2], w[1::2])) < SERIAL_CELLS
    k = len(n_seqs) // 2
    values, offsets = (NO_BONUS, np.zeros(k + 1, dtype=np.int64)) if bonus is None else bonus
    return (_align_serial if serial else _align_batch)(counts, col_offsets, n_seqs, m, merge_gap_rows(g, k), values,
                                                       offsets)
