// Tile engine of the collection kernels: a block computes Y[R, Out] = act(X[R, In] W^T + b) for
// the R rows it owns (R = episodes of the block, or episode x tau pairs for IQN).
//
// Bindings: `params` is a network's flat buffer in global memory (src/nets/layout.ts: weight
// [Out, In] row-major at WOff, bias at BOff); X and Y live in shared memory, R rows of ldx / ldy
// floats (the tensor-core path feeds zeros for the rows of its last m16 tile past R, so buffers
// need no padding rows). Every thread of the block must call a layer (no divergence around it);
// the caller puts block_sync() between dependent layers. A layer is a struct (Dense) whose
// compute() leaves every output in the calling threads' registers and whose store() writes them, so
// dense_inplace() can put a barrier in between and overwrite its own input: one buffer serves a
// whole chain, and two layers that read the same input (the dueling streams) can be fused.
//
// Block shape: COLLECT_THREADS threads (a multiple of 32), one-dimensional.
//
// Two paths, chosen by the compile-time constant COLLECT_TF32:
// - 0, exact (the parity mode): thread task = (output j, a group of rows); acc = b[j], then
//   acc = f32(acc + f32(w[j, i] * x[i])) for i ascending: bit-for-bit the TS reference dense layer.
//   Weights come straight from global memory a 32-byte sector (two float4) at a time when a row holds
//   a multiple of 8 inputs (aligned sectors around rows that start off one), the x row is a
//   shared-memory broadcast, every weight is read once per block.
// - 1, tensor cores: warps own (16-row x 8-column) mma.sync m16n8k8 tiles with TF32 inputs
//   (10-bit mantissa, round to nearest) and f32 accumulation: relative error ~1e-3 per layer,
//   sums in a different order. A lane reads 4 consecutive k of its W row and X row as one float4
//   and splits them over two mmas (k permuted identically in A and B, which leaves the dot product
//   unchanged), so both operands load as full 16-byte vectors; W goes straight to registers:
//   each weight is used by exactly one warp per block, so staging it in shared memory would add a
//   copy and a barrier without reuse. Layers narrower than 8 outputs use the exact path.
//
// Shared-memory padding: strides are a multiple of 16 floats (whole k16 steps) and 16 mod 32, so
// the eight rows a quarter-warp reads as float4 fall on distinct banks. The padding columns of an
// input buffer (In .. round16(In)) must hold finite values (0) because the tensor-core path reads
// them (their weights are zero): a NaN there would poison the row.
#pragma once

#include "collect_port.cuh"

#ifndef COLLECT_TF32
#define COLLECT_TF32 0
#endif
#ifndef COLLECT_THREADS
#define COLLECT_THREADS 256
#endif

// In the tensor-core build a layer call is a real call on the GPU (not inlined): the kernels run the
// same layers every step, and inlined, the compiler hoisted each layer's per-lane weight and bias
// addresses out of the step loop and kept them, with the simulator's values, live through every
// other layer, where the accumulators spilled. A call gives each layer's loops the register file to
// themselves: the caller's few live values are saved once per layer, not inside its k loop. The
// exact build stays inlined: as functions of their own, its k loops unroll fully (a 14x larger
// kernel).
#if defined(FOXHUNT_EMU) || !COLLECT_TF32
#define COLLECT_LAYER COLLECT_FN
#else
#define COLLECT_LAYER __device__ __noinline__
#endif

#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_LEAKY 2

// Row stride (floats) of a shared activation buffer holding `width` columns.
__host__ __device__ constexpr int tile_stride(int width) {
  return ((width + 15) / 16 * 16) % 32 == 16 ? (width + 15) / 16 * 16 : (width + 15) / 16 * 16 + 16;
}

// Start of a shared-memory region: a multiple of 4 floats, so its rows can be read as float4.
__host__ __device__ constexpr int align4(int floats) { return (floats + 3) / 4 * 4; }

// Rows per exact-path task: split the rows into the most power-of-two groups that keep every
// (output, group) task on its own thread, so small layers still use the whole block.
__host__ __device__ constexpr int exact_groups(int out, int rows) {
  int g = 1;
  while (2 * g * out <= COLLECT_THREADS && rows % (2 * g) == 0) g *= 2;
  return g;
}

