// iqn_mix: IQN's product of the trunk output with the tau embedding (src/kernels/iqn_mix.ts).
// Row r = b nTau + t of the embedding belongs to trunk row b.
//   mode 0: acts[outOff + r w + j] = trunk[b, j] * e[r, j]
//   mode 1: deltas[dTrunkOff + b w + j] = (sum_t dh[r, j] e[r, j]) act'(trunk[b, j]),
//           deltas[dEmbedOff + r w + j] = dh[r, j] trunk[b, j] act'(e[r, j]), dh = deltas[dOff ..]
// Bindings (declared by the preamble generated from src/kernels/iqn_mix.ts):
//   acts, deltas: float*
//   u: Uniforms { mode, batch, nTau, width, trunkOff, embedOff, outOff, dOff, dTrunkOff,
//                 dEmbedOff, trunkAct, embedAct }
// Block: WG_X threads, one float each (mode 1: one trunk float and its nTau embedding floats).
// Numerics: f32, sums over t ascending, unfused (__fmul_rn / __fadd_rn): bit for bit the reference.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) iqn_mix(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned long long idx = flat_thread_id();
  const unsigned int w = u.width;
  if (u.mode == 0u) {
    if (idx >= (unsigned long long)u.batch * u.nTau * w) return;
    const unsigned int r = (unsigned int)(idx / w), j = (unsigned int)(idx % w);
    acts[u.outOff + idx] = __fmul_rn(acts[u.trunkOff + (r / u.nTau) * w + j], acts[u.embedOff + idx]);
    return;
  }
  if (idx >= (unsigned long long)u.batch * w) return;
  const unsigned int b = (unsigned int)(idx / w), j = (unsigned int)(idx % w);
  const float hv = acts[u.trunkOff + idx];
  float s = 0.0f;
  for (unsigned int t = 0; t < u.nTau; t++) {
    const unsigned int k = (b * u.nTau + t) * w + j;
    const float dh = deltas[u.dOff + k];
    const float e = acts[u.embedOff + k];
    s = __fadd_rn(s, __fmul_rn(dh, e));
    deltas[u.dEmbedOff + k] = __fmul_rn(__fmul_rn(dh, hv), learn_act_derivative(e, u.embedAct));
  }
  deltas[u.dTrunkOff + idx] = __fmul_rn(s, learn_act_derivative(hv, u.trunkAct));
}
