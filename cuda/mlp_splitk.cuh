// Split-K tensor-core engine for tiny tiles (collect_dqn at small N, constant SPLITK = 1 with TF32 = 1):
// Y[R, Out] = act(X[R, In] W^T + b) for R <= 16 rows (1-2 episodes per block), built for latency,
// not throughput. At N = 128 a block owns one episode and every layer is a chain of dependent steps
// (weight loads from L2, mma, barriers); the block-wide tile engine (mlp_tile.cuh DenseMma) gives
// each of 8 warps 4 column tiles and the whole K, so each accumulator is a chain of 2 * K / 16 mma
// behind K / 16 rounds of weight loads. Here:
// - a warp task is WN column tiles (n8) x one K slice of KS k16 steps; the plan (splitk_plan) picks
//   WN in {1, 2, 4} and the number of K slices so that every warp of the block has a task and the
//   per-lane chain (WN * KS weight float4s, 2 * KS mma per accumulator) is short;
// - a warp issues all its weight loads of a chunk (up to 16 float4 per lane, 8 at 1024 threads)
//   before its first mma, so a whole slice is in flight at once;
// - each slice's partial sums go to shared memory (part, [KSPLIT][R][NT * 8]); after one barrier the
//   block adds them in slice order (fixed order: deterministic), adds the bias, activates, stores.
// - a layer may take two weight matrices side by side (columns < SPLIT from W1 on input columns
//   [0, IN1), the rest from W2 on [K2, K2 + IN2), zero elsewhere): the dueling streams' hidden layers
//   run as one 256-output layer and value.1 ++ advantage.1 as one 46-output layer over K = 256
//   (block-structured weights: the zero half of each column is never loaded), one phase each.
//
// Bindings as mlp_tile.cuh (flat network buffer in global memory, activations in shared memory with
// zero padding columns up to round16(In)); `part` is SplitK::PART floats of shared memory no layer
// input or output aliases. Every thread of the block calls a layer; layer() ends with its outputs
// written, the caller puts block_sync() before their readers. In place (y == x) is allowed: all
// reads of x happen before the layer's internal barrier.
//
// Numerics: TF32 inputs (cvt.rna equivalent, as mlp_tile.cuh), f32 accumulation in a different
// order than the TS reference (slices, then in slice order); ~1e-3 relative per layer, as DenseMma.
#pragma once

#include "mlp_tile.cuh"

// Warp task plan of a layer with NT column tiles and K16 k16 steps on `warps` warps: WN * 16 +
// KSPLIT of the cheapest (WN, KSPLIT) with every task on its own warp, cost = the per-lane chain
// (WN * K16 / KSPLIT weight loads and k steps) + 2 per slice (the partial sums the reduction adds).
// 0: no plan fits (fewer than NT / 4 warps).
__host__ __device__ constexpr int splitk_plan(int nt, int k16, int warps) {
  int best = 0, cost = 1 << 30;
  for (int wn = 1; wn <= 4; wn *= 2) {
    const int ng = (nt + wn - 1) / wn;
    for (int ks = 1; ks <= k16 && ks <= 8; ks++) {
      if (k16 % ks != 0 || ng * ks > warps) continue;
      const int c = wn * (k16 / ks) + 2 * ks;
      if (c < cost) {
        cost = c;
        best = wn * 16 + ks;
      }
    }
  }
  return best;
}

// Largest divisor of ks that is <= cap (k16 steps whose loads a lane issues at once).
__host__ __device__ constexpr int splitk_chunk(int ks, int cap) {
  int c = cap < 1 ? 1 : cap > ks ? ks : cap;
  while (ks % c != 0) c--;
  return c;
}

template <int In, int Out, int Act, int R, int W1, int B1, int IN1, int SPLIT = Out, int W2 = 0, int B2 = 0,
          int IN2 = IN1, int K2 = 0, int Flags = 0>
struct DenseSplitK {
  static_assert(R >= 1 && R <= 16, "the split-K engine holds one m16 tile of rows (<= 16 episodes per block)");
  static constexpr int WARPS = COLLECT_THREADS / 32;
  static constexpr int K16 = (In + 15) / 16;
  static constexpr int NT = (Out + 7) / 8;
  static constexpr int PLAN = splitk_plan(NT, K16, WARPS);
  static_assert(PLAN != 0, "split-K layer: too few warps for its column tiles (more threads per block)");
  static constexpr int WN = PLAN / 16;
  static constexpr int KSPLIT = PLAN % 16;
  static constexpr int NG = (NT + WN - 1) / WN;
  static constexpr int KS = K16 / KSPLIT;
  // Weight float4s a lane keeps in flight: 64 registers, 32 where 1024 threads leave 64 in all.
  static constexpr int CH = splitk_chunk(KS, (COLLECT_THREADS >= 1024 ? 8 : 16) / WN);
  static constexpr int LDP = NT * 8;
  static constexpr int PART = KSPLIT * R * LDP;
  static constexpr bool VEC = IN1 % 4 == 0 && W1 % 4 == 0 &&
                              (SPLIT >= Out || (IN2 % 4 == 0 && W2 % 4 == 0 && K2 % 4 == 0));

