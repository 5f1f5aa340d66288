// Hyyro's bit-parallel LCS step, shared by lcs_distance.cu and lcs_prim.cu (CPU oracle:
// msa/backends/cpu/lcs.py).
//
// One residue c of b updates the bit vector V of a (W 64-bit words, masks M_c of a):
//     V' = (V + (V & M_c)) | (V & ~M_c)
// V + U is one multi-word addition; written as a single add.cc/addc chain it costs one
// 64-bit add per word (two IADD3 on the ALU pipe) instead of an add plus two compares
// for the carry. The two logic ops fold into LOP3s, so a word step is ~4 ALU
// instructions plus one 8-byte shared load.
#pragma once

#include "common.cuh"

#define LCS_ALPHA 20  // only codes 0..19 match (FAMSA's ComputeBitMasks)
#define LCS_PAD 31u   // padding code of packed residues (a zero mask row)

typedef unsigned long long u64;

// s = v + u over W words (little-endian word order), one carry chain.
template <int W>
__device__ __forceinline__ void add_chain(u64 (&s)[W], const u64 (&v)[W], const u64 (&u)[W]);

template <>
__device__ __forceinline__ void add_chain<1>(u64 (&s)[1], const u64 (&v)[1], const u64 (&u)[1]) {
    s[0] = v[0] + u[0];
}

// The asm bodies for W = 2..8: "add.cc" on the lowest word, "addc.cc" in between, "addc" last.
// Operands: %0..%(W-1) the sums, then W words of v, then W words of u.
#define LCS_ADD_ASM2 "add.cc.u64 %0, %2, %4;\n\taddc.u64 %1, %3, %5;"
#define LCS_ADD_ASM3 \
    "add.cc.u64 %0, %3, %6;\n\taddc.cc.u64 %1, %4, %7;\n\taddc.u64 %2, %5, %8;"
#define LCS_ADD_ASM4                                                                        \
    "add.cc.u64 %0, %4, %8;\n\taddc.cc.u64 %1, %5, %9;\n\taddc.cc.u64 %2, %6, %10;\n\t" \
    "addc.u64 %3, %7, %11;"
#define LCS_ADD_ASM5                                                                           \
    "add.cc.u64 %0, %5, %10;\n\taddc.cc.u64 %1, %6, %11;\n\taddc.cc.u64 %2, %7, %12;\n\t" \
    "addc.cc.u64 %3, %8, %13;\n\taddc.u64 %4, %9, %14;"
#define LCS_ADD_ASM6                                                                            \
    "add.cc.u64 %0, %6, %12;\n\taddc.cc.u64 %1, %7, %13;\n\taddc.cc.u64 %2, %8, %14;\n\t" \
    "addc.cc.u64 %3, %9, %15;\n\taddc.cc.u64 %4, %10, %16;\n\taddc.u64 %5, %11, %17;"
#define LCS_ADD_ASM7                                                                             \
    "add.cc.u64 %0, %7, %14;\n\taddc.cc.u64 %1, %8, %15;\n\taddc.cc.u64 %2, %9, %16;\n\t"  \
    "addc.cc.u64 %3, %10, %17;\n\taddc.cc.u64 %4, %11, %18;\n\taddc.cc.u64 %5, %12, %19;\n\t" \
    "addc.u64 %6, %13, %20;"
#define LCS_ADD_ASM8                                                                              \
    "add.cc.u64 %0, %8, %16;\n\taddc.cc.u64 %1, %9, %17;\n\taddc.cc.u64 %2, %10, %18;\n\t"  \
    "addc.cc.u64 %3, %11, %19;\n\taddc.cc.u64 %4, %12, %20;\n\taddc.cc.u64 %5, %13, %21;\n\t" \
    "addc.cc.u64 %6, %14, %22;\n\taddc.u64 %7, %15, %23;"

#define LCS_OUT2 "=l"(s[0]), "=l"(s[1])
#define LCS_OUT3 LCS_OUT2, "=l"(s[2])
#define LCS_OUT4 LCS_OUT3, "=l"(s[3])
#define LCS_OUT5 LCS_OUT4, "=l"(s[4])
#define LCS_OUT6 LCS_OUT5, "=l"(s[5])
#define LCS_OUT7 LCS_OUT6, "=l"(s[6])
#define LCS_OUT8 LCS_OUT7, "=l"(s[7])
#define LCS_IN2(x) "l"(x[0]), "l"(x[1])
#define LCS_IN3(x) LCS_IN2(x), "l"(x[2])
#define LCS_IN4(x) LCS_IN3(x), "l"(x[3])
#define LCS_IN5(x) LCS_IN4(x), "l"(x[4])
#define LCS_IN6(x) LCS_IN5(x), "l"(x[5])
#define LCS_IN7(x) LCS_IN6(x), "l"(x[6])
#define LCS_IN8(x) LCS_IN7(x), "l"(x[7])

