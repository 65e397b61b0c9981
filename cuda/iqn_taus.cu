// iqn_taus: the IQN taus of a train step and their cosine features (src/kernels/iqn_taus.ts).
// Row r < 2 batch nTau: online taus (r < batch nTau) then target taus; sample b, Philox word k
// (t, or nTau + t for a target tau) of Philox(TAU_STREAM, b, step, k >> 2), step =
// state[stateAt] + stepSlot. taus[tauOff + r] = tau_r; acts[cosOff + r embed + i] = cos(i pi tau_r).
// Bindings (declared by the preamble generated from src/kernels/iqn_taus.ts):
//   state: unsigned int*; taus, acts: float*
//   u: Uniforms { batch, nTau, embed, stateAt, stepSlot, key0, key1, tauOff, cosOff }
// Block: WG_X threads, one (r, i) each. Numerics: unfused products, cosf (a few ulp).
#include "grid.cuh"
#include "learn_common.cuh"
#include "philox.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) iqn_taus(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned long long idx = flat_thread_id();
  const unsigned int half = u.batch * u.nTau;
  if (idx >= 2ull * half * u.embed) return;
  const unsigned int r = (unsigned int)(idx / u.embed);
  const unsigned int i = (unsigned int)(idx % u.embed);
  const bool target = r >= half;
  const unsigned int q = target ? r - half : r;
  const unsigned int b = q / u.nTau;
  const unsigned int k = (target ? u.nTau : 0u) + q % u.nTau;
  const unsigned int step = state[u.stateAt] + u.stepSlot;
  const uint4 w = philox4x32_10(make_uint4(TAU_STREAM, b, step, k >> 2), u.key0, u.key1);
  const unsigned int words[4] = {w.x, w.y, w.z, w.w};
  const float tau = philox_unit_float(words[k & 3u]);
  if (i == 0u) taus[u.tauOff + r] = tau;
  const float pi = (float)3.14159265358979323846;
  acts[u.cosOff + idx] = cosf(__fmul_rn(__fmul_rn((float)i, pi), tau));
}
