// Prim's minimum spanning trees of many groups under FAMSA's LCS distance, without distance
// matrices (CPU oracle: msa/backends/cpu/lcs.py, lcs_prim_mst, one group at a time).
//
// One persistent launch runs many Prim steps of many groups at once; group g owns blocks
// blk0[g] .. blk0[g + 1] and runs its own steps step0[g] .. step_end[g]. Each step of a group:
//   1. each of its blocks builds the mask planes (lcs_core.cuh) of the vertex that joined last
//      (cur) in shared memory;
//   2. each thread, for the positions it owns (32-position chunks dealt to the blocks in a
//      snake, see prim_steps) of the vertices not yet in the tree, computes LCS(cur, p), lowers
//      best[p] (strict <, so the earliest cur keeps a tie, as on the CPU) and keeps the
//      smallest (best, local index) it owns;
//   3. a block-wide minimum goes to part[block]; the last of the group's blocks to arrive at
//      the group's barrier reduces the group's parts, writes the step's edge, marks the winner
//      and publishes its key (the next cur, with where its residues are, so that no block looks
//      them up), then releases the barrier.
// The smallest (best, local index) is the CPU's choice (lowest index of smallest best).
// A thread's first position lives in registers for the whole launch (its best, via, whether it
// joined, where its residues are): at 10^5 a thread owns one position, so a step reads and
// writes none of its state in global memory (its key's sequence offset and index are loaded
// after the LCS); further positions (groups larger than the launch's threads) are read from
// global memory each step, as are the winner marks (in_tree) they need.
// All blocks of the launch must be resident at once (the host sizes the grid from the
// occupancy); groups never wait on each other, so a small group finishes early and its
// blocks simply exit.
//
// Positions are each group's remaining vertices sorted by length, the group's run starting
// at a multiple of 32, packed 16 residues a uint4 in warp-interleaved sections:
// (lcs_core.cuh's packed layout, built by lcs_pack), so a warp's load is one 512-byte run.

#include "lcs_core.cuh"


// lcs_packed's LCS for any W, V in v[w * stride] (global scratch).
__device__ __forceinline__ long long prim_lcs_scratch(const unsigned* planes, long long words,
                                                      const uint4* __restrict__ pk4, int nq, long long la,
                                                      u64* v, long long stride) {
    for (long long w = 0; w < words; ++w) v[w * stride] = ~0ull;
    for (int q = 0; q < nq; ++q) {
        const uint4 x = __ldg(&pk4[q * 32]);
        const unsigned part[4] = {x.x, x.y, x.z, x.w};
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 4; ++k) {
                const unsigned c = (part[j] >> (8 * k)) & 31u;
                lcs_step_scratch(v, stride, words, [planes, c](long long w) { return plane_word(planes, c, (int)w); });
            }
    }
    long long lcs = 0;
    for (long long w = 0; w < words; ++w) lcs += count_lcs(v[w * stride], w, la);
    return lcs;
}

__device__ __forceinline__ long long prim_dispatch(int words, const unsigned* planes, const uint4* pk, int nq,
                                                   long long la, u64* scratch, long long stride) {
    switch (words) {
        case 1: return lcs_packed<1>(planes, pk, nq, la);
        case 2: return lcs_packed<2>(planes, pk, nq, la);
        case 3: return lcs_packed<3>(planes, pk, nq, la);
        case 4: return lcs_packed<4>(planes, pk, nq, la);
        case 5: return lcs_packed<5>(planes, pk, nq, la);
        case 6: return lcs_packed<6>(planes, pk, nq, la);
        case 7: return lcs_packed<7>(planes, pk, nq, la);
        case 8: return lcs_packed<8>(planes, pk, nq, la);
        default: return prim_lcs_scratch(planes, words, pk, nq, la, scratch, stride);
    }
}

// (distance bits, local index) ordered lexicographically; distances are >= 0, so their
// IEEE bits order as the values do. pos, via and the vertex's residues (first code, length)
// ride along for the winner, so that the next step builds its masks without another lookup.
struct Key {
    u64 d;
    long long a0;
    int local, pos, via, len;
};

// The key of no vertex, above every real one.
__device__ __forceinline__ Key no_key() { return {~0ull, 0, 0x7fffffff, -1, -1, 0}; }

