// Smith-Waterman (local, Gotoh affine) score distances for all pairs of many groups; the CPU
// oracle is msa/backends/cpu/sw.py (sw_score, sw_distance, sw_distance_matrix).
//
// Thread mapping: one thread per pair, score only. A tile (as lcs_distance.cu's) is one row
// sequence a (member i of its group) against up to blockDim.x later members j > i; thread x
// takes member tile_j0 + x as b. The DP runs in vertical strips of SW_STRIP columns of a:
// the strip's H and F (vertical gap) of the previous row of b, and a's codes, sit in
// registers; what crosses from one strip to the next (H and E of each row of b at the strip's
// last column) sits in a global scratch, interleaved by thread (row j of thread q at
// scratch[j * stride + q], stride = gridDim.x * blockDim.x), so a warp's reads and writes of
// one row are consecutive. Scratch traffic is 2 loads + 2 stores per SW_STRIP cells. The
// substitution matrix sits in shared memory with row stride SW_PITCH = 25 (odd, so the rows
// of different residues of b in a warp fall in different banks; column 24 is the pad code of
// columns past the end of a). No block-wide synchronization after the matrix is loaded:
// warps of a block run their tiles independently. sw_self computes S(x, x) of every
// sequence of the piece the same way, one sequence per thread.
//
// Gap states start at `open` (<= 0) instead of minus infinity (H + open >= open >= open +
// extend wins their max), and the pad columns score 0: their cells only copy values of real
// cells through gaps and a 0 score, so they never exceed the best real cell. Every value is
// then in [open + extend, max|M| * (min(la, lb) + 1)], so T = int is exact when the host's
// bound check holds (msa/backends/cuda/sw.py: _sw_fits_int32); otherwise T = long long.
//
// d = 1 - S / min(self_a, self_b) (one IEEE division, one subtraction; --fmad=false), 1.0
// where min(self) <= 0, clamped to [0, 1]: bit-identical to the CPU's.

#ifndef SW_CODES  // residue codes, msa.alphabet.N_CODES (msa.kernels.CONSTANTS)
#error SW_CODES must be passed with -D
#endif
#define SW_PITCH (SW_CODES + 1)
#define SW_PAD SW_CODES
#define SW_STRIP 16

template <typename T>
struct Cross;  // H and E of one row at a strip's last column
template <>
struct Cross<int> {
    typedef int2 type;
};
template <>
struct Cross<long long> {
    typedef longlong2 type;
};

// SW_DPX 0 builds the int path with plain max instead of Hopper's DPX (docs/kernels.md compares).
#ifndef SW_DPX
#define SW_DPX 1
#endif
__device__ __forceinline__ int max3_relu(int a, int b, int c) {
#if SW_DPX
    return __vimax3_s32_relu(a, b, c);
#else
    const int m = max(max(a, b), c);
    return m > 0 ? m : 0;
#endif
}
__device__ __forceinline__ long long max3_relu(long long a, long long b, long long c) {
    const long long m = a > b ? a : b;
    const long long n = m > c ? m : c;
    return n > 0 ? n : 0;
}
template <typename T>
__device__ __forceinline__ T max2(T a, T b) {
    return a > b ? a : b;
}

// The 24x24 matrix into shared memory (row stride SW_PITCH, pad column 0), once per block.
template <typename T>
__device__ __forceinline__ void load_matrix(T* sm, const long long* __restrict__ matrix) {
    for (int k = threadIdx.x; k < SW_CODES * SW_PITCH; k += blockDim.x) {
        const int r = k / SW_PITCH, c = k % SW_PITCH;
        sm[k] = c < SW_CODES ? (T)matrix[r * SW_CODES + c] : (T)0;
    }
    __syncthreads();
}

// Best local score of codes[a_lo : a_lo + la] (columns) and codes[b_lo : b_lo + lb] (rows).
template <typename T>
__device__ T sw_score(const unsigned char* __restrict__ codes, long long a_lo, long long la, long long b_lo,
                      long long lb, const T* sm, T open, T ext, typename Cross<T>::type* cross,
                      long long stride) {
    T best = 0;
    for (long long p0 = 0; p0 < la; p0 += SW_STRIP) {
        int col[SW_STRIP];  // a's codes of the strip (SW_PAD past its end)
        T h[SW_STRIP], f[SW_STRIP];
#pragma unroll
        for (int k = 0; k < SW_STRIP; ++k) {
            col[k] = p0 + k < la ? codes[a_lo + p0 + k] : SW_PAD;
            h[k] = 0;
            f[k] = open;
        }
        const bool first = p0 == 0;
        T diag_left = 0;  // H of the previous row at column p0 - 1
        for (long long j = 0; j < lb; ++j) {
            T left = 0, e = open;
            if (!first) {
                const typename Cross<T>::type c = cross[j * stride];
                left = c.x;
                e = c.y;
            }
            const T* row = sm + SW_PITCH * codes[b_lo + j];
            T diag = diag_left;
            diag_left = left;
#pragma unroll
            for (int k = 0; k < SW_STRIP; ++k) {
                e = max2<T>(e + ext, left + open);
                f[k] = max2<T>(f[k] + ext, h[k] + open);
                const T x = max3_relu(diag + row[col[k]], e, f[k]);
                diag = h[k];
                h[k] = x;
                left = x;
                best = max2<T>(best, x);
            }
            typename Cross<T>::type c;
            c.x = left;
            c.y = e;
            cross[j * stride] = c;
        }
    }
    return best;
}