#define LCS_ADD_CHAIN(N)                                                                              \
    template <>                                                                                       \
    __device__ __forceinline__ void add_chain<N>(u64(&s)[N], const u64(&v)[N], const u64(&u)[N]) { \
        asm(LCS_ADD_ASM##N : LCS_OUT##N : LCS_IN##N(v), LCS_IN##N(u));                               \
    }
LCS_ADD_CHAIN(2)
LCS_ADD_CHAIN(3)
LCS_ADD_CHAIN(4)
LCS_ADD_CHAIN(5)
LCS_ADD_CHAIN(6)
LCS_ADD_CHAIN(7)
LCS_ADD_CHAIN(8)

// The largest W with an add chain.
#define LCS_CHAIN_MAX 8

// One residue's update of V (W words in registers) with that residue's masks m[0..W).
// Past LCS_CHAIN_MAX words the carry goes by compares (register kernels up to 32 words).
// This form takes the residue's masks already loaded (mw), so a caller can load the
// next residue's masks while this one computes.
template <int W>
__device__ __forceinline__ void lcs_step_loaded(u64 (&v)[W], const u64 (&mw)[W]) {
    u64 u[W], s[W];
#pragma unroll
    for (int w = 0; w < W; ++w) u[w] = v[w] & mw[w];
    if constexpr (W <= LCS_CHAIN_MAX) {
        add_chain<W>(s, v, u);
    } else {
        u64 carry = 0ull;
#pragma unroll
        for (int w = 0; w < W; ++w) {
            const u64 s1 = v[w] + u[w];
            s[w] = s1 + carry;
            carry = (u64)((s1 < v[w]) | (s[w] < s1));
        }
    }
#pragma unroll
    for (int w = 0; w < W; ++w) v[w] = s[w] | (v[w] & ~mw[w]);
}

template <int W>
__device__ __forceinline__ void load_masks(u64 (&mw)[W], const u64* m) {
#pragma unroll
    for (int w = 0; w < W; ++w) mw[w] = m[w];
}

template <int W>
__device__ __forceinline__ void lcs_step(u64 (&v)[W], const u64* m) {
    u64 mw[W];
    load_masks<W>(mw, m);
    lcs_step_loaded<W>(v, mw);
}

// The same update with V in strided global scratch (v[w * stride]) and the carry by compares;
// mask(w) gives the residue's mask word w (a row of masks, or mask planes).
template <class Mask>
__device__ __forceinline__ void lcs_step_scratch(u64* v, long long stride, long long words, Mask mask) {
    u64 carry = 0ull;
    for (long long w = 0; w < words; ++w) {
        const u64 mw = mask(w);
        const u64 xw = v[w * stride];
        const u64 u = xw & mw;
        const u64 s1 = xw + u;
        const u64 s2 = s1 + carry;
        carry = (u64)((s1 < xw) | (s2 < s1));
        v[w * stride] = s2 | (xw & ~mw);
    }
}

// Zeros of V's word w below bit la (that word's share of the LCS length).
__device__ __forceinline__ long long count_lcs(u64 x, long long w, long long la) {
    x = ~x;
    const long long bits = la - 64 * w;
    if (bits <= 0) return 0;
    if (bits < 64) x &= (1ull << bits) - 1ull;
    return __popcll(x);
}

// FAMSA's indel075_div_lcs from the LCS; x^0.75 from the host-built table (see lcs_distance.cu).
__device__ __forceinline__ double lcs_distance(long long lcs, long long la, long long lb, const double* pow075) {
    if (lcs == 0) return 2.0 * __ldg(&pow075[la + lb]);
    return __ldg(&pow075[la + lb - 2 * lcs]) / (double)lcs;
}

// ---- The packed layout. Sequences ("positions") are packed 16 residues a uint4 in
// warp-interleaved sections: pk4[sec_off[P / 32] / 4 + q * 32 + P % 32] holds residues
// 16q..16q+15 of position P (4 a word, low byte first, padded with LCS_PAD), so a warp's
// load is one 512-byte run, and each thread loads the next uint4 while it works on this one.
//
// The packed kernels' masks are mask planes: word w of code c's mask is planes[64 w + c] (low
// half) and planes[64 w + 32 + c] (high half). A plane's 32 codes fill the 32 banks of shared
// memory once, so a warp's load of any mix of codes is one wavefront without a conflict (rows of
// W 64-bit words put codes c and c + 32 / gcd(2W, 32) in one bank: 16 codes share 2 banks at W = 8).
// Codes LCS_ALPHA..31 have zero masks, and a zero mask leaves V unchanged, so padding and
// non-matching residues need no branch.

__device__ __forceinline__ u64 plane_word(const unsigned* planes, unsigned c, int w) {
    return ((u64)planes[64 * w + 32 + c] << 32) | planes[64 * w + c];
}

template <int W>
__device__ __forceinline__ void load_planes(u64 (&mw)[W], const unsigned* planes, unsigned c) {
#pragma unroll
    for (int w = 0; w < W; ++w) mw[w] = plane_word(planes, c, w);
}

// The mask planes of the sequence res[0..la) over `words` words, a warp a word: its lanes hold
// the word's 64 residues, one ballot pair per code sets that code's bits, and lane c writes
// code c's two halves (zero for c >= LCS_ALPHA). blockDim.x a multiple of 32; every thread calls.
__device__ __forceinline__ void build_planes(unsigned* planes, const unsigned char* __restrict__ res, long long la,
                                             int words) {
    const int lane = threadIdx.x & 31;
    for (int w = threadIdx.x >> 5; w < words; w += blockDim.x >> 5) {
        const long long i = 64ll * w + lane;
        const unsigned c0 = i < la ? res[i] : 0xffu, c1 = i + 32 < la ? res[i + 32] : 0xffu;
        unsigned lo = 0u, hi = 0u;
#pragma unroll
        for (int c = 0; c < LCS_ALPHA; ++c) {
            const unsigned l = __ballot_sync(0xffffffffu, c0 == (unsigned)c);
            const unsigned h = __ballot_sync(0xffffffffu, c1 == (unsigned)c);
            if (lane == c) lo = l, hi = h;
        }
        planes[64 * w + lane] = lo;
        planes[64 * w + 32 + lane] = hi;
    }
}

// LCS of a (mask planes of W words in shared memory) with the packed sequence at pk4 (stride 32
// uint4), nq uint4 of residues; V in registers. The next uint4 is loaded a whole uint4 ahead
// and each residue's masks one residue ahead, so neither load waits on V's chain.
template <int W>
__device__ __forceinline__ long long lcs_packed(const unsigned* planes, const uint4* __restrict__ pk4, int nq,
                                              long long la) {
    u64 v[W];
#pragma unroll
    for (int w = 0; w < W; ++w) v[w] = ~0ull;
    uint4 next = nq > 0 ? __ldg(&pk4[0]) : make_uint4(0u, 0u, 0u, 0u);
    u64 m[W];
    load_planes<W>(m, planes, next.x & 31u);
    for (int q = 0; q < nq; ++q) {
        const unsigned x[4] = {next.x, next.y, next.z, next.w};
        if (q + 1 < nq) next = __ldg(&pk4[(q + 1) * 32]);
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            // the residue after r: in this uint4, or the first of the next one
            const unsigned c = r < 15 ? (x[(r + 1) >> 2] >> (8 * ((r + 1) & 3))) & 31u : next.x & 31u;
            u64 m_next[W];
            load_planes<W>(m_next, planes, c);
            lcs_step_loaded<W>(v, m);
#pragma unroll
            for (int w = 0; w < W; ++w) m[w] = m_next[w];
        }
    }
    long long lcs = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) lcs += count_lcs(v[w], w, la);
    return lcs;
}

