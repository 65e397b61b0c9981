// mlp_delta_chain: the input gradients (deltas) of consecutive layers of up to two chain networks
// in one launch, ROWS rows per block, the rows' deltas kept in shared memory from layer to layer.
// Net n's layer c (c = 0 the top), for b < batch, i < in_c:
//   deltas[pOff_c + b * in_c + i] = (sum_o deltas[dOff_c + b * out_c + o] * W[o, i]) * act'(acts[xOff_c + b * in_c + i])
// the sum over o increasing from 0, W [out_c, in_c] at params[wOff_c]; layer c + 1 starts from the
// delta layer c wrote (out_{c+1} = in_c, dOff_{c+1} = pOff_c; the dispatch checks it).
// Bindings (declared by the preamble generated from src/kernels/mlp_delta_chain.ts):
//   params: const float*: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: const float*: each layer's input rows at xOff_c (the previous layer's outputs)
//   deltas: float*: each network's top delta rows at dOff_0, every layer's dX rows at pOff_c
//   mb: const float*: ppo_gather's action, old log-prob, advantage, return (loss mode only)
//   partials: float*: the loss mode's LOSS_PARTS sums per block at lossAt
//   u: Uniforms { batch, nets, the loss mode's loss, rows and ppo_loss's nActions .. lossAt, then
//      per net n < 2: layers, pFrom, pEnd (its chain's weights and biases: params[pFrom .. pEnd)),
//      then per layer c < 4: in, out, wOff, dOff, xOff, pOff, pAct }
//      (pAct: 0 none, 1 relu, 2 leaky 0.01; widths <= MAX_WIDTH)
// The block's threads split in `nets` equal parts, one per network; the networks run at once, in
// steps with a barrier between them, a shorter chain starting later (its last layer in the last
// step). In its part, thread t takes the inputs i = t, t + part, ..: it loads the ROWS rows' act'
// inputs (for its first input, during the previous step), adds delta[r][o] * W[o, i] over o
// increasing for all ROWS rows (the weight read once, consecutive threads at consecutive
// addresses: no bank conflicts; each row's delta a broadcast from the tile, kept as [o][ROWS] so
// one 16-byte read serves 4 rows), multiplies by act', and writes the result to the next tile
// ([i][ROWS]) and to deltas. Each network has two tiles that the steps alternate between (tile A
// holds its deltas out_0, in_1, ..; tile B in_0, in_2, ..: TILE_FLOATS = ROWS * the sum of the
// networks' widest deltas of each), after the copy in shared memory.
// Numerics: f32, each sum from +0 in increasing o as the TS reference (the same bits on the
// emulator, which does not fuse); NVRTC fuses multiply-adds, so the GPU agrees to a tolerance
// (fixed order: the same bits on every run).
//
// STAGED = 1 (CUDA's launch; 512 threads): the block first copies every network's weight range
// into shared memory, from the 16-byte boundary at or before pFrom_n, in float4s (the ranges one
// after the other, each rounded out to whole float4s; STAGE_FLOATS in all), every thread issuing a
// round's loads (STAGE_BATCH of them) before it stores any, the networks' top deltas and first act'
// inputs loaded before the first round; the last 1 to 3 floats of a range are copied one by one (not
// read past pEnd: the buffer may end there). Rows are read at any float offset (one float per
// thread), so the ranges need no shift. Then every weight comes from shared memory.
// STAGED undefined (the WGSL twin's shape; CUDA's build when the copy does not fit): 256 threads
// read the weights from global memory (the small layers stay in L2), unrolled so that several
// rows of W are in flight.
//
// LOSS = 1 (the loss mode's build; the launch sets u.loss = 1): before the chain, the block
// computes the PPO loss head for its rows (ppo_loss.cuh, the code ppo_loss runs, so the same bits
// per sample): the minibatch's advantage statistics (ppo_loss's 256-thread tree; a staged block's
// threads 256.. add +0), then warp w takes rows w, w + THREADS / 32, .. (team code as ppo_loss),
// writing dLogits / dValue to deltas at dLogitsOff / dValueOff and into the top tiles (net 0's
// top is the policy output, net 1's the value: the dispatch checks it; rows past the batch get
// zeros), and the block's LOSS_PARTS sums (the warps' in warp order) to partials[lossAt + block *
// LOSS_PARTS + part]. The staged build issues the copy's first round of loads, runs the loss while
// they are in flight, then stores them. LOSS_FLOATS (= THREADS) floats of shared memory after the
// tiles hold the sums' trees.
#define COLLECT_DYN_SMEM  // the tiles (and the copy) are the launch's dynamic shared memory
#include "collect_port.cuh"
#include "grid.cuh"
#include "learn_common.cuh"

