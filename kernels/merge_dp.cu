// FAMSA 2's profile-profile Gotoh DP on the GPU, integer-exact with msa/backends/cpu/align.py:
// the column terms, the DP fills and the traceback of a level's merges (shared code: merge.cuh).
//
// Kernels per piece of a level batch (profiles stay on the device between levels):
//  column_setup  one thread per input column: the per-column terms dp_path precomputes
//                (score table S2, residue count, gap cost, typed gap start/continue
//                costs, re-typing correction, nonzero residue list, FAMSA's nonzero cells).
//  merge_info    one block per merge: which profile plays P1 (FAMSA's nonzero-cell rule),
//                so the host never waits for it.
//  cell_scores   dp_pipe pieces only, after merge_info: every cell's substitution score (the
//                nonzero-residue sum of dp_path) into 8 bytes a cell, on all SMs (blocks of a
//                merge stride over its tiles of 128 columns of P2 x 32 rows of P1), so the
//                wavefront reads one int64 a cell instead of walking up to 24 residues of P1
//                on its critical path.
//  dp_fill<K>    one block per merge. Thread t owns K consecutive columns of P2 in a
//                chunk of K * blockDim.x columns and walks the rows of P1; thread t is one
//                row behind thread t-1 (anti-diagonal wavefront, one barrier per step).
//                Within a row the thread sweeps its K columns left to right in registers,
//                so a step does K cells and a chunk takes rows + threads - 1 steps (only
//                K = 1 is instantiated: larger K measured slower, see docs/progressive.md).
//                The left neighbour's (D, H, V) of this row comes through shared memory
//                (double-buffered by step parity); the next row's terms (and its first
//                residue code, the only one of a sequence) are loaded a step ahead; the
//                chunk's last column is kept per row in global memory for the next chunk.
//                Row 0 and column 0 (dp_path's borders) are computed by each chunk itself.
//                Direction bytes (d | h << 2 | v << 4, as the CPU) go to global memory
//                column-major, eight rows per 64-bit store.
//  dp_pipe<K>    the same chunks for levels with fewer merges than SMs, on concurrent blocks:
//                one block per (merge, chunk) ticket, chunk b starting row i as soon as chunk
//                b - 1 has published its last column of row i (per-boundary row buffer and
//                progress counter, release/acquire), so a merge takes about
//                W1 + W2 steps instead of chunks * (W1 + threads). Its cells' substitution
//                scores come from cell_scores (loaded two steps ahead), not the residue loop.
//  traceback     one warp per merge walks the directions (the CPU's traceback) through a
//                64-column x 64-row tile of direction bytes staged in shared memory, one
//                L2 round trip per tile instead of one per step.
// (dp_rows, the fill for batches of many sequence-against-profile merges, is in sequence_profile.cu;
// the parents and maps of the paths come from build_parent.cu.)

#include "merge.cuh"

// Block and tile sizes, passed with -D from their one definition in msa/backends/cuda/align.py.
#if !defined(SCAN_THREADS) || !defined(SCAN_K) || !defined(MI_THREADS) || !defined(CS_THREADS) || \
    !defined(CS_ROWS) || !defined(PUBLISH_ROWS) || !defined(TB_WARPS)
#error SCAN_THREADS, SCAN_K, MI_THREADS, CS_THREADS, CS_ROWS, PUBLISH_ROWS and TB_WARPS must be passed with -D
#endif

// One thread per column of the piece: the column terms of dp_path (for P2 and P1 roles alike),
// under the gap costs of the column's merge (profile lo belongs to merge lo / 2).
extern "C" __global__ void column_setup(
    const int* __restrict__ counts, long long n_cols, const long long* __restrict__ col_offsets,
    long long n_prof, const long long* __restrict__ n_seqs, const long long* __restrict__ m,
    const long long* __restrict__ g, long long* gapc, long long* res, long long* start, long long* cont,
    long long* retype, long long* s2, int* nnz, unsigned char* codes, int* mult, int* nzc) {
    const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= n_cols) return;
    const long long lo = segment_of(col_offsets, n_prof, c);  // the column's profile
    const long long base = col_offsets[lo], w = col_offsets[lo + 1] - base, n = n_seqs[lo];
    const long long i = c - base + 1;  // 1-based column index, as dp_path's i / j
    const long long* gq = g + 4 * (lo >> 1);
    const long long go = gq[0], ge = gq[1], tgo = gq[2], tge = gq[3];
    const int* col = counts + c * NCNT;
    const long long gap_cost = col[C_GO] * go + col[C_GE] * ge + col[C_TGO] * tgo + col[C_TGE] * tge;
    gapc[c] = gap_cost;
    retype[c] = col[C_GO] * (ge - go) + col[C_TGO] * (tge - tgo);
    long long r = 0;
    int k = 0;
    long long s[NRES];
    for (int a = 0; a < NRES; ++a) s[a] = gap_cost;
    for (int b = 0; b < NRES; ++b) {
        const long long cb = col[b];
        if (cb != 0) {
            r += cb;
            codes[c * NRES + k] = (unsigned char)b;
            mult[c * NRES + k] = (int)cb;
            ++k;
            for (int a = 0; a < NRES; ++a) s[a] += cb * m[b * NRES + a];
        }
    }
    for (int a = 0; a < NRES; ++a) s2[c * NRES + a] = s[a];
    res[c] = r;
    nnz[c] = k;
    long long gaps = 0;  // nonzero_cells: nonzero counters plus FAMSA's total-gap row
    int cells = 0;
    for (int b = 0; b < NCNT; ++b) {
        cells += col[b] != 0;
        if (b >= NRES) gaps += col[b];
    }
    nzc[c] = cells + (gaps != 0);
    if (i >= w) {  // _start_counts / _cont_counts past the last column
        const int* last = counts + (base + w - 1) * NCNT;
        const long long te = last[C_TGO] + last[C_TGE];
        start[c] = (n - te) * tgo + te * tge;
        cont[c] = n * tge;
    } else {
        const int* nxt = col + NCNT;
        const long long to = nxt[C_TGO];
        const long long te = col[C_TGO] + col[C_TGE];
        const long long e = col[C_GO] + col[C_GE];
        start[c] = (n - e - to - te) * go + e * ge + to * tgo + te * tge;
        const long long te2 = nxt[C_TGO] + col[C_TGO] + col[C_TGE];
        cont[c] = (n - te2) * ge + te2 * tge;
    }
}