  // Four consecutive weights of column col at inputs kk .. kk + 3 (zero outside the column's range).
  static COLLECT_MEMBER float4 weights(const float* __restrict__ p, int col, int kk) {
    float4 w = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (col >= Out) return w;
    const bool first = col < SPLIT;
    const int lo = first ? 0 : K2;
    const int len = first ? IN1 : IN2;
    const int row = first ? W1 + col * IN1 : W2 + (col - SPLIT) * IN2;
    if constexpr (VEC) {
      if (kk >= lo && kk < lo + len) w = ldg4(p + row + (kk - lo));
    } else {
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 4; i++)
        if (kk + i >= lo && kk + i < lo + len) v[i] = ldg1(p + row + (kk + i - lo));
      w = make_float4(v[0], v[1], v[2], v[3]);
    }
    return w;
  }

  static COLLECT_MEMBER float bias(const float* __restrict__ p, int col) {
    return col < SPLIT ? ldg1(p + B1 + col) : ldg1(p + B2 + (col - SPLIT));
  }

  static COLLECT_MEMBER unsigned a_operand(float x) {
    if constexpr ((Flags & TF32_IN) != 0)
      return __float_as_uint(x);
    else
      return tf32_operand(x);
  }

  // This warp's slice: its partial sums into part (rows < R only).
  static COLLECT_MEMBER void compute(const float* __restrict__ p, const float* x, int ldx, float* part) {
    const int warp = (int)(threadIdx.x >> 5);
    if (warp >= NG * KSPLIT) return;
    const int ng = warp % NG, ks = warp / NG;
    const int n0 = ng * WN * 8;
    const int lane = lane_id();
    const int g = lane >> 2;
    const int t = lane & 3;
    float c[WN][4];
#pragma unroll
    for (int n = 0; n < WN; n++)
#pragma unroll
      for (int i = 0; i < 4; i++) c[n][i] = 0.0f;
#pragma unroll
    for (int c0 = 0; c0 < KS; c0 += CH) {
      float4 w[CH][WN];
#pragma unroll
      for (int s = 0; s < CH; s++)
#pragma unroll
        for (int n = 0; n < WN; n++) w[s][n] = weights(p, n0 + n * 8 + g, (ks * KS + c0 + s) * 16 + 4 * t);
#pragma unroll
      for (int s = 0; s < CH; s++) {
        const int kk = (ks * KS + c0 + s) * 16 + 4 * t;
        const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float4 lo = g < R ? lds4(x + g * ldx + kk) : zero;
        const float4 hi = g + 8 < R ? lds4(x + (g + 8) * ldx + kk) : zero;
        const unsigned a0[4] = {a_operand(lo.x), a_operand(hi.x), a_operand(lo.y), a_operand(hi.y)};
        const unsigned a1[4] = {a_operand(lo.z), a_operand(hi.z), a_operand(lo.w), a_operand(hi.w)};
#pragma unroll
        for (int n = 0; n < WN; n++) {
          const unsigned b0[2] = {tf32_operand(w[s][n].x), tf32_operand(w[s][n].y)};
          const unsigned b1[2] = {tf32_operand(w[s][n].z), tf32_operand(w[s][n].w)};
          mma_tf32_16x8x8(c[n], a0, b0);
          mma_tf32_16x8x8(c[n], a1, b1);
        }
      }
    }
#pragma unroll
    for (int n = 0; n < WN; n++)
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int row = g + (i >= 2 ? 8 : 0);
        const int col = n0 + n * 8 + 2 * t + (i & 1);
        if (row < R && col < LDP) part[(ks * R + row) * LDP + col] = c[n][i];
      }
  }

  // Slices added in order, bias, activation, store (after the barrier that completes part).
  static COLLECT_MEMBER void store(const float* __restrict__ p, const float* part, float* y, int ldy) {
    for (int task = threadIdx.x; task < R * Out; task += COLLECT_THREADS) {
      const int r = task / Out, j = task % Out;
      float s = part[r * LDP + j];
#pragma unroll
      for (int k = 1; k < KSPLIT; k++) s += part[(k * R + r) * LDP + j];
      const float v = activate<Act>(s + bias(p, j));
      y[r * ldy + j] = (Flags & TF32_OUT) != 0 ? tf32_round(v) : v;
    }
  }
};

// One split-K layer: slices, barrier, reduction into y (y may be x).
template <class Layer>
COLLECT_LAYER void splitk_layer(const float* __restrict__ p, const float* x, int ldx, float* y, int ldy, float* part) {
  Layer::compute(p, x, ldx, part);
  block_sync();
  Layer::store(p, part, y, ldy);
}