// pk (as 32-bit words) of positions 0..n_pos holding sequences pos_seq (-1: padding), one
// thread a word: section s = P / 32 spans words sec_off[s] .. sec_off[s + 1], 128 words
// (32 uint4) per 16 residues of its longest position.
extern "C" __global__ void lcs_pack(const unsigned char* __restrict__ codes, const long long* __restrict__ seq_off,
                                     const long long* __restrict__ pos_seq, long long n_pos,
                                     const long long* __restrict__ sec_off, long long n_words,
                                     unsigned* __restrict__ pk) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n_words;
         t += (long long)gridDim.x * blockDim.x) {
        const long long lo = segment_of(sec_off, (n_pos + 31) / 32, t);  // the section of word t
        const long long r = t - sec_off[lo];
        const long long q = r / 128, lane = (r / 4) & 31, first = 16 * q + 4 * (r & 3);
        const long long P = lo * 32 + lane;
        unsigned word = LCS_PAD | (LCS_PAD << 8) | (LCS_PAD << 16) | (LCS_PAD << 24);
        const long long seq = P < n_pos ? pos_seq[P] : -1;
        if (seq >= 0) {
            const long long start = seq_off[seq], len = seq_off[seq + 1] - start;
            for (int k = 0; k < 4; ++k) {
                const long long i = first + k;
                if (i < len) word = (word & ~(0xffu << (8 * k))) | ((unsigned)codes[start + i] << (8 * k));
            }
        }
        pk[t] = word;
    }
}