// An f32 value as the tensor-core operand bits cvt.rna.tf32.f32 would give, in one integer add: an
// mma reads a .tf32 operand register truncated to its top 19 bits, so adding half a TF32 ulp first
// rounds to nearest with ties away from zero, exactly as cvt.rna (also for subnormals, the carry
// into the exponent and infinities; NaN stays NaN). cvt.rna.tf32.f32 costs three SASS instructions
// on sm_90, and the operand conversions outnumbered the mmas in the layer loops. The emulator's
// to_tf32 returns the truncated bits themselves, which is what the tensor core computes with.
COLLECT_DEVICE unsigned tf32_operand(float x) {
#ifdef FOXHUNT_EMU
  return to_tf32(x);
#else
  return __float_as_uint(x) + 0x1000u;
#endif
}

// Flags of a tensor-core layer (ignored by the exact path): TF32_IN, its input rows already hold
// TF32 values (the previous layer stored them with TF32_OUT), so they go to the mma as they are;
// TF32_OUT, store the outputs rounded to TF32 as the next layer's mma would round them. Same
// results as converting at every read, one integer add per output instead of one per operand
// read (every output is read by the 4 to 8 warps of its rows). Only for outputs whose every
// reader is a tensor-core layer: an exact-path layer or the heads' arithmetic must see them whole.
#define TF32_IN 1
#define TF32_OUT 2

// x rounded to the nearest TF32 value, ties away (cvt.rna.tf32.f32), for finite x.
COLLECT_DEVICE float tf32_round(float x) {
#ifdef FOXHUNT_EMU
  return __uint_as_float(to_tf32(x));
#else
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
#endif
}

template <int Act>
COLLECT_DEVICE float activate(float a) {
  if (Act == ACT_RELU) return a > 0.0f ? a : 0.0f;
  if (Act == ACT_LEAKY) return a > 0.0f ? a : fmul(a, 0.01f);
  return a;
}

// Exact path: thread task = (output j, RPG consecutive rows); a thread holds the accumulators of all
// its PASSES tasks, so compute() and store() can be split by a barrier (in-place layers).
// The k loop runs outside the passes: a thread's PASSES weight loads of one k step are independent,
// so they are in flight together (each output's sum still runs over k ascending, the same bits).
// A load instruction of a warp touches 32 rows (one per lane) however wide it is, so rows of 8k
// inputs are read a whole 32-byte sector at a time (two float4): each sector is used as it arrives
// rather than half now and half from L1 a step later, after the other rows in flight have evicted
// it. A layer that starts off a sector (WOff % 8 = M8 != 0: every row has the same M8) reads the
// aligned sectors around each row and skips the M8 floats before it and the 8 - M8 after it (the
// next row, or the bias that follows the weights: Out >= 8).
template <int In, int Out, int Act, int Rows, int WOff, int BOff, int Flags = 0>
struct DenseExact {
  static constexpr int GROUPS = exact_groups(Out, Rows);
  static constexpr int RPG = Rows / GROUPS;
  static constexpr int TASKS = Out * GROUPS;
  static constexpr int PASSES = (TASKS + COLLECT_THREADS - 1) / COLLECT_THREADS;
  static constexpr int M8 = WOff % 8;
  static constexpr bool SECTORS = In % 8 == 0 && (M8 == 0 || (Out >= 8 && BOff > WOff));
  static constexpr bool VEC = !SECTORS && In % 4 == 0 && WOff % 4 == 0;
  // Sectors a row spans: In / 8, one more when it starts off a sector.
  static constexpr int NS = In / 8 + (M8 != 0 ? 1 : 0);
  static_assert(PASSES * RPG <= 64, "layer too large for one block's registers: fewer rows per block");
  float acc[PASSES][RPG];