// One block (MI_THREADS) per merge: info fields I_OFF1..I_SEQSEQ. P1 is FAMSA's choice
// (cpu/align._first_is_p1): a sequence, else the profile with fewer nonzero cells per column.
// Side s of merge q (s = 2q, 2q + 1) is the columns lo[s] .. hi[s] - 1: a level's sides lie end
// to end (lo = col_off, hi = col_off + 1); msa add's merges share one profile's columns.
extern "C" __global__ void __launch_bounds__(MI_THREADS) merge_info(
    const long long* __restrict__ lo, const long long* __restrict__ hi, const long long* __restrict__ n_seqs,
    const int* __restrict__ nzc, long long* info) {
    __shared__ long long part[2][MI_THREADS / 32];
    const long long q = blockIdx.x;
    const int t = threadIdx.x;
    const long long a0 = lo[2 * q], a1 = hi[2 * q], b0 = lo[2 * q + 1], b1 = hi[2 * q + 1];
    const long long na = n_seqs[2 * q], nb = n_seqs[2 * q + 1];
    long long za = 0, zb = 0;
    if (na != 1 && nb != 1) {  // the same branch for the whole block
        for (long long c = a0 + t; c < a1; c += MI_THREADS) za += nzc[c];
        for (long long c = b0 + t; c < b1; c += MI_THREADS) zb += nzc[c];
        for (int d = 16; d > 0; d >>= 1) {
            za += __shfl_down_sync(0xffffffffu, za, d);
            zb += __shfl_down_sync(0xffffffffu, zb, d);
        }
        if ((t & 31) == 0) { part[0][t >> 5] = za; part[1][t >> 5] = zb; }
        __syncthreads();
        za = zb = 0;
        for (int w = 0; w < MI_THREADS / 32; ++w) { za += part[0][w]; zb += part[1][w]; }
    }
    if (t != 0) return;
    const long long wa = a1 - a0, wb = b1 - b0;
    const bool first = na == 1 || (nb != 1 && za * wb < zb * wa);
    long long* in = info + q * N_INFO;
    in[I_OFF1] = first ? a0 : b0;
    in[I_W1] = first ? wa : wb;
    in[I_N1] = first ? na : nb;
    in[I_OFF2] = first ? b0 : a0;
    in[I_W2] = first ? wb : wa;
    in[I_N2] = first ? nb : na;
    in[I_SEQSEQ] = na == 1 && nb == 1;
}

// One block (CS_THREADS) per tile of CS_THREADS columns x CS_ROWS rows of merge blockIdx.y
// (blocks stride over the merge's tiles, a band of rows at a time). Thread t owns one column j
// of P2: it stages S2[j] in shared memory (slots only it reads, so no barrier) and writes
// dp_path's substitution score of cell (i, j) for each row i of the band, coalesced along j:
// r2[j] * gap1[i] + the sum over P1's nonzero residues z of mult[i, z] * S2[j][code[i, z]],
// at I_SC + (i - 1) * w2 + j - 1, or for dp_scan (frame) where W1 > W2 at I_SC + (j - 1) * w1 + i - 1
// (a thread's band then fills CS_ROWS consecutive entries). Integer sums: the same values as
// dp_chunk's residue loop. With bonus (cell bonuses, msa.consistency; null: none), merge q adds
// bonus[boff[q] + ...] of its table of its first side's columns by its second's (boff[q + 1] ==
// boff[q]: none), as dp_path adds it: the first side is P1 when its columns come first (a
// level's sides lie end to end; msa add's merges, which share a profile, have no bonuses).
extern "C" __global__ void __launch_bounds__(CS_THREADS) cell_scores(
    const long long* __restrict__ info, const long long* __restrict__ gapc, const long long* __restrict__ res,
    const long long* __restrict__ s2, const int* __restrict__ nnz, const unsigned char* __restrict__ codes,
    const int* __restrict__ mult, long long* scores, long long frame, const long long* __restrict__ bonus,
    const long long* __restrict__ boff) {
    __shared__ long long s2s[NRES * CS_THREADS];
    const int t = threadIdx.x;
    const long long* in = info + blockIdx.y * (long long)N_INFO;
    const long long off1 = in[I_OFF1], w1 = in[I_W1], off2 = in[I_OFF2], w2 = in[I_W2];
    const long long tx = (w2 + CS_THREADS - 1) / CS_THREADS, tiles = tx * ((w1 + CS_ROWS - 1) / CS_ROWS);
    long long* out = scores + in[I_SC];
    const bool tr = frame != 0 && w1 > w2;  // dp_scan's transposed frame: row j of P2, column i of P1
    const long long* bq = nullptr;  // this merge's bonus table, if any
    if (bonus != nullptr && boff[blockIdx.y + 1] > boff[blockIdx.y]) bq = bonus + boff[blockIdx.y];
    const bool a_first = in[I_OFF1] < in[I_OFF2];
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const long long j = (tile % tx) * CS_THREADS + t + 1;
        if (j > w2) continue;
        const long long cj = off2 + j - 1, r2 = res[cj];
        for (int a = 0; a < NRES; ++a) s2s[a * CS_THREADS + t] = s2[cj * NRES + a];
        const long long i0 = (tile / tx) * CS_ROWS, i1 = i0 + CS_ROWS < w1 ? i0 + CS_ROWS : w1;
        for (long long i = i0 + 1; i <= i1; ++i) {
            const long long ci = off1 + i - 1;
            long long sc = r2 * gapc[ci];
            const int nz = nnz[ci];
            for (int z = 0; z < nz; ++z) {
                const long long mz = mult[ci * NRES + z];
                sc += mz * s2s[codes[ci * NRES + z] * CS_THREADS + t];
            }
            if (bq != nullptr) sc += a_first ? bq[(i - 1) * w2 + j - 1] : bq[(j - 1) * w1 + i - 1];
            out[tr ? (j - 1) * w1 + i - 1 : (i - 1) * w2 + j - 1] = sc;
        }
    }
}

