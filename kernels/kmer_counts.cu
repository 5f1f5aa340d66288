// Shared-6-mer counts and MAFFT 6-mer distances between struct arrays (msa/distances/kmers.py).
//
// Data: every sequence is a sorted list of (6-mer code, count) runs. The kernels
// read *members* from a per-call repacked copy (`repack`): the call's members, in
// the order the call wants them, cut into sections of 32 consecutive positions,
// entry e of position p at sec_off[p/32] + 32*e + p%32, one 32-bit word
// (code << 16 | count). A warp therefore reads 32 consecutive words per entry
// (coalesced), which the global layout cannot give for a node's scattered subset.
// References (and a matrix row's sequence) are read once from the global layout
// into a dense table in shared memory.
//
// nearest_reference: one block per chunk of up to blockDim members of one node,
// one thread per member (members sorted by run count, so a warp's loops end
// together). The block walks the node's references in tiles of 4: their dense
// tables share one 46656-word shared array, reference j of the tile in byte j
// (8-bit counts, 182 KB: one block per SM, 32 warps). A member entry costs one
// coalesced global word, one shared word and a SIMD byte min (__vminu4) for 4
// references; the byte mins are summed in 16-bit lanes (two words, flushed every
// 256 entries), so no lane can overflow. Counts above 255 saturate in the
// table; where a member's count is also above 255 (a long low-complexity run,
// rare), the exact reference count is found by binary search in the reference's
// sorted runs, so the sum is exact. The distance and the running minimum (strict
// '<', tiles and bytes in reference order: ties to the earlier reference, as the
// CPU) stay in registers; only (index, distance) per member leaves the device.
// Budget per 4 reference-member pairs and entry: 4 B from L2/HBM and one shared
// load; the shared loads (random codes, ~3-4 way bank conflicts) are the limit.
//
// kmer_distance_matrix: grid-stride over rows (group g, sequence i) of
// condensed matrices; the row's sequence in a 16-bit dense table in shared
// memory (91 KB, exact counts, two blocks per SM), threads over j > i reading
// the repacked ids (positions = index into ids).
#include "common.cuh"

#define TILE_REFS 4
#define UNROLL 8  // member entries loaded before any is used (memory-level parallelism)
#ifndef NR_THREADS  // threads (members) per nearest_reference block
#error NR_THREADS must be passed with -D (msa/backends/cuda/kmers.py)
#endif

// ---- Building the struct arrays (msa.distances.kmers layout; CPU oracle: build_kmer_tables) ----
// A piece of sequences at a time; residue offsets are the piece's own (offsets[0] = 0).
// CuPy's sort (thrust, built with CuPy) orders the keys between window_keys and count_runs,
// and the host lays out the sections (section_layout); nothing here needs NVRTC's CuPy ops.

#define KEY_NONE 0x7fffffffffffffffLL  // no window here: sorts after every key

// One thread per residue i. Where i's group is < 6: the 6-mer of i and the next 5 residues of
// its sequence whose group is < 6 (group-6 letters are skipped, as if removed), as the key
// (sequence in the piece) << 16 | code, and one window counted for the sequence; KEY_NONE
// where i is dropped or fewer than 5 kept residues follow it in its sequence.
extern "C" __global__ void window_keys(const unsigned char* __restrict__ codes, long long n_res,
                                       const long long* __restrict__ offsets, long long n_seq,
                                       const unsigned char* __restrict__ groups,
                                       long long* __restrict__ keys,
                                       unsigned long long* __restrict__ windows) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_res) return;
    const long long lo = segment_of(offsets, n_seq, i);  // the residue's sequence
    long long key = KEY_NONE;
    unsigned g = groups[codes[i]];
    if (g < 6) {
        unsigned code = g;
        int kept = 1;
        const long long end = offsets[lo + 1];
        for (long long j = i + 1; kept < 6 && j < end; ++j) {
            g = groups[codes[j]];
            if (g < 6) {
                code = code * 6 + g;
                ++kept;
            }
        }
        if (kept == 6) {
            key = (lo << 16) | code;
            atomicAdd(&windows[lo], 1ull);
        }
    }
    keys[i] = key;
}

