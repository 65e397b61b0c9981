// exclusive_scan: one level of a multi-level exclusive prefix sum of u32 (modulo 2^32, exact).
// phase 0: each block scans its TILE = WG_X * ITEMS_PER_THREAD elements of `data` in place
//          (exclusive) and writes the tile's total to sums[tile];
// phase 1: each block adds sums[tile] to every element of its tile.
// src/kernels/exclusive_scan.ts chains the levels (scan tiles, scan tile sums, add back).
// Bindings (declared by the preamble generated from src/kernels/exclusive_scan.ts):
//   data: unsigned int*, read and written: the n elements of this level
//   sums: unsigned int*, written: one per tile (max(1, ceil(n / TILE)) elements)
//   u: Uniforms { n, phase }
// Block: WG_X threads, 1-D; blocks spread over x and y (grid1d), flat block id = tile index.
// Phase 0 loads the tile into shared memory coalesced, each thread scans ITEMS_PER_THREAD
// consecutive items serially, then a Hillis-Steele scan over the WG_X thread totals (the same
// steps as the WGSL twin; warp shuffles would be faster but are a bench variant, not the twin).
// Phase 0 with n = 0 still writes sums[0] = 0 (the total of nothing).
#include "grid.cuh"

#define TILE (WG_X * ITEMS_PER_THREAD)

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) exclusive_scan(KERNEL_ARGS) {
  __shared__ unsigned int tile[TILE];
  __shared__ unsigned int partial[WG_X];
  const unsigned long long g = flat_block_id();
  const unsigned int lid = threadIdx.x;
  // ceil(n / TILE) written so that n close to 2^32 cannot overflow.
  const unsigned int tiles = max(1u, u.n / TILE + (u.n % TILE != 0u ? 1u : 0u));
  if (g >= tiles) return;
  const unsigned int base = (unsigned int)g * TILE;

  if (u.phase == 1u) {
    const unsigned int offset = sums[g];
#pragma unroll
    for (unsigned int j = 0; j < ITEMS_PER_THREAD; j++) {
      const unsigned int i = base + lid + j * WG_X;
      if (i < u.n) data[i] = data[i] + offset;
    }
    return;
  }

#pragma unroll
  for (unsigned int j = 0; j < ITEMS_PER_THREAD; j++) {
    const unsigned int i = base + lid + j * WG_X;
    tile[lid + j * WG_X] = i < u.n ? data[i] : 0u;
  }
  __syncthreads();

  unsigned int sum = 0u;
#pragma unroll
  for (unsigned int j = 0; j < ITEMS_PER_THREAD; j++) {
    const unsigned int v = tile[lid * ITEMS_PER_THREAD + j];
    tile[lid * ITEMS_PER_THREAD + j] = sum;
    sum += v;
  }
  partial[lid] = sum;
  __syncthreads();

  for (unsigned int off = 1u; off < WG_X; off <<= 1) {
    const unsigned int v = lid >= off ? partial[lid - off] : 0u;
    __syncthreads();
    partial[lid] += v;
    __syncthreads();
  }

  const unsigned int offset = partial[lid] - sum;
#pragma unroll
  for (unsigned int j = 0; j < ITEMS_PER_THREAD; j++) tile[lid * ITEMS_PER_THREAD + j] += offset;
  __syncthreads();

#pragma unroll
  for (unsigned int j = 0; j < ITEMS_PER_THREAD; j++) {
    const unsigned int i = base + lid + j * WG_X;
    if (i < u.n) data[i] = tile[lid + j * WG_X];
  }
  if (lid == WG_X - 1u) sums[g] = partial[WG_X - 1u];
}
