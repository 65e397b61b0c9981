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
// entropy are the WGSL twin's team trees in shared memory (a team is one warp: __syncwarp between
// levels). Every thread runs every round, so no barrier is divergent.
// Numerics: f32 with the accurate expf/logf (no fast-math) (the TS reference uses f64 between f32
// loads and stores: tolerance); an action outside [0, nActions) is clamped.
#include "grid.cuh"
#include "learn_common.cuh"

#define THREADS (WG_X * WG_Y)
#define PER_GROUP (WG_Y * PER_TEAM)

// Team tree over the WG_X lanes of one warp (max when `take_max`, else sum).
__device__ __forceinline__ float team_reduce(float v, float* red, unsigned int lane, unsigned int team, bool take_max) {
  const unsigned int at = team * WG_X + lane;
  red[at] = v;
  __syncwarp();
  for (unsigned int s = WG_X / 2u; s > 0u; s >>= 1) {
    if (lane < s) red[at] = take_max ? fmaxf(red[at], red[at + s]) : red[at] + red[at + s];
    __syncwarp();
  }
  const float total = red[team * WG_X];
  __syncwarp();
  return total;
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) ppo_loss(KERNEL_ARGS) {
  static_assert(WG_X == 32, "a team is one warp");
  __shared__ float red[THREADS];
  const unsigned int g = (unsigned int)flat_block_id();
  const unsigned int lane = threadIdx.x;
  const unsigned int team = threadIdx.y;
  const unsigned int tid = lane + WG_X * team;
  const unsigned int n = u.batch;
  const float nf = (float)n;
  float mean = 0.0f;
  float scale = 1.0f;
  if (u.normalize != 0u) {
    float s = 0.0f;
    for (unsigned int b = tid; b < n; b += THREADS) s += mb[2u * n + b];
    mean = learn_block_sum(s, red, tid, THREADS) / nf;
    float q = 0.0f;
    for (unsigned int b = tid; b < n; b += THREADS) {
      const float d = mb[2u * n + b] - mean;
      q += d * d;
    }
    const float ss = learn_block_sum(q, red, tid, THREADS);
    const float sd = n > 1u ? sqrtf(ss / (float)(n - 1u)) : 0.0f;
    scale = 1.0f / (sd + 1e-8f);
  }

  float sums[LOSS_PARTS] = {};
  const unsigned int na = u.nActions;
  for (unsigned int j = 0; j < PER_TEAM; j++) {
    const unsigned int b = g * PER_GROUP + j * WG_Y + team;
    const bool valid = b < n;
    const float* logits = acts + u.logitsOff + b * na;
    float mx = -3.4028234e38f;  // -FLT_MAX: below every finite logit
    if (valid)
      for (unsigned int k = lane; k < na; k += WG_X) mx = fmaxf(mx, logits[k]);
    mx = team_reduce(mx, red, lane, team, true);
    float se = 0.0f;
    if (valid)
      for (unsigned int k = lane; k < na; k += WG_X) se += expf(logits[k] - mx);
    const float lse = mx + logf(team_reduce(se, red, lane, team, false));
    float h = 0.0f;
    if (valid)
      for (unsigned int k = lane; k < na; k += WG_X) {
        const float lp = logits[k] - lse;
        h -= expf(lp) * lp;
      }
    h = team_reduce(h, red, lane, team, false);
    if (!valid) continue;
    const unsigned int action = min((unsigned int)fmaxf(mb[b], 0.0f), na - 1u);
    const float log_ratio = logits[action] - lse - mb[n + b];
    const float ratio = expf(log_ratio);
    const float a = (mb[2u * n + b] - mean) * scale;
    const float unclipped = -a * ratio;
    const float clipped_term = -a * fminf(fmaxf(ratio, 1.0f - u.clip), 1.0f + u.clip);
    const float d_new_lp = unclipped >= clipped_term ? -a * ratio / nf : 0.0f;
    float* d_logits = deltas + u.dLogitsOff + b * na;
    for (unsigned int k = lane; k < na; k += WG_X) {
      const float lp = logits[k] - lse;
      const float p = expf(lp);
      const float onehot = k == action ? 1.0f : 0.0f;
      d_logits[k] = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
    }
    if (lane == 0u) {
      const float err = acts[u.valuesOff + b] - mb[3u * n + b];
      deltas[u.dValueOff + b] = u.valueCoef * err / nf;
      sums[0] += fmaxf(unclipped, clipped_term);
      sums[1] += 0.5f * err * err;
      sums[2] += h;
      sums[3] += ratio - 1.0f - log_ratio;
      sums[4] += fabsf(ratio - 1.0f) > u.clip ? 1.0f : 0.0f;
    }
  }

#pragma unroll
  for (unsigned int p = 0; p < LOSS_PARTS; p++) {
    const float total = learn_block_sum(sums[p], red, tid, THREADS);
    if (tid == 0u) partials[u.lossAt + g * LOSS_PARTS + p] = total;
  }
}
