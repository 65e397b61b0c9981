// mlp_backward: backward through up to MAX_JOBS (8) dense layers per launch (job j: one layer of
// any network), from each layer's delta = dLoss/d(pre-activation) rows at deltas[dOff_j],
// b < batch, o < out_j:
//   dW[o, i] = sum_b delta[b, o] * x[b, i], db[o] = sum_b delta[b, o]   -> grads (params' layout)
//   dX[b, i] = (sum_o delta[b, o] * W[o, i]) * act'(x[b, i])            -> deltas[pOff_j] (if pAct_j != 3)
// with x = acts[xOff_j + b * in_j + i], the layer's input. Each dW tile also writes the sum of
// squares of its gradients to partials[partBase_j + tile] (adam_step reduces them to the norm).
// Bindings (declared by the preamble generated from src/kernels/mlp_backward.ts):
//   params: const float*: W [out, in] at wOff_j, bias at bOff_j
//   acts: const float*: layer inputs (rows of in_j floats at xOff_j)
//   deltas: float*: this layer's rows (read) and the previous layer's (written)
//   grads: float*, written: dW at wOff_j, db at bOff_j
//   partials: float*, written: one float per dW tile
//   u: Uniforms { batch, then per job j in 0..7: in, out, wOff, bOff, xOff, dOff, pOff, pAct, partBase,
//      then splits, scratchAt, ... } (pAct: 0 none, 1 relu, 2 leaky 0.01, 3 no dX; out_j = 0: job absent)
// Split dW (splits > 1): each dW tile is `splits` blocks over slices of the batch (whole k-tiles);
// each stores its partial tile in the tile's slot at deltas[scratchAt + partial slot * SLOT_FLOATS],
// and the block that arrives last at the slot's integer counter adds the slices in slice order
// and finishes the tile (gradients, sum of squares), then re-arms the counter. Which block is
// last varies; the sum's order does not, so results stay deterministic (no float atomics).
// Block: WG_X x WG_Y x WG_Z threads own a TILE_X x TILE_Y tile; flat block id = job 0's dW tiles
// (x splits: tile t slice s is block t * splits + s), its dX tiles, then job 1's, ..., then job
// 7's (find_job). Thread (x, y) of k-group z computes the 4 x 4 block at X 4x.., Y 4y.. over the
// k-tiles z, z + WG_Z, ..., and the WG_Z partial tiles are summed in group order through shared
// memory (splitting the long K loops — the whole batch for dW — inside the block, with no extra
// launch).
// dW tile: X = inputs i (plus the ones column i = in for db), Y = outputs o, K = batch rows.
// dX tile: X = inputs i, Y = batch rows b, K = outputs o. Operands are staged k-major in shared
// memory, rows padded by 4 floats (transposing stores spread over banks; the inner loop's two
// float4 reads per k stay aligned).
// Numerics: f32; each group adds its k in increasing order from 0 and the groups' sums are added in
// order, then a split tile's slices in slice order (NVRTC fuses multiply-adds: tolerance against
// the TS reference's single running sum); the partial is a fixed-order tree, deterministic.
// TF32 = 1 (spec constant; absent or 0: the exact f32 path above): each k-group's 4 warps compute
// its partial tile with mma.sync m16n8k8 TF32 from the same staged tiles (learn_mma.cuh), each
// thread ending with the accumulators of one 4 x 4 block as before (owners permuted: mma_owner_x
// and _y give ix, iy below), so the k-group sums, the split dW hand-off, the stores and the sums
// of squares are the same code. Tolerance: operands rounded to 10-bit mantissas,
// |err| <= ~2^-10 * sum over k of |x| |y|.
#include "grid.cuh"
#include "learn_common.cuh"
#if TF32
#include "learn_mma.cuh"
#endif

#define THREADS (WG_X * WG_Y)
#define SX (TILE_X + 4)
#define SY (TILE_Y + 4)
#define STAGE (TILE_K * (SX + SY))
// A split dW tile's scratch slot in deltas (at scratchAt + partial slot * SLOT_FLOATS): its arrival
// counter (u32 bits, then 3 floats of padding), then MAX_SPLITS slices of the tile.
#define MAX_SPLITS 8u
#define SLOT_FLOATS (4u + MAX_SPLITS * TILE_X * TILE_Y)
// Operand floats each thread stages per round.
#define XN (TILE_K * TILE_X / THREADS)
#define YN (TILE_K * TILE_Y / THREADS)

#define MAX_JOBS 8u

struct BackwardJob {
  unsigned int n_in, n_out, w_off, b_off, x_off, d_off, p_off, p_act, part_base;
};