#define THREADS (WG_X * WG_Y * WG_Z)
#if !defined(STAGED) || !STAGED
#define STAGE_FLOATS 0
#endif
#ifndef LOSS
#define LOSS 0
#endif
#ifndef LOSS_FLOATS
#define LOSS_FLOATS 0
#endif
#if LOSS
#include "ppo_loss.cuh"
#endif
// Top delta floats (both networks' ROWS x out_0) a thread loads before storing them.
#define DIN_PER_THREAD ((ROWS * 2 * MAX_WIDTH + THREADS - 1) / THREADS)
// Outputs o per unrolled step of the dX loop: about 32 delta reads in flight (16 rows: 2, or the
// 256-thread build spills).
constexpr unsigned int delta_unroll_o = ROWS >= 16 ? 2u : ROWS >= 8 ? 4u : 8u;

struct DeltaLayer {
  unsigned int n_in, n_out, w_off, d_off, x_off, p_off, p_act;
};

__device__ __forceinline__ DeltaLayer delta_layer(const Uniforms& u, unsigned int n, unsigned int c) {
  if (n == 0u) {
    if (c == 0u) return DeltaLayer{u.in0_0, u.out0_0, u.wOff0_0, u.dOff0_0, u.xOff0_0, u.pOff0_0, u.pAct0_0};
    if (c == 1u) return DeltaLayer{u.in0_1, u.out0_1, u.wOff0_1, u.dOff0_1, u.xOff0_1, u.pOff0_1, u.pAct0_1};
    if (c == 2u) return DeltaLayer{u.in0_2, u.out0_2, u.wOff0_2, u.dOff0_2, u.xOff0_2, u.pOff0_2, u.pAct0_2};
    return DeltaLayer{u.in0_3, u.out0_3, u.wOff0_3, u.dOff0_3, u.xOff0_3, u.pOff0_3, u.pAct0_3};
  }
  if (c == 0u) return DeltaLayer{u.in1_0, u.out1_0, u.wOff1_0, u.dOff1_0, u.xOff1_0, u.pOff1_0, u.pAct1_0};
  if (c == 1u) return DeltaLayer{u.in1_1, u.out1_1, u.wOff1_1, u.dOff1_1, u.xOff1_1, u.pOff1_1, u.pAct1_1};
  if (c == 2u) return DeltaLayer{u.in1_2, u.out1_2, u.wOff1_2, u.dOff1_2, u.xOff1_2, u.pOff1_2, u.pAct1_2};
  return DeltaLayer{u.in1_3, u.out1_3, u.wOff1_3, u.dOff1_3, u.xOff1_3, u.pOff1_3, u.pAct1_3};
}

__device__ __forceinline__ unsigned int delta_layers(const Uniforms& u, unsigned int n) {
  return n == 0u ? u.layers0 : u.layers1;
}

// Floats per row of net n's tiles A (its deltas out_0, in_1, in_3) and B (in_0, in_2): the widest
// of each (src/kernels/mlp_delta_chain.ts: tileWidths).
__device__ __forceinline__ void delta_tile_widths(const Uniforms& u, unsigned int n, unsigned int& a,
                                                  unsigned int& b) {
  a = delta_layer(u, n, 0u).n_out;
  b = 0u;
  for (unsigned int c = 0; c < delta_layers(u, n); c++) {
    const unsigned int w = delta_layer(u, n, c).n_in;
    if (c % 2u == 0u) b = max(b, w);
    else a = max(a, w);
  }
}

// v[r] = tile[r] for r < ROWS (16- or 8-byte aligned: a broadcast when the warp reads one address).
__device__ __forceinline__ void delta_tile_load(float (&v)[ROWS], const float* tile) {
#if ROWS % 4 == 0
#pragma unroll
  for (unsigned int r = 0; r < ROWS; r += 4) {
    const float4 q = lds4(tile + r);
    v[r] = q.x;
    v[r + 1] = q.y;
    v[r + 2] = q.z;
    v[r + 3] = q.w;
  }
#else
  static_assert(ROWS == 2, "ROWS: 2 or a multiple of 4");
  const float2 q = *reinterpret_cast<const float2*>(tile);
  v[0] = q.x;
  v[1] = q.y;
#endif
}