// Rows a dp_pipe chunk publishes at a time (and its last row): one release store per
// PUBLISH_ROWS rows, and the chunk to its right starts about that many rows later.

// GPU-scope acquire load / release store: the progress counters between dp_pipe blocks.
__device__ __forceinline__ long long load_acquire(const long long* p) {
    long long v;
    asm volatile("ld.acquire.gpu.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_release(long long* p, long long v) {
    asm volatile("st.release.gpu.b64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

// Inclusive scan of v over the block (blockDim.x a multiple of 32); total gets the block's sum.
// scratch: blockDim.x / 32 int64 of shared memory, free again on return.
__device__ __forceinline__ long long block_scan(long long v, long long* scratch, long long& total) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 1; d < 32; d <<= 1) {
        const long long y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += y;
    }
    if (lane == 31) scratch[wid] = v;
    __syncthreads();
    long long before = 0;
    total = 0;
    for (int w = 0; w < nw; ++w) {
        const long long s = scratch[w];
        if (w < wid) before += s;
        total += s;
    }
    __syncthreads();
    return before + v;
}

// One chunk of merge q (record in): columns c0 + 1 .. c0 + K * blockDim.x of P2 (those <= w2)
// against every row of P1, the wavefront of dp_path. Thread t owns K consecutive columns and
// is one row behind thread t - 1 (one barrier per step); within a row it sweeps its columns in
// registers. Thread t's left neighbour of this row comes through shared memory (double-buffered
// by step parity); thread 0's comes from inD/inH/inV[i] (the column before the chunk), or for
// c0 == 0 from the column-0 border chain, computed as it goes. The chunk's last column is
// written to outD/outH/outV[i] unless it is column w2. PIPE: in* are written by the block of the
// chunk to the left, which publishes the rows it has written in *ready; thread 0 acquire-loads
// it before reading a row past the last value it saw, and loads a row a step ahead once that
// row is known written. This chunk publishes its own rows in *done every PUBLISH_ROWS rows,
// and reads its cells' substitution scores from cell_scores' output (scores + in[I_SC]) instead
// of summing over P1's residues (dp_fill: scores is not used, S2 is staged in shared memory).
// Row 0 (dp_path's H prefix sum) comes from block scans, so a chunk needs no other chunk for it.
// Dynamic shared memory: 6 * blockDim.x int64 (exchange; the scans' scratch before the
// wavefront starts), after 24 * K * blockDim.x int64 (S2 of the chunk's columns) unless PIPE.
template <int K, bool PIPE>
__device__ __forceinline__ void dp_chunk(
    DP_COLUMN_PARAMS, const long long* __restrict__ scores, const long long* __restrict__ in, long long q,
    long long c0, const long long* inD, const long long* inH, const long long* inV,
    long long* outD, long long* outH, long long* outV, const long long* ready, long long* done,
    unsigned long long* dirs, long long* final3) {
    extern __shared__ long long sh[];
    const int T = blockDim.x, t = threadIdx.x;
    long long* s2s = sh;
    long long* xD = sh + (PIPE ? 0 : NRES * K * T);
    long long* xH = xD + 2 * T;
    long long* xV = xH + 2 * T;
    const long long off1 = in[I_OFF1], w1 = in[I_W1], n1 = in[I_N1];
    const long long off2 = in[I_OFF2], w2 = in[I_W2], n2 = in[I_N2];
    const bool seqseq = in[I_SEQSEQ] != 0, three = !seqseq;
    const long long tgo = g[4 * q + 2], tge = g[4 * q + 3];
    unsigned long long* dir = dirs + in[I_DIR] / 8;
    const long long R = (w1 + 7) & ~7LL;
    const long long span = (long long)T * K;
    const long long jb = c0 + (long long)t * K;  // the thread's columns are jb + 1 .. jb + nk
    const long long acols = w2 - c0 < span ? w2 - c0 : span;
    const int active = (int)((acols + K - 1) / K);
    const bool on = t < active;
    const int nk = on ? (int)(acols - (long long)t * K < K ? acols - (long long)t * K : K) : 0;

    // Row 0 H of column j: the sum of n1 * r2[j'] * (tgo if j' == 1 else tge) over j' <= j.
    long long before = 0, own = 0, term[K];
    for (long long j = t + 1; j <= c0; j += T) before += n1 * res[off2 + j - 1] * (j == 1 ? tgo : tge);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        term[k] = k < nk ? n1 * res[off2 + jb + k] * (jb + k == 0 ? tgo : tge) : 0;
        own += term[k];
    }
    long long h, unused;
    block_scan(before, xD, h);             // row 0 H of column c0
    h += block_scan(own, xD, unused) - own;  // of column jb
    long long gD = NEG_INF, gH = NEG_INF, gV = NEG_INF;  // left of the first column, previous row
    if (on) {
        if (jb == 0) gD = 0; else gH = h;
    }

    long long r2[K], vst[K], vct[K], rt2[K], uD[K], uH[K], uV[K];  // uX: own column, previous row
    unsigned long long pack[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        r2[k] = 0; vst[k] = 0; vct[k] = 0; rt2[k] = 0;
        uD[k] = NEG_INF; uH[k] = NEG_INF; uV[k] = NEG_INF;
        pack[k] = 0;
        if (k < nk) {
            const long long j = jb + k + 1, cj = off2 + j - 1;
            if constexpr (!PIPE)
                for (int a = 0; a < NRES; ++a) s2s[(a * K + k) * T + t] = s2[cj * NRES + a];
            r2[k] = res[cj];
            vst[k] = start[cj];
            vct[k] = cont[cj];
            rt2[k] = retype[cj];
            h += term[k];
            uH[k] = j == w2 ? NEG_INF : h;
        }
    }
    __syncthreads();
    // Row terms of the thread's next row, loaded a step ahead to hide their latency. PIPE: the
    // cell scores of its columns in its next two rows (n_sc, nn_sc), loaded two steps ahead,
    // since they may come from DRAM and a step can be shorter than that latency.
    long long n_r1 = 0, n_gap1 = 0, n_hst = 0, n_hct = 0, n_rt1 = 0, n_m0 = 0;
    int n_nz = 0, n_c0 = 0;
    const long long* cs = PIPE ? scores + in[I_SC] + jb : nullptr;  // row i: cs + (i - 1) * w2
    long long n_sc[K], nn_sc[K];
    if (on) {
        const long long ci = off1;
        n_r1 = res[ci];
        if constexpr (!PIPE) n_gap1 = gapc[ci];
        n_hst = start[ci]; n_hct = cont[ci]; n_rt1 = retype[ci];
        if constexpr (PIPE) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                n_sc[k] = k < nk ? cs[k] : 0;
                nn_sc[k] = k < nk && w1 > 1 ? cs[w2 + k] : 0;
            }
        } else {
            n_nz = nnz[ci];
            if (n_nz > 0) { n_m0 = mult[ci * NRES]; n_c0 = codes[ci * NRES]; }
        }
    }
    // Thread 0, c0 > 0: the left column's next row, loaded a step ahead once it is known written
    // (in one block: all of it, by the previous chunk; in a pipeline: rows <= seen).
    long long seen = PIPE ? 0 : w1, pD = NEG_INF, pH = NEG_INF, pV = NEG_INF;
    bool ahead = false;
    const long long steps = w1 + active - 1;
    for (long long s = 0; s < steps; ++s) {
        const long long i = s - t + 1;
        const int cur = (int)(s & 1), prv = cur ^ 1;
        if (on && i >= 1 && i <= w1) {
            const long long ci = off1 + i - 1;
            const long long r1 = n_r1, gap1 = n_gap1, hst = n_hst, hct = n_hct, rt1 = n_rt1, m0 = n_m0;
            const int nz = n_nz, code0 = n_c0;
            long long eD, eH, eV;  // left of the first column, this row
            if (t > 0) {
                eD = xD[prv * T + t - 1]; eH = xH[prv * T + t - 1]; eV = xV[prv * T + t - 1];
            } else if (c0 == 0) {  // column 0 (gD, gV: row i - 1's), as dp_path's border
                eD = NEG_INF;
                eH = NEG_INF;
                eV = i < w1 ? mx(gD, gV) + n2 * r1 * (i == 1 ? tgo : tge) : NEG_INF;
            } else {
                if (!ahead) {
                    if (PIPE && seen < i) {
                        do seen = load_acquire(ready); while (seen < i);
                    }
                    pD = PIPE ? __ldcg(inD + i) : inD[i];
                    pH = PIPE ? __ldcg(inH + i) : inH[i];
                    pV = PIPE ? __ldcg(inV + i) : inV[i];
                }
                eD = pD; eH = pH; eV = pV;
                ahead = i < w1 && seen > i;
                if (ahead) {
                    pD = PIPE ? __ldcg(inD + i + 1) : inD[i + 1];
                    pH = PIPE ? __ldcg(inH + i + 1) : inH[i + 1];
                    pV = PIPE ? __ldcg(inV + i + 1) : inV[i + 1];
                }
            }
            long long sc[K];
            if constexpr (PIPE) {
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    sc[k] = n_sc[k];
                    n_sc[k] = nn_sc[k];
                    if (k < nk && i + 2 <= w1) nn_sc[k] = cs[(i + 1) * w2 + k];
                }
                if (i < w1) {
                    n_r1 = res[ci + 1]; n_hst = start[ci + 1]; n_hct = cont[ci + 1]; n_rt1 = retype[ci + 1];
                }
            } else {
                if (i < w1) {
                    n_r1 = res[ci + 1]; n_gap1 = gapc[ci + 1]; n_hst = start[ci + 1]; n_hct = cont[ci + 1];
                    n_rt1 = retype[ci + 1]; n_nz = nnz[ci + 1];
                    n_m0 = 0; n_c0 = 0;
                    if (n_nz > 0) { n_m0 = mult[(ci + 1) * NRES]; n_c0 = codes[(ci + 1) * NRES]; }
                }
#pragma unroll
                for (int k = 0; k < K; ++k) sc[k] = r2[k] * gap1 + m0 * s2s[(code0 * K + k) * T + t];
                for (int z = 1; z < nz; ++z) {
                    const long long mz = mult[ci * NRES + z];
                    const int cz = codes[ci * NRES + z];
#pragma unroll
                    for (int k = 0; k < K; ++k) sc[k] += mz * s2s[(cz * K + k) * T + t];
                }
            }
            long long dD = gD, dH = gH, dV = gV;  // diagonal of column k
            long long lD = eD, lH = eH, lV = eV;  // left of column k, this row
            const int sh8 = (int)((i - 1) & 7);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (k < nk) {
                    const long long j = jb + k + 1;
                    // Branch-free, as dp_path: each state takes the maximum of its
                    // candidates; the direction encodes FAMSA's tie order (D only when
                    // strictly best). A transition not allowed here gets EXCLUDED.
                    const bool use3 = three && i > 1 && j > 1;
                    // D: column i of P1 against column j of P2.
                    long long td = dD, th = dH + r2[k] * rt1, tv = dV + r1 * rt2[k];
                    const long long dc = mx(td, mx(th, tv)) + sc[k];
                    const int dd = (td > th && td > tv) ? S_D : ((th > tv || (seqseq && th == tv)) ? S_H : S_V);
                    // H: a gap column put into P1 after its column i, against column j of P2.
                    long long corr = r2[k] * hst;
                    td = lD + corr;
                    th = lH + r2[k] * hct;
                    tv = use3 ? lV + corr : EXCLUDED;
                    const long long hc = mx(td, mx(th, tv));
                    const int hd = (td > th && td > tv) ? S_D : (tv > th ? S_V : S_H);
                    // V: a gap column put into P2 after its column j, against column i of P1.
                    corr = r1 * vst[k];
                    td = uD[k] + corr;
                    tv = uV[k] + r1 * vct[k];
                    th = use3 ? uH[k] + corr : EXCLUDED;
                    const long long vc = mx(td, mx(th, tv));
                    const int vd = (td > th && td > tv) ? S_D : (th > tv ? S_H : S_V);

                    pack[k] |= (unsigned long long)(dd | (hd << 2) | (vd << 4)) << (8 * sh8);
                    if (sh8 == 7 || i == w1) {
                        dir[((j - 1) * R + (i - 1 - sh8)) / 8] = pack[k];
                        pack[k] = 0;
                    }
                    if (j == w2 && i == w1) {
                        final3[3 * q] = dc;
                        final3[3 * q + 1] = hc;
                        final3[3 * q + 2] = vc;
                    }
                    dD = uD[k]; dH = uH[k]; dV = uV[k];
                    uD[k] = dc; uH[k] = hc; uV[k] = vc;
                    lD = dc; lH = hc; lV = vc;
                }
            }
            xD[cur * T + t] = lD; xH[cur * T + t] = lH; xV[cur * T + t] = lV;
            if (t == active - 1 && jb + nk < w2) {
                outD[i] = lD; outH[i] = lH; outV[i] = lV;
                if (PIPE && (i % PUBLISH_ROWS == 0 || i == w1)) store_release(done, i);
            }
            gD = eD; gH = eH; gV = eV;
        }
        __syncthreads();
    }
}

