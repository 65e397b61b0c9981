// mlp_chain_forward: the forward of consecutive layers of ONE chain network in one launch, a tile
// of ROWS rows per block kept in shared memory from layer to layer. Layer c < layers:
//   acts[yOff_c + b * out_c + o] = act_c(params[bOff_c + o] + sum_i params[wOff_c + o * in_c + i] * x_c[b, i])
// x_0 = the rows at acts[xOff] (in0 wide), x_c = layer c - 1's outputs (in_c = out_{c-1}).
// Bindings (declared by the preamble generated from src/kernels/mlp_chain_forward.ts):
//   params: const float*: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: float*: the first input rows at xOff, each layer's output rows at yOff_c (disjoint)
//   u: Uniforms { batch, layers, xOff, in0, then per layer c < 4: out, wOff, bOff, yOff, act }
//      (act: 0 none, 1 relu, 2 leaky 0.01; widths <= MAX_WIDTH)
// Block b owns rows b * ROWS ..; its THREADS = MAX_WIDTH threads take each layer as G k-groups of
// out_c threads (G the largest power of two with G * out_c <= THREADS and G <= the input's CHUNKs):
// thread (g, o) adds output o's products over input slice g (whole CHUNKs of inputs, increasing i)
// for all ROWS rows, reading each weight once from global memory (the small layers stay in L2;
// the next CHUNK of weights is loaded while this one multiplies) and the rows' inputs from shared
// memory (one address for the whole warp: a broadcast). Group 0 starts at the bias; groups 1.. park
// their sums in the tile (free once every thread has read it) and group 0 adds them in group order,
// activates, and writes the outputs to the tile (the next layer's input) and to acts.
// Numerics: f32, a fixed order (the same bits every run); NVRTC fuses multiply-adds and the sum is
// split by groups, so the twins agree with the TS reference's single running sum to a tolerance.
#include "grid.cuh"
#include "learn_common.cuh"

#define THREADS (WG_X * WG_Y * WG_Z)

struct ChainLayer {
  unsigned int n_out, w_off, b_off, y_off, act;
};

__device__ __forceinline__ ChainLayer chain_layer(const Uniforms& u, unsigned int c) {
  if (c == 0u) return ChainLayer{u.out0, u.wOff0, u.bOff0, u.yOff0, u.act0};
  if (c == 1u) return ChainLayer{u.out1, u.wOff1, u.bOff1, u.yOff1, u.act1};
  if (c == 2u) return ChainLayer{u.out2, u.wOff2, u.bOff2, u.yOff2, u.act2};
  return ChainLayer{u.out3, u.wOff3, u.bOff3, u.yOff3, u.act3};
}

// k-groups of a layer (src/kernels/mlp_chain_forward.ts: chainGroups).
__device__ __forceinline__ unsigned int chain_groups(unsigned int n_in, unsigned int n_out) {
  const unsigned int chunks = (n_in + CHUNK - 1u) / CHUNK;
  unsigned int g = 1u;
  while (2u * g * n_out <= THREADS && 2u * g <= chunks) g *= 2u;
  return g;
}

