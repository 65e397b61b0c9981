// mlp_forward: one dense layer of up to two networks per launch (grouped GEMM), outputs kept as
// the activations the backward pass reads. Job j: for b < batch, o < out_j
//   acts[yOff_j + b * out_j + o] = act_j(params[bOff_j + o] + sum_i params[wOff_j + o * in_j + i] * acts[xOff_j + b * in_j + i])
// Bindings (declared by the preamble generated from src/kernels/mlp_forward.ts):
//   params: const float*: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: float*, read and written: input rows at xOff_j, output rows at yOff_j (disjoint)
//   u: Uniforms { batch, in0, out0, wOff0, bOff0, xOff0, yOff0, act0, in1, ... act1, then per job j:
//      splits, yScr, xSplits, xScr, xBOff, xAct } (act: 0 none, 1 relu, 2 leaky 0.01; out_j = 0: job absent)
// K split (splits_j = S > 1), as the WGSL twin: each tile of job j is S blocks over slices of whole
// k-tiles of the inputs; each stores its partial sums (from 0: no bias, no activation) at
// acts[yScr_j + (s * batch + b) * out_j + o]. A job whose input was split (xSplits_j > 1) stages its
// inputs as act(xBOff_j bias + slice 0 + slice 1 + ...) from acts[xScr_j ..] (the previous launch's
// stores), and its blocks of output column 0 also store them at xOff_j, where the backward pass
// reads the activations (no block of this launch reads xOff_j of a split input). Only modules
// with SPLIT_IN = 1 (spec constant) read split inputs; the others ignore xSplits_j.
// Block: WG_X x WG_Y x WG_Z threads own a TILE_X (outputs) x TILE_Y (rows) tile; flat block id =
// tiles of job 0 (x splits_0: tile t slice s is block t * splits_0 + s), then of job 1. Thread (x, y) of k-group z computes the 4 x 4 outputs 4x.. x rows
// 4y.. over the k-tiles z, z + WG_Z, ... (TILE_K inputs each, staged k-major in shared memory, rows
// padded by 4 floats: the transposing stores spread over banks, the two float4 reads per k stay
// aligned); the WG_Z partial tiles are then summed in group order through the same shared memory.
// Splitting K inside the block shortens the latency-bound loop over inputs with no extra launch.
// Numerics: f32; group 0 starts at the bias (at 0 in a split job's slices: the next layer adds bias
// + slice 0 + slice 1 + ... in that order, as the TS reference), each group adds its products in increasing i, and the
// groups' sums are added in order; NVRTC fuses multiply-adds (tolerance, not bit-exactness,
// against the TS reference's single running sum).
// TF32 = 1 (spec constant; absent or 0: the exact f32 path above): each k-group's 4 warps compute
// its partial tile with mma.sync m16n8k8 TF32 from the same staged tiles (learn_mma.cuh), each
// thread ending with the accumulators of one 4 x 4 block as before (which thread owns which block
// is permuted: mma_owner_x / _y give ox, ry), so everything after the k loop is the same code.
// Tolerance: operands rounded to 10-bit mantissas, |err| <= ~2^-10 * sum |w| |x|.
#include "grid.cuh"
#include "learn_common.cuh"
#if TF32
#include "learn_mma.cuh"
#endif

#define THREADS (WG_X * WG_Y)
#define SX (TILE_X + 4)
#define SY (TILE_Y + 4)
#define STAGE (TILE_K * (SX + SY))
// Operand floats each thread stages per round.
#define WN (TILE_K * TILE_X / THREADS)
#define XN (TILE_K * TILE_Y / THREADS)

struct ForwardJob {
  unsigned int n_in, n_out, w_off, b_off, x_off, y_off, act, splits, y_scr, x_splits, x_scr, x_b_off, x_act;
};

