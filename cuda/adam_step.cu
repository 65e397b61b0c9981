// adam_step: global gradient-norm clip and one Adam / AdamW step over a flat parameter buffer
// (src/learn/optim.ts, PyTorch semantics):
//   norm = sqrt(sum partials[0..nPartials)); coef = maxNorm / (norm + 1e-6), applied when clip != 0
//   and coef < 1; stats[normAt] += norm (clip != 0, block 0 only)
//   p = p decay (if decay != 1); m = m + (1 - b1)(g - m); v = v b2 + (1 - b2) g^2;
//   p = p - stepSize (m / (sqrt(v) / bc2Sqrt + eps)), stepSize, bc2Sqrt = bits of sched[schedAt..+1]
// Bindings (declared by the preamble generated from src/kernels/adam_step.ts):
//   params: float* [n]; grads: const float* [n]; moments: float*: m [n] then v [n]
//   partials: const float*: per-tile sums of squares of the gradients (mlp_backward)
//   sched: const unsigned int*: f32 bits of each step's bias corrections
//   stats: float*: the norm is added at normAt
//   u: Uniforms { n, nPartials, clip, maxNorm, oneMinusB1, beta2, oneMinusB2, eps, decay, schedAt, normAt,
//                 gateAt, lossAt, lossGroups, lossCount } (gateAt != 0xffffffff and sched[gateAt] == 0:
//                 the step is skipped; lossGroups > 0: block 0 adds column sums of the loss head's
//                 lossGroups x LOSS_PARTS partials at lossAt, divided by lossCount, to stats[0..LOSS_PARTS))
// Block: WG_X threads (a power of two), ITEMS elements each, strided by WG_X. Every block reduces
// the partials itself in the same fixed tree order, so all agree on the norm.
// Numerics: the update uses round-to-nearest intrinsics (no contraction into fused multiply-adds),
// so it equals the TS reference bit for bit given the same clip coefficient.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) adam_step(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  __shared__ float red[WG_X];
  const unsigned int tid = threadIdx.x;
  const unsigned int g = (unsigned int)flat_block_id();
  // Uniform across the block (one address), so returning here leaves no thread at a barrier.
  if (u.gateAt != 0xffffffffu && sched[u.gateAt] == 0u) return;
  // This block's operands are loaded before the norm's reduction, so their trip to memory overlaps
  // the partials' trip and the tree instead of following them.
  float gr[ITEMS], p0[ITEMS], m0[ITEMS], v0[ITEMS];
#pragma unroll
  for (unsigned int j = 0; j < ITEMS; j++) {
    const unsigned int k = (g * ITEMS + j) * WG_X + tid;
    const bool in = k < u.n;
    gr[j] = in ? grads[k] : 0.0f;
    p0[j] = in ? params[k] : 0.0f;
    m0[j] = in ? moments[k] : 0.0f;
    v0[j] = in ? moments[u.n + k] : 0.0f;
  }
  float coef = 1.0f;
  bool scaled = false;
  if (u.clip != 0u) {
    float s = 0.0f;
    for (unsigned int p = tid; p < u.nPartials; p += WG_X) s += partials[p];
    const float norm = sqrtf(learn_block_sum(s, red, tid, WG_X));
    const float c = u.maxNorm / (norm + 1e-6f);
    if (c < 1.0f) {
      coef = c;
      scaled = true;
    }
    if (g == 0u && tid == 0u) stats[u.normAt] += norm;
  }
  if (g == 0u && tid < LOSS_PARTS && u.lossGroups > 0u) {
    float sum = 0.0f;
    for (unsigned int r = 0; r < u.lossGroups; r++) sum = __fadd_rn(sum, partials[u.lossAt + r * LOSS_PARTS + tid]);
    stats[tid] = __fadd_rn(stats[tid], __fdiv_rn(sum, (float)u.lossCount));
  }
  const float step_size = __uint_as_float(sched[u.schedAt]);
  const float bc2_sqrt = __uint_as_float(sched[u.schedAt + 1u]);
#pragma unroll
  for (unsigned int j = 0; j < ITEMS; j++) {
    const unsigned int k = (g * ITEMS + j) * WG_X + tid;
    if (k >= u.n) continue;
    float g_k = gr[j];
    if (scaled) g_k = __fmul_rn(g_k, coef);
    float p = p0[j];
    if (u.decay != 1.0f) p = __fmul_rn(p, u.decay);
    const float m = __fadd_rn(m0[j], __fmul_rn(u.oneMinusB1, __fsub_rn(g_k, m0[j])));
    const float v = __fadd_rn(__fmul_rn(v0[j], u.beta2), __fmul_rn(u.oneMinusB2, __fmul_rn(g_k, g_k)));
    moments[k] = m;
    moments[u.n + k] = v;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), bc2_sqrt), u.eps);
    params[k] = __fsub_rn(p, __fmul_rn(step_size, __fdiv_rn(m, denom)));
  }
}
