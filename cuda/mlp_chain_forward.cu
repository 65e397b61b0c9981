// mlp_chain_forward: the forward of consecutive layers of ONE chain network in one launch, a tile
// of ROWS rows per block kept in shared memory from layer to layer. Layer c < layers:
//   acts[yOff_c + b * out_c + o] = act_c(params[bOff_c + o] + sum_i params[wOff_c + o * in_c + i] * x_c[b, i])
// x_0 = the rows at acts[xOff] (in0 wide), x_c = layer c - 1's outputs (in_c = out_{c-1}).
// Bindings (declared by the preamble generated from src/kernels/mlp_chain_forward.ts):
//   params: const float*: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: float*: the first input rows at xOff, each layer's output rows at yOff_c (disjoint)
//   u: Uniforms { batch, layers, xOff, in0, then per layer c < 4: out, wOff, bOff, yOff, act }
//      (act: 0 none, 1 relu, 2 leaky 0.01; widths <= MAX_WIDTH)
// Two builds (Numerics: f32, a fixed order, the same bits every run; NVRTC fuses multiply-adds and
// the sums are split by k-groups, so the twins agree with the TS reference's single running sum to a
// tolerance):
//
// STAGED = 1 (CUDA's chain launch; 512 threads, dynamic shared memory): the block first copies the
// whole tail's parameters, params[wOff0 .. + STAGE_FLOATS) (STAGE_FLOATS a multiple of 4 that
// covers every layer's W and bias), into shared memory, every thread issuing all its 16-byte loads
// (STAGE_BATCH at a time) before it stores any, together with the first input rows. The loads are
// the aligned float4s from the 16-byte boundary before wOff0 (the PPO critic starts at an odd
// float); each copy float4 is one of them shifted by WSHIFT = wOff0 % 4 floats, the missing ones
// taken from the next lane (a shuffle), so the copy's rows are 16-byte aligned. Then it computes
// the layers from shared memory only. Layer c goes to G k-groups x out_c threads (G the largest
// power of two <= 32 with G * out_c <= THREADS and G <= the input's float4 chunks), thread (g, o) =
// (tid % G, tid / G): it adds output o's products over the chunks g, g + G, g + 2G, .. (increasing;
// odd outputs take each pair of its chunks swapped when that is regular, so the two outputs of a
// quarter-warp read different banks) for all ROWS rows, the weight float4 read once and each row's
// 4 inputs read by the G groups of the warp (4 to 8 addresses: one wavefront). The G lanes of an
// output then add their sums in a fixed xor-butterfly (every lane ends with the same bits), group
// 0 adds the bias first, activates, writes the row tile of the next layer (double-buffered: no
// barrier between reading and writing) and acts.
//
// STAGED undefined (the WGSL twin's shape, and CUDA's fallback when the tail does not fit shared
// memory): 256 = MAX_WIDTH threads take each layer as G k-groups of out_c threads (G the largest
// power of two with G * out_c <= THREADS and G <= the input's CHUNKs): thread (g, o) adds output
// o's products over input slice g (whole CHUNKs of inputs, increasing i) for all ROWS rows,
// reading each weight once from global memory (the small layers stay in L2; the next CHUNK of
// weights is loaded while this one multiplies) and the rows' inputs from shared memory (one
// address for the whole warp: a broadcast). Group 0 starts at the bias; groups 1.. park their sums
// in the tile (free once every thread has read it) and group 0 adds them in group order,
// activates, and writes the outputs to the tile (the next layer's input) and to acts.
#if defined(STAGED) && STAGED
#define COLLECT_DYN_SMEM  // the staged build's shared memory is the launch's (KernelSpec.sharedBytes)
#endif
#include "collect_port.cuh"
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


#if defined(STAGED) && STAGED

#define WARPS (THREADS / 32)
// Staging rounds: each warp fills 31 float4s of the copy per round (its 32nd lane only lends floats).
#define STAGE_PER_THREAD ((STAGE_FLOATS / 4 + 31 * WARPS - 1) / (31 * WARPS))
#define TILE_FLOATS (ROWS * MAX_WIDTH)
#define IN_PER_THREAD ((TILE_FLOATS + THREADS - 1) / THREADS)
// float4 loads a thread has in flight while staging (the PPO tail: 21, all at once).
#define STAGE_BATCH (STAGE_PER_THREAD < 24 ? STAGE_PER_THREAD : 24)