__device__ __forceinline__ void delta_tile_store(float* tile, const float (&v)[ROWS]) {
#if ROWS % 4 == 0
#pragma unroll
  for (unsigned int r = 0; r < ROWS; r += 4) {
    *reinterpret_cast<float4*>(tile + r) = make_float4(v[r], v[r + 1], v[r + 2], v[r + 3]);
  }
#else
  float2 q;
  q.x = v[0];
  q.y = v[1];
  *reinterpret_cast<float2*>(tile) = q;
#endif
}

// The act' inputs of input i of layer L for the block's rows (zeros past the batch or the layer).
__device__ __forceinline__ void delta_load_x(float (&x)[ROWS], const float* acts, const DeltaLayer& L,
                                             unsigned int i, unsigned int row0, unsigned int rows) {
#pragma unroll
  for (unsigned int r = 0; r < ROWS; r++) {
    x[r] = i < L.n_in && r < rows ? acts[L.x_off + (row0 + r) * L.n_in + i] : 0.0f;
  }
}

#if LOSS
// The loss head of the block's rows (LOSS: see the header); every thread calls it (barriers).
// Leaves the top tiles written (no barrier after the tiles' stores: the caller's comes next).
__device__ __forceinline__ void delta_loss(const Uniforms& u, const float* acts, const float* mb, float* deltas,
                                           float* partials, float* red, float* tile_a0, float* tile_a1,
                                           unsigned int block, unsigned int row0, unsigned int rows,
                                           unsigned int tid) {
  static_assert(LOSS_FLOATS >= THREADS && THREADS % 32 == 0 && THREADS >= PPO_STAT_THREADS, "loss scratch");
  constexpr unsigned int warps = THREADS / 32u;
  static_assert(warps * LOSS_PARTS <= THREADS, "the warps' sums fit the scratch");
  float mean, scale;
  ppo_advantage_stats(u, mb, red, tid, THREADS, mean, scale);
  const unsigned int lane = tid % 32u;
  const unsigned int warp = tid / 32u;
  float sums[LOSS_PARTS] = {};
  for (unsigned int r = warp; r < ROWS; r += warps) {
    const bool valid = r < rows;
    ppo_loss_sample(u, acts, mb, deltas, row0 + r, valid, lane, mean, scale, sums, tile_a0 + r, ROWS,
                    tile_a1 + r);
    if (!valid) {  // rows past the batch: zero deltas in the tiles (as the plain build loads them)
      for (unsigned int k = lane; k < u.nActions; k += 32u) tile_a0[k * ROWS + r] = 0.0f;
      if (lane == 0u) tile_a1[r] = 0.0f;
    }
  }
  // The block's sums: warp w's at red[p * warps + w], added in warp order.
  if (lane == 0u) {
#pragma unroll
    for (unsigned int p = 0; p < LOSS_PARTS; p++) red[p * warps + warp] = sums[p];
  }
  __syncthreads();
  if (tid < LOSS_PARTS) {
    float total = 0.0f;
    for (unsigned int w = 0; w < warps; w++) total += red[tid * warps + w];
    partials[u.lossAt + block * LOSS_PARTS + tid] = total;
  }
}
#endif

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) mlp_delta_chain(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(STAGE_FLOATS % 4 == 0 && TILE_FLOATS % 2 == 0, "16-byte aligned tiles");
  COLLECT_SMEM(smem, STAGE_FLOATS + TILE_FLOATS + LOSS_FLOATS);
  const unsigned long long block = flat_block_id();
  if (block * ROWS >= u.batch) return;  // the whole block: no barrier is skipped by part of it
  const unsigned int row0 = (unsigned int)block * ROWS;
  const unsigned int rows = min((unsigned int)ROWS, u.batch - row0);
  const unsigned int tid = threadIdx.x + WG_X * (threadIdx.y + WG_Y * threadIdx.z);
  const unsigned int nets = u.nets;
  const unsigned int part = THREADS / nets;  // threads per network (whole warps)
  const unsigned int net = tid / part;
  const unsigned int t = tid - net * part;
  const unsigned int layers = delta_layers(u, net);
  const unsigned int steps = max(u.layers0, nets > 1u ? u.layers1 : 0u);
  const unsigned int first_step = steps - layers;  // this network's layer 0 runs then

  // The tiles: net 0's A and B, then net 1's.
  unsigned int wa0, wb0, wa1 = 0u, wb1 = 0u;
  delta_tile_widths(u, 0u, wa0, wb0);
  if (nets > 1u) delta_tile_widths(u, 1u, wa1, wb1);
  float* const tiles = smem + STAGE_FLOATS;
  float* const tile_a0 = tiles;
  float* const tile_a1 = tiles + ROWS * (wa0 + wb0);
  float* tile_in = net == 0u ? tile_a0 : tile_a1;  // this step's layer reads its deltas here
  float* tile_out = tile_in + ROWS * (net == 0u ? wa0 : wa1);
#if LOSS
  // The loss mode computes the top deltas itself (u.loss = 1: the dispatch builds LOSS only then).
  float* const loss_red = tiles + TILE_FLOATS;
#else
  // Both networks' top delta rows (contiguous in deltas; zeros past the batch): element e of net
  // n's is row e / out_0, unit e % out_0, and goes to tile A as [unit][ROWS].
  const DeltaLayer top0 = delta_layer(u, 0u, 0u);
  const DeltaLayer top1 = delta_layer(u, 1u, 0u);
  const unsigned int e0 = ROWS * top0.n_out;
  const unsigned int e_all = e0 + (nets > 1u ? ROWS * top1.n_out : 0u);
  float din[DIN_PER_THREAD];
#pragma unroll
  for (unsigned int q = 0; q < DIN_PER_THREAD; q++) {
    const unsigned int e = tid + THREADS * q;
    const bool second = e >= e0;
    // Fields, not a reference to top0 or top1 (that put them on the stack).
    const unsigned int n_out = second ? top1.n_out : top0.n_out;
    const unsigned int d_off = second ? top1.d_off : top0.d_off;
    const unsigned int k = second ? e - e0 : e;
    din[q] = e < e_all && k < rows * n_out ? deltas[d_off + row0 * n_out + k] : 0.0f;
  }
#endif
  // This thread's first act' inputs (its network's layer 0, input t).
  float x_next[ROWS];
  delta_load_x(x_next, acts, delta_layer(u, net, 0u), t, row0, rows);

#if STAGED
  // The copy: net n's range from a_n = pFrom_n rounded down to 16 bytes; whole float4 chunks k <
  // whole_n are loaded as they are, the last span_n % 4 floats one by one. Net 0's copy is at 0,
  // net 1's after net 0's chunks (ceil(span_0 / 4) of them).
  const unsigned int a0 = u.pFrom0 & ~3u;
  const unsigned int a1 = u.pFrom1 & ~3u;
  const unsigned int span0 = u.pEnd0 - a0;
  const unsigned int span1 = nets > 1u ? u.pEnd1 - a1 : 0u;
  const unsigned int chunks0 = (span0 + 3u) / 4u;
  const unsigned int whole0 = span0 / 4u;
  const unsigned int whole1 = span1 / 4u;
  float* const staged = smem;
#define STAGE_PER_THREAD ((STAGE_FLOATS / 4 + THREADS - 1) / THREADS)
#define STAGE_ROUNDS ((STAGE_PER_THREAD + 15) / 16)
#define STAGE_BATCH ((STAGE_PER_THREAD + STAGE_ROUNDS - 1) / STAGE_ROUNDS)
  // Chunk k = tid + THREADS * j (j < STAGE_PER_THREAD): net 0's chunk k, or net 1's k - chunks0.
  // Predicated loads, so that ptxas keeps a round's loads all in flight before its stores.
#if !LOSS
  for (unsigned int j0 = 0; j0 < STAGE_PER_THREAD; j0 += STAGE_BATCH) {
    float4 v[STAGE_BATCH];
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      const unsigned int k = tid + THREADS * (j0 + j);
      const bool second = k >= chunks0;
      const unsigned int c = second ? k - chunks0 : k;
      if (j0 + j < STAGE_PER_THREAD && c < (second ? whole1 : whole0)) {
        v[j] = ldg4(params + (second ? a1 : a0) + 4u * c);
      }
    }
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      const unsigned int k = tid + THREADS * (j0 + j);
      const bool second = k >= chunks0;
      const unsigned int c = second ? k - chunks0 : k;
      if (j0 + j < STAGE_PER_THREAD && c < (second ? whole1 : whole0)) {
        *reinterpret_cast<float4*>(staged + 4u * k) = v[j];
      }
    }
  }
