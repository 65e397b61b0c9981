// mlp_forward: one dense layer of up to two networks per launch (grouped GEMM), outputs kept as
// the activations the backward pass reads. Job j: for b < batch, o < out_j
//   acts[yOff_j + b * out_j + o] = act_j(params[bOff_j + o] + sum_i params[wOff_j + o * in_j + i] * acts[xOff_j + b * in_j + i])
// Bindings (declared by the preamble generated from src/kernels/mlp_forward.ts):
//   params: const float*: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: float*, read and written: input rows at xOff_j, output rows at yOff_j (disjoint)
//   u: Uniforms { batch, in0, out0, wOff0, bOff0, xOff0, yOff0, act0, in1, ... act1 }
//      (act: 0 none, 1 relu, 2 leaky 0.01; out_j = 0: job absent)
// Block: WG_X x WG_Y x WG_Z threads own a TILE_X (outputs) x TILE_Y (rows) tile; flat block id =
// tiles of job 0, then of job 1. Thread (x, y) of k-group z computes the 4 x 4 outputs 4x.. x rows
// 4y.. over the k-tiles z, z + WG_Z, ... (TILE_K inputs each, staged k-major in shared memory, rows
// padded by 4 floats: the transposing stores spread over banks, the two float4 reads per k stay
// aligned); the WG_Z partial tiles are then summed in group order through the same shared memory.
// Splitting K inside the block shortens the latency-bound loop over inputs with no extra launch.
// Numerics: f32; group 0 starts at the bias, each group adds its products in increasing i, and the
// groups' sums are added in order; NVRTC fuses multiply-adds (tolerance, not bit-exactness,
// against the TS reference's single running sum).
#include "grid.cuh"
#include "learn_common.cuh"

#define THREADS (WG_X * WG_Y)
#define SX (TILE_X + 4)
#define SY (TILE_Y + 4)
#define STAGE (TILE_K * (SX + SY))
// Operand floats each thread stages per round.
#define WN (TILE_K * TILE_X / THREADS)
#define XN (TILE_K * TILE_Y / THREADS)

struct ForwardJob {
  unsigned int n_in, n_out, w_off, b_off, x_off, y_off, act;
};