// The block's next (merge, chunk) ticket k of a pipelined fill (sync[0] counts them) and its
// merge q (I_TICK <= k < the next merge's I_TICK); false once every ticket is drawn.
__device__ __forceinline__ bool draw_ticket(const long long* __restrict__ info, long long* sync, long long n_merges,
                                            long long n_tickets, long long& k, long long& q) {
    __shared__ long long job[2];
    if (threadIdx.x == 0) {
        const long long t = (long long)atomicAdd((unsigned long long*)sync, 1ULL);
        job[0] = t;
        job[1] = segment_of(info + I_TICK, n_merges, t, N_INFO);
    }
    __syncthreads();
    k = job[0];
    q = job[1];
    __syncthreads();  // every thread has read job before the next draw
    return k < n_tickets;
}

// dp_fill<K>: one block per merge, its chunks one after another; a chunk's last column goes to
// the merge's one boundary buffer, which thread 0 of the next chunk reads row by row ahead of
// where the chunk's last thread rewrites it.
template <int K>
__device__ __forceinline__ void dp_fill_k(DP_FILL_PARAMS) {
    const long long q = blockIdx.x;
    const long long* in = info + q * N_INFO;
    const long long w2 = in[I_W2], span = (long long)blockDim.x * K;
    long long* bD = rowD + in[I_ROWS];
    long long* bH = rowH + in[I_ROWS];
    long long* bV = rowV + in[I_ROWS];
    for (long long c0 = 0; c0 < w2; c0 += span)
        dp_chunk<K, false>(DP_COLUMN_ARGS, nullptr, in, q, c0, bD, bH, bV, bD, bH, bV, nullptr, nullptr, dirs, final3);
}

