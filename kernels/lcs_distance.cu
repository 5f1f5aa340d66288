// FAMSA's indel075_div_lcs distance for all pairs of many groups (the CPU oracle is
// msa/backends/cpu/lcs.py: lcs_distance_matrix and _lcs_length).
//
// Work unit: a tile = one row sequence a (position i of its group) against up to
// blockDim.x of the later members j > i, one thread per pair. The block builds a's
// match masks (20 standard residues x W 64-bit words; lcs_core.cuh's planes for packed rows) in shared memory; each thread
// runs Hyyro's bit-parallel LCS over its column sequence b with the bit vector V in
// registers (W a template constant; words of a above ceil(la/64) have zero masks and
// only carry into higher words, so a larger W gives the same LCS). Rows longer than
// the largest W go to lcs_tiles_long, whose V lives in a global scratch.
//
// The distance is (la + lb - 2 LCS)^0.75 / LCS, or 2 (la + lb)^0.75 where LCS = 0;
// x^0.75 is read from a host-built table (pow075[k] = k ** 0.75 by the CPU's own
// libm pow), because CUDA's pow need not round like the host's. The division is
// IEEE in both, so every distance is bit-identical to the CPU's.

#include "lcs_core.cuh"

struct Tile {
    long long g, i, j0, base, s, a, la, o;
};

__device__ __forceinline__ Tile tile_at(long long t, const long long* tile_row, const long long* tile_j0,
                                        const long long* row_group, const long long* row_index,
                                        const long long* group_off, const long long* out_off,
                                        const long long* seq_off) {
    Tile x;
    const long long r = tile_row[t];
    x.g = row_group[r];
    x.i = row_index[r];
    x.j0 = tile_j0[t];
    x.base = group_off[x.g];
    x.s = group_off[x.g + 1] - x.base;
    x.a = x.base + x.i;
    x.la = seq_off[x.a + 1] - seq_off[x.a];
    x.o = out_off[x.g] + x.i * x.s - x.i * (x.i + 1) / 2 - x.i - 1;  // o + j: condensed_index, msa/distances/condensed.py
    return x;
}

// Zero then fill the masks of sequence a (stride W words per residue code, `rows` rows).
__device__ __forceinline__ void build_masks(u64* m, long long words, const unsigned char* codes,
                                            long long start, long long la, int rows = LCS_ALPHA) {
    for (long long k = threadIdx.x; k < rows * words; k += blockDim.x) m[k] = 0ull;
    __syncthreads();
    for (long long p = threadIdx.x; p < la; p += blockDim.x) {
        const unsigned c = codes[start + p];
        if (c < LCS_ALPHA) atomicOr(&m[c * words + (p >> 6)], 1ull << (p & 63));
    }
    __syncthreads();
}

// LCS of the masked sequence (length la; masks of stride W) and codes[lo:hi], V in registers.
template <int W>
__device__ __forceinline__ long long lcs_registers(const u64* masks, const unsigned char* __restrict__ codes,
                                                   long long lo, long long hi, long long la) {
    u64 v[W];
#pragma unroll
    for (int w = 0; w < W; ++w) v[w] = ~0ull;
    for (long long k = lo; k < hi; ++k) {
        const unsigned c = codes[k];
        if (c >= LCS_ALPHA) continue;
        lcs_step<W>(v, masks + c * W);
    }
    long long lcs = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) lcs += count_lcs(v[w], w, la);
    return lcs;
}

// The same with `words` words of V in v[w * stride] (global scratch, coalesced across threads).
__device__ __forceinline__ long long lcs_scratch(const u64* masks, long long words,
                                                 const unsigned char* __restrict__ codes, long long lo,
                                                 long long hi, long long la, u64* v, long long stride) {
    for (long long w = 0; w < words; ++w) v[w * stride] = ~0ull;
    for (long long k = lo; k < hi; ++k) {
        const unsigned c = codes[k];
        if (c >= LCS_ALPHA) continue;
        const u64* m = masks + c * words;
        lcs_step_scratch(v, stride, words, [m](long long w) { return m[w]; });
    }
    long long lcs = 0;
    for (long long w = 0; w < words; ++w) lcs += count_lcs(v[w * stride], w, la);
    return lcs;
}

