// Helpers shared by the kernels. Kept small: constants, the search every flat-index kernel
// starts with, and the one float formula that must round exactly like the CPU oracle
// (msa/backends/cpu/kmers.py).
#pragma once

// Passed with -D by the loader from msa.distances.kmers (msa.kernels.CONSTANTS): KMER_SECTION
// sequences per interleaved section (one warp), KMER_TABLE_SIZE 6-mer codes (6^6), and
// EMPTY_DISTANCE, the distance of a sequence with no 6-mer.
#if !defined(KMER_SECTION) || !defined(KMER_TABLE_SIZE) || !defined(EMPTY_DISTANCE)
#error KMER_SECTION, KMER_TABLE_SIZE and EMPTY_DISTANCE must be passed with -D (msa.kernels.CONSTANTS)
#endif

// The segment s in [0, n) that holds flat index i: offsets[s * stride] <= i < offsets[(s + 1) * stride]
// (ascending starts, offsets[0] <= i; empty segments are skipped, as the last start at or
// before i wins). A binary search, the host's searchsorted(offsets, i, 'right') - 1: column ->
// profile, residue -> merge, word -> section, ticket -> merge (stride: starts inside records).
__device__ __forceinline__ long long segment_of(const long long* __restrict__ offsets, long long n, long long i,
                                                long long stride = 1) {
    long long lo = 0, hi = n;
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (offsets[mid * stride] <= i) lo = mid; else hi = mid;
    }
    return lo;
}

// MAFFT's length-factor constants A, B, C, D (MAFFT's PLENFACA-D and D6LENFACA-D, core/disttbfast.c) of the 6-mer alphabet in use,
// passed at run time as 4 doubles from their one definition (msa.distances.kmers.KmerAlphabet).
struct Lenfac {
    double a, b, c, d;
};

__device__ __forceinline__ Lenfac load_lenfac(const double* __restrict__ lenfac) {
    return Lenfac{lenfac[0], lenfac[1], lenfac[2], lenfac[3]};
}

// MAFFT's PartTree 6-mer distance, capped at cap. Same operations in the same
// order as cpu/kmers.kmer_distance; the loader compiles with --fmad=false, and
// double '/' is IEEE round-to-nearest in CUDA, so every step rounds the same.
__device__ __forceinline__ double kmer_distance(long long common, long long self_a, long long self_b,
                                                long long len_a, long long len_b, double cap, const Lenfac& lf) {
    const long long m = self_a < self_b ? self_a : self_b;
    if (m == 0) return EMPTY_DISTANCE;
    const double ll = (double)(len_a > len_b ? len_a : len_b);
    const double ls = (double)(len_a < len_b ? len_a : len_b);
    double r = ls / ll;
    r = r * lf.d;
    const double q = lf.b / (ll + lf.c);
    const double den = (r + q) + lf.a;
    const double f = 1.0 / den;
    const double s = (double)common / (double)m;
    const double d = (1.0 - s) * f;
    return cap < d ? cap : d;  // Python's min(d, cap)
}
