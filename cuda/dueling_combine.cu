// dueling_combine: the dueling head's combination and its backward (src/learn/dueling.ts), rows
// k < rows of n = atoms outputs per action, action-major; thread (k, z):
//   backward == 0  acts[outOff + (k 45 + a) n + z] = (V[k, z] + A[k, a, z]) - (sum_a A[k, a, z]) / 45
//                  with V at acts[vOff + k n + z], A at acts[aOff + (k 45 + a) n + z]
//   backward == 1  dV = deltas[dVOff + k n + z] = sum_a dOut[k, a, z] (dOut at deltas[dOutOff ..]),
//                  deltas[dAOff + (k 45 + a) n + z] = dOut[k, a, z] - dV / 45
// Sums over a ascending, f32.
// Bindings (declared by the preamble generated from src/kernels/dueling_combine.ts):
//   acts: float*; deltas: float*
//   u: Uniforms { rows, atoms, backward, vOff, aOff, outOff, dOutOff, dVOff, dAOff }
// Block: WG_X threads, one (row, atom) each. Numerics: f32 adds and an IEEE division (no fused
// operations are possible), bit for bit the TS reference.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dueling_combine(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned int n = u.atoms;
  const unsigned long long gid = flat_thread_id();
  if (gid >= (unsigned long long)u.rows * n) return;
  const unsigned int i = (unsigned int)gid;
  const unsigned int k = i / n;
  const unsigned int z = i - k * n;
  const unsigned int base = k * NUM_ACTIONS * n + z;
  float s = 0.0f;
  if (u.backward == 0u) {
    for (unsigned int a = 0; a < NUM_ACTIONS; a++) s += acts[u.aOff + base + a * n];
    const float mean = s / (float)NUM_ACTIONS;
    const float v = acts[u.vOff + i];
    for (unsigned int a = 0; a < NUM_ACTIONS; a++) acts[u.outOff + base + a * n] = (v + acts[u.aOff + base + a * n]) - mean;
  } else {
    for (unsigned int a = 0; a < NUM_ACTIONS; a++) s += deltas[u.dOutOff + base + a * n];
    deltas[u.dVOff + i] = s;
    const float mean = s / (float)NUM_ACTIONS;
    for (unsigned int a = 0; a < NUM_ACTIONS; a++) deltas[u.dAOff + base + a * n] = deltas[u.dOutOff + base + a * n] - mean;
  }
}
