// The parent profiles and column maps of a level's merges from their DP paths, integer-exact
// with msa/backends/cpu/align.py (build_parent):
//  build_parent  one block per merge, one thread per path step: block scans of the path give
//                each step its (i, j); a column's counts depend only on its own step, the
//                step before and the run-start counts (cpu/align.build_parent, unrolled).
//                With a null parents pointer, the maps only.

#include "walk_path.cuh"

// Field k of a child column after re-typing opens that now continue a run (_add_column).
__device__ __forceinline__ long long column_field(const int* c, int k, long long shift, long long tshift) {
    long long v = c[k];
    if (k == C_GO) v -= shift;
    if (k == C_GE) v += shift;
    if (k == C_TGO) v -= tshift;
    if (k == C_TGE) v += tshift;
    return v;
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

// Typed counts of a gap column inserted into a profile (c, w, n) before its column i, as
// cpu/align.build_parent's walk gives them. A run's first column: _start_counts (or all
// terminal opens at i == 0). Later columns of the run (run = the step before was the same
// state): the walk's l* recurrence settles after one step on (0, o + e, 0, to + te) of the
// run's first column, since o + e + to + te = n; at either end all n are terminal extensions.
__device__ __forceinline__ void gap_counts(const int* c, long long w, long long n, long long i, bool run,
                                           long long& o, long long& e, long long& to, long long& te) {
    if (run) {
        if (i == 0 || i == w) { o = 0; e = 0; to = 0; te = n; return; }
        start_counts(c, w, n, i, o, e, to, te);
        e += o; te += to; o = 0; to = 0;
    } else if (i == 0) {
        o = 0; e = 0; to = n; te = 0;
    } else {
        start_counts(c, w, n, i, o, e, to, te);
    }
}

// One block (BP_THREADS) per merge: cpu/align.build_parent with one thread per path step.
// A step's P1/P2 columns (i, j) are block prefix sums of the steps before it. Column i of
// P1 is re-typed (shift of GO into GE, TGO into TGE) only right after a gap run in P1,
// which started at that same i (the walk resets the shifts at every other step); the
// same holds for P2.
extern "C" __global__ void __launch_bounds__(BP_THREADS) build_parent(
    const long long* __restrict__ info, const int* __restrict__ counts,
    const unsigned char* __restrict__ paths, const long long* __restrict__ lengths,
    const long long* __restrict__ parent_off, int* maps, int* parents) {
    const long long q = blockIdx.x;
    const long long* in = info + q * N_INFO;
    const long long w1 = in[I_W1], n1 = in[I_N1], w2 = in[I_W2], n2 = in[I_N2];
    const long long off1 = in[I_OFF1], off2 = in[I_OFF2];
    const int* c1 = counts + off1 * NCNT;
    const int* c2 = counts + off2 * NCNT;
    const unsigned char* path = paths + in[I_PATH];
    const bool want = parents != nullptr;  // null: the maps only
    int* out = want ? parents + parent_off[q] * NCNT : nullptr;
    const long long length = lengths[q];
    walk_path(path, length, [&](long long p, int state, long long i, long long j) {
        if (!want) {
            if (state != S_H) maps[off1 + i] = (int)p;
            if (state != S_V) maps[off2 + j] = (int)p;
            return;
        }
        const int prev = p > 0 ? path[length - p] : S_D;
        long long v[NCNT];
        if (state == S_D) {
            const long long s1 = prev == S_H && i > 0 ? c1[i * NCNT + C_GO] : 0;
            const long long ts1 = prev == S_H ? c1[i * NCNT + C_TGO] : 0;
            const long long s2 = prev == S_V && j > 0 ? c2[j * NCNT + C_GO] : 0;
            const long long ts2 = prev == S_V ? c2[j * NCNT + C_TGO] : 0;
            for (int f = 0; f < NCNT; ++f)
                v[f] = column_field(c1 + i * NCNT, f, s1, ts1) + column_field(c2 + j * NCNT, f, s2, ts2);
            maps[off1 + i] = (int)p;
            maps[off2 + j] = (int)p;
        } else {
            const bool h = state == S_H;
            const int* ck = h ? c2 : c1;           // the profile whose column is kept
            const long long ik = h ? j : i;
            const bool shifted = prev == (h ? S_V : S_H);
            const long long sk = shifted && ik > 0 ? ck[ik * NCNT + C_GO] : 0;
            const long long tsk = shifted ? ck[ik * NCNT + C_TGO] : 0;
            long long o, e, to, te;
            if (h) gap_counts(c1, w1, n1, i, prev == S_H, o, e, to, te);
            else gap_counts(c2, w2, n2, j, prev == S_V, o, e, to, te);
            for (int f = 0; f < NCNT; ++f) v[f] = column_field(ck + ik * NCNT, f, sk, tsk);
            v[C_GO] += o; v[C_GE] += e; v[C_TGO] += to; v[C_TGE] += te;
            maps[(h ? off2 : off1) + ik] = (int)p;
        }
        for (int f = 0; f < NCNT; ++f) out[p * NCNT + f] = (int)v[f];
    });
}