// dp_pipe<K>: the chunks of a merge on concurrent blocks, chained row by row. A block draws
// ticket k (sync[0]) and does the k-th (merge, chunk) in merge-major, chunk-ascending order
// (I_TICK: a merge's first ticket), then draws again. Chunk b reads boundary b - 1 (the w1 + 1
// entries at I_ROWS + (b - 1) * (w1 + 1)) as the block of ticket k - 1 writes it and publishes
// its rows in sync[k]; chunk b writes boundary b and publishes in sync[1 + k]. A block only ever
// waits on a smaller ticket, drawn earlier by a block that is running it, so it cannot deadlock
// whatever the grid size and residency. Tickets are counted for the wider profile of a merge;
// those past P2's last chunk are skipped. scores: cell_scores' output for the merges.
template <int K>
__device__ __forceinline__ void dp_pipe_k(DP_FILL_PARAMS, const long long* __restrict__ scores, long long* sync,
                                          long long n_merges, long long n_tickets) {
    const long long span = (long long)blockDim.x * K;
    for (;;) {
        long long k, q;
        if (!draw_ticket(info, sync, n_merges, n_tickets, k, q)) return;
        const long long* in = info + q * N_INFO;
        const long long b = k - in[I_TICK], stride = in[I_W1] + 1;
        if (b * span >= in[I_W2]) continue;
        const long long left = b > 0 ? in[I_ROWS] + (b - 1) * stride : 0, right = in[I_ROWS] + b * stride;
        dp_chunk<K, true>(DP_COLUMN_ARGS, scores, in, q, b * span, rowD + left, rowH + left, rowV + left,
                          rowD + right, rowH + right, rowV + right, sync + k, sync + 1 + k, dirs, final3);
    }
}

// K = 1 only: K = 8 (128 threads) measured 2x slower on the root case and 12 % slower on a
// caterpillar merge than K = 1 with 512 threads (docs/progressive.md), so it is not built.
extern "C" __global__ void __launch_bounds__(512) dp_fill1(DP_FILL_PARAMS) { dp_fill_k<1>(DP_FILL_ARGS); }
extern "C" __global__ void __launch_bounds__(512) dp_pipe1(DP_FILL_PARAMS, const long long* __restrict__ scores,
                                                           long long* sync, long long n_merges, long long n_tickets) {
    dp_pipe_k<1>(DP_FILL_ARGS, scores, sync, n_merges, n_tickets);
}

