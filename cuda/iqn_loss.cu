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
// Block: WG_X threads, one sample (block b of the flat grid): thread q < 45 sums action q's target
// quantiles at s', thread j takes y_j, the threads zero the sample's dOut row off the action and
// write each i's gradient; thread 0 takes the argmax and sums the loss over (i, j) in the
// reference's order. Numerics: f32.
#include "grid.cuh"
#include "learn_common.cuh"

__device__ __forceinline__ float iqn_huber(float x, float kappa) {
  const float a = fabsf(x);
  return a <= kappa ? 0.5f * x * x : kappa * (a - 0.5f * kappa);
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) iqn_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  __shared__ float qsum[NUM_ACTIONS];
  __shared__ float y[MAX_TAU];
  __shared__ float zs[MAX_TAU];
  __shared__ float ts[MAX_TAU];
  __shared__ unsigned int best_s;
  const unsigned long long bid = flat_block_id();
  if (bid >= u.batch) return;
  const unsigned int b = (unsigned int)bid;
  const unsigned int tid = local_index();
  const unsigned int A = NUM_ACTIONS;
  const unsigned int a = (unsigned int)min(max(actions[b], 0), NUM_ACTIONS - 1);
  const float ret = rows[b * REPLAY_F + RETURN_AT];
  const float disc = rows[b * REPLAY_F + DISCOUNT_AT];
  const float w = weights[b];
  const unsigned int next = b * u.nTarget * A;
  const unsigned int on = b * u.nTau * A;
  for (unsigned int k = tid; k < u.nTau * A; k += WG_X)
    if (k % A != a) dOut[u.dOutOff + on + k] = 0.0f;
  for (unsigned int q = tid; q < A; q += WG_X) {
    float s = 0.0f;
    for (unsigned int j = 0; j < u.nTarget; j++) s += online[u.nextOff + next + j * A + q];
    qsum[q] = s;
  }
  for (unsigned int i = tid; i < u.nTau; i += WG_X) {
    zs[i] = online[u.qOff + on + i * A + a];
    ts[i] = taus[u.tauOff + b * u.nTau + i];
  }
  __syncthreads();
  if (tid == 0u) {
    unsigned int best = 0;
    float bestSum = 0.0f;
    for (unsigned int q = 0; q < A; q++) {
      if (q == 0u || qsum[q] > bestSum) {
        bestSum = qsum[q];
        best = q;
      }
    }
    best_s = best;
  }
  __syncthreads();
  for (unsigned int j = tid; j < u.nTarget; j += WG_X)
    y[j] = ret + disc * targetNet[u.targetOff + next + j * A + best_s];
  __syncthreads();
  const float nt = (float)u.nTarget;
  for (unsigned int i = tid; i < u.nTau; i += WG_X) {
    float g = 0.0f;
    for (unsigned int j = 0; j < u.nTarget; j++) {
      const float delta = y[j] - zs[i];
      const float wq = fabsf(ts[i] - (delta < 0.0f ? 1.0f : 0.0f));
      g -= wq * (fminf(u.kappa, fmaxf(-u.kappa, delta)) / u.kappa);
    }
    dOut[u.dOutOff + on + i * A + a] = w * (g / nt) / (float)u.batch;
  }
  if (tid != 0u) return;
  float loss = 0.0f;
  for (unsigned int i = 0; i < u.nTau; i++) {
    for (unsigned int j = 0; j < u.nTarget; j++) {
      const float delta = y[j] - zs[i];
      const float wq = fabsf(ts[i] - (delta < 0.0f ? 1.0f : 0.0f));
      loss += wq * iqn_huber(delta, u.kappa) / u.kappa / nt;
    }
  }
  td[b] = loss;
  td[u.batch + b] = w * loss;
}
