// FAMSA 2's profile-profile Gotoh DP on the GPU, integer-exact with msa/backends/cpu_align.py.
//
// Three kernels per piece of a level batch:
//  column_setup  one thread per input column: the per-column terms dp_path precomputes
//                (score table S2, residue count, gap cost, typed gap start/continue
//                costs, re-typing correction, nonzero residue list).
//  dp_fill       one block per merge. Thread t owns column j = c0 + t + 1 of P2 in a
//                chunk of blockDim.x columns and walks the rows of P1; thread t is one
//                row behind thread t-1 (anti-diagonal wavefront, one barrier per step).
//                The left neighbour's (D, H, V) of this row comes through shared memory
//                (double-buffered by step parity); the next row's terms are loaded a step
//                ahead; the diagonal is the neighbour's
//                previous row, kept in registers; the chunk's last column is kept per
//                row in global memory for the next chunk. Direction bytes
//                (d | h << 2 | v << 4, as the CPU) go to global memory column-major,
//                eight rows per 64-bit store.
//  traceback     one thread per merge walks the directions (the CPU's traceback).
//  build_parent  one warp per merge: column maps and parent counts (ConstructProfile).
// Scores are int64 with -inf = -2**62, the same formulas and comparison order as
// dp_path, so ties resolve identically.

#define NEG_INF (-(1LL << 62))
#define NRES 24
#define NCNT 28
#define C_GO 24
#define C_GE 25
#define C_TGO 26
#define C_TGE 27
#define S_D 0
#define S_H 1
#define S_V 2
#define ROW0 (S_H | (S_H << 2) | (S_H << 4))
#define COL0 (S_V | (S_V << 2) | (S_V << 4))

// Per-merge record (int64 fields), filled by the host.
#define I_OFF1 0    // first column of P1 (piece-relative)
#define I_W1 1
#define I_N1 2
#define I_OFF2 3
#define I_W2 4
#define I_N2 5
#define I_SEQSEQ 6
#define I_DIR 7     // byte offset of the merge's direction block (multiple of 8)
#define I_ROWS 8    // offset of the merge's row buffers (w1 + 1 entries)
#define I_COLS 9    // offset of the merge's row-0 H values (w2 + 1 entries)
#define I_PATH 10   // offset of the merge's path (w1 + w2 bytes)
#define N_INFO 11

__device__ __forceinline__ long long mx(long long a, long long b) { return a > b ? a : b; }

// One thread per column of the piece: the column terms of dp_path (for P2 and P1 roles alike).
extern "C" __global__ void column_setup(
    const int* __restrict__ counts, long long n_cols, const long long* __restrict__ col_offsets,
    long long n_prof, const long long* __restrict__ n_seqs, const long long* __restrict__ m,
    const long long* __restrict__ g, long long* gapc, long long* res, long long* start, long long* cont,
    long long* retype, long long* s2, int* nnz, unsigned char* codes, int* mult) {
    const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= n_cols) return;
    long long lo = 0, hi = n_prof;  // profile p with col_offsets[p] <= c < col_offsets[p + 1]
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (col_offsets[mid] <= c) lo = mid; else hi = mid;
    }
    const long long base = col_offsets[lo], w = col_offsets[lo + 1] - base, n = n_seqs[lo];
    const long long i = c - base + 1;  // 1-based column index, as dp_path's i / j
    const long long go = g[0], ge = g[1], tgo = g[2], tge = g[3];
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

