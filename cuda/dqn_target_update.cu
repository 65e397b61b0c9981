// dqn_target_update: the target network's update after a DQN-family train step
// (src/learn/dqn_update.ts updateTarget), over count params k:
//   hard == 1  targetNet[targetOff + k] = online[onlineOff + k]
//   hard == 0  targetNet[targetOff + k] = f32(t + f32(tau f32(o - t)))   (Polyak)
// Bindings (declared by the preamble generated from src/kernels/dqn_target_update.ts):
//   online: const float*; targetNet: float*
//   u: Uniforms { count, onlineOff, targetOff, hard, tau }
// Block: WG_X threads, one param each. Numerics: each rounding spelled out (no fused multiply-add),
// bit for bit the TS reference.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dqn_target_update(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned long long k = flat_thread_id();
  if (k >= u.count) return;
  const float o = online[u.onlineOff + k];
  const float t = targetNet[u.targetOff + k];
  targetNet[u.targetOff + k] = u.hard == 1u ? o : __fadd_rn(t, __fmul_rn(u.tau, __fsub_rn(o, t)));
}
