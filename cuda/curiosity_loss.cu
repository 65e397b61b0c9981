// curiosity_loss: MSE of the curiosity forward model and its gradient w.r.t. the predictions
// (src/learn/curiosity.ts). rows = min(rowCount[0], batch), n = rows * outDim:
//   stats[statAt] = sum_{e < n} (acts[predOff + e] - targets[e])^2 / n   (0 when n = 0)
//   deltas[dPredOff + e] = 2 (pred - target) / n for e < n, 0 for n <= e < batch * outDim
// Bindings (declared by the preamble generated from src/kernels/curiosity_loss.ts):
//   acts: const float*: prediction rows at predOff; targets: const float* [batch, outDim]
//   rowCount: const unsigned int*: rowCount[0] = valid rows
//   deltas: float*: output layer's delta rows at dPredOff
//   stats: float*: the MSE at statAt
//   u: Uniforms { batch, outDim, predOff, dPredOff, statAt }
// Block: one of WG_X threads (a power of two), elements tid, tid + WG_X, ...; the sum is a
// fixed-order tree (deterministic). Numerics: f32 (the TS reference sums in f64: tolerance).
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) curiosity_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  __shared__ float red[WG_X];
  const unsigned int tid = threadIdx.x;
  const unsigned int total = u.batch * u.outDim;
  const unsigned int n = min(rowCount[0], u.batch) * u.outDim;
  float s = 0.0f;
  for (unsigned int e = tid; e < total; e += WG_X) {
    float d = 0.0f;
    if (e < n) {
      const float err = acts[u.predOff + e] - targets[e];
      s += err * err;
      d = 2.0f * err / (float)n;
    }
    deltas[u.dPredOff + e] = d;
  }
  const float sum = learn_block_sum(s, red, tid, WG_X);
  if (tid == 0u) stats[u.statAt] = n > 0u ? sum / (float)n : 0.0f;
}