// One thread per sequence s of the piece: its sorted keys are keys[wstart[s] .. + windows[s]).
// Without out_code: the number of distinct codes (runs) to n_distinct[s]. With it: the runs,
// (code, count saturated at 65535), to out_code/out_count[run_off[s] ..).
extern "C" __global__ void sequence_runs(const long long* __restrict__ keys, const long long* __restrict__ wstart,
                                         const long long* __restrict__ windows, long long n_seq,
                                         int* __restrict__ n_distinct, const long long* __restrict__ run_off,
                                         unsigned short* __restrict__ out_code,
                                         unsigned short* __restrict__ out_count) {
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n_seq) return;
    const long long a = wstart[s], b = a + windows[s];
    long long prev = -1, run = 0, r = out_code ? run_off[s] : 0;
    int nd = 0;
    for (long long k = a; k < b; ++k) {
        const long long code = keys[k] & 0xffff;
        if (code != prev) {
            if (out_code && run) {
                out_code[r] = (unsigned short)prev;
                out_count[r++] = (unsigned short)(run < 0xffff ? run : 0xffff);
            }
            prev = code;
            run = 0;
            ++nd;
        }
        ++run;
    }
    if (out_code && run) {
        out_code[r] = (unsigned short)prev;
        out_count[r] = (unsigned short)(run < 0xffff ? run : 0xffff);
    }
    if (!out_code) n_distinct[s] = nd;
}

// One thread per sequence of a piece: its runs (from sequence_runs) to the struct arrays,
// entry e at start[s] + 32 e. The arrays come filled with padding (code 0xffff, count 0).
extern "C" __global__ void scatter_runs(const unsigned short* __restrict__ run_code,
                                        const unsigned short* __restrict__ run_count,
                                        const long long* __restrict__ run_off, const long long* __restrict__ start,
                                        long long n_seq, unsigned short* __restrict__ kcodes,
                                        unsigned short* __restrict__ kcounts) {
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n_seq) return;
    const long long a = run_off[s], nd = run_off[s + 1] - a, dst = start[s];
    for (long long e = 0; e < nd; ++e) {
        kcodes[dst + (long long)KMER_SECTION * e] = run_code[a + e];
        kcounts[dst + (long long)KMER_SECTION * e] = run_count[a + e];
    }
}

// Gather the runs of pos_seq[p] (or nothing where -1) into the packed layout.
extern "C" __global__ void repack(const long long* __restrict__ pos_seq, long long n_pos,
                                  const long long* __restrict__ sec_off,
                                  const long long* __restrict__ start, const int* __restrict__ n_distinct,
                                  const unsigned short* __restrict__ kcodes,
                                  const unsigned short* __restrict__ kcounts,
                                  unsigned int* __restrict__ packed) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pos) return;
    const long long seq = pos_seq[p];
    if (seq < 0) return;
    const long long src = start[seq];
    const long long dst = sec_off[p / KMER_SECTION] + p % KMER_SECTION;
    const int nd = n_distinct[seq];
    for (int e = 0; e < nd; ++e) {
        const long long s = src + (long long)KMER_SECTION * e;
        packed[dst + (long long)KMER_SECTION * e] = ((unsigned int)kcodes[s] << 16) | kcounts[s];
    }
}

// Exact count of `code` in a sequence's sorted runs (0 if absent).
__device__ unsigned int exact_count(const unsigned short* __restrict__ kcodes,
                                    const unsigned short* __restrict__ kcounts, long long start, int nd,
                                    unsigned int code) {
    int lo = 0, hi = nd;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (kcodes[start + (long long)KMER_SECTION * mid] < code) lo = mid + 1; else hi = mid;
    }
    if (lo < nd && kcodes[start + (long long)KMER_SECTION * lo] == code)
        return kcounts[start + (long long)KMER_SECTION * lo];
    return 0;
}

