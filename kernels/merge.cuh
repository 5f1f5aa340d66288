// Device code shared by the merge kernels (FAMSA 2's profile-profile Gotoh DP, integer-exact with
// msa/backends/cpu/align.py): merge_dp.cu (the DP and its traceback), build_parent.cu (parent
// profiles and column maps from the paths) and sequence_profile.cu (a sequence against a
// profile: dp_rows, and msa add's residue slots). One merge record (int64 fields I_*, filled by
// the host and by merge_info) per merge; scores are int64 with -inf = -2**62, the same formulas
// and comparison order as dp_path, so ties resolve identically. Gap costs are per merge: g holds
// 4 int64 (open, extend, term_open, term_extend) for each merge q of the piece, at g + 4 * q.
//
// Passed with -D by the loader (msa.kernels.CONSTANTS, msa/backends/cuda/align.py's loads):
// NRES residue codes, NCNT counters a profile column, C_GO .. C_TGE the gap counters' places,
// N_INFO int64 fields a merge record.
#pragma once

#include "common.cuh"

#if !defined(NRES) || !defined(NCNT) || !defined(C_GO) || !defined(C_GE) || !defined(C_TGO) || !defined(C_TGE)
#error NRES, NCNT, C_GO, C_GE, C_TGO and C_TGE must be passed with -D (msa.kernels.CONSTANTS)
#endif
#ifndef N_INFO
#error N_INFO must be passed with -D (msa/backends/cuda/align.py)
#endif

#define NEG_INF (-(1LL << 62))
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
#define I_ROWS 8    // offset of the merge's boundary row buffers (one or more of w1 + 1 entries)
#define I_TICK 9    // dp_pipe: ticket of the merge's first chunk
#define I_PATH 10   // offset of the merge's path (w1 + w2 bytes)
#define I_SC 11     // dp_pipe: offset of the merge's cell scores (w1 * w2 int64, row-major)

__device__ __forceinline__ long long mx(long long a, long long b) { return a > b ? a : b; }
// A candidate FAMSA does not allow at this cell: below every reachable score, never wins.
#define EXCLUDED (-9223372036854775807LL - 1)

// Gap costs (4 per merge) and the column terms of a piece (column_setup's outputs), read by every fill block.
#define DP_COLUMN_PARAMS                                                                                 \
    const long long* __restrict__ g, const long long* __restrict__ gapc,                                 \
    const long long* __restrict__ res, const long long* __restrict__ start,                              \
    const long long* __restrict__ cont, const long long* __restrict__ retype,                            \
    const long long* __restrict__ s2, const int* __restrict__ nnz,                                       \
    const unsigned char* __restrict__ codes, const int* __restrict__ mult
#define DP_COLUMN_ARGS g, gapc, res, start, cont, retype, s2, nnz, codes, mult
#define DP_FILL_PARAMS                                                                                   \
    const long long* __restrict__ info, DP_COLUMN_PARAMS, long long *rowD, long long *rowH,              \
    long long *rowV, unsigned long long *dirs, long long *final3
#define DP_FILL_ARGS info, DP_COLUMN_ARGS, rowD, rowH, rowV, dirs, final3
