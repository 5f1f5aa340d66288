// The progressive stage's data movement between levels (msa/progressive.py), and its levels'
// consistency bonuses, one launch per level however many nodes it has: before, each level cost a
// few dozen small CuPy operations per source or destination level, more host time than the
// level's dynamic programming.
//
// The kernels go over segments of very different sizes (a leaf's ~300 rows, a near-root
// profile's ~10^4). A segment is cut into SEG_CHUNK-element chunks; one block (SEG_THREADS threads)
// per chunk, found by binary search in the chunks' prefix sum (chunk_off, n_seg + 1 entries),
// threads striding over the chunk's consecutive elements (coalesced on both sides).
#include "common.cuh"

// Passed with -D: SEG_CHUNK and SEG_THREADS from msa/backends/cuda/segments.py, N_COUNTS
// (24 residue codes + 4 gap counts) from msa.profile (msa.kernels.CONSTANTS).
#if !defined(SEG_CHUNK) || !defined(SEG_THREADS) || !defined(N_COUNTS)
#error SEG_CHUNK, SEG_THREADS and N_COUNTS must be passed with -D
#endif


// Profile tables of a level's children laid end to end (int32 rows of N_COUNTS).
// rec[5 * g ..]: source table pointer (0: a leaf), first source row (a leaf: its first residue
// in codes), first output row, rows, a leaf's weight. A leaf's rows are one-hot: its weight in
// its residue code's column, 0 elsewhere. Every output element is written.
extern "C" __global__ void __launch_bounds__(SEG_THREADS) gather_profiles(
    const long long* __restrict__ rec, const long long* __restrict__ chunk_off, long long n_seg,
    const unsigned char* __restrict__ codes, int* __restrict__ out) {
    const long long g = segment_of(chunk_off, n_seg, blockIdx.x);
    const long long* r = rec + 5 * g;
    const int* src = reinterpret_cast<const int*>(r[0]);
    const long long first = r[1], dst = r[2] * N_COUNTS, n = r[3] * N_COUNTS;
    const long long lo = (blockIdx.x - chunk_off[g]) * (long long)SEG_CHUNK;
    const long long hi = lo + SEG_CHUNK < n ? lo + SEG_CHUNK : n;
    for (long long e = lo + threadIdx.x; e < hi; e += SEG_THREADS) {
        int v;
        if (src != nullptr) {
            v = __ldg(src + first * N_COUNTS + e);
        } else {
            const long long row = e / N_COUNTS;
            v = (long long)codes[first + row] == e - row * N_COUNTS ? (int)r[4] : 0;
        }
        out[dst + e] = v;
    }
}

// Final columns, top-down: for every child g of a level and each of its columns c,
// target_g[start_g + c] = values[parent_g + maps[map_g + c]]. rec[5 * g ..]: target pointer
// (int64), start_g, map_g (the child's first column in the level's input layout), parent_g
// (its parent's first column in values, the level's output layout), columns.
extern "C" __global__ void __launch_bounds__(SEG_THREADS) place_segments(
    const long long* __restrict__ rec, const long long* __restrict__ chunk_off, long long n_seg,
    const long long* __restrict__ values, const int* __restrict__ maps) {
    const long long g = segment_of(chunk_off, n_seg, blockIdx.x);
    const long long* r = rec + 5 * g;
    long long* target = reinterpret_cast<long long*>(r[0]);
    const long long start = r[1], map = r[2], parent = r[3], n = r[4];
    const long long lo = (blockIdx.x - chunk_off[g]) * (long long)SEG_CHUNK;
    const long long hi = lo + SEG_CHUNK < n ? lo + SEG_CHUNK : n;
    for (long long c = lo + threadIdx.x; c < hi; c += SEG_THREADS) target[start + c] = values[parent + maps[map + c]];
}

// Consistency bonuses of a level's guided merges (msa/consistency.py LevelBonuses), added into
// out (int64 zeros). Segment g is merge g's library pairs of residues: rec[5 * g ..]: its first
// pair p0, pairs, wb (its second child's columns), base (its table's first cell in out), scale
// (na x nb). Pair p adds vote[p] * scale at base + cur[lib_a[p]] * wb + cur[lib_b[p]]; pairs that
// agree hit one cell, so the adds are atomic, on 64-bit integers: their order changes no sum,
// and the tables are the CPU's (msa/backends/cpu/forest.py _add_bonuses).
extern "C" __global__ void __launch_bounds__(SEG_THREADS) add_bonuses(
    const long long* __restrict__ rec, const long long* __restrict__ chunk_off, long long n_seg,
    const long long* __restrict__ lib_a, const long long* __restrict__ lib_b, const long long* __restrict__ vote,
    const long long* __restrict__ cur, long long* out) {
    const long long g = segment_of(chunk_off, n_seg, blockIdx.x);
    const long long* r = rec + 5 * g;
    const long long p0 = r[0], n = r[1], wb = r[2], base = r[3], scale = r[4];
    const long long lo = (blockIdx.x - chunk_off[g]) * (long long)SEG_CHUNK;
    const long long hi = lo + SEG_CHUNK < n ? lo + SEG_CHUNK : n;
    for (long long i = lo + threadIdx.x; i < hi; i += SEG_THREADS) {
        const long long p = p0 + i;
        const long long cell = base + __ldg(cur + __ldg(lib_a + p)) * wb + __ldg(cur + __ldg(lib_b + p));
        atomicAdd(reinterpret_cast<unsigned long long*>(out + cell), (unsigned long long)(__ldg(vote + p) * scale));
    }
}

// The level loop's walk of the consistency samples' columns (msa/consistency.py LevelBonuses):
// segment g is the sampled residues below one child of the level, rec[3 * g ..]: their first
// position in cur, their count, and base (the child's first column in the level's maps). Each
// residue's column in the child becomes its column in the parent: cur[i] = maps[base + cur[i]]
// (msa/backends/cpu/forest.py walk_columns).
extern "C" __global__ void __launch_bounds__(SEG_THREADS) walk_columns(
    const long long* __restrict__ rec, const long long* __restrict__ chunk_off, long long n_seg,
    const int* __restrict__ maps, long long* cur) {
    const long long g = segment_of(chunk_off, n_seg, blockIdx.x);
    const long long* r = rec + 3 * g;
    const long long start = r[0], n = r[1], base = r[2];
    const long long lo = (blockIdx.x - chunk_off[g]) * (long long)SEG_CHUNK;
    const long long hi = lo + SEG_CHUNK < n ? lo + SEG_CHUNK : n;
    for (long long i = start + lo + threadIdx.x; i < start + hi; i += SEG_THREADS) cur[i] = __ldg(maps + base + cur[i]);
}
