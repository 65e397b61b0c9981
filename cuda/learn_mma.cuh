// Tensor-core microkernel of the learner's matmuls (mlp_forward, mlp_backward; spec constant TF32 = 1).
// A k-group (WG_X x WG_Y = 8 x 16 threads: 4 warps) computes its partial TILE_X x TILE_Y = 32 x 64
// tile P[X][Y] = sum_k Xs[k][X] * Ys[k][Y] from the same k-major staged tiles as the exact path
// (Xs: TILE_K rows of stride sx, Ys: TILE_K rows of stride sy), with mma.sync m16n8k8 TF32:
// M = Y, N = X, K = k. Warp w takes Y 32 * (w & 1) .. + 31 (2 m16 tiles) x X 16 * (w >> 1) .. + 15
// (2 n8 tiles): 4 mma per k8 step, 16 accumulators a lane, as many as the exact path's 4 x 4.
//
// Fragment ownership is permuted so that every operand load is a vector and every lane ends with a
// contiguous 4 x 4 block of P (lane = 4g + t; PTX fragments: a0 (row g, k t), a1 (g + 8, t),
// a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, col g), b1 (k t + 4, g); c0 (g, 2t), c1 (g, 2t + 1),
// c2 (g + 8, 2t), c3 (g + 8, 2t + 1)):
// - row r = g + 8h of m16 tile i is Y = 4g + 2i + h (+ the warp's base): a lane's A values of one k
//   are Ys[k][4g .. 4g + 3], one float4 (.x .y: tile 0's rows g, g + 8; .z .w: tile 1's);
// - column n = c of n8 tile j is X = 2c + j: a lane's B values of one k are Xs[k][2g], Xs[k][2g + 1],
//   one float2 (tile 0, tile 1); its accumulator columns 2t, 2t + 1 are X = 4t + j, 4t + 2 + j;
// - the mma's k columns t and t + 4 are the staged k rows 2t and 2t + 1 (the same permutation of k
//   in A and B leaves every dot product unchanged). With the exact path's padding (row strides
//   of 4 mod 32 floats) the 8 lanes of a float4 phase (g in {0, 1}, t in 0..3) then start at banks
//   8t + 4g, and the 16 lanes of a float2 phase (g in 0..3) at 8t + 2g: no bank conflicts, so the
//   TF32 build keeps SX and SY as they are.
// So thread tid of the group owns the block X = 4 * mma_owner_x(tid) .., Y = 4 * mma_owner_y(tid) ..,
// in acc[r][c] at X + r, Y + c exactly as the exact path's thread (x, y) owns 4x.., 4y..: a
// permutation of the exact path's owners (a bijection of the 128 threads onto the 8 x 16 blocks),
// and the kernels' epilogue (k-group sums in group order through shared memory, split-K slices,
// split dW slices and their last-arriving hand-off, activations, stores, tile sums of squares)
// runs unchanged on these owners: no fragment shuffle is needed.
//
// Numerics: operands rounded to TF32 (10-bit mantissa, nearest, ties away: mlp_tile.cuh's
// tf32_operand, the +0x1000 half-ulp add of the tensor-core builds; the fiber emulator rounds the
// same), products exact, f32 accumulation (in hardware order inside an mma). Per output
// |err| <= ~2^-10 * sum |a| |b| plus the f32 accumulation error, against the exact sum.
// Rows of a ragged last k-tile past the layer's K are staged as zeros in both tiles (the fetches
// load 0 there), so every round runs whole k8 steps.
#pragma once

#include "mlp_tile.cuh"

static_assert(WG_X == 8 && WG_Y == 16 && TILE_X == 32 && TILE_Y == 64 && TILE_K % 8 == 0,
              "the tensor-core path tiles a 32 x 64 tile over the 4 warps of a k-group");

// The 4 x 4 block (X, Y in units of 4) that thread tid (0 .. 127) of a k-group owns in the TF32 build.
__device__ __forceinline__ unsigned int mma_owner_x(unsigned int tid) { return 4u * (tid >> 6) + (tid & 3u); }
__device__ __forceinline__ unsigned int mma_owner_y(unsigned int tid) { return 8u * ((tid >> 5) & 1u) + ((tid >> 2) & 7u); }

// acc[r][c] += sum over the TILE_K staged k of Xs[k][X + r] * Ys[k][Y + c], X, Y = thread tid's block
// (mma_owner_x / _y), TF32 products. Every thread of the k-group calls it (mma.sync is warp-wide).
// Unroll: k8 steps unrolled (TILE_K / 8: all, the loads of every step issued together; 1: one step
// at a time, 12 fewer live registers: mlp_backward's 64-register budget of 2 blocks per SM spilled
// 96 bytes a thread unrolled, none so).
template <unsigned int Unroll>
__device__ __forceinline__ void mma_k_tile(float (&acc)[4][4], const float* xs, unsigned int sx, const float* ys,
                                           unsigned int sy, unsigned int tid) {
  const unsigned int g = (tid >> 2) & 7u;
  const unsigned int t = tid & 3u;
  const float* xw = xs + 16u * (tid >> 6) + 2u * g;
  const float* yw = ys + 32u * ((tid >> 5) & 1u) + 4u * g;
#pragma unroll Unroll
  for (unsigned int k8 = 0; k8 < TILE_K; k8 += 8u) {
    const unsigned int k = k8 + 2u * t;
    const float4 ylo = lds4(yw + k * sy);  // 16-byte aligned (the emulator checks)
    const float4 yhi = lds4(yw + (k + 1u) * sy);
    const float2 xlo = *reinterpret_cast<const float2*>(xw + k * sx);
    const float2 xhi = *reinterpret_cast<const float2*>(xw + (k + 1u) * sx);
    const unsigned int a[2][4] = {
        {tf32_operand(ylo.x), tf32_operand(ylo.y), tf32_operand(yhi.x), tf32_operand(yhi.y)},
        {tf32_operand(ylo.z), tf32_operand(ylo.w), tf32_operand(yhi.z), tf32_operand(yhi.w)}};
    const unsigned int b[2][2] = {{tf32_operand(xlo.x), tf32_operand(xhi.x)},
                                  {tf32_operand(xlo.y), tf32_operand(xhi.y)}};
#pragma unroll
    for (unsigned int i = 0; i < 2u; i++) {
#pragma unroll
      for (unsigned int j = 0; j < 2u; j++) {
        // d[2h + e] is row g + 8h (Y + 2i + h), column 2t + e (X + 2e + j).
        float d[4] = {acc[j][2u * i], acc[2u + j][2u * i], acc[j][2u * i + 1u], acc[2u + j][2u * i + 1u]};
        mma_tf32_16x8x8(d, a[i], b[j]);
        acc[j][2u * i] = d[0];
        acc[2u + j][2u * i] = d[1];
        acc[j][2u * i + 1u] = d[2];
        acc[2u + j][2u * i + 1u] = d[3];
      }
    }
  }
}