// Add one member entry (code << 16 | count) to the byte-lane sums of the tile's references.
__device__ __forceinline__ void count_entry(unsigned int w, const unsigned int* table, int nt,
                                            const long long (&rs)[TILE_REFS], const int (&rn)[TILE_REFS],
                                            const unsigned short* __restrict__ kcodes,
                                            const unsigned short* __restrict__ kcounts,
                                            unsigned int& acc02, unsigned int& acc13, long long (&tot)[TILE_REFS]) {
    const unsigned int code = w >> 16, cm = w & 0xFFFFu;
    const unsigned int t = table[code];
    const unsigned int m = __vminu4(t, (cm < 255 ? cm : 255) * 0x01010101u);
    acc02 += m & 0x00FF00FFu;
    acc13 += (m >> 8) & 0x00FF00FFu;
    if (cm > 255) {  // both counts may exceed the saturated byte: add the exact excess
        for (int j = 0; j < nt; ++j)
            if (((t >> (8 * j)) & 0xFFu) == 255u) {
                const unsigned int cr = exact_count(kcodes, kcounts, rs[j], rn[j], code);
                tot[j] += (long long)(cm < cr ? cm : cr) - 255;
            }
    }
}

__device__ __forceinline__ void flush_lanes(unsigned int& acc02, unsigned int& acc13, long long (&tot)[TILE_REFS]) {
    tot[0] += acc02 & 0xFFFFu; tot[2] += acc02 >> 16;
    tot[1] += acc13 & 0xFFFFu; tot[3] += acc13 >> 16;
    acc02 = acc13 = 0;
}

extern "C" __global__ void __launch_bounds__(NR_THREADS, 1)
nearest_reference(const unsigned int* __restrict__ packed, const long long* __restrict__ sec_off,
                  const long long* __restrict__ chunk_pos, const int* __restrict__ chunk_n,
                  const long long* __restrict__ chunk_node,
                  const long long* __restrict__ pos_seq, const long long* __restrict__ pos_out,
                  const unsigned short* __restrict__ kcodes, const unsigned short* __restrict__ kcounts,
                  const long long* __restrict__ start, const int* __restrict__ n_distinct,
                  const long long* __restrict__ self_scores, const long long* __restrict__ lengths,
                  const long long* __restrict__ ref_ids, const long long* __restrict__ ref_off,
                  double cap, const double* __restrict__ lenfac, int* __restrict__ best,
                  double* __restrict__ best_d) {
    extern __shared__ unsigned int table[];  // KMER_TABLE_SIZE words; byte j = tile reference j
    unsigned char* table8 = reinterpret_cast<unsigned char*>(table);
    for (int w = threadIdx.x; w < KMER_TABLE_SIZE; w += blockDim.x) table[w] = 0;

    const int c = blockIdx.x;
    const bool active = (int)threadIdx.x < chunk_n[c];
    const long long p = chunk_pos[c] + threadIdx.x;
    const long long seq = active ? pos_seq[p] : 0;
    const int nd = active ? n_distinct[seq] : 0;
    const long long base = active ? sec_off[p / KMER_SECTION] + p % KMER_SECTION : 0;
    const long long self_m = self_scores[seq], len_m = lengths[seq];
    const long long node = chunk_node[c];
    const long long r0 = ref_off[node];
    const int n_refs = (int)(ref_off[node + 1] - r0);
    const Lenfac lf = load_lenfac(lenfac);

    double dmin = 1.0 / 0.0;
    int arg = 0;
    for (int t0 = 0; t0 < n_refs; t0 += TILE_REFS) {
        const int nt = min(TILE_REFS, n_refs - t0);
        long long rs[TILE_REFS];
        int rn[TILE_REFS];
#pragma unroll
        for (int j = 0; j < TILE_REFS; ++j) {
            const long long ref = ref_ids[r0 + t0 + min(j, nt - 1)];
            rs[j] = start[ref];
            rn[j] = j < nt ? n_distinct[ref] : 0;
        }
        __syncthreads();  // zeroing (first tile) or clearing (later tiles) is done
        for (int j = 0; j < nt; ++j)
            for (int e = threadIdx.x; e < rn[j]; e += blockDim.x) {
                const long long s = rs[j] + (long long)KMER_SECTION * e;
                const unsigned int cnt = kcounts[s];
                table8[4 * (unsigned int)kcodes[s] + j] = (unsigned char)(cnt < 255 ? cnt : 255);
            }
        __syncthreads();

        if (active) {
            unsigned int acc02 = 0, acc13 = 0;  // 16-bit lanes: refs 0,2 and 1,3
            long long tot[TILE_REFS] = {0, 0, 0, 0};
            int e = 0;
            for (; e + UNROLL <= nd; e += UNROLL) {
                unsigned int w[UNROLL];  // all loads first: UNROLL requests in flight per thread
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) w[u] = packed[base + (long long)KMER_SECTION * (e + u)];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    count_entry(w[u], table, nt, rs, rn, kcodes, kcounts, acc02, acc13, tot);
                if (((e + UNROLL) & 255) == 0) flush_lanes(acc02, acc13, tot);  // <= 256 entries per lane
            }
            for (; e < nd; ++e)  // the tail keeps the count since the last flush <= 255
                count_entry(packed[base + (long long)KMER_SECTION * e], table, nt, rs, rn, kcodes, kcounts,
                            acc02, acc13, tot);
            flush_lanes(acc02, acc13, tot);
#pragma unroll
            for (int j = 0; j < TILE_REFS; ++j) {
                if (j < nt) {
                    const long long ref = ref_ids[r0 + t0 + j];
                    const double d = kmer_distance(tot[j], self_scores[ref], self_m, lengths[ref], len_m, cap, lf);
                    if (d < dmin) { dmin = d; arg = t0 + j; }
                }
            }
        }
        __syncthreads();
        for (int j = 0; j < nt; ++j)
            for (int e = threadIdx.x; e < rn[j]; e += blockDim.x)
                table[kcodes[rs[j] + (long long)KMER_SECTION * e]] = 0;
    }
    if (active) {
        const long long k = pos_out[p];
        best[k] = arg;
        best_d[k] = dmin;
    }
}