// The next lane's v (lane 31: its own), as __shfl_down_sync(~0, v, 1).
#ifdef FOXHUNT_EMU
static inline float chain_next_lane(float v) {
  const unsigned int tid = emu::flat_tid();
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  emu::g_block->shuffle[tid] = bits;
  emu::warp_wait();
  bits = emu::g_block->shuffle[(tid & 31u) == 31u ? tid : tid + 1u];
  emu::warp_wait();
  std::memcpy(&v, &bits, 4);
  return v;
}
#else
__device__ __forceinline__ float chain_next_lane(float v) { return __shfl_down_sync(0xffffffffu, v, 1); }
#endif

// k-groups of a layer in the staged build (src/kernels/mlp_chain_forward.ts: chainStagedGroups).
__device__ __forceinline__ unsigned int chain_staged_groups(unsigned int n_in, unsigned int n_out) {
  const unsigned int chunks = (n_in + 3u) / 4u;
  unsigned int g = 1u;
  while (2u * g * n_out <= THREADS && 2u * g <= chunks && 2u * g <= 32u) g *= 2u;
  return g;
}

// acc[r] += w[4c + q] * x[r * n_in + 4c + q] over the chunks c = g + G * p (p increasing, or each
// pair swapped: `swap`), q increasing. w: the weight row in shared memory and x: the tile, both
// 16-byte aligned (n_in % 4 == 0).
__device__ __forceinline__ void chain_staged_dot4(float (&acc)[ROWS], const float* w, const float* x,
                                                  unsigned int n_in, unsigned int g, unsigned int G,
                                                  unsigned int swap) {
  const unsigned int chunks = n_in / 4u;
  for (unsigned int p = 0; g + G * p < chunks; p++) {
    const unsigned int c = g + G * (p ^ swap);
    const float4 wv = lds4(w + 4u * c);
#pragma unroll
    for (unsigned int r = 0; r < ROWS; r++) {
      const float4 xv = lds4(x + r * n_in + 4u * c);
      acc[r] += wv.x * xv.x;
      acc[r] += wv.y * xv.y;
      acc[r] += wv.z * xv.z;
      acc[r] += wv.w * xv.w;
    }
  }
}

// The same with scalar reads (ragged widths, or a layer whose weights sit at another misalignment).
__device__ __forceinline__ void chain_staged_dot1(float (&acc)[ROWS], const float* w, const float* x,
                                                  unsigned int n_in, unsigned int g, unsigned int G) {
  const unsigned int chunks = (n_in + 3u) / 4u;
  for (unsigned int c = g; c < chunks; c += G) {
    const unsigned int i_end = min(4u * c + 4u, n_in);
    for (unsigned int i = 4u * c; i < i_end; i++) {
      const float wi = w[i];
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) acc[r] += wi * x[r * n_in + i];
    }
  }
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) mlp_chain_forward(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(STAGE_FLOATS % 4 == 0, "whole float4 chunks");
  static_assert(THREADS % 32 == 0, "whole warps (the k-groups' butterfly)");
  COLLECT_SMEM(smem, STAGE_FLOATS + 2 * TILE_FLOATS);
  const unsigned long long block = flat_block_id();
  if (block * ROWS >= u.batch) return;  // the whole block: no barrier is skipped by part of it
  const unsigned int row0 = (unsigned int)block * ROWS;
  const unsigned int rows = min((unsigned int)ROWS, u.batch - row0);
  const unsigned int tid = threadIdx.x + WG_X * (threadIdx.y + WG_Y * threadIdx.z);
  float* const staged = smem;  // params[wOff0 + j] at staged[j]
  float* tile_x = smem + STAGE_FLOATS;
  float* tile_y = tile_x + TILE_FLOATS;
  const unsigned int base = u.wOff0 - WSHIFT;  // 16-byte aligned
  // End of the tail's parameters (the last float4 is read in floats up to it, not past the buffer).
  unsigned int end = 0u;
  {
    unsigned int n_in = u.in0;
    for (unsigned int c = 0; c < u.layers; c++) {
      const ChainLayer L = chain_layer(u, c);
      end = max(end, max(L.w_off + L.n_out * n_in, L.b_off + L.n_out));
      n_in = L.n_out;
    }
  }

  // Stage the first input rows (contiguous in acts; zeros past the batch) and every parameter: all
  // loads of a batch are issued before any store.
  float xin[IN_PER_THREAD];
  const unsigned int in_floats = ROWS * u.in0;
#pragma unroll
  for (unsigned int q = 0; q < IN_PER_THREAD; q++) {
    const unsigned int e = tid + THREADS * q;
    xin[q] = e < rows * u.in0 ? acts[u.xOff + row0 * u.in0 + e] : 0.0f;
  }
  // Aligned chunk t = params[base + 4t ..+ 4) (whole while base + 4t + 4 <= end); copy
  // chunk t = staged[4t ..+ 4) = params[wOff0 + 4t ..+ 4): chunk t's last 4 - WSHIFT floats and
  // chunk t + 1's first WSHIFT, from the next lane. Round j of warp w loads chunks 31 (w + WARPS j)
  // + lane: lanes 0..30 store copy chunks, lane 31's chunk is the next warp's lane 0's. The copy
  // chunks both of whose aligned chunks are whole: t < fast; the 4 to 7 floats after them are
  // copied one by one (not read past the tail: the buffer may end there).
  const unsigned int lane = tid & 31u;
  const unsigned int warp = tid / 32u;
  // Aligned chunks t <= fast are whole; past them a lane loads nothing, and what it lends is not
  // stored (t >= fast). Predicated loads, so that ptxas keeps them all in flight (issued before the
  // shuffles and stores) rather than interleaving them with the stores.
  const unsigned int fast = end - base >= 8u ? (end - base - 4u) / 4u : 0u;
  for (unsigned int j0 = 0; j0 < STAGE_PER_THREAD; j0 += STAGE_BATCH) {
    float4 v[STAGE_BATCH];
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      const unsigned int t = 31u * (warp + WARPS * (j0 + j)) + lane;
      if (j0 + j < STAGE_PER_THREAD && fast > 0u && t <= fast) v[j] = ldg4(params + base + 4u * t);
    }
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      if (j0 + j < STAGE_PER_THREAD) {  // the same for the whole warp: every lane shuffles
        const unsigned int t = 31u * (warp + WARPS * (j0 + j)) + lane;
#if WSHIFT == 0
        const float4 out = v[j];
#elif WSHIFT == 1
        const float4 out = make_float4(v[j].y, v[j].z, v[j].w, chain_next_lane(v[j].x));
#elif WSHIFT == 2
        const float n0 = chain_next_lane(v[j].x);
        const float4 out = make_float4(v[j].z, v[j].w, n0, chain_next_lane(v[j].y));
#else
        const float n0 = chain_next_lane(v[j].x);
        const float n1 = chain_next_lane(v[j].y);
        const float4 out = make_float4(v[j].w, n0, n1, chain_next_lane(v[j].z));
#endif
        if (lane < 31u && t < fast) *reinterpret_cast<float4*>(staged + 4u * t) = out;
      }
    }
  }
  const unsigned int rest = end - u.wOff0 - 4u * fast;
  if (tid < rest) staged[4u * fast + tid] = params[u.wOff0 + 4u * fast + tid];