#else
  // The same rounds, the first one's loads issued before the loss head and stored after it.
  auto stage_load = [&](unsigned int j0, float4 (&v)[STAGE_BATCH]) {
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      const unsigned int k = tid + THREADS * (j0 + j);
      const bool second = k >= chunks0;
      const unsigned int c = second ? k - chunks0 : k;
      if (j0 + j < STAGE_PER_THREAD && c < (second ? whole1 : whole0)) {
        v[j] = ldg4(params + (second ? a1 : a0) + 4u * c);
      }
    }
  };
  auto stage_store = [&](unsigned int j0, const float4 (&v)[STAGE_BATCH]) {
#pragma unroll
    for (unsigned int j = 0; j < STAGE_BATCH; j++) {
      const unsigned int k = tid + THREADS * (j0 + j);
      const bool second = k >= chunks0;
      const unsigned int c = second ? k - chunks0 : k;
      if (j0 + j < STAGE_PER_THREAD && c < (second ? whole1 : whole0)) {
        *reinterpret_cast<float4*>(staged + 4u * k) = v[j];
      }
    }
  };
  {
    float4 v[STAGE_BATCH];
    stage_load(0u, v);
    // The loss head while the first round's loads are in flight (it needs no weights).
    delta_loss(u, acts, mb, deltas, partials, loss_red, tile_a0, tile_a1, (unsigned int)block, row0, rows, tid);
    stage_store(0u, v);
  }
  for (unsigned int j0 = STAGE_BATCH; j0 < STAGE_PER_THREAD; j0 += STAGE_BATCH) {
    float4 v[STAGE_BATCH];
    stage_load(j0, v);
    stage_store(j0, v);
  }