// acc[r] += sum over i in [k, k_end) of w[i] * tile[r * n_in + i], i increasing (k a multiple of
// CHUNK). WVEC: the weight row is 16-byte aligned (float4 loads); XVEC: so are the tile's rows (n_in
// a multiple of 4: float4 reads of the inputs).
template <bool WVEC, bool XVEC>
__device__ __forceinline__ void chain_dot(float (&acc)[ROWS], const float* __restrict__ w, const float* tile,
                                          unsigned int n_in, unsigned int k, unsigned int k_end) {
  float wn[CHUNK];
  auto load = [&](unsigned int k0) {
    if (WVEC) {
#pragma unroll
      for (unsigned int q = 0; q < CHUNK; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(w + k0 + q);
        wn[q] = v.x;
        wn[q + 1] = v.y;
        wn[q + 2] = v.z;
        wn[q + 3] = v.w;
      }
    } else {
#pragma unroll
      for (unsigned int q = 0; q < CHUNK; q++) wn[q] = w[k0 + q];
    }
  };
  if (k + CHUNK <= k_end) load(k);
  for (; k + CHUNK <= k_end; k += CHUNK) {
    float wr[CHUNK];
#pragma unroll
    for (unsigned int q = 0; q < CHUNK; q++) wr[q] = wn[q];
    if (k + 2u * CHUNK <= k_end) load(k + CHUNK);
#pragma unroll
    for (unsigned int r = 0; r < ROWS; r++) {
      const float* x = tile + r * n_in + k;
      if (XVEC) {
#pragma unroll
        for (unsigned int q = 0; q < CHUNK; q += 4) {
          const float4 xv = *reinterpret_cast<const float4*>(x + q);
          acc[r] += wr[q] * xv.x;
          acc[r] += wr[q + 1] * xv.y;
          acc[r] += wr[q + 2] * xv.z;
          acc[r] += wr[q + 3] * xv.w;
        }
      } else {
#pragma unroll
        for (unsigned int q = 0; q < CHUNK; q++) acc[r] += wr[q] * x[q];
      }
    }
  }
  // A ragged last chunk.
  for (; k < k_end; k++) {
    const float wk = w[k];
#pragma unroll
    for (unsigned int r = 0; r < ROWS; r++) acc[r] += wk * tile[r * n_in + k];
  }
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) mlp_chain_forward(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(THREADS == MAX_WIDTH, "one thread per output of the widest layer");
  static_assert(CHUNK % 4 == 0, "float4 reads of whole chunks");
  __shared__ __align__(16) float tile[ROWS * MAX_WIDTH];
  const unsigned long long block = flat_block_id();
  if (block * ROWS >= u.batch) return;  // the whole block: no barrier is skipped by part of it
  const unsigned int row0 = (unsigned int)block * ROWS;
  const unsigned int rows = min((unsigned int)ROWS, u.batch - row0);
  const unsigned int tid = threadIdx.x + WG_X * (threadIdx.y + WG_Y * threadIdx.z);

  // Stage the first input rows (the tile's rows are contiguous in acts; zeros past the batch).
  unsigned int n_in = u.in0;
  for (unsigned int e = tid; e < ROWS * n_in; e += THREADS) {
    tile[e] = e < rows * n_in ? acts[u.xOff + row0 * n_in + e] : 0.0f;
  }
  __syncthreads();

  for (unsigned int c = 0; c < u.layers; c++) {
    const ChainLayer L = chain_layer(u, c);
    const unsigned int groups = chain_groups(n_in, L.n_out);
    const unsigned int g = tid / L.n_out;
    const unsigned int o = tid % L.n_out;
    const bool active = g < groups;
    float acc[ROWS];
    if (active) {
      const unsigned int slice = ((n_in + CHUNK - 1u) / CHUNK + groups - 1u) / groups * CHUNK;
      const unsigned int k_begin = min(g * slice, n_in);
      const unsigned int k_end = min(k_begin + slice, n_in);
      const float bias = g == 0u ? params[L.b_off + o] : 0.0f;
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) acc[r] = bias;
      const float* w = params + L.w_off + o * n_in;
      // The PPO critic's weights sit at odd offsets (after the actor's 18,221 floats): scalar loads.
      if (n_in % 4u != 0u) {
        chain_dot<false, false>(acc, w, tile, n_in, k_begin, k_end);
      } else if (L.w_off % 4u != 0u) {
        chain_dot<false, true>(acc, w, tile, n_in, k_begin, k_end);
      } else {
        chain_dot<true, true>(acc, w, tile, n_in, k_begin, k_end);
      }
    }
    __syncthreads();  // every thread has read the tile: it takes the groups' sums now
    if (active && g > 0u) {
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) tile[(g * ROWS + r) * L.n_out + o] = acc[r];
    }
    __syncthreads();
    if (active && g == 0u) {
      for (unsigned int h = 1; h < groups; h++) {
#pragma unroll
        for (unsigned int r = 0; r < ROWS; r++) acc[r] += tile[(h * ROWS + r) * L.n_out + o];
      }
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) {
        const float v = learn_activate(acc[r], L.act);
        tile[r * L.n_out + o] = v;  // group 0's slots: no other thread reads them now
        if (r < rows) acts[L.y_off + (row0 + r) * L.n_out + o] = v;
      }
    }
    __syncthreads();
    n_in = L.n_out;
  }
}