// dp_scan: the chunks of few merges on concurrent blocks, as dp_pipe, but a chunk takes one whole
// row of its SCAN_THREADS * SCAN_K columns per step instead of one wavefront cell per thread:
// a merge takes about min(W1, W2) + chunks * PUBLISH_ROWS row steps, not W1 + W2 wavefront steps
// (at 10^5 sequences the one-merge levels near the root are ~350 x ~10^4).
// Frame: the narrower profile's columns are the rows r (walked in order), the wider's the
// columns c (spread over the block): P1 x P2 as dp_path when W1 <= W2, else transposed (tr).
// dp_path is symmetric under the transpose (D stays D, H and V trade places, and so do the
// roles of the column terms), except the tie of D's H and V candidates (H for seqseq, else V),
// which tieH carries; directions are written back in P1 x P2 terms and layout.
// Per row r, thread t (columns cb + 1 .. cb + SCAN_K, cb = c0 + t * SCAN_K):
//  1. D and V of its columns, elementwise from row r - 1 (the column left of its first one
//     comes from thread t - 1, or for t = 0 from the chunk to the left / dp_path's border);
//  2. H(r, c) = max(b_c, H(r, c - 1) + a_c), a_c the extension, b_c the best of opening from D or
//     switching from V (both of row r, known after 1): a max-plus linear recurrence along the
//     row, whose prefix over the block is a scan of (a, b) pairs (warp shuffles, then the warps'
//     totals through shared memory), started from H(r, c0) of the chunk to the left;
//  3. H and the directions of its columns in order from that prefix, with dp_path's formulas.
// The values are exact integers, so the scan's order of additions gives dp_path's values.
// Two barriers a row; the chunk's last column of each row goes to the chunk on its right
// through the boundary rows and counters of dp_pipe (the same tickets, so no deadlock).
// Cell scores come from cell_scores, written in this frame (frame = 1 there).
#define SCAN_WARPS (SCAN_THREADS / 32)
static_assert(SCAN_K == 4, "transposed directions are stored as one 32-bit word per thread and row");
// The scan's identity: below every real candidate, and no sum with it overflows.
#define SCAN_NONE (-(1LL << 62) - (1LL << 61))

// (a, b) then (a2, b2): H -> max(b2, max(b, H + a) + a2).
__device__ __forceinline__ void mp_then(long long& a, long long& b, long long a2, long long b2) {
    b = mx(b + a2, b2);
    a += a2;
}

__device__ __forceinline__ int hv_swap(int s) { return s == S_D ? S_D : 3 - s; }

