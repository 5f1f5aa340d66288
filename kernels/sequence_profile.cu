// A sequence against a profile on the GPU, integer-exact with msa/backends/cpu/align.py:
//  dp_rows       the DP fill of levels of many merges whose P1 is one sequence (msa add's batches,
//                and the leaf merges of a progressive level): one warp per merge, the sequence's
//                rows on its lanes, P2's columns one a step. merge_dp.cu's column_setup and
//                merge_info prepare its merges, and its traceback reads the directions.
//  sequence_slots  msa add: the scans of build_parent's walk (walk_path.cuh) give each new residue
//                its place against the profile (CpuBackend.residue_slots on the CPU).

#include "walk_path.cuh"

// Passed with -D from their one definition in msa/backends/cuda/align.py. ROWS_STRIDE: 24 S2, r2,
// start, cont, retype, boundary D, H, V (odd: no bank conflicts).
#if !defined(ROWS_WARPS) || !defined(ROWS_RING) || !defined(ROWS_STRIDE)
#error ROWS_WARPS, ROWS_RING and ROWS_STRIDE must be passed with -D
#endif

// dp_rows: levels of many merges whose P1 is one sequence (n1 = 1: `msa add`'s batches, each new
// sequence against the alignment's profile). One warp per merge, ROWS_WARPS merges a block. Lane l
// owns ROWS_K consecutive rows of P1 (rows base + K l + 1 .. + K; a pass covers 32 K rows, a
// longer sequence takes several, each pass's last row handed to the next through the merge's row
// buffer) and walks P2's columns one a step, one column behind lane l - 1, which hands it the
// (D, H, V) of its last row by shuffles: a pass is W2 + active lanes - 1 steps of K cells a lane
// and no barrier (K = 4: 55 ms for msa add's 4.1e9 cells on the H100; K = 8, with more
// registers, 60 ms; docs/progressive.md). (dp_fill puts P2's columns on threads and walks P1's rows, so a short sequence
// leaves most of each chunk's W1 + threads - 1 steps idle and every step is a block barrier.)
// P2's column terms (S2, r2, V's start / cont, retype) and the row handed on from the previous
// pass come through a ring of ROWS_RING columns in shared memory (ROWS_STRIDE int64 a column),
// lane e loading term e of the column two ahead of lane 0's each step. For a sequence r1 = 1 and
// gap1 = retype1 = 0 at every row, with one residue (its code), and H's costs are the merge's
// go and ge (tgo and tge at its last row), so dp_path's formulas reduce exactly to the ones
// below. A lane's direction bytes at a column are one 32-bit word of dp_fill's layout.
#define ROWS_K 4  // a lane's direction bytes at a column: one 32-bit word
#define RG_R2 24
#define RG_VST 25
#define RG_VCT 26
#define RG_RT2 27
#define RG_BD 28
extern "C" __global__ void __launch_bounds__(32 * ROWS_WARPS) dp_rows(DP_FILL_PARAMS, long long n_merges) {
    extern __shared__ long long rows_sh[];
    const int lane = threadIdx.x & 31;
    const long long q = (long long)blockIdx.x * ROWS_WARPS + (threadIdx.x >> 5);
    if (q >= n_merges) return;  // the whole warp
    long long* ring = rows_sh + (threadIdx.x >> 5) * (ROWS_RING * ROWS_STRIDE);
    const long long* in = info + q * N_INFO;
    const long long off1 = in[I_OFF1], w1 = in[I_W1], n1 = in[I_N1];
    const long long off2 = in[I_OFF2], w2 = in[I_W2], n2 = in[I_N2];
    const bool seqseq = in[I_SEQSEQ] != 0, three = !seqseq;
    const long long go = g[4 * q], ge = g[4 * q + 1], tgo = g[4 * q + 2], tge = g[4 * q + 3];
    unsigned long long* dir = dirs + in[I_DIR] / 8;
    const long long R = (w1 + 7) & ~7LL;
    long long* bD = rowD + in[I_ROWS];
    long long* bH = rowH + in[I_ROWS];
    long long* bV = rowV + in[I_ROWS];
    long long vchain = 0;  // column 0's V chain over the rows of earlier passes
    for (long long base = 0; base < w1; base += 32 * ROWS_K) {
        const long long i0 = base + lane * ROWS_K + 1;  // the lane's first row
        const long long left = w1 - i0 + 1;
        const int nrows = left <= 0 ? 0 : (left < ROWS_K ? (int)left : ROWS_K);
        const int klast = (int)(left - 1);  // the row of the lane that is P1's last (if 0 <= klast < ROWS_K)
        const long long rest = (w1 - base + ROWS_K - 1) / ROWS_K;
        const int active = rest < 32 ? (int)rest : 32;
        const bool hand_on = base + 32 * ROWS_K < w1;  // lane 31's last row goes to the next pass
        // A lane past P1's last row computes its rows all the same (no branch a cell), but
        // only the bytes of real rows are written.
        const unsigned int keep = (unsigned int)((1ULL << (8 * nrows)) - 1);
        // The rows' residues, and column 0 (dp_path's border): V(i, 0) is the sum of
        // n2 * (tgo for i' = 1, else tge) over i' <= i, -inf at i = w1; D and H are -inf.
        int code[ROWS_K];
        long long cD[ROWS_K], cH[ROWS_K], cV[ROWS_K];
        long long own = 0;
#pragma unroll
        for (int k = 0; k < ROWS_K; ++k) {
            code[k] = 0;
            if (k < nrows) {
                code[k] = codes[(off1 + i0 + k - 1) * NRES];
                own += n2 * (i0 + k == 1 ? tgo : tge);
            }
        }
        long long incl = own;
        for (int d = 1; d < 32; d <<= 1) {
            const long long y = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= d) incl += y;
        }
        long long v = vchain + incl - own;  // V(i0 - 1, 0)
        vchain += __shfl_sync(0xffffffffu, incl, 31);
        // (D, H, V) above the lane's first row at the previous column: (i0 - 1, 0) to begin with.
        long long aD = i0 == 1 ? 0 : NEG_INF, aH = NEG_INF, aV = i0 == 1 ? NEG_INF : v;
#pragma unroll
        for (int k = 0; k < ROWS_K; ++k) {
            v += n2 * (i0 + k == 1 ? tgo : tge);
            cD[k] = NEG_INF; cH[k] = NEG_INF;
            cV[k] = i0 + k < w1 ? v : NEG_INF;
        }
        const bool first3 = three && i0 > 1;  // the lane's first row may come from V (i > 1)
        // Term `lane` of column c (1 <= c <= w2) for the ring.
        auto term = [&](long long c) -> long long {
            if (c > w2 || lane >= ROWS_STRIDE) return 0;
            const long long cc = off2 + c - 1;
            if (lane < NRES) return s2[cc * NRES + lane];
            switch (lane) {
                case RG_R2: return res[cc];
                case RG_VST: return start[cc];
                case RG_VCT: return cont[cc];
                case RG_RT2: return retype[cc];
                case RG_BD: return base > 0 ? bD[c] : 0;
                case RG_BD + 1: return base > 0 ? bH[c] : 0;
                default: return base > 0 ? bV[c] : 0;
            }
        };
        __syncwarp();  // the previous pass's ring reads and row buffer writes are done
        if (lane < ROWS_STRIDE) ring[(1 & (ROWS_RING - 1)) * ROWS_STRIDE + lane] = term(1);
        long long ahead = term(2);
        long long h0 = 0;                                      // row 0's H (lane 0, first pass)
        long long oD = NEG_INF, oH = NEG_INF, oV = NEG_INF;  // the lane's last row at its latest column
        const long long steps = w2 + active - 1;
        for (long long s = 0; s < steps; ++s) {
            __syncwarp();  // column s + 1 is in the ring
            long long xD = __shfl_up_sync(0xffffffffu, oD, 1);
            long long xH = __shfl_up_sync(0xffffffffu, oH, 1);
            long long xV = __shfl_up_sync(0xffffffffu, oV, 1);
            const long long j = s - lane + 1;
            if (lane < active && j >= 1 && j <= w2) {
                const long long* p = ring + (j & (ROWS_RING - 1)) * ROWS_STRIDE;
                const long long r2 = p[RG_R2], vst = p[RG_VST], vct = p[RG_VCT], rt2 = p[RG_RT2];
                if (lane == 0) {
                    if (base == 0) {  // row 0, dp_path's border
                        h0 += n1 * r2 * (j == 1 ? tgo : tge);
                        xD = NEG_INF; xH = j == w2 ? NEG_INF : h0; xV = NEG_INF;
                    } else {
                        xD = p[RG_BD]; xH = p[RG_BD + 1]; xV = p[RG_BD + 2];
                    }
                }
                // H's costs r2 * start1 and r2 * cont1: a sequence's start / cont are go / ge,
                // tgo / tge at its last column (column_setup with n = 1 and no gap counts).
                const long long h_go = r2 * go, h_ge = r2 * ge, h_tgo = r2 * tgo, h_tge = r2 * tge;
                const bool j1 = j > 1, jlast = j == w2;
                long long dD = aD, dH = aH, dV = aV;  // (i - 1, j - 1)
                long long uD = xD, uH = xH, uV = xV;  // (i - 1, j)
                unsigned int pack = 0;
#pragma unroll
                for (int k = 0; k < ROWS_K; ++k) {
                    const bool use3 = (k == 0 ? first3 : three) && j1;
                    const bool last = k == klast;
                    const long long lD = cD[k], lH = cH[k], lV = cV[k];  // (i, j - 1)
                    // D: r1 = 1, retype1 = 0, gap1 = 0 (dp_chunk's th = dH + r2 * rt1, tv = dV + r1 * rt2).
                    long long td = dD, th = dH, tv = dV + rt2;
                    bool hv = th > tv;
                    long long m = hv ? th : tv;
                    bool dw = td > m;
                    const long long dc = (dw ? td : m) + p[code[k]];
                    const int dd = dw ? S_D : ((hv || (seqseq && th == tv)) ? S_H : S_V);
                    // H: from the left.
                    const long long corr = last ? h_tgo : h_go;
                    td = lD + corr;
                    th = lH + (last ? h_tge : h_ge);
                    tv = use3 ? lV + corr : EXCLUDED;
                    const bool vh = tv > th;
                    m = vh ? tv : th;
                    dw = td > m;
                    const long long hc = dw ? td : m;
                    const int hd = dw ? S_D : (vh ? S_V : S_H);
                    // V: from above (r1 = 1).
                    td = uD + vst;
                    tv = uV + vct;
                    th = use3 ? uH + vst : EXCLUDED;
                    hv = th > tv;
                    m = hv ? th : tv;
                    dw = td > m;
                    const long long vc = dw ? td : m;
                    const int vd = dw ? S_D : (hv ? S_H : S_V);
                    pack |= (unsigned int)(dd | (hd << 2) | (vd << 4)) << (8 * k);
                    if (last && jlast) {
                        final3[3 * q] = dc;
                        final3[3 * q + 1] = hc;
                        final3[3 * q + 2] = vc;
                    }
                    dD = lD; dH = lH; dV = lV;
                    uD = dc; uH = hc; uV = vc;
                    cD[k] = dc; cH[k] = hc; cV[k] = vc;
                }
                reinterpret_cast<unsigned int*>(dir)[((j - 1) * R + i0 - 1) / 4] = pack & keep;
                aD = xD; aH = xH; aV = xV;
                oD = uD; oH = uH; oV = uV;
                if (lane == 31 && hand_on) {
                    bD[j] = uD; bH[j] = uH; bV[j] = uV;
                }
            }
            // Column s + 2 into the ring (its slot's last reader, lane 31, was 32 steps ago), and
            // the loads of column s + 3 issued now, used next step.
            if (lane < ROWS_STRIDE && s + 2 <= w2) ring[((s + 2) & (ROWS_RING - 1)) * ROWS_STRIDE + lane] = ahead;
            ahead = term(s + 3);
        }
    }
}