// One block per merge: the wavefront fill of dp_path. Dynamic shared memory:
// 24 * blockDim.x int64 (S2 of the chunk's columns) + 6 * blockDim.x int64 (exchange).
extern "C" __global__ void dp_fill(
    const long long* __restrict__ info, const long long* __restrict__ g,
    const long long* __restrict__ gapc, const long long* __restrict__ res,
    const long long* __restrict__ start, const long long* __restrict__ cont,
    const long long* __restrict__ retype, const long long* __restrict__ s2,
    const int* __restrict__ nnz, const unsigned char* __restrict__ codes, const int* __restrict__ mult,
    long long* rowD, long long* rowH, long long* rowV, long long* h0,
    unsigned long long* dirs, long long* final3) {
    extern __shared__ long long sh[];
    const int T = blockDim.x, t = threadIdx.x;
    long long* s2s = sh;
    long long* xD = sh + NRES * T;
    long long* xH = xD + 2 * T;
    long long* xV = xH + 2 * T;
    const long long* in = info + blockIdx.x * (long long)N_INFO;
    const long long off1 = in[I_OFF1], w1 = in[I_W1], n1 = in[I_N1];
    const long long off2 = in[I_OFF2], w2 = in[I_W2], n2 = in[I_N2];
    const bool seqseq = in[I_SEQSEQ] != 0, three = !seqseq;
    const long long tgo = g[2], tge = g[3];
    long long* bD = rowD + in[I_ROWS];
    long long* bH = rowH + in[I_ROWS];
    long long* bV = rowV + in[I_ROWS];
    long long* hz = h0 + in[I_COLS];
    unsigned long long* dir = dirs + in[I_DIR] / 8;
    const long long R = (w1 + 7) & ~7LL;

    if (t == 0) {  // borders: row 0 H (a prefix sum) and column 0 (a chain), as dp_path
        long long h = 0;
        for (long long j = 1; j <= w2; ++j) {
            h = (j == 1) ? n1 * res[off2] * tgo : h + n1 * res[off2 + j - 1] * tge;
            hz[j] = h;
        }
        hz[w2] = NEG_INF;
        long long dprev = 0, vprev = NEG_INF;
        for (long long i = 1; i <= w1; ++i) {
            long long v = NEG_INF;
            if (i < w1) v = mx(dprev, vprev) + n2 * res[off1 + i - 1] * (i == 1 ? tgo : tge);
            bD[i] = NEG_INF;
            bH[i] = NEG_INF;
            bV[i] = v;
            dprev = NEG_INF;
            vprev = v;
        }
    }
    __syncthreads();

    for (long long c0 = 0; c0 < w2; c0 += T) {
        const long long j = c0 + t + 1;
        const int active = (int)(w2 - c0 < T ? w2 - c0 : T);
        const bool on = t < active;
        long long r2 = 0, vst = 0, vct = 0, rt2 = 0;
        long long uD = NEG_INF, uH = NEG_INF, uV = NEG_INF;  // own column, previous row
        long long gD = NEG_INF, gH = NEG_INF, gV = NEG_INF;  // left column, previous row
        if (on) {
            const long long cj = off2 + j - 1;
            for (int a = 0; a < NRES; ++a) s2s[a * T + t] = s2[cj * NRES + a];
            r2 = res[cj];
            vst = start[cj];
            vct = cont[cj];
            rt2 = retype[cj];
            uH = hz[j];
            if (j == 1) gD = 0; else gH = hz[j - 1];
        }
        __syncthreads();
        unsigned long long pack = 0;
        // Row terms of the thread's next row, loaded a step ahead to hide their latency.
        long long n_r1 = 0, n_gap1 = 0, n_hst = 0, n_hct = 0, n_rt1 = 0;
        int n_nz = 0;
        if (on) {
            const long long ci = off1;
            n_r1 = res[ci]; n_gap1 = gapc[ci]; n_hst = start[ci]; n_hct = cont[ci]; n_rt1 = retype[ci];
            n_nz = nnz[ci];
        }
        const long long steps = w1 + active - 1;
        for (long long s = 0; s < steps; ++s) {
            const long long i = s - t + 1;
            const int cur = (int)(s & 1), prv = cur ^ 1;
            if (on && i >= 1 && i <= w1) {
                long long lD, lH, lV;  // left column, this row
                if (t == 0) {
                    lD = bD[i]; lH = bH[i]; lV = bV[i];
                } else {
                    lD = xD[prv * T + t - 1]; lH = xH[prv * T + t - 1]; lV = xV[prv * T + t - 1];
                }
                const long long ci = off1 + i - 1;
                const long long r1 = n_r1, gap1 = n_gap1, hst = n_hst, hct = n_hct, rt1 = n_rt1;
                const int nz = n_nz;
                if (i < w1) {
                    n_r1 = res[ci + 1]; n_gap1 = gapc[ci + 1]; n_hst = start[ci + 1]; n_hct = cont[ci + 1];
                    n_rt1 = retype[ci + 1]; n_nz = nnz[ci + 1];
                }
                long long sc = r2 * gap1;
                for (int k = 0; k < nz; ++k)
                    sc += (long long)mult[ci * NRES + k] * s2s[(int)codes[ci * NRES + k] * T + t];
                long long dc, hc, vc;
                int dd, hd, vd;
                // D: column i of P1 against column j of P2.
                long long td = gD, th = gH + r2 * rt1, tv = gV + r1 * rt2;
                if (td > th && td > tv) { dc = td + sc; dd = S_D; }
                else if (th > tv || (seqseq && th == tv)) { dc = th + sc; dd = S_H; }
                else { dc = tv + sc; dd = S_V; }
                // H: a gap column put into P1 after its column i, against column j of P2.
                long long corr = r2 * hst;
                td = lD + corr;
                th = lH + r2 * hct;
                if (three && i > 1 && j > 1) {
                    tv = lV + corr;
                    if (td > th && td > tv) { hc = td; hd = S_D; }
                    else if (tv > th) { hc = tv; hd = S_V; }
                    else { hc = th; hd = S_H; }
                } else if (td > th) { hc = td; hd = S_D; }
                else { hc = th; hd = S_H; }
                // V: a gap column put into P2 after its column j, against column i of P1.
                corr = r1 * vst;
                td = uD + corr;
                tv = uV + r1 * vct;
                if (three && i > 1 && j > 1) {
                    th = uH + corr;
                    if (td > th && td > tv) { vc = td; vd = S_D; }
                    else if (th > tv) { vc = th; vd = S_H; }
                    else { vc = tv; vd = S_V; }
                } else if (td > tv) { vc = td; vd = S_D; }
                else { vc = tv; vd = S_V; }

                xD[cur * T + t] = dc; xH[cur * T + t] = hc; xV[cur * T + t] = vc;
                const int sh8 = (int)((i - 1) & 7);
                pack |= (unsigned long long)(dd | (hd << 2) | (vd << 4)) << (8 * sh8);
                if (sh8 == 7 || i == w1) {
                    dir[((j - 1) * R + (i - 1 - sh8)) / 8] = pack;
                    pack = 0;
                }
                if (t == active - 1 && j < w2) { bD[i] = dc; bH[i] = hc; bV[i] = vc; }
                if (j == w2 && i == w1) {
                    final3[3 * blockIdx.x] = dc;
                    final3[3 * blockIdx.x + 1] = hc;
                    final3[3 * blockIdx.x + 2] = vc;
                }
                gD = lD; gH = lH; gV = lV;
                uD = dc; uH = hc; uV = vc;
            }
            __syncthreads();
        }
    }
}