#endif
  if (tid < 8u) {
    const bool second = tid >= 4u;
    const unsigned int whole = second ? whole1 : whole0;
    const unsigned int q = tid % 4u;
    if (q < (second ? span1 : span0) % 4u) {
      staged[(second ? 4u * chunks0 : 0u) + 4u * whole + q] = params[(second ? a1 : a0) + 4u * whole + q];
    }
  }
  // params[p] of this thread's network's range is at w_base[p - w_from].
  const float* const w_base = net == 0u ? staged : staged + 4u * chunks0;
  const unsigned int w_from = net == 0u ? a0 : a1;
#else
#if LOSS
  delta_loss(u, acts, mb, deltas, partials, loss_red, tile_a0, tile_a1, (unsigned int)block, row0, rows, tid);
#endif
  const float* const w_base = params;
  const unsigned int w_from = 0u;
#endif
#if !LOSS
#pragma unroll
  for (unsigned int q = 0; q < DIN_PER_THREAD; q++) {
    const unsigned int e = tid + THREADS * q;
    if (e < e_all) {
      const bool second = e >= e0;
      const unsigned int n_out = second ? top1.n_out : top0.n_out;
      const unsigned int k = second ? e - e0 : e;
      (second ? tile_a1 : tile_a0)[(k % n_out) * ROWS + k / n_out] = din[q];
    }
  }
#endif
  __syncthreads();

  for (unsigned int s = 0; s < steps; s++) {
    if (s >= first_step) {
      const unsigned int c = s - first_step;
      const DeltaLayer L = delta_layer(u, net, c);
      float x_first[ROWS];
#pragma unroll
      for (unsigned int r = 0; r < ROWS; r++) x_first[r] = x_next[r];
      if (c + 1u < layers) delta_load_x(x_next, acts, delta_layer(u, net, c + 1u), t, row0, rows);
      for (unsigned int i = t; i < L.n_in; i += part) {
        float x[ROWS];
        if (i == t) {
#pragma unroll
          for (unsigned int r = 0; r < ROWS; r++) x[r] = x_first[r];
        } else {
          delta_load_x(x, acts, L, i, row0, rows);
        }
        const float* w = w_base + (L.w_off - w_from) + i;  // W[o, i] at w[o * n_in]
        float acc[ROWS];
#pragma unroll
        for (unsigned int r = 0; r < ROWS; r++) acc[r] = 0.0f;
#pragma unroll delta_unroll_o
        for (unsigned int o = 0; o < L.n_out; o++) {
          const float wv = w[o * L.n_in];
          float d[ROWS];
          delta_tile_load(d, tile_in + o * ROWS);
#pragma unroll
          for (unsigned int r = 0; r < ROWS; r++) acc[r] += d[r] * wv;
        }
        float v[ROWS];
#pragma unroll
        for (unsigned int r = 0; r < ROWS; r++) v[r] = acc[r] * learn_act_derivative(x[r], L.p_act);
        delta_tile_store(tile_out + i * ROWS, v);
#pragma unroll
        for (unsigned int r = 0; r < ROWS; r++) {
          if (r < rows) deltas[L.p_off + (row0 + r) * L.n_in + i] = v[r];
        }
      }
      float* const swap = tile_in;
      tile_in = tile_out;
      tile_out = swap;
    }
    __syncthreads();
  }
}