__device__ __forceinline__ bool key_less(const Key& a, const Key& b) {
    return a.d < b.d || (a.d == b.d && a.local < b.local);
}

__device__ __forceinline__ Key warp_min(Key k) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        Key x;
        x.d = __shfl_down_sync(0xffffffffu, k.d, o);
        x.a0 = __shfl_down_sync(0xffffffffu, k.a0, o);
        x.local = __shfl_down_sync(0xffffffffu, k.local, o);
        x.pos = __shfl_down_sync(0xffffffffu, k.pos, o);
        x.via = __shfl_down_sync(0xffffffffu, k.via, o);
        x.len = __shfl_down_sync(0xffffffffu, k.len, o);
        if (key_less(x, k)) k = x;
    }
    return k;
}

// Block-wide minimum, valid in thread 0 (blockDim.x a multiple of 32, at most 1024).
__device__ __forceinline__ Key block_min(Key k) {
    __shared__ Key warps[32];
    k = warp_min(k);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // warps[] of an earlier call has been read
    if (lane == 0) warps[warp] = k;
    __syncthreads();
    if (warp == 0) {
        k = lane < (int)(blockDim.x >> 5) ? warps[lane] : no_key();
        k = warp_min(k);
    }
    return k;
}

// The group barrier's two counters: arrivals (acq_rel, so the last block sees every part) and
// the generation the last block releases (release; the others acquire it).
__device__ __forceinline__ unsigned arrive(unsigned* counter) {
    unsigned old;
    asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
    return old;
}
__device__ __forceinline__ void release_add(unsigned* counter) {
    asm volatile("red.add.release.gpu.u32 [%0], 1;" ::"l"(counter) : "memory");
}
__device__ __forceinline__ unsigned acquire_load(const unsigned* counter) {
    unsigned v;
    asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
    return v;
}