#pragma unroll
  for (unsigned int q = 0; q < IN_PER_THREAD; q++) {
    const unsigned int e = tid + THREADS * q;
    if (e < in_floats) tile_x[e] = xin[q];
  }
  __syncthreads();

  unsigned int n_in = u.in0;
  for (unsigned int c = 0; c < u.layers; c++) {
    const ChainLayer L = chain_layer(u, c);
    const unsigned int G = chain_staged_groups(n_in, L.n_out);
    const unsigned int g = tid & (G - 1u);
    const unsigned int o = tid / G;
    const bool active = o < L.n_out;
    float acc[ROWS];
    const float bias = active && g == 0u ? staged[L.b_off - u.wOff0 + o] : 0.0f;
#pragma unroll
    for (unsigned int r = 0; r < ROWS; r++) acc[r] = bias;
    if (active) {
      const unsigned int w_rel = L.w_off - u.wOff0 + o * n_in;  // staged index of W[o, 0]
      if (n_in % 4u == 0u && (L.w_off - u.wOff0) % 4u == 0u) {
        // Swap pairs of chunks for odd outputs when every thread of the layer has an even count.
        const unsigned int swap = (n_in / 4u) % (2u * G) == 0u ? (o & 1u) : 0u;
        chain_staged_dot4(acc, staged + w_rel, tile_x, n_in, g, G, swap);
      } else {
        chain_staged_dot1(acc, staged + w_rel, tile_x, n_in, g, G);
      }
    }
    // The G lanes of output o (G <= 32 divides the warp; every lane of it takes part).
    for (unsigned int s = 1u; s < G; s <<= 1) {
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], (int)s);
    }
    if (active && g == 0u) {
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) {
        const float v = learn_activate(acc[r], L.act);
        tile_y[r * L.n_out + o] = v;
        if (r < rows) acts[L.y_off + (row0 + r) * L.n_out + o] = v;
      }
    }
    __syncthreads();
    float* const t = tile_x;
    tile_x = tile_y;
    tile_y = t;
    n_in = L.n_out;
  }
}

#else  // the tiled build (STAGED undefined)

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

#endif  // STAGED
