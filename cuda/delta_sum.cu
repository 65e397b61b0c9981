// delta_sum: deltas[outOff + i] = deltas[aOff + i] + deltas[bOff + i] for i < count (the dueling
// trunk's output deltas from its two streams' input gradients).
// Bindings (declared by the preamble generated from src/kernels/delta_sum.ts):
//   deltas: float*; u: Uniforms { count, aOff, bOff, outOff }
// Block: WG_X threads, one float each. Numerics: one f32 add.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) delta_sum(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned long long i = flat_thread_id();
  if (i >= u.count) return;
  deltas[u.outOff + i] = deltas[u.aOff + i] + deltas[u.bOff + i];
}