__device__ __forceinline__ double sw_distance(long long s, long long self_a, long long self_b) {
    const long long m = self_a < self_b ? self_a : self_b;
    if (m <= 0) return 1.0;
    const double d = 1.0 - (double)s / (double)m;
    return fmax(0.0, fmin(1.0, d));
}

// S(x, x) of every piece sequence, one per thread (grid-stride).
template <typename T>
__device__ __forceinline__ void sw_self(const unsigned char* __restrict__ codes, const long long* __restrict__ seq_off,
                                        long long n, const long long* __restrict__ matrix, T open, T ext,
                                        typename Cross<T>::type* scratch, long long* __restrict__ self) {
    __shared__ T sm[SW_CODES * SW_PITCH];
    load_matrix(sm, matrix);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long x = q; x < n; x += stride) {
        const long long lo = seq_off[x], len = seq_off[x + 1] - lo;
        self[x] = (long long)sw_score<T>(codes, lo, len, lo, len, sm, open, ext, scratch + q, stride);
    }
}

// Tile t: row r = tile_row[t] (piece-wide row numbering), first column tile_j0[t]; pairs into
// out[out_off[g] + condensed(i, j)] with self scores self[] of the piece's sequences.
template <typename T>
__device__ __forceinline__ void sw_tiles(const unsigned char* __restrict__ codes, const long long* __restrict__ seq_off,
                                         const long long* __restrict__ group_off, const long long* __restrict__ out_off,
                                         const long long* __restrict__ row_group, const long long* __restrict__ row_index,
                                         const long long* __restrict__ tile_row, const long long* __restrict__ tile_j0,
                                         long long n_tiles, const long long* __restrict__ matrix, T open, T ext,
                                         const long long* __restrict__ self, typename Cross<T>::type* scratch,
                                         double* __restrict__ out) {
    __shared__ T sm[SW_CODES * SW_PITCH];
    load_matrix(sm, matrix);
    const long long stride = (long long)gridDim.x * blockDim.x;
    typename Cross<T>::type* cross = scratch + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const long long r = tile_row[t];
        const long long g = row_group[r], i = row_index[r];
        const long long base = group_off[g], s = group_off[g + 1] - base;
        const long long j = tile_j0[t] + threadIdx.x;
        if (j >= s) continue;
        const long long a = base + i, b = base + j;
        const long long a_lo = seq_off[a], b_lo = seq_off[b];
        const T score = sw_score<T>(codes, a_lo, seq_off[a + 1] - a_lo, b_lo, seq_off[b + 1] - b_lo, sm, open, ext,
                                    cross, stride);
        const long long o = out_off[g] + i * s - i * (i + 1) / 2 - i - 1;  // o + j: condensed_index, msa/distances/condensed.py
        out[o + j] = sw_distance((long long)score, self[a], self[b]);
    }
}

#define SW_TILE_ARGS(T)                                                                                          \
    const unsigned char *codes, const long long *seq_off, const long long *group_off, const long long *out_off,  \
        const long long *row_group, const long long *row_index, const long long *tile_row,                       \
        const long long *tile_j0, long long n_tiles, const long long *matrix, T open, T ext,                     \
        const long long *self, Cross<T>::type *scratch, double *out
#define SW_TILE_PASS \
    codes, seq_off, group_off, out_off, row_group, row_index, tile_row, tile_j0, n_tiles, matrix, open, ext, self, scratch, out
#define SW_SELF_ARGS(T)                                                                                          \
    const unsigned char *codes, const long long *seq_off, long long n, const long long *matrix, T open, T ext, \
        Cross<T>::type *scratch, long long *self

// int: every value provably within int32 (host check); long long: any input.
extern "C" __global__ void sw_tiles_i32(SW_TILE_ARGS(int)) { sw_tiles<int>(SW_TILE_PASS); }
extern "C" __global__ void sw_tiles_i64(SW_TILE_ARGS(long long)) { sw_tiles<long long>(SW_TILE_PASS); }
extern "C" __global__ void sw_self_i32(SW_SELF_ARGS(int)) {
    sw_self<int>(codes, seq_off, n, matrix, open, ext, scratch, self);
}
extern "C" __global__ void sw_self_i64(SW_SELF_ARGS(long long)) {
    sw_self<long long>(codes, seq_off, n, matrix, open, ext, scratch, self);
}
