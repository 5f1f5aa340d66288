// FASTA records written on the GPU: msa.backends.cpu.records.fill_records' counterpart (the CPU oracle), so
// that `msa add` / `msa merge` on the GPU write their output without importing Numba (its
// import, ~0.2-0.3 s of Python holding the GIL, was the largest cost left beside the work).
//
// One block (RECORD_THREADS threads) per record k of a window of the output file: threads
// stride over the header bytes and the wrapped row of gaps (template: the line of `width`
// columns with newlines in place), then, after a barrier, over the residues of sequence
// ids[k], each at its column c: byte c + c / width of the row (one newline per full line before it).
#include "common.cuh"

#ifndef RECORD_THREADS
#error RECORD_THREADS must be passed with -D (msa/backends/cuda/records.py)
#endif

extern "C" __global__ void __launch_bounds__(RECORD_THREADS) fill_records(
    unsigned char* __restrict__ out, const long long* __restrict__ rec_off, const unsigned char* __restrict__ heads,
    const long long* __restrict__ head_off, const unsigned char* __restrict__ tmpl, long long line, long long width,
    const long long* __restrict__ ids, const long long* __restrict__ offsets, const long long* __restrict__ columns,
    const unsigned char* __restrict__ letters) {
    const long long k = blockIdx.x;
    const long long at = rec_off[k], h0 = head_off[k], h = head_off[k + 1] - h0;
    for (long long b = threadIdx.x; b < h; b += RECORD_THREADS) out[at + b] = heads[h0 + b];
    unsigned char* row = out + at + h;
    for (long long b = threadIdx.x; b < line; b += RECORD_THREADS) row[b] = tmpl[b];
    __syncthreads();
    const long long s = ids[k];
    for (long long p = offsets[s] + threadIdx.x; p < offsets[s + 1]; p += RECORD_THREADS) {
        const long long c = columns[p];
        row[c + c / width] = letters[p];
    }
}