// Job j's uniforms. The Uniforms struct (generated from the spec, src/kernels/mlp_backward.ts) holds
// batch, then the 9 fields of job 0, of job 1, ..., of job 7, 4-byte words without padding, so job
// j's are words 1 + 9 j .. 9 + 9 j (test/unit/learn-backward-jobs.test.ts checks that order). A
// constant j reads the parameter bank at fixed offsets, a variable one at a register offset.
__device__ __forceinline__ BackwardJob backward_job(const Uniforms& v, unsigned int j) {
  const unsigned int* w = reinterpret_cast<const unsigned int*>(&v) + 1u + 9u * j;
  return BackwardJob{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]};
}

__device__ __forceinline__ unsigned int ceil_div(unsigned int a, unsigned int b) { return (a + b - 1u) / b; }

__device__ __forceinline__ unsigned int grad_tiles(const BackwardJob& job) {
  return job.n_out == 0u ? 0u : ceil_div(job.n_in + 1u, TILE_X) * ceil_div(job.n_out, TILE_Y);
}

__device__ __forceinline__ unsigned int dx_tiles(const BackwardJob& job, unsigned int batch) {
  return job.n_out == 0u || job.p_act == 3u ? 0u : ceil_div(job.n_in, TILE_X) * ceil_div(batch, TILE_Y);
}

// The job of flat block t (job j's blocks: its dW tiles x splits, then its dX tiles), MAX_JOBS for
// none; t becomes the block's index among the job's dW blocks (is_dw) or its dX tiles. The loop is
// unrolled (each job's uniforms at fixed offsets) and stops at the first job whose blocks reach
// past t: a block of job 0 reads job 0's uniforms only.
__device__ __forceinline__ unsigned int find_job(const Uniforms& v, unsigned int& t, bool& is_dw) {
#pragma unroll
  for (unsigned int j = 0; j < MAX_JOBS; j++) {
    const BackwardJob job = backward_job(v, j);
    const unsigned int gw = grad_tiles(job) * v.splits;
    const unsigned int gx = dx_tiles(job, v.batch);
    if (t < gw + gx) {
      is_dw = t < gw;
      if (!is_dw) t -= gw;
      return j;
    }
    t -= gw + gx;
  }
  return MAX_JOBS;
}

// flat_block_id() read anew from the special registers (volatile, so never merged with an earlier
// read): find_job(u, ...) on it gives the block's job again after the tile loop, where holding the
// job index across the loop would take one register more than the TF32 build's 64 and spill.
__device__ __forceinline__ unsigned int block_id_again() {
#ifdef __CUDA_ARCH__
  unsigned int x, y, z, nx, ny;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x));
  asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(y));
  asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(z));
  asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(nx));
  asm volatile("mov.u32 %0, %%nctaid.y;" : "=r"(ny));
  return x + nx * (y + ny * z);
#else
  return (unsigned int)flat_block_id();
#endif
}