// One thread per merge: dp_path's traceback (path written last step first).
extern "C" __global__ void traceback(
    const long long* __restrict__ info, long long n_merges, const unsigned long long* __restrict__ dirs,
    const long long* __restrict__ final3, unsigned char* paths, long long* lengths) {
    const long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (q >= n_merges) return;
    const long long* in = info + q * N_INFO;
    const long long w1 = in[I_W1], w2 = in[I_W2];
    const unsigned char* dir = (const unsigned char*)dirs + in[I_DIR];
    unsigned char* path = paths + in[I_PATH];
    const long long R = (w1 + 7) & ~7LL;
    const long long ld = final3[3 * q], lh = final3[3 * q + 1], lv = final3[3 * q + 2];
    int state;
    if (ld >= lh && ld >= lv) state = S_D;
    else if (lh > lv) state = S_H;
    else state = S_V;
    long long i = w1, j = w2, k = 0;
    while (i > 0 || j > 0) {
        const int cell = i == 0 ? ROW0 : (j == 0 ? COL0 : dir[(j - 1) * R + (i - 1)]);
        path[k++] = (unsigned char)state;
        if (state == S_D) { state = cell & 3; --i; --j; }
        else if (state == S_H) { state = (cell >> 2) & 3; --j; }
        else { state = (cell >> 4) & 3; --i; }
    }
    lengths[q] = k;
}

// Field k of a child column after re-typing opens that now continue a run (_add_column).
__device__ __forceinline__ long long column_field(const int* c, int k, long long shift, long long tshift) {
    long long v = c[k];
    if (k == C_GO) v -= shift;
    if (k == C_GE) v += shift;
    if (k == C_TGO) v -= tshift;
    if (k == C_TGE) v += tshift;
    return v;
}

__device__ __forceinline__ long long gap_field(int k, long long o, long long e, long long to, long long te) {
    return k == C_GO ? o : k == C_GE ? e : k == C_TGO ? to : k == C_TGE ? te : 0;
}

