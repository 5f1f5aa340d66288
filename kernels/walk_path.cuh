// A merge's path walked forward a block at a time: build_parent.cu and sequence_profile.cu
// read their paths so.
#pragma once

#include "merge.cuh"

#ifndef BP_THREADS
#error BP_THREADS must be passed with -D (msa/backends/cuda/align.py)
#endif

// A merge's path walked forward by a block of BP_THREADS threads, a step a thread: block prefix
// sums give step p its (i, j), the columns of P1 (taken by D and V) and of P2 (D and H) that
// the steps before it took; step(p, state, i, j) runs for every step. build_parent and
// sequence_slots walk their paths so.
template <typename Step>
__device__ __forceinline__ void walk_path(const unsigned char* path, long long length, Step step) {
    __shared__ int warp_sum[BP_THREADS / 32];
    __shared__ long long taken[2];
    const int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    if (t == 0) { taken[0] = 0; taken[1] = 0; }
    __syncthreads();
    for (long long p0 = 0; p0 < length; p0 += BP_THREADS) {
        const long long p = p0 + t;
        const bool on = p < length;
        const int state = on ? path[length - 1 - p] : S_D;
        // Steps that take a column of P1 (D, V) count in the low half, of P2 (D, H) in the high.
        const int own = on ? (int)(state != S_H) | ((int)(state != S_V) << 16) : 0;
        int x = own;
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, x, d);
            if (lane >= d) x += y;
        }
        if (lane == 31) warp_sum[wid] = x;
        __syncthreads();
        int before = x - own;
        for (int w = 0; w < wid; ++w) before += warp_sum[w];
        const long long i = taken[0] + (before & 0xFFFF), j = taken[1] + (before >> 16);
        if (on) step(p, state, i, j);
        __syncthreads();  // every thread has read taken and warp_sum
        if (t == BP_THREADS - 1) { taken[0] = i + (own & 0xFFFF); taken[1] = j + (own >> 16); }
        __syncthreads();
    }
}