  // Sector s of every live task's row: row elements 8 s - M8 + t for t in [T0, T1).
  template <int T0, int T1>
  COLLECT_MEMBER void sector(const float* const (&w)[PASSES], const int (&r0)[PASSES], const bool (&live)[PASSES],
                             int s, const float* x, int ldx) {
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
      if (!live[pass]) continue;
      const float4 lo = ldg4(w[pass] + 8 * s);
      const float4 hi = ldg4(w[pass] + 8 * s + 4);
      const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      float* a = acc[pass];
#pragma unroll
      for (int t = T0; t < T1; t++) {
        const int e = 8 * s - M8 + t;
#pragma unroll
        for (int r = 0; r < RPG; r++) a[r] = fadd(a[r], fmul(v[t], x[(r0[pass] + r) * ldx + e]));
      }
    }
  }

  COLLECT_MEMBER void compute(const float* __restrict__ params, const float* x, int ldx) {
    const float* w[PASSES];
    int r0[PASSES];
    bool live[PASSES];
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
      const int task = threadIdx.x + pass * COLLECT_THREADS;
      live[pass] = task < TASKS;
      const int j = live[pass] ? task % Out : 0;
      r0[pass] = live[pass] ? (task / Out) * RPG : 0;
      // Sector rows: w points at the aligned sector that holds the row's first element.
      w[pass] = params + WOff - (SECTORS ? M8 : 0) + j * In;
      const float bias = live[pass] ? ldg1(params + BOff + j) : 0.0f;
#pragma unroll
      for (int r = 0; r < RPG; r++) acc[pass][r] = bias;
    }
    if constexpr (SECTORS) {
      if constexpr (M8 == 0) {
        for (int s = 0; s < NS; s++) sector<0, 8>(w, r0, live, s, x, ldx);
      } else {
        sector<M8, 8>(w, r0, live, 0, x, ldx);
        for (int s = 1; s < NS - 1; s++) sector<0, 8>(w, r0, live, s, x, ldx);
        sector<0, M8>(w, r0, live, NS - 1, x, ldx);
      }
    } else if constexpr (VEC) {
      for (int i = 0; i < In; i += 4) {
#pragma unroll
        for (int pass = 0; pass < PASSES; pass++) {
          if (!live[pass]) continue;
          const float4 w4 = ldg4(w[pass] + i);
          float* a = acc[pass];
#pragma unroll
          for (int r = 0; r < RPG; r++) {
            const float4 x4 = lds4(x + (r0[pass] + r) * ldx + i);
            a[r] = fadd(a[r], fmul(w4.x, x4.x));
            a[r] = fadd(a[r], fmul(w4.y, x4.y));
            a[r] = fadd(a[r], fmul(w4.z, x4.z));
            a[r] = fadd(a[r], fmul(w4.w, x4.w));
          }
        }
      }
    } else {
      for (int i = 0; i < In; i++) {
#pragma unroll
        for (int pass = 0; pass < PASSES; pass++) {
          if (!live[pass]) continue;
          const float wi = ldg1(w[pass] + i);
          float* a = acc[pass];
#pragma unroll
          for (int r = 0; r < RPG; r++) a[r] = fadd(a[r], fmul(wi, x[(r0[pass] + r) * ldx + i]));
        }
      }
    }
  }

  COLLECT_MEMBER void store(const float* __restrict__, float* y, int ldy) const {
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
      const int task = threadIdx.x + pass * COLLECT_THREADS;
      if (task >= TASKS) break;
      const int j = task % Out;
      const int r0 = (task / Out) * RPG;
#pragma unroll
      for (int r = 0; r < RPG; r++) y[(r0 + r) * ldy + j] = activate<Act>(acc[pass][r]);
    }
  }
};