__device__ __forceinline__ unsigned int forward_tiles(unsigned int n_out, unsigned int batch) {
  return ((n_out + TILE_X - 1u) / TILE_X) * ((batch + TILE_Y - 1u) / TILE_Y);
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) mlp_forward(KERNEL_ARGS) {
  static_assert(TILE_X == 4 * WG_X && TILE_Y == 4 * WG_Y, "each thread owns a 4 x 4 block");
  static_assert((WG_Z - 1) * THREADS * 16 <= WG_Z * STAGE, "the groups' partial tiles fit in the staging memory");
  static_assert(WN * THREADS == TILE_K * TILE_X && XN * THREADS == TILE_K * TILE_Y, "the threads stage whole tiles");
  __shared__ __align__(16) float stage[WG_Z * STAGE];
  unsigned int t = (unsigned int)flat_block_id();
  ForwardJob job = {u.in0, u.out0, u.wOff0, u.bOff0, u.xOff0, u.yOff0, u.act0};
  const unsigned int tiles0 = forward_tiles(u.out0, u.batch);
  if (t >= tiles0) {
    t -= tiles0;
    job = ForwardJob{u.in1, u.out1, u.wOff1, u.bOff1, u.xOff1, u.yOff1, u.act1};
    if (t >= forward_tiles(u.out1, u.batch)) return;
  }
  const unsigned int tx = (job.n_out + TILE_X - 1u) / TILE_X;
  const unsigned int out0 = (t % tx) * TILE_X;
  const unsigned int row0 = (t / tx) * TILE_Y;
  const unsigned int z = threadIdx.z;
  const unsigned int tid = threadIdx.x + WG_X * threadIdx.y;
  const unsigned int ox = 4u * threadIdx.x;
  const unsigned int ry = 4u * threadIdx.y;
  float* w_tile = stage + z * STAGE;
  float* x_tile = w_tile + TILE_K * SX;

  float acc[4][4];  // [output r][row c]
#pragma unroll
  for (unsigned int r = 0; r < 4; r++) {
    const unsigned int o = out0 + ox + r;
    const float bias = z == 0u && o < job.n_out ? params[job.b_off + o] : 0.0f;
#pragma unroll
    for (unsigned int c = 0; c < 4; c++) acc[r][c] = bias;
  }

  // Software pipeline: the next round's operands are loaded into registers while this round's are
  // multiplied, so a round waits on one trip to memory overlapped with arithmetic instead of
  // WN + XN dependent load-then-store trips.
  float wr[WN], xr[XN];
  // Thread tid stages k = k0 + tid % TILE_K of outputs / rows tid / TILE_K + q (THREADS / TILE_K).
  const unsigned int kq = tid % TILE_K;
  const unsigned int mq = tid / TILE_K;
  const unsigned int step = THREADS / TILE_K;
  auto fetch = [&](unsigned int k0) {
    const unsigned int k = k0 + kq;
    const float* w = params + job.w_off + (out0 + mq) * job.n_in + k;
    const float* x = acts + job.x_off + (row0 + mq) * job.n_in + k;
    const bool k_ok = k < job.n_in;
#pragma unroll
    for (unsigned int q = 0; q < WN; q++) {
      wr[q] = k_ok && out0 + mq + q * step < job.n_out ? w[q * step * job.n_in] : 0.0f;
    }
#pragma unroll
    for (unsigned int q = 0; q < XN; q++) {
      xr[q] = k_ok && row0 + mq + q * step < u.batch ? x[q * step * job.n_in] : 0.0f;
    }
  };

  const unsigned int rounds = ((job.n_in + TILE_K - 1u) / TILE_K + WG_Z - 1u) / WG_Z;
  fetch(z * TILE_K);
  for (unsigned int round = 0; round < rounds; round++) {
    const unsigned int k0 = (round * WG_Z + z) * TILE_K;
#pragma unroll
    for (unsigned int q = 0; q < WN; q++) w_tile[kq * SX + mq + q * step] = wr[q];
#pragma unroll
    for (unsigned int q = 0; q < XN; q++) x_tile[kq * SY + mq + q * step] = xr[q];
    __syncthreads();
    if (round + 1u < rounds) fetch(k0 + WG_Z * TILE_K);
    const unsigned int valid = min((unsigned int)TILE_K, job.n_in - min(k0, job.n_in));
    auto multiply = [&](unsigned int k) {
      const float4 wv = *reinterpret_cast<const float4*>(&w_tile[k * SX + ox]);
      const float4 xv = *reinterpret_cast<const float4*>(&x_tile[k * SY + ry]);
      const float w[4] = {wv.x, wv.y, wv.z, wv.w};
      const float x[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (unsigned int r = 0; r < 4; r++) {
#pragma unroll
        for (unsigned int c = 0; c < 4; c++) acc[r][c] += w[r] * x[c];
      }
    };
    // A full k-tile (every round but a ragged last one) takes a constant-trip loop the compiler
    // unrolls (shared-memory offsets as immediates, loads scheduled ahead); same products, same order.
    if (valid == TILE_K) {
#pragma unroll
      for (unsigned int k = 0; k < TILE_K; k++) multiply(k);
    } else {
      for (unsigned int k = 0; k < valid; k++) multiply(k);
    }
    __syncthreads();
  }

  // Sum the k-groups' tiles in group order (the staging memory is free now).
  float4* part = reinterpret_cast<float4*>(stage);
  if (z > 0u) {
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) part[((z - 1u) * THREADS + tid) * 4u + r] = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
  }
  __syncthreads();
  if (z > 0u) return;
  for (unsigned int g = 1; g < WG_Z; g++) {
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) {
      const float4 p = part[((g - 1u) * THREADS + tid) * 4u + r];
      acc[r][0] += p.x;
      acc[r][1] += p.y;
      acc[r][2] += p.z;
      acc[r][3] += p.w;
    }
  }

#pragma unroll
  for (unsigned int c = 0; c < 4; c++) {
    const unsigned int b = row0 + ry + c;
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) {
      const unsigned int o = out0 + ox + r;
      if (b < u.batch && o < job.n_out) acts[job.y_off + b * job.n_out + o] = learn_activate(acc[r][c], job.act);
    }
  }
}