// msa add's reading of its merges (the CPU reads the same from the maps: CpuBackend.residue_slots).
// Merge q aligned the profile (table columns 0 .. w - 1, shared by every merge) with one
// sequence (the side at columns >= w; P2 only where the profile is one sequence too). One block
// (BP_THREADS) per merge walks its path (walk_path, as build_parent): a step that takes a
// residue of the sequence gives it slot = the profile columns taken by the steps before it
// (those whose parent columns are left of the residue's) and hit = the step is D (a profile
// column shares the residue's parent column). Residue r of the piece is table column base + r.
extern "C" __global__ void __launch_bounds__(BP_THREADS) sequence_slots(
    const long long* __restrict__ info, const unsigned char* __restrict__ paths,
    const long long* __restrict__ lengths, long long w, long long base, long long* __restrict__ slot,
    unsigned char* __restrict__ hit) {
    const long long* in = info + blockIdx.x * N_INFO;
    const bool seq1 = in[I_OFF1] >= w;  // the sequence is P1
    const long long first = (seq1 ? in[I_OFF1] : in[I_OFF2]) - base;
    walk_path(paths + in[I_PATH], lengths[blockIdx.x], [&](long long p, int state, long long i, long long j) {
        if (seq1 ? state != S_H : state != S_V) {
            const long long r = first + (seq1 ? i : j);
            slot[r] = seq1 ? j : i;
            hit[r] = state == S_D;
        }
    });
}