// This k-group's partial tile of a dW (DW) or dX tile at (x0, y0): the rounds z, z + WG_Z, ... of
// TILE_K k each, staged through x_tile / y_tile. A software pipeline: the next round's operands are
// loaded into registers while this round's are multiplied, so a round waits on one trip to memory
// overlapped with arithmetic instead of XN + YN dependent load-then-store trips.
// dW: X = inputs of rows k (the ones column at i = in), Y = deltas of rows k at outputs o.
// dX: X = weights of outputs k at inputs i, Y = deltas of rows b at outputs k.
template <bool DW>
__device__ __forceinline__ void tile_product(float (&acc)[4][4], const float* __restrict__ params,
                                             const float* __restrict__ acts, const float* __restrict__ deltas,
                                             const BackwardJob& job, unsigned int batch, unsigned int x0,
                                             unsigned int y0, unsigned int k_begin, unsigned int k_end,
                                             float* x_tile, float* y_tile, unsigned int tid, unsigned int z) {
  float xr[XN], yr[YN];
  auto fetch = [&](unsigned int k0) {
#pragma unroll
    for (unsigned int q = 0; q < XN; q++) {
      const unsigned int e = tid + q * THREADS;
      const unsigned int k = k0 + e / TILE_X;
      const unsigned int i = x0 + e % TILE_X;
      if (DW) {
        xr[q] = k < k_end ? (i < job.n_in ? acts[job.x_off + k * job.n_in + i] : (i == job.n_in ? 1.0f : 0.0f)) : 0.0f;
      } else {
        xr[q] = k < k_end && i < job.n_in ? params[job.w_off + k * job.n_in + i] : 0.0f;
      }
    }
#pragma unroll
    for (unsigned int q = 0; q < YN; q++) {
      const unsigned int e = tid + q * THREADS;
      if (DW) {
        const unsigned int k = k0 + e / TILE_Y;
        const unsigned int o = y0 + e % TILE_Y;
        yr[q] = k < k_end && o < job.n_out ? deltas[job.d_off + k * job.n_out + o] : 0.0f;
      } else {
        const unsigned int k = k0 + e % TILE_K;
        const unsigned int b = y0 + e / TILE_K;
        yr[q] = b < batch && k < k_end ? deltas[job.d_off + b * job.n_out + k] : 0.0f;
      }
    }
  };

#if !TF32
  const unsigned int ix = 4u * threadIdx.x;
  const unsigned int iy = 4u * threadIdx.y;
#endif
  const unsigned int rounds = ceil_div(ceil_div(k_end - k_begin, TILE_K), WG_Z);
  fetch(k_begin + z * TILE_K);
  for (unsigned int round = 0; round < rounds; round++) {
    const unsigned int k0 = k_begin + (round * WG_Z + z) * TILE_K;
#pragma unroll
    for (unsigned int q = 0; q < XN; q++) {
      const unsigned int e = tid + q * THREADS;
      x_tile[(e / TILE_X) * SX + e % TILE_X] = xr[q];
    }
#pragma unroll
    for (unsigned int q = 0; q < YN; q++) {
      const unsigned int e = tid + q * THREADS;
      if (DW) {
        y_tile[(e / TILE_Y) * SY + e % TILE_Y] = yr[q];
      } else {
        y_tile[(e % TILE_K) * SY + e / TILE_K] = yr[q];
      }
    }
    __syncthreads();
    if (round + 1u < rounds) fetch(k0 + WG_Z * TILE_K);
#if TF32
    // The whole k-tile: rows past k_end are staged as zeros.
    mma_k_tile<1u>(acc, x_tile, SX, y_tile, SY, tid);
#else
    const unsigned int valid = min((unsigned int)TILE_K, k_end - min(k0, k_end));
    auto multiply = [&](unsigned int k) {
      const float4 xv = *reinterpret_cast<const float4*>(&x_tile[k * SX + ix]);
      const float4 yv = *reinterpret_cast<const float4*>(&y_tile[k * SY + iy]);
      const float xs[4] = {xv.x, xv.y, xv.z, xv.w};
      const float ys[4] = {yv.x, yv.y, yv.z, yv.w};
#pragma unroll
      for (unsigned int r = 0; r < 4; r++) {
#pragma unroll
        for (unsigned int c = 0; c < 4; c++) acc[r][c] += xs[r] * ys[c];
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
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z, 2) mlp_backward(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(TILE_X == 4 * WG_X && TILE_Y == 4 * WG_Y, "each thread owns a 4 x 4 block");
  static_assert((WG_Z - 1) * THREADS * 16 <= WG_Z * STAGE, "the groups' partial tiles fit in the staging memory");
  static_assert(XN * THREADS == TILE_K * TILE_X && YN * THREADS == TILE_K * TILE_Y, "the threads stage whole tiles");
  __shared__ __align__(16) float stage[WG_Z * STAGE];
  __shared__ float red[THREADS];

  // Which job and which kind of tile this block computes. Of the job's fields only those of the tile
  // loop are read here; the others after it, where the job is found again (block_id_again).
  unsigned int t = (unsigned int)flat_block_id();
  bool is_dw = true;
  const unsigned int j = find_job(u, t, is_dw);
  if (j == MAX_JOBS) return;
  const BackwardJob job = backward_job(u, j);
  // A dW tile is u.splits blocks, each over one slice of the batch (whole k-tiles).
  const unsigned int slice = is_dw ? t % u.splits : 0u;
  if (is_dw) t /= u.splits;
  const unsigned int slice_len = ceil_div(ceil_div(u.batch, TILE_K), u.splits) * TILE_K;
  const unsigned int k_begin = is_dw ? min(slice * slice_len, u.batch) : 0u;
  const unsigned int k_end = is_dw ? min(k_begin + slice_len, u.batch) : job.n_out;

  const unsigned int tx = ceil_div(is_dw ? job.n_in + 1u : job.n_in, TILE_X);
  const unsigned int x0 = (t % tx) * TILE_X;
  const unsigned int y0 = (t / tx) * TILE_Y;
  const unsigned int z = threadIdx.z;
  const unsigned int tid = threadIdx.x + WG_X * threadIdx.y;
#if TF32
  const unsigned int ix = 4u * mma_owner_x(tid);
  const unsigned int iy = 4u * mma_owner_y(tid);
#else
  const unsigned int ix = 4u * threadIdx.x;
  const unsigned int iy = 4u * threadIdx.y;
#endif
  float* x_tile = stage + z * STAGE;
  float* y_tile = x_tile + TILE_K * SX;
  float acc[4][4] = {};  // [X r][Y c]

  if (is_dw) {
    tile_product<true>(acc, params, acts, deltas, job, u.batch, x0, y0, k_begin, k_end, x_tile, y_tile, tid, z);
  } else {
    tile_product<false>(acc, params, acts, deltas, job, u.batch, x0, y0, k_begin, k_end, x_tile, y_tile, tid, z);
  }

  // Sum the k-groups' tiles in group order (the staging memory is free now).
  float4* part = reinterpret_cast<float4*>(stage);
  if (z > 0u) {
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) part[((z - 1u) * THREADS + tid) * 4u + r] = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
  }
  __syncthreads();
  if (z == 0u) {
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
  }

  // The job's other fields (b_off, p_off, p_act, part_base), read after the tile loop.
  unsigned int t_again = block_id_again();
  bool dw_again;
  const BackwardJob late = backward_job(u, find_job(u, t_again, dw_again));

  if (is_dw && u.splits > 1u) {
    // Split dW: every slice stores its tile in the tile's scratch slot; the block that arrives last
    // (an integer counter: which block that is varies, the sum does not) adds the slices in slice
    // order and finishes the tile below, then re-arms the counter for the next launch.
    __shared__ unsigned int last;
    float* slot = deltas + u.scratchAt + (late.part_base + t) * SLOT_FLOATS;
    float4* data = reinterpret_cast<float4*>(slot + 4);
    if (z == 0u) {
#pragma unroll
      for (unsigned int r = 0; r < 4; r++) data[(slice * 4u + r) * THREADS + tid] = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      __threadfence();
    }
    __syncthreads();
    if (z == 0u && tid == 0u) last = atomicAdd(reinterpret_cast<unsigned int*>(slot), 1u) == u.splits - 1u ? 1u : 0u;
    __syncthreads();
    if (last == 0u) return;  // uniform across the block
    __threadfence();
    if (z == 0u) {
#pragma unroll
      for (unsigned int r = 0; r < 4; r++) {
        float4 v = __ldcg(&data[r * THREADS + tid]);
        for (unsigned int q = 1; q < u.splits; q++) {
          const float4 p = __ldcg(&data[(q * 4u + r) * THREADS + tid]);
          v.x += p.x;
          v.y += p.y;
          v.z += p.z;
          v.w += p.w;
        }
        acc[r][0] = v.x;
        acc[r][1] = v.y;
        acc[r][2] = v.z;
        acc[r][3] = v.w;
      }
      if (tid == 0u) *reinterpret_cast<unsigned int*>(slot) = 0u;
    }
  }

  if (is_dw) {
    if (z == 0u) {
      float ss = 0.0f;
#pragma unroll
      for (unsigned int c = 0; c < 4; c++) {
        const unsigned int o = y0 + iy + c;
#pragma unroll
        for (unsigned int r = 0; r < 4; r++) {
          const unsigned int i = x0 + ix + r;
          if (o < job.n_out && i <= job.n_in) {
            const float g = acc[r][c];
            grads[i < job.n_in ? job.w_off + o * job.n_in + i : late.b_off + o] = g;
            ss += g * g;
          }
        }
      }
      red[tid] = ss;
    }
    __syncthreads();
    // The tree's levels above a warp through shared memory, the last five as xor shuffles in warp 0
    // (the same pairs, and + is commutative: the tree's bits, with 5 fewer block barriers).
    static_assert(THREADS % 32 == 0, "k-group 0's first 32 threads are warp 0");
    for (unsigned int s = THREADS / 2u; s >= 32u; s >>= 1) {
      if (z == 0u && tid < s) red[tid] += red[tid + s];
      __syncthreads();
    }
    if (z == 0u && tid < 32u) {
      float v = red[tid];
#pragma unroll
      for (unsigned int s = 16u; s > 0u; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, (int)s);
      if (tid == 0u) partials[late.part_base + t] = v;
    }
    return;
  }

  if (z > 0u) return;
#pragma unroll
  for (unsigned int c = 0; c < 4; c++) {
    const unsigned int b = y0 + iy + c;
#pragma unroll
    for (unsigned int r = 0; r < 4; r++) {
      const unsigned int i = x0 + ix + r;
      if (b < u.batch && i < job.n_in) {
        const float y = acts[job.x_off + b * job.n_in + i];
        deltas[late.p_off + b * job.n_in + i] = acc[r][c] * learn_act_derivative(y, late.p_act);
      }
    }
  }
}