#ifndef PRIM_THREADS  // threads per block
#error PRIM_THREADS must be passed with -D (msa/backends/cuda/lcs.py)
#endif
static_assert(PRIM_THREADS % 64 == 0, "the snake needs an even number of warps a block");
// At most 80 registers a thread (768 threads on an SM), which the step loop fits unspilled.
//
// Thread mapping: positions go in chunks of 32 (a packed section, a warp's load), in rounds
// over the group's nb blocks: chunk c = r * nb + (r odd ? nb - 1 - b : b) goes to block b,
// round r to its warp r % (blockDim / 32) (an even count, so a warp's rounds all run one way).
// Positions are in length order, so the snake gives every block the same number of chunks
// (+-1) over the whole length range, and blocks sized to whole SMs finish a step together.
extern "C" __global__ void __launch_bounds__(PRIM_THREADS, 768 / PRIM_THREADS) prim_steps(
    const uint4* __restrict__ pk4, const long long* __restrict__ sec_off, const int* __restrict__ pos_local,
    const int* __restrict__ pos_len, const long long* __restrict__ pos_a0, const unsigned char* __restrict__ codes,
    const long long* __restrict__ seq_off, const double* __restrict__ pow075, double* __restrict__ best,
    int* __restrict__ via, unsigned char* in_tree, const int* __restrict__ block_group, const int* __restrict__ blk0,
    const long long* __restrict__ pos0, const int* __restrict__ npos, const long long* __restrict__ seq0,
    const int* __restrict__ step0, const int* __restrict__ step_end, const long long* __restrict__ edge0, int* state,
    int* __restrict__ edge_a, int* __restrict__ edge_b, double* __restrict__ edge_w, Key* part, unsigned* bar,
    u64* scratch) {
    extern __shared__ unsigned planes[];
    __shared__ Key s_win;
    __shared__ int s_last;
    const int g = block_group[blockIdx.x];
    const int b0 = blk0[g], nb = blk0[g + 1] - b0, b = blockIdx.x - b0;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wpb = blockDim.x >> 5;
    const long long p0 = pos0[g], n_pos = npos[g], s0 = seq0[g], e0 = edge0[g];
    // this thread's rounds r = warp, warp + wpb, ...: wpb is even, so they all run one way
    const long long first_chunk = (long long)warp * nb + ((warp & 1) ? nb - 1 - b : b);
    const long long p_end = (n_pos + 31) & ~31ll, p_step = 32ll * wpb * nb;
    // V scratch of the words past LCS_CHAIN_MAX: one column per thread of the launch
    const long long scratch_stride = (long long)gridDim.x * blockDim.x;
    u64* my_scratch = scratch + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned* gbar = bar + 2 * g;
    Key* win = part + gridDim.x + g;  // the step's winner, published by the group's last block
    const unsigned gen0 = acquire_load(gbar + 1);  // no block of the group can release a barrier before all have read it
    // the first position, in registers (live: not yet in the tree)
    const long long p1 = 32 * first_chunk + lane;
    bool live1 = false;
    int len1 = 0, via1 = 0;
    double best1 = 0.0;
    const uint4* col1 = pk4;
    if (p1 < n_pos) {
        const long long P = p0 + p1;
        live1 = in_tree[P] == 0;
        len1 = pos_len[P];
        best1 = best[P], via1 = via[P];
        col1 = pk4 + sec_off[P >> 5] / 4 + (P & 31);
    }
    int cur = state[g];
    long long a0 = seq_off[s0 + cur], la = seq_off[s0 + cur + 1] - a0;
    for (int step = step0[g]; step < step_end[g]; ++step) {
        // 1. cur's masks
        const int words = la > 64 ? (int)((la + 63) >> 6) : 1;
        build_planes(planes, codes + a0, la, words);
        __syncthreads();
        // 2. relax the owned positions (the first from registers, the others from global memory)
        Key mine = no_key();
        for (long long p = p1; p < p_end; p += p_step) {
            const bool first = p == p1;
            const long long P = p0 + p;
            if (first ? !live1 : p >= n_pos || __ldcg(&in_tree[P])) continue;
            const int lb = first ? len1 : pos_len[P];
            const uint4* col = first ? col1 : pk4 + sec_off[P >> 5] / 4 + (P & 31);
            const long long lcs =
                prim_dispatch(words, planes, col, (lb + 15) >> 4, la, my_scratch, scratch_stride);
            const double d = lcs_distance(lcs, la, lb, pow075);
            double bp = first ? best1 : best[P];
            int vp = first ? via1 : via[P];
            if (d < bp) {
                bp = d;
                vp = cur;
                if (first) {
                    best1 = d, via1 = cur;
                } else {
                    best[P] = d;
                    via[P] = cur;
                }
            }
            const Key k = {(u64)__double_as_longlong(bp), pos_a0[P], pos_local[P], (int)p, vp, lb};
            if (key_less(k, mine)) mine = k;
        }
        // 3. block minimum, the group's barrier, its last block picks and publishes the next vertex
        mine = block_min(mine);
        if (threadIdx.x == 0) {
            part[blockIdx.x] = mine;
            s_last = arrive(&gbar[0]) == (unsigned)nb - 1u;
        }
        __syncthreads();
        const unsigned target = gen0 + (unsigned)(step - step0[g]) + 1u;
        if (s_last) {
            Key k = no_key();
            for (int q = b0 + threadIdx.x; q < b0 + nb; q += blockDim.x) {
                const Key x = {__ldcg(&part[q].d), __ldcg(&part[q].a0), __ldcg(&part[q].local), __ldcg(&part[q].pos),
                               __ldcg(&part[q].via), __ldcg(&part[q].len)};
                if (key_less(x, k)) k = x;
            }
            k = block_min(k);
            if (threadIdx.x == 0) {
                edge_a[e0 + step] = k.via;
                edge_b[e0 + step] = k.local;
                edge_w[e0 + step] = __longlong_as_double((long long)k.d);
                in_tree[p0 + k.pos] = 1;
                state[g] = k.local;
                *win = k;
                gbar[0] = 0u;
                release_add(&gbar[1]);
                s_win = k;
            }
        } else if (threadIdx.x == 0) {
            while ((int)(acquire_load(gbar + 1) - target) < 0) {
            }
            s_win = {__ldcg(&win->d), __ldcg(&win->a0), __ldcg(&win->local), __ldcg(&win->pos), __ldcg(&win->via),
                     __ldcg(&win->len)};
        }
        __syncthreads();
        cur = s_win.local, a0 = s_win.a0, la = s_win.len;
        if (s_win.pos == p1) live1 = false;
    }
    if (p1 < n_pos) best[p0 + p1] = best1, via[p0 + p1] = via1;
}
