// iqn_loss: IQN's quantile Huber loss head on a sampled replay batch (src/learn/dqn_loss.ts
// iqnLoss). Per sample b < batch (rows of 45 quantile values):
//   a* = argmax_a of mean_j online[nextOff + (b nTarget + j) 45 + a] (f32 sums over j ascending,
//        first on ties); y_j = G + d targetNet[targetOff + (b nTarget + j) 45 + a*]
//   for i < nTau: Z = online[qOff + (b nTau + i) 45 + a], tau = taus[tauOff + b nTau + i],
//     delta_j = y_j - Z, wq = |tau - [delta < 0]|, L += wq Huber(delta) / kappa / nTarget,
//     dOut[dOutOff + (b nTau + i) 45 + a] = w (-sum_j wq clip(delta, kappa) / kappa) / nTarget / batch
//   td[b] = L, td[batch + b] = w L; dOut zero off the action.
// Bindings (declared by the preamble generated from src/kernels/iqn_loss.ts):
//   online, targetNet, taus, rows: const float*; actions: const int* (clamped);
//   weights: const float*; dOut, td: float*
//   u: Uniforms { batch, nTau, nTarget, qOff, nextOff, targetOff, dOutOff, tauOff, kappa }
// Block: WG_X threads, one sample each; y in a MAX_TAU local array. Numerics: f32.
#include "grid.cuh"
#include "learn_common.cuh"

__device__ __forceinline__ float iqn_huber(float x, float kappa) {
  const float a = fabsf(x);
  return a <= kappa ? 0.5f * x * x : kappa * (a - 0.5f * kappa);
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) iqn_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned long long gid = flat_thread_id();
  if (gid >= u.batch) return;
  const unsigned int b = (unsigned int)gid;
  const unsigned int A = NUM_ACTIONS;
  const unsigned int a = (unsigned int)min(max(actions[b], 0), NUM_ACTIONS - 1);
  const float ret = rows[b * REPLAY_F + RETURN_AT];
  const float disc = rows[b * REPLAY_F + DISCOUNT_AT];
  const float w = weights[b];
  const unsigned int next = b * u.nTarget * A;
  unsigned int best = 0;
  float bestSum = 0.0f;
  for (unsigned int q = 0; q < A; q++) {
    float s = 0.0f;
    for (unsigned int j = 0; j < u.nTarget; j++) s += online[u.nextOff + next + j * A + q];
    if (q == 0u || s > bestSum) {
      bestSum = s;
      best = q;
    }
  }
  float y[MAX_TAU];
  for (unsigned int j = 0; j < u.nTarget; j++) y[j] = ret + disc * targetNet[u.targetOff + next + j * A + best];
  const unsigned int on = b * u.nTau * A;
  for (unsigned int k = 0; k < u.nTau * A; k++) dOut[u.dOutOff + on + k] = 0.0f;
  const float nt = (float)u.nTarget;
  float loss = 0.0f;
  for (unsigned int i = 0; i < u.nTau; i++) {
    const float z = online[u.qOff + on + i * A + a];
    const float tau = taus[u.tauOff + b * u.nTau + i];
    float g = 0.0f;
    for (unsigned int j = 0; j < u.nTarget; j++) {
      const float delta = y[j] - z;
      const float wq = fabsf(tau - (delta < 0.0f ? 1.0f : 0.0f));
      loss += wq * iqn_huber(delta, u.kappa) / u.kappa / nt;
      g -= wq * (fminf(u.kappa, fmaxf(-u.kappa, delta)) / u.kappa);
    }
    dOut[u.dOutOff + on + i * A + a] = w * (g / nt) / (float)u.batch;
  }
  td[b] = loss;
  td[u.batch + b] = w * loss;
}