// Tensor-core path: warp task = MTW m16 tiles x WN n8 tiles; a warp holds all its PASSES tasks.
template <int In, int Out, int Act, int Rows, int WOff, int BOff, int Flags = 0>
struct DenseMma {
  static constexpr int MT = (Rows + 15) / 16;
  static constexpr int MTW = MT < 4 ? MT : 4;
  static constexpr int MG = (MT + MTW - 1) / MTW;
  static constexpr int NT = (Out + 7) / 8;
  static constexpr int WARPS = COLLECT_THREADS / 32;
  static constexpr int WN = NT >= 4 * WARPS ? 4 : NT >= 2 * WARPS ? 2 : 1;
  static constexpr int NTASK = (NT + WN - 1) / WN;
  static constexpr int TASKS = MG * NTASK;
  static constexpr int PASSES = (TASKS + WARPS - 1) / WARPS;
  static constexpr int KP = (In + 15) / 16 * 16;
  static constexpr bool VEC = In % 4 == 0 && WOff % 4 == 0;
  // Not 16-byte aligned but rows of an even length: every row keeps WOff's parity, so a lane's 4
  // weights load as two 8-byte pairs (even WOff: the target net's layers sit at an offset of 2
  // mod 4, the input layers have 54 inputs) or as a scalar, a pair and a scalar (odd WOff: the
  // advantage stream), not as 4 scalar loads.
  static constexpr bool PAIRS = !VEC && In % 2 == 0;
  static constexpr int ACC = PASSES * MTW * WN * 4;
  static_assert(ACC <= 64, "layer too large for one block's registers: fewer rows per block");
  // k16 steps unrolled, i.e. weight loads a warp keeps in flight: the layers are L2-latency bound
  // (each weight is used once per block), so one-m16 tiles with few accumulators (N <= 2048 on
  // CUDA: <= 16 episodes per block) take 8. The PPO critic's input layer (54 -> 512, misaligned:
  // scalar weight loads) over 32+ rows takes 2: 4 steps of 16 scalar loads beside its 32
  // accumulators spilled 284 bytes a thread at 128 registers (ptxas, 32 episodes x 512 threads).
  // At 512 threads (128 registers) a layer whose 8 steps of weights and accumulators fit in 96
  // registers takes 8 (64 rows: the 256- and 128-output layers, 2 n8 tiles a warp): half the
  // L2 round trips a layer waits for in sequence.
  static constexpr bool WIDE8 = COLLECT_THREADS >= 512 && 8 * WN * 4 + ACC <= 96;
  static constexpr int KUNROLL = MTW == 1 && ACC <= 16 ? 8 : !VEC && Out >= 512 && MTW >= 2 ? 2 : WIDE8 ? 8 : 4;
  float acc[PASSES][MTW][WN][4];

  static COLLECT_MEMBER unsigned a_operand(float x) {
    if constexpr ((Flags & TF32_IN) != 0)
      return __float_as_uint(x);
    else
      return tf32_operand(x);
  }

  COLLECT_MEMBER void compute(const float* __restrict__ params, const float* x, int ldx) {
    const int lane = lane_id();
    const int g = lane >> 2;
    const int t = lane & 3;
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
      const int task = (threadIdx.x >> 5) + pass * WARPS;
      if (task >= TASKS) break;
      const int mt0 = (task / NTASK) * MTW;
      const int n0 = (task % NTASK) * WN * 8;
      float(*c)[WN][4] = acc[pass];
#pragma unroll
      for (int m = 0; m < MTW; m++)
#pragma unroll
        for (int n = 0; n < WN; n++)
#pragma unroll
          for (int i = 0; i < 4; i++) c[m][n][i] = 0.0f;
#pragma unroll KUNROLL
      for (int k = 0; k < KP; k += 16) {
        const int kk = k + 4 * t;
        unsigned b[WN][4];
#pragma unroll
        for (int n = 0; n < WN; n++) {
          const int col = n0 + n * 8 + g;
          const float* w = params + WOff + col * In + kk;
          float4 w4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if (col < Out) {
            if constexpr (VEC) {
              if (kk < In) w4 = ldg4(w);
            } else if constexpr (PAIRS && WOff % 2 == 0) {
              // In even, kk a multiple of 4: kk < In implies kk + 1 < In, kk + 2 < In implies kk + 3 < In.
              if (kk < In) {
                const float2 lo = ldg2(w);
                w4.x = lo.x;
                w4.y = lo.y;
              }
              if (kk + 2 < In) {
                const float2 hi = ldg2(w + 2);
                w4.z = hi.x;
                w4.w = hi.y;
              }
            } else if constexpr (PAIRS) {
              if (kk < In) w4.x = ldg1(w);
              if (kk + 2 < In) {
                const float2 mid = ldg2(w + 1);
                w4.y = mid.x;
                w4.z = mid.y;
                w4.w = ldg1(w + 3);
              } else if (kk < In) {
                w4.y = ldg1(w + 1);
              }
            } else {
              if (kk < In) w4.x = ldg1(w);
              if (kk + 1 < In) w4.y = ldg1(w + 1);
              if (kk + 2 < In) w4.z = ldg1(w + 2);
              if (kk + 3 < In) w4.w = ldg1(w + 3);
            }
          }
          b[n][0] = tf32_operand(w4.x);
          b[n][1] = tf32_operand(w4.y);
          b[n][2] = tf32_operand(w4.z);
          b[n][3] = tf32_operand(w4.w);
        }
#pragma unroll
        for (int m = 0; m < MTW; m++) {
          if (MG > 1 && mt0 + m >= MT) break;
          const int row = (mt0 + m) * 16 + g;
          const float* xr = x + row * ldx + kk;
          const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          const float4 lo = row < Rows ? lds4(xr) : zero;
          const float4 hi = row + 8 < Rows ? lds4(xr + 8 * ldx) : zero;
          const unsigned a0[4] = {a_operand(lo.x), a_operand(hi.x), a_operand(lo.y), a_operand(hi.y)};
          const unsigned a1[4] = {a_operand(lo.z), a_operand(hi.z), a_operand(lo.w), a_operand(hi.w)};
#pragma unroll
          for (int n = 0; n < WN; n++) {
            const unsigned b0[2] = {b[n][0], b[n][1]};
            const unsigned b1[2] = {b[n][2], b[n][3]};
            mma_tf32_16x8x8(c[m][n], a0, b0);
            mma_tf32_16x8x8(c[m][n], a1, b1);
          }
        }
      }
    }
  }

  COLLECT_MEMBER void store(const float* __restrict__ params, float* y, int ldy) const {
    const int lane = lane_id();
    const int g = lane >> 2;
    const int t = lane & 3;
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
      const int task = (threadIdx.x >> 5) + pass * WARPS;
      if (task >= TASKS) break;
      const int mt0 = (task / NTASK) * MTW;
      const int n0 = (task % NTASK) * WN * 8;
#pragma unroll
      for (int m = 0; m < MTW; m++)
#pragma unroll
        for (int n = 0; n < WN; n++)
#pragma unroll
          for (int i = 0; i < 4; i++) {
            const int row = (mt0 + m) * 16 + g + (i >= 2 ? 8 : 0);
            const int col = n0 + n * 8 + 2 * t + (i & 1);
            if (row < Rows && col < Out) {
              const float v = activate<Act>(acc[pass][m][n][i] + ldg1(params + BOff + col));
              y[row * ldy + col] = (Flags & TF32_OUT) != 0 ? tf32_round(v) : v;
            }
          }
    }
  }
};

