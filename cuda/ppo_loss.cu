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
// runs every round, so no shuffle or barrier is divergent.
// Numerics: f32 with the accurate expf/logf (no fast-math) (the TS reference uses f64 between f32
// loads and stores: tolerance); an action outside [0, nActions) is clamped.
#include "grid.cuh"
#include "learn_common.cuh"

#define THREADS (WG_X * WG_Y)
#define PER_GROUP (WG_Y * PER_TEAM)

// Team tree over the WG_X lanes of one warp (max when `take_max`, else sum), as register shuffles.
// The xor butterfly adds exactly the pairs of the WGSL twin's shared-memory tree (level s: lane l
// with lane l + s), and max and + are commutative, so every lane gets the tree's bits.
__device__ __forceinline__ float team_reduce(float v, bool take_max) {
#pragma unroll
  for (unsigned int s = WG_X / 2u; s > 0u; s >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, (int)s);
    v = take_max ? fmaxf(v, o) : v + o;
  }
  return v;
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) ppo_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
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
    mx = team_reduce(mx, true);
    float se = 0.0f;
    if (valid)
      for (unsigned int k = lane; k < na; k += WG_X) se += expf(logits[k] - mx);
    const float lse = mx + logf(team_reduce(se, false));
    float h = 0.0f;
    if (valid)
      for (unsigned int k = lane; k < na; k += WG_X) {
        const float lp = logits[k] - lse;
        h -= expf(lp) * lp;
      }
    h = team_reduce(h, false);
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