// Rows of at most LCS_CHAIN_MAX words read their column sequences from the packed layout
// (lcs_core.cuh; positions: each group's members, its run starting at grp_pos0[g], a
// multiple of 32, and tiles start at a multiple of 32 so a warp reads one section), with mask
// planes; longer rows read bytes, with masks of LCS_ALPHA rows.
template <int W>
__device__ __forceinline__ void lcs_tiles(const unsigned char* __restrict__ codes, const long long* __restrict__ seq_off,
                                          const long long* __restrict__ group_off, const long long* __restrict__ out_off,
                                          const long long* __restrict__ row_group, const long long* __restrict__ row_index,
                                          const long long* __restrict__ tile_row, const long long* __restrict__ tile_j0,
                                          long long n_tiles, const double* __restrict__ pow075,
                                          double* __restrict__ out, const uint4* __restrict__ pk4,
                                          const long long* __restrict__ sec_off, const long long* __restrict__ grp_pos0) {
    extern __shared__ u64 masks[];
    constexpr bool packed = W <= LCS_CHAIN_MAX;
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const Tile x = tile_at(t, tile_row, tile_j0, row_group, row_index, group_off, out_off, seq_off);
        __syncthreads();  // the previous tile's threads are done with the masks
        if constexpr (packed) {
            build_planes(reinterpret_cast<unsigned*>(masks), codes + seq_off[x.a], x.la, W);
            __syncthreads();
        } else {
            build_masks(masks, W, codes, seq_off[x.a], x.la);
        }
        const long long j = x.j0 + threadIdx.x;
        if (j <= x.i || j >= x.s) continue;
        const long long b = x.base + j;
        const long long lo = seq_off[b], hi = seq_off[b + 1];
        long long lcs;
        if constexpr (packed) {
            const long long P = grp_pos0[x.g] + j;
            lcs = lcs_packed<W>(reinterpret_cast<const unsigned*>(masks), pk4 + sec_off[P >> 5] / 4 + (P & 31), (int)((hi - lo + 15) >> 4), x.la);
        } else {
            lcs = lcs_registers<W>(masks, codes, lo, hi, x.la);
        }
        out[x.o + j] = lcs_distance(lcs, x.la, hi - lo, pow075);
    }
}

#define LCS_ARGS                                                                                                   \
    const unsigned char *codes, const long long *seq_off, const long long *group_off, const long long *out_off,      \
        const long long *row_group, const long long *row_index, const long long *tile_row, const long long *tile_j0, \
        long long n_tiles, const double *pow075, double *out
#define LCS_PASS codes, seq_off, group_off, out_off, row_group, row_index, tile_row, tile_j0, n_tiles, pow075, out
#define LCS_ENTRY(W)                                                                                   \
    extern "C" __global__ void lcs_tiles_##W(LCS_ARGS, const uint4* pk4, const long long* sec_off,        \
                                             const long long* grp_pos0) {                                   \
        lcs_tiles<W>(LCS_PASS, pk4, sec_off, grp_pos0);                                                     \
    }

// Word counts with a register kernel; a row of `words` goes to the smallest W >= words
// (keep in step with cuda.LCS_WORDS).
LCS_ENTRY(1)
LCS_ENTRY(2)
LCS_ENTRY(3)
LCS_ENTRY(4)
LCS_ENTRY(5)
LCS_ENTRY(6)
LCS_ENTRY(8)
LCS_ENTRY(10)
LCS_ENTRY(12)
LCS_ENTRY(16)
LCS_ENTRY(24)
LCS_ENTRY(32)

// Rows of more than 32 words (`words`: the most of the launch): masks in shared memory, or
// where they do not fit (global_masks != 0) in masks_global[blockIdx.x * 20 * words];
// V in scratch[w * (gridDim.x * blockDim.x) + thread], coalesced across the threads.
extern "C" __global__ void lcs_tiles_long(LCS_ARGS, long long words, int global_masks, u64* masks_global,
                                          u64* scratch) {
    extern __shared__ u64 shared_masks[];
    u64* masks = global_masks ? masks_global + blockIdx.x * LCS_ALPHA * words : shared_masks;
    const long long stride = (long long)gridDim.x * blockDim.x;
    u64* v = scratch + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const Tile x = tile_at(t, tile_row, tile_j0, row_group, row_index, group_off, out_off, seq_off);
        __syncthreads();
        build_masks(masks, words, codes, seq_off[x.a], x.la);
        const long long j = x.j0 + threadIdx.x;
        if (j <= x.i || j >= x.s) continue;  // tiles start on a 32-sequence section
        const long long b = x.base + j;
        const long long lo = seq_off[b], hi = seq_off[b + 1];
        const long long lcs = lcs_scratch(masks, words, codes, lo, hi, x.la, v, stride);
        out[x.o + j] = lcs_distance(lcs, x.la, hi - lo, pow075);
    }
}

// ---- Nearest sample (CPU oracle: msa/backends/cpu/lcs.py, lcs_nearest_sample).
//
// A piece's sequences are its members sorted by node, then the references of those nodes.
// Node g: members node_mem[g] .. + node_nmem[g], references node_ref[g] .. + node_nref[g]
// (piece-local sequence numbers); its distances dist[node_dist[g] + r * node_nmem[g] + j]
// (reference-major, so a tile's writes and the argmin's reads are coalesced). Tile t: one
// reference r = tile_r[t] of node g = tile_node[t] (masks in shared memory) against members
// tile_j0[t] .. + blockDim.x, one thread each. LCS is symmetric and so is the distance, so
// building the masks from the reference gives the CPU's values (it masks the member).