template <bool C, class A, class B>
struct pick_type {
  using type = A;
};
template <class A, class B>
struct pick_type<false, A, B> {
  using type = B;
};

// One dense layer of the block's tile, with the path the build selects (see the header).
template <int In, int Out, int Act, int Rows, int WOff, int BOff, int Flags = 0>
using Dense = typename pick_type<COLLECT_TF32 && Out >= 8, DenseMma<In, Out, Act, Rows, WOff, BOff, Flags>,
                                 DenseExact<In, Out, Act, Rows, WOff, BOff, Flags>>::type;

// Y = layer(X) with Y distinct from X.
template <int In, int Out, int Act, int Rows, int WOff, int BOff, int Flags = 0>
COLLECT_LAYER void dense_tile(const float* __restrict__ params, const float* x, int ldx, float* y, int ldy) {
  Dense<In, Out, Act, Rows, WOff, BOff, Flags> layer;
  layer.compute(params, x, ldx);
  layer.store(params, y, ldy);
}

// X = layer(X) in place: every thread has read X (its accumulators are in registers) before any
// thread overwrites it, so one buffer serves a chain of layers.
template <int In, int Out, int Act, int Rows, int WOff, int BOff, int Flags = 0>
COLLECT_LAYER void dense_inplace(const float* __restrict__ params, float* x, int ldx) {
  Dense<In, Out, Act, Rows, WOff, BOff, Flags> layer;
  layer.compute(params, x, ldx);
  block_sync();
  layer.store(params, x, ldx);
}

// The seed design's per-thread layer: one thread computes all Out outputs of its own row, reading
// every weight from global memory (kept for the benchmark's comparison). Same arithmetic as
// the exact path, so the two variants agree bit for bit.
template <int In, int Out, int Act, int WOff, int BOff>
COLLECT_FN void dense_thread(const float* __restrict__ params, const float* x, float* y) {
  for (int j = 0; j < Out; j++) {
    const float* w = params + WOff + j * In;
    float acc = ldg1(params + BOff + j);
    for (int i = 0; i < In; i++) acc = fadd(acc, fmul(ldg1(w + i), x[i]));
    y[j] = activate<Act>(acc);
  }
}