__device__ __forceinline__ unsigned int min_count(unsigned int w, const unsigned short* table16) {
    const unsigned int cb = w & 0xFFFFu, ca = table16[w >> 16];
    return cb < ca ? cb : ca;
}

extern "C" __global__ void kmer_distance_matrix(
        const unsigned int* __restrict__ packed, const long long* __restrict__ sec_off,
        const long long* __restrict__ ids, const long long* __restrict__ group_off,
        const long long* __restrict__ row_group, const long long* __restrict__ row_index, long long n_rows,
        const long long* __restrict__ out_off,
        const unsigned short* __restrict__ kcodes, const unsigned short* __restrict__ kcounts,
        const long long* __restrict__ start, const int* __restrict__ n_distinct,
        const long long* __restrict__ self_scores, const long long* __restrict__ lengths,
        double cap, const double* __restrict__ lenfac, double* __restrict__ out) {
    extern __shared__ unsigned short table16[];  // KMER_TABLE_SIZE exact (uint16) counts
    const Lenfac lf = load_lenfac(lenfac);
    for (int w = threadIdx.x; w < KMER_TABLE_SIZE; w += blockDim.x) table16[w] = 0;
    for (long long row = blockIdx.x; row < n_rows; row += gridDim.x) {
        const long long g = row_group[row], i = row_index[row];
        const long long b0 = group_off[g];
        const long long s = group_off[g + 1] - b0;
        const long long a = ids[b0 + i];
        const long long as = start[a];
        const int an = n_distinct[a];
        __syncthreads();  // zeroing or the previous row's clearing is done
        for (int e = threadIdx.x; e < an; e += blockDim.x) {
            const long long q = as + (long long)KMER_SECTION * e;
            table16[kcodes[q]] = kcounts[q];
        }
        __syncthreads();
        const long long o = out_off[g] + i * s - i * (i + 1) / 2 - i - 1;  // o + j: condensed_index, msa/distances/condensed.py
        for (long long j = i + 1 + threadIdx.x; j < s; j += blockDim.x) {
            const long long p = b0 + j;
            const long long b = ids[p];
            const int nd = n_distinct[b];
            const long long base = sec_off[p / KMER_SECTION] + p % KMER_SECTION;
            long long common = 0;
            int e = 0;
            for (; e + UNROLL <= nd; e += UNROLL) {
                unsigned int w[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) w[u] = packed[base + (long long)KMER_SECTION * (e + u)];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) common += min_count(w[u], table16);
            }
            for (; e < nd; ++e) common += min_count(packed[base + (long long)KMER_SECTION * e], table16);
            out[o + j] = kmer_distance(common, self_scores[a], self_scores[b], lengths[a], lengths[b], cap, lf);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < an; e += blockDim.x) table16[kcodes[as + (long long)KMER_SECTION * e]] = 0;
    }
}