#define SAMPLE_ARGS                                                                                            \
    const unsigned char *codes, const long long *seq_off, const long long *node_mem, const long long *node_nmem, \
        const long long *node_ref, const long long *node_dist, const long long *tile_node,                      \
        const long long *tile_r, const long long *tile_j0, long long n_tiles, const double *pow075, double *dist
#define SAMPLE_PASS \
    codes, seq_off, node_mem, node_nmem, node_ref, node_dist, tile_node, tile_r, tile_j0, n_tiles, pow075, dist

// One tile's reference (a), its member j (b, -1 past the node's members) and output slot.
struct SampleTile {
    long long a, la, b, o;
};

__device__ __forceinline__ SampleTile sample_tile_at(long long t, SAMPLE_ARGS) {
    SampleTile x;
    const long long g = tile_node[t], r = tile_r[t], j = tile_j0[t] + threadIdx.x, s = node_nmem[g];
    x.a = node_ref[g] + r;
    x.la = seq_off[x.a + 1] - seq_off[x.a];
    x.b = j < s ? node_mem[g] + j : -1;
    x.o = node_dist[g] + r * s + j;
    return x;
}

template <int W>
__device__ __forceinline__ void sample_tiles(SAMPLE_ARGS) {
    extern __shared__ u64 masks[];
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const SampleTile x = sample_tile_at(t, SAMPLE_PASS);
        __syncthreads();  // the previous tile's threads are done with the masks
        build_masks(masks, W, codes, seq_off[x.a], x.la);
        if (x.b < 0) continue;
        const long long lo = seq_off[x.b], hi = seq_off[x.b + 1];
        const long long lcs = lcs_registers<W>(masks, codes, lo, hi, x.la);
        dist[x.o] = lcs_distance(lcs, x.la, hi - lo, pow075);
    }
}

#define SAMPLE_ENTRY(W) \
    extern "C" __global__ void lcs_sample_##W(SAMPLE_ARGS) { sample_tiles<W>(SAMPLE_PASS); }

// Same word classes as lcs_tiles_<W> (cuda.LCS_WORDS), by the reference's length.
SAMPLE_ENTRY(1)
SAMPLE_ENTRY(2)
SAMPLE_ENTRY(3)
SAMPLE_ENTRY(4)
SAMPLE_ENTRY(5)
SAMPLE_ENTRY(6)
SAMPLE_ENTRY(8)
SAMPLE_ENTRY(10)
SAMPLE_ENTRY(12)
SAMPLE_ENTRY(16)
SAMPLE_ENTRY(24)
SAMPLE_ENTRY(32)

// References of more than 32 words: masks and V placed as in lcs_tiles_long.
extern "C" __global__ void lcs_sample_long(SAMPLE_ARGS, long long words, int global_masks, u64* masks_global,
                                           u64* scratch) {
    extern __shared__ u64 shared_masks[];
    u64* masks = global_masks ? masks_global + blockIdx.x * LCS_ALPHA * words : shared_masks;
    const long long stride = (long long)gridDim.x * blockDim.x;
    u64* v = scratch + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const SampleTile x = sample_tile_at(t, SAMPLE_PASS);
        __syncthreads();
        build_masks(masks, words, codes, seq_off[x.a], x.la);
        if (x.b < 0) continue;
        const long long lo = seq_off[x.b], hi = seq_off[x.b + 1];
        const long long lcs = lcs_scratch(masks, words, codes, lo, hi, x.la, v, stride);
        dist[x.o] = lcs_distance(lcs, x.la, hi - lo, pow075);
    }
}

// Member t of the piece (node mem_node[t], index j within it): the first reference of the
// smallest distance (strict <, as _nearest_row), +inf and 0 for a node without references.
extern "C" __global__ void lcs_sample_argmin(const long long* __restrict__ mem_node, long long m,
                                             const long long* __restrict__ node_mem,
                                             const long long* __restrict__ node_nmem,
                                             const long long* __restrict__ node_nref,
                                             const long long* __restrict__ node_dist,
                                             const double* __restrict__ dist, int* __restrict__ best,
                                             double* __restrict__ best_d) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < m; t += (long long)gridDim.x * blockDim.x) {
        const long long g = mem_node[t], s = node_nmem[g], n = node_nref[g];
        const double* d = dist + node_dist[g] + (t - node_mem[g]);
        int arg = 0;
        double dmin = __longlong_as_double(0x7ff0000000000000ll);
        for (long long r = 0; r < n; ++r) {
            const double x = d[r * s];
            if (x < dmin) {
                dmin = x;
                arg = (int)r;
            }
        }
        best[t] = arg;
        best_d[t] = dmin;
    }
}