__device__ __forceinline__ void scan_chunk(
    const long long* __restrict__ in, long long q, long long c0, const long long* __restrict__ g,
    const long long* __restrict__ res, const long long* __restrict__ start, const long long* __restrict__ cont,
    const long long* __restrict__ retype, const long long* __restrict__ scores,
    const long long* inD, const long long* inH, const long long* inV, long long* outD, long long* outH,
    long long* outV, const long long* ready, long long* done, unsigned long long* dirs, long long* final3) {
    __shared__ long long scratch[SCAN_WARPS];
    __shared__ long long xD[2][SCAN_WARPS], xV[2][SCAN_WARPS], tA[2][SCAN_WARPS], tB[2][SCAN_WARPS], xH[2];
    const int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    const long long w1 = in[I_W1], w2 = in[I_W2];
    const bool tr = w1 > w2;
    const long long nr = tr ? w2 : w1, nc = tr ? w1 : w2;
    const long long offR = tr ? in[I_OFF2] : in[I_OFF1], offC = tr ? in[I_OFF1] : in[I_OFF2];
    const long long nR = tr ? in[I_N2] : in[I_N1], nC = tr ? in[I_N1] : in[I_N2];
    const bool seqseq = in[I_SEQSEQ] != 0, three = !seqseq, tieH = seqseq != tr;
    const long long tgo = g[4 * q + 2], tge = g[4 * q + 3];
    const long long RB = (w1 + 7) & ~7LL;  // direction bytes per column of P2
    unsigned char* dbytes = reinterpret_cast<unsigned char*>(dirs) + in[I_DIR];
    const long long cb = c0 + (long long)t * SCAN_K;
    const int nk = cb >= nc ? 0 : (nc - cb < SCAN_K ? (int)(nc - cb) : SCAN_K);
    const bool last_chunk = c0 + SCAN_THREADS * SCAN_K >= nc;
    const long long* cs = scores + in[I_SC] + cb;  // row r: cs + (r - 1) * nc

    // Row 0 (dp_path's H prefix sum nR * rC * (tgo for the first column, else tge)), from two scans.
    long long rC[SCAN_K], stC[SCAN_K], ctC[SCAN_K], rtC[SCAN_K], term[SCAN_K];
    long long before = 0, own = 0;
    for (long long c = t + 1; c <= c0; c += SCAN_THREADS) before += nR * res[offC + c - 1] * (c == 1 ? tgo : tge);
#pragma unroll
    for (int k = 0; k < SCAN_K; ++k) {
        rC[k] = stC[k] = ctC[k] = rtC[k] = term[k] = 0;
        if (k < nk) {
            const long long cc = offC + cb + k;
            rC[k] = res[cc]; stC[k] = start[cc]; ctC[k] = cont[cc]; rtC[k] = retype[cc];
            term[k] = nR * rC[k] * (cb + k == 0 ? tgo : tge);
            own += term[k];
        }
    }
    long long h, unused;
    block_scan(before, scratch, h);              // H(0, c0)
    h += block_scan(own, scratch, unused) - own;   // H(0, cb)
    long long uD[SCAN_K], uH[SCAN_K], uV[SCAN_K];  // own columns, row r - 1
    long long gD = NEG_INF, gH = NEG_INF, gV = NEG_INF;  // column cb, row r - 1
    if (cb == 0) gD = 0; else gH = h;
#pragma unroll
    for (int k = 0; k < SCAN_K; ++k) {
        h += term[k];
        uD[k] = NEG_INF; uV[k] = NEG_INF;
        uH[k] = cb + k + 1 == nc ? NEG_INF : h;
    }
    unsigned long long pack[SCAN_K];
#pragma unroll
    for (int k = 0; k < SCAN_K; ++k) pack[k] = 0;

    // Row terms and cell scores loaded ahead: row terms one row, scores two rows.
    long long n_rR = res[offR], n_stR = start[offR], n_ctR = cont[offR], n_rtR = retype[offR];
    long long n_sc[SCAN_K], nn_sc[SCAN_K];
#pragma unroll
    for (int k = 0; k < SCAN_K; ++k) {
        n_sc[k] = k < nk ? cs[k] : 0;
        nn_sc[k] = k < nk && nr > 1 ? cs[nc + k] : 0;
    }
    // Thread 0, c0 > 0: the left chunk's last column, row r (acquired, and one row ahead when known written).
    long long seen = 0, pD = NEG_INF, pH = NEG_INF, pV = NEG_INF;
    bool ahead = false;
    for (long long r = 1; r <= nr; ++r) {
        const int par = (int)(r & 1);
        const long long rR = n_rR, stR = n_stR, ctR = n_ctR, rtR = n_rtR;
        if (r < nr) {
            const long long cr = offR + r;
            n_rR = res[cr]; n_stR = start[cr]; n_ctR = cont[cr]; n_rtR = retype[cr];
        }
        long long sc[SCAN_K];
#pragma unroll
        for (int k = 0; k < SCAN_K; ++k) {
            sc[k] = n_sc[k];
            n_sc[k] = nn_sc[k];
            if (k < nk && r + 2 <= nr) nn_sc[k] = cs[(r + 1) * nc + k];
        }
        // 1. D and V of row r.
        long long nD[SCAN_K], nV[SCAN_K], nH[SCAN_K];
        int dd[SCAN_K], vd[SCAN_K];
#pragma unroll
        for (int k = 0; k < SCAN_K; ++k) {
            nD[k] = NEG_INF; nV[k] = NEG_INF; dd[k] = S_D; vd[k] = S_D;
            if (k < nk) {
                const long long c = cb + k + 1;
                const bool use3 = three && r > 1 && c > 1;
                const long long aD = k == 0 ? gD : uD[k - 1], aH = k == 0 ? gH : uH[k - 1], aV = k == 0 ? gV : uV[k - 1];
                long long td = aD, th = aH + rC[k] * rtR, tv = aV + rR * rtC[k];
                nD[k] = mx(td, mx(th, tv)) + sc[k];
                dd[k] = (td > th && td > tv) ? S_D : ((th > tv || (tieH && th == tv)) ? S_H : S_V);
                const long long corr = rR * stC[k];
                td = uD[k] + corr;
                tv = uV[k] + rR * ctC[k];
                th = use3 ? uH[k] + corr : EXCLUDED;
                nV[k] = mx(td, mx(th, tv));
                vd[k] = (td > th && td > tv) ? S_D : (th > tv ? S_H : S_V);
            }
        }
        // Column cb of row r: D and V from thread t - 1 (H comes from the scan).
        long long eD = __shfl_up_sync(0xffffffffu, nD[SCAN_K - 1], 1);
        long long eV = __shfl_up_sync(0xffffffffu, nV[SCAN_K - 1], 1);
        if (lane == 31) { xD[par][wid] = nD[SCAN_K - 1]; xV[par][wid] = nV[SCAN_K - 1]; }
        if (t == 0) {
            long long eH;
            if (c0 == 0) {  // column 0, dp_path's border (gD, gV: row r - 1's)
                eD = NEG_INF;
                eH = NEG_INF;
                eV = r < nr ? mx(gD, gV) + nC * rR * (r == 1 ? tgo : tge) : NEG_INF;
            } else {
                if (!ahead) {
                    if (seen < r) {
                        do seen = load_acquire(ready); while (seen < r);
                    }
                    pD = __ldcg(inD + r); pH = __ldcg(inH + r); pV = __ldcg(inV + r);
                }
                eD = pD; eH = pH; eV = pV;
                ahead = r < nr && seen > r;
                if (ahead) { pD = __ldcg(inD + r + 1); pH = __ldcg(inH + r + 1); pV = __ldcg(inV + r + 1); }
            }
            xH[par] = eH;
        }
        __syncthreads();
        if (lane == 0 && wid > 0) { eD = xD[par][wid - 1]; eV = xV[par][wid - 1]; }
        // 2. The scan of (a, b) over the row.
        long long a[SCAN_K], bb[SCAN_K];
        long long A = 0, B = SCAN_NONE;
#pragma unroll
        for (int k = 0; k < SCAN_K; ++k) {
            a[k] = 0; bb[k] = SCAN_NONE;
            if (k < nk) {
                const long long c = cb + k + 1;
                const bool use3 = three && r > 1 && c > 1;
                const long long lD = k == 0 ? eD : nD[k - 1], lV = k == 0 ? eV : nV[k - 1];
                const long long corr = rC[k] * stR;
                a[k] = rC[k] * ctR;
                bb[k] = mx(lD + corr, use3 ? lV + corr : EXCLUDED);
                mp_then(A, B, a[k], bb[k]);
            }
        }
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const long long a2 = __shfl_up_sync(0xffffffffu, A, d), b2 = __shfl_up_sync(0xffffffffu, B, d);
            if (lane >= d) {  // (a2, b2) comes first
                long long pa = a2, pb = b2;
                mp_then(pa, pb, A, B);
                A = pa; B = pb;
            }
        }
        long long eA = __shfl_up_sync(0xffffffffu, A, 1), eB = __shfl_up_sync(0xffffffffu, B, 1);
        if (lane == 0) { eA = 0; eB = SCAN_NONE; }
        if (lane == 31) { tA[par][wid] = A; tB[par][wid] = B; }
        __syncthreads();
        long long hin = xH[par];  // H(r, c0), then through the warps before this one, then this warp's lanes
        for (int w = 0; w < wid; ++w) hin = mx(tB[par][w], hin + tA[par][w]);
        hin = mx(eB, hin + eA);
        // 3. H and the directions of row r, in dp_path's order.
        long long lH = hin;
        const int sh8 = (int)((r - 1) & 7);
        unsigned int four = 0;
#pragma unroll
        for (int k = 0; k < SCAN_K; ++k) {
            if (k < nk) {
                const long long c = cb + k + 1;
                const bool use3 = three && r > 1 && c > 1;
                const long long lD = k == 0 ? eD : nD[k - 1], lV = k == 0 ? eV : nV[k - 1];
                const long long corr = rC[k] * stR;
                const long long td = lD + corr, th = lH + a[k], tv = use3 ? lV + corr : EXCLUDED;
                nH[k] = mx(td, mx(th, tv));
                const int hd = (td > th && td > tv) ? S_D : (tv > th ? S_V : S_H);
                lH = nH[k];
                if (!tr) {
                    pack[k] |= (unsigned long long)(dd[k] | (hd << 2) | (vd[k] << 4)) << (8 * sh8);
                    if (sh8 == 7 || r == nr) {
                        reinterpret_cast<unsigned long long*>(dbytes)[((c - 1) * RB + (r - 1 - sh8)) / 8] = pack[k];
                        pack[k] = 0;
                    }
                } else {
                    four |= (unsigned int)(hv_swap(dd[k]) | (hv_swap(vd[k]) << 2) | (hv_swap(hd) << 4)) << (8 * k);
                }
                if (c == nc && r == nr) {
                    final3[3 * q] = nD[k];
                    final3[3 * q + 1] = tr ? nV[k] : nH[k];
                    final3[3 * q + 2] = tr ? nH[k] : nV[k];
                }
            } else {
                nH[k] = NEG_INF;
            }
        }
        if (tr && nk > 0)  // P1 x P2 layout: row r is column j = r of P2, these columns rows cb + 1.. of P1
            *reinterpret_cast<unsigned int*>(dbytes + (r - 1) * RB + cb) = four;
        if (t == SCAN_THREADS - 1 && !last_chunk) {
            outD[r] = nD[SCAN_K - 1]; outH[r] = nH[SCAN_K - 1]; outV[r] = nV[SCAN_K - 1];
            if (r % PUBLISH_ROWS == 0 || r == nr) store_release(done, r);
        }
        gD = eD; gH = hin; gV = eV;
#pragma unroll
        for (int k = 0; k < SCAN_K; ++k) { uD[k] = nD[k]; uH[k] = nH[k]; uV[k] = nV[k]; }
    }
}