__device__ __forceinline__ unsigned int forward_tiles(unsigned int n_out, unsigned int batch) {
  return ((n_out + TILE_X - 1u) / TILE_X) * ((batch + TILE_Y - 1u) / TILE_Y);
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) mlp_forward(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(TILE_X == 4 * WG_X && TILE_Y == 4 * WG_Y, "each thread owns a 4 x 4 block");
  static_assert((WG_Z - 1) * THREADS * 16 <= WG_Z * STAGE, "the groups' partial tiles fit in the staging memory");
  static_assert(WN * THREADS == TILE_K * TILE_X && XN * THREADS == TILE_K * TILE_Y, "the threads stage whole tiles");
  __shared__ __align__(16) float stage[WG_Z * STAGE];
  unsigned int t = (unsigned int)flat_block_id();
  ForwardJob job = {u.in0,     u.out0,  u.wOff0,    u.bOff0, u.xOff0,  u.yOff0, u.act0,
                    max(u.splits0, 1u), u.yScr0, u.xSplits0, u.xScr0, u.xBOff0, u.xAct0};
  const unsigned int tiles0 = forward_tiles(u.out0, u.batch) * job.splits;
  if (t >= tiles0) {
    t -= tiles0;
    job = ForwardJob{u.in1,     u.out1,  u.wOff1,    u.bOff1, u.xOff1,  u.yOff1, u.act1,
                     max(u.splits1, 1u), u.yScr1, u.xSplits1, u.xScr1, u.xBOff1, u.xAct1};
    if (t >= forward_tiles(u.out1, u.batch) * job.splits) return;
  }
  // This block's slice of the inputs (all of them when the job is not split).
  const unsigned int slice = t % job.splits;
  t /= job.splits;
  const unsigned int slice_len = ((job.n_in + TILE_K - 1u) / TILE_K + job.splits - 1u) / job.splits * TILE_K;
  const unsigned int k_begin = min(slice * slice_len, job.n_in);
  const unsigned int k_end = min(k_begin + slice_len, job.n_in);
  const unsigned int tx = (job.n_out + TILE_X - 1u) / TILE_X;
  const bool store_x = SPLIT_IN == 1 && job.x_splits > 1u && t % tx == 0u;
  const unsigned int out0 = (t % tx) * TILE_X;
  const unsigned int row0 = (t / tx) * TILE_Y;
  const unsigned int z = threadIdx.z;
  const unsigned int tid = threadIdx.x + WG_X * threadIdx.y;
#if TF32
  const unsigned int ox = 4u * mma_owner_x(tid);
  const unsigned int ry = 4u * mma_owner_y(tid);
#else
  const unsigned int ox = 4u * threadIdx.x;
  const unsigned int ry = 4u * threadIdx.y;
#endif
  float* w_tile = stage + z * STAGE;
  float* x_tile = w_tile + TILE_K * SX;

  float acc[4][4];  // [output r][row c]
#pragma unroll
  for (unsigned int r = 0; r < 4; r++) {
    const unsigned int o = out0 + ox + r;
    const float bias = z == 0u && job.splits == 1u && o < job.n_out ? params[job.b_off + o] : 0.0f;
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
    const bool k_ok = k < k_end;
#pragma unroll
    for (unsigned int q = 0; q < WN; q++) {
      wr[q] = k_ok && out0 + mq + q * step < job.n_out ? w[q * step * job.n_in] : 0.0f;
    }
    if (SPLIT_IN == 0 || job.x_splits <= 1u) {
#pragma unroll
      for (unsigned int q = 0; q < XN; q++) {
        xr[q] = k_ok && row0 + mq + q * step < u.batch ? x[q * step * job.n_in] : 0.0f;
      }
    } else {
      // The previous layer's slices -> its activation (bias + slice 0 + slice 1 + ..., in order).
#pragma unroll
      for (unsigned int q = 0; q < XN; q++) {
        const unsigned int b = row0 + mq + q * step;
        float v = 0.0f;
        if (k_ok && b < u.batch) {
          float a = params[job.x_b_off + k];
          for (unsigned int s = 0; s < job.x_splits; s++) a += acts[job.x_scr + (s * u.batch + b) * job.n_in + k];
          v = learn_activate(a, job.x_act);
          if (store_x) acts[job.x_off + b * job.n_in + k] = v;
        }
        xr[q] = v;
      }
    }
  };

  const unsigned int rounds = ((k_end - k_begin + TILE_K - 1u) / TILE_K + WG_Z - 1u) / WG_Z;
  fetch(k_begin + z * TILE_K);
  for (unsigned int round = 0; round < rounds; round++) {
    const unsigned int k0 = k_begin + (round * WG_Z + z) * TILE_K;
#pragma unroll
    for (unsigned int q = 0; q < WN; q++) w_tile[kq * SX + mq + q * step] = wr[q];
#pragma unroll
    for (unsigned int q = 0; q < XN; q++) x_tile[kq * SY + mq + q * step] = xr[q];
    __syncthreads();
    if (round + 1u < rounds) fetch(k0 + WG_Z * TILE_K);
#if TF32
    // The whole k-tile: rows past k_end are staged as zeros.
    mma_k_tile<TILE_K / 8u>(acc, w_tile, SX, x_tile, SY, tid);
#else
    const unsigned int valid = min((unsigned int)TILE_K, k_end - min(k0, k_end));
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
#endif
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

  // A split job's slice: partial sums without bias or activation (the next layer finishes them).
  const bool partial = job.splits > 1u;
  const unsigned int y_at = partial ? job.y_scr + slice * u.batch * job.n_out : job.y_off;
#pragma unroll
  for (unsigned int c = 0; c < 4; c++) {
    const unsigned int b = row0 + ry + c;
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) {
      const unsigned int o = out0 + ox + r;
      if (b < u.batch && o < job.n_out) {
        acts[y_at + b * job.n_out + o] = partial ? acc[r][c] : learn_activate(acc[r][c], job.act);
      }
    }
  }
}