__device__ __forceinline__ void start_counts(const int* c, long long w, long long n, long long i,
                                             long long& o, long long& e, long long& to, long long& te) {
    if (i >= w) {
        te = c[(w - 1) * NCNT + C_TGO] + c[(w - 1) * NCNT + C_TGE];
        o = 0; e = 0; to = n - te;
        return;
    }
    to = c[i * NCNT + C_TGO];
    te = c[(i - 1) * NCNT + C_TGO] + c[(i - 1) * NCNT + C_TGE];
    e = c[(i - 1) * NCNT + C_GO] + c[(i - 1) * NCNT + C_GE];
    o = n - e - to - te;
}

// One warp per merge: cpu_align.build_parent. Every lane runs the walk (scalar bookkeeping);
// lane k < 28 writes field k of each parent column, so a column is one coalesced store.
extern "C" __global__ void build_parent(
    const long long* __restrict__ info, long long n_merges, const int* __restrict__ counts,
    const unsigned char* __restrict__ paths, const long long* __restrict__ lengths,
    const long long* __restrict__ parent_off, long long* maps, int* parents) {
    const long long q = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const int k = threadIdx.x & 31;
    if (q >= n_merges) return;
    const long long* in = info + q * N_INFO;
    const long long w1 = in[I_W1], n1 = in[I_N1], w2 = in[I_W2], n2 = in[I_N2];
    const long long off1 = in[I_OFF1], off2 = in[I_OFF2];
    const int* c1 = counts + off1 * NCNT;
    const int* c2 = counts + off2 * NCNT;
    const unsigned char* path = paths + in[I_PATH];
    int* out = parents + parent_off[q] * NCNT;
    const long long length = lengths[q];
    long long i = 0, j = 0;
    int prev = S_D;
    long long shift1 = 0, tshift1 = 0, shift2 = 0, tshift2 = 0;
    long long l1o = 0, l1e = 0, l1to = 0, l1te = 0, l2o = 0, l2e = 0, l2to = 0, l2te = 0;
    for (long long p = 0; p < length; ++p) {
        const int state = path[length - 1 - p];
        long long o, e, to, te, v = 0;
        if (state == S_D) {
            if (k < NCNT)
                v = column_field(c1 + i * NCNT, k, shift1, tshift1) + column_field(c2 + j * NCNT, k, shift2, tshift2);
            shift1 = tshift1 = shift2 = tshift2 = 0;
            if (k == 0) { maps[off1 + i] = p; maps[off2 + j] = p; }
            ++i; ++j;
        } else if (state == S_H) {
            if (prev == S_H) {
                if (i == 0 || i == w1) { o = 0; e = 0; to = 0; te = n1; }
                else { e = l1o + l1e; te = l1to + l1te; o = n1 - e - te; to = 0; }
            } else if (i == 0) {
                o = 0; e = 0; to = n1; te = 0;
                tshift1 = c1[C_TGO];
            } else {
                start_counts(c1, w1, n1, i, o, e, to, te);
                if (i < w1) { tshift1 = to; shift1 += c1[i * NCNT + C_GO]; }
            }
            l1o = o; l1e = e; l1to = to; l1te = te;
            if (k < NCNT) v = gap_field(k, o, e, to, te) + column_field(c2 + j * NCNT, k, shift2, tshift2);
            shift2 = tshift2 = 0;
            if (k == 0) maps[off2 + j] = p;
            ++j;
        } else {
            if (prev == S_V) {
                if (j == 0 || j == w2) { o = 0; e = 0; to = 0; te = n2; }
                else { e = l2o + l2e; te = l2to + l2te; o = n2 - e - te; to = 0; }
            } else if (j == 0) {
                o = 0; e = 0; to = n2; te = 0;
                tshift2 = c2[C_TGO];
            } else {
                start_counts(c2, w2, n2, j, o, e, to, te);
                if (j < w2) { tshift2 = to; shift2 += c2[j * NCNT + C_GO]; }
            }
            l2o = o; l2e = e; l2to = to; l2te = te;
            if (k < NCNT) v = column_field(c1 + i * NCNT, k, shift1, tshift1) + gap_field(k, o, e, to, te);
            shift1 = tshift1 = 0;
            if (k == 0) maps[off1 + i] = p;
            ++i;
        }
        if (k < NCNT) out[p * NCNT + k] = (int)v;
        prev = state;
    }
}