// The chunks of merges on concurrent blocks, by tickets as dp_pipe (I_TICK: a merge's first;
// chunks of SCAN_THREADS * SCAN_K columns of the wider profile, boundary rows at I_ROWS).
extern "C" __global__ void __launch_bounds__(SCAN_THREADS) dp_scan(
    const long long* __restrict__ info, const long long* __restrict__ g, const long long* __restrict__ res,
    const long long* __restrict__ start, const long long* __restrict__ cont, const long long* __restrict__ retype,
    const long long* __restrict__ scores, long long* rowD, long long* rowH, long long* rowV,
    unsigned long long* dirs, long long* final3, long long* sync, long long n_merges, long long n_tickets) {
    const long long span = SCAN_THREADS * SCAN_K;
    for (;;) {
        long long k, q;
        if (!draw_ticket(info, sync, n_merges, n_tickets, k, q)) return;
        const long long* in = info + q * N_INFO;
        const long long b = k - in[I_TICK];
        const long long nr = in[I_W1] < in[I_W2] ? in[I_W1] : in[I_W2], stride = nr + 1;
        const long long left = b > 0 ? in[I_ROWS] + (b - 1) * stride : 0, right = in[I_ROWS] + b * stride;
        scan_chunk(in, q, b * span, g, res, start, cont, retype, scores, rowD + left, rowH + left, rowV + left,
                   rowD + right, rowH + right, rowV + right, sync + k, sync + 1 + k, dirs, final3);
    }
}

// One warp per merge (TB_WARPS per block): dp_path's traceback (path written last step first).
// Every lane walks the same path (uniform control flow) through a tile of TB_COLS columns x
// 8 * TB_WORDS rows of direction bytes in shared memory; lane l stages columns jt - l and
// jt - l - 32. Lane 0 writes the path.
#define TB_COLS 64
#define TB_WORDS 8
extern "C" __global__ void __launch_bounds__(32 * TB_WARPS) traceback(
    const long long* __restrict__ info, long long n_merges, const unsigned long long* __restrict__ dirs,
    const long long* __restrict__ final3, unsigned char* paths, long long* lengths) {
    __shared__ unsigned long long tiles[TB_WARPS][TB_COLS * TB_WORDS];
    const int lane = threadIdx.x & 31;
    const long long q = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    if (q >= n_merges) return;
    unsigned long long* tile = tiles[threadIdx.x >> 5];
    const long long* in = info + q * N_INFO;
    const long long w1 = in[I_W1], w2 = in[I_W2];
    const unsigned long long* dw = dirs + in[I_DIR] / 8;
    unsigned char* path = paths + in[I_PATH];
    const long long RW = ((w1 + 7) & ~7LL) / 8;  // 64-bit words per column
    const long long ld = final3[3 * q], lh = final3[3 * q + 1], lv = final3[3 * q + 2];
    int state;
    if (ld >= lh && ld >= lv) state = S_D;
    else if (lh > lv) state = S_H;
    else state = S_V;
    long long i = w1, j = w2, k = 0;
    long long jt = -1, wt = -1;  // the tile holds columns jt - TB_COLS + 1 .. jt, words wt - TB_WORDS + 1 .. wt
    while (i > 0 || j > 0) {
        int cell;
        if (i == 0) cell = ROW0;
        else if (j == 0) cell = COL0;
        else {
            const long long w = (i - 1) >> 3;
            if (jt < 0 || jt - j >= TB_COLS || w > wt || wt - w >= TB_WORDS) {
                __syncwarp();
                jt = j; wt = w;
                for (int h = 0; h < TB_COLS / 32; ++h) {
                    const int col = lane + 32 * h;
                    const long long jj = j - col;
                    for (int x = 0; x < TB_WORDS; ++x)
                        tile[col * TB_WORDS + x] = (jj >= 1 && w - x >= 0) ? dw[(jj - 1) * RW + w - x] : 0ULL;
                }
                __syncwarp();
            }
            const unsigned long long word = tile[(jt - j) * TB_WORDS + (wt - w)];
            cell = (int)((word >> (8 * ((i - 1) & 7))) & 0xFF);
        }
        if (lane == 0) path[k] = (unsigned char)state;
        ++k;
        if (state == S_D) { state = cell & 3; --i; --j; }
        else if (state == S_H) { state = (cell >> 2) & 3; --j; }
        else { state = (cell >> 4) & 3; --i; }
    }
    if (lane == 0) lengths[q] = k;
}
