// ppo_loss: the PPO loss head of one minibatch (src/learn/ppo_loss.ts). From the actor's logits and
// the critic's values in acts, per sample b < batch:
//   A = (adv - mean) / (std + 1e-8) if normalize (unbiased std over the minibatch, 0 for one sample)
//   logp = log_softmax(logits), ratio = exp(logp[action] - oldLogp)
//   policy = max(-A ratio, -A clamp(ratio, 1 - clip, 1 + clip)), entropy H = -sum p logp
//   deltas[dLogitsOff + b nActions + k] = dNewLp ([k == action] - p_k) + entropyCoef p_k (logp_k + H) / batch
//       with dNewLp = -A ratio / batch where the unclipped term is the max, else 0
//   deltas[dValueOff + b] = valueCoef (V - R) / batch
// and, per block g, partials[lossAt + g LOSS_PARTS + part] = its samples' sums of policy,
// 0.5 (V - R)^2, H, (ratio - 1) - log ratio, [|ratio - 1| > clip] (adam_step folds them into the
// update statistics).
// Bindings (declared by the preamble generated from src/kernels/ppo_loss.ts):
//   acts: const float*: logits rows at logitsOff, values at valuesOff
//   mb: const float*: action (f32), old log-prob, advantage, return; batch floats each
//   deltas: float*, written: output layers' deltas
//   partials: float*, written: LOSS_PARTS sums per block at lossAt
//   u: Uniforms { batch, nActions, logitsOff, valuesOff, dLogitsOff, dValueOff, clip, valueCoef,
//                 entropyCoef, normalize, lossAt }
// Block: WG_Y teams (warps) of WG_X = 32 lanes; team t takes samples g PER_GROUP + j WG_Y + t
// (j < PER_TEAM), its lanes splitting the logits (k = lane, lane + 32, ...). Each block computes the
// minibatch's advantage statistics itself (the same tree everywhere). Max, sum of exponentials and
// entropy are the WGSL twin's team trees, here as warp shuffles (a team is one warp). Every thread
// runs every round, so no shuffle or barrier is divergent. The per-sample code and the advantage
// statistics are ppo_loss.cuh's, which mlp_delta_chain's loss mode runs too (the same bits).
// Numerics: f32 with the accurate expf/logf (no fast-math) (the TS reference uses f64 between f32
// loads and stores: tolerance); an action outside [0, nActions) is clamped.
#include "grid.cuh"
#include "learn_common.cuh"
#include "ppo_loss.cuh"

#define THREADS (WG_X * WG_Y)
#define PER_GROUP (WG_Y * PER_TEAM)

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) ppo_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  static_assert(WG_X == 32, "a team is one warp");
  static_assert(THREADS == PPO_STAT_THREADS, "the advantage sums' tree is over 256 threads");
  __shared__ float red[THREADS];
  const unsigned int g = (unsigned int)flat_block_id();
  const unsigned int lane = threadIdx.x;
  const unsigned int team = threadIdx.y;
  const unsigned int tid = lane + WG_X * team;
  const unsigned int n = u.batch;
  float mean, scale;
  ppo_advantage_stats(u, mb, red, tid, THREADS, mean, scale);

  float sums[LOSS_PARTS] = {};
  for (unsigned int j = 0; j < PER_TEAM; j++) {
    const unsigned int b = g * PER_GROUP + j * WG_Y + team;
    ppo_loss_sample(u, acts, mb, deltas, b, b < n, lane, mean, scale, sums, nullptr, 0u, nullptr);
  }

  // The LOSS_PARTS block sums in one pass of learn_block_sum's tree (same pairs, same order).
  __shared__ float parts[LOSS_PARTS][THREADS];
#pragma unroll
  for (unsigned int p = 0; p < LOSS_PARTS; p++) parts[p][tid] = sums[p];
  __syncthreads();
  for (unsigned int s = THREADS >> 1; s > 0u; s >>= 1) {
    if (tid < s) {
#pragma unroll
      for (unsigned int p = 0; p < LOSS_PARTS; p++) parts[p][tid] += parts[p][tid + s];
    }
    __syncthreads();
  }
  if (tid < LOSS_PARTS) partials[u.lossAt + g * LOSS_PARTS + tid] = parts[tid][0];
}
