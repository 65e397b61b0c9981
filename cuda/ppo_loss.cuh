// The PPO loss head's per-sample team code and the minibatch's advantage statistics, shared by
// ppo_loss.cu and mlp_delta_chain.cu's loss mode, so the two give the same bits per sample
// (src/kernels/ppo_loss.ts: ppoLossSample, advantageStats). The kernels' Uniforms both hold the
// loss fields (batch, nActions, logitsOff, valuesOff, dLogitsOff, dValueOff, clip, valueCoef,
// entropyCoef, normalize), so the functions take either struct.
// Numerics: f32 with the accurate expf/logf (no fast-math); an action outside [0, nActions) is
// clamped.
#pragma once
#include "learn_common.cuh"

// Threads that add the advantages (ppo_loss's whole block: 8 warps); a larger block's other
// threads add +0.
#define PPO_STAT_THREADS 256u

// Team tree over the 32 lanes of one warp (max when `take_max`, else sum), as register shuffles.
// The xor butterfly adds exactly the pairs of the WGSL twin's shared-memory tree (level s: lane l
// with lane l + s), and max and + are commutative, so every lane gets the tree's bits.
__device__ __forceinline__ float ppo_team_reduce(float v, bool take_max) {
#pragma unroll
  for (unsigned int s = 16u; s > 0u; s >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, (int)s);
    v = take_max ? fmaxf(v, o) : v + o;
  }
  return v;
}

// The minibatch's advantage mean and 1 / (std + 1e-8) (unbiased std, 0 for one sample), or 0 and 1
// without normalize. Thread tid < PPO_STAT_THREADS adds advantages tid, tid + 256, ..; then
// learn_block_sum's tree over the block's `threads` (a power of two >= 256: the threads past 256
// add +0 at the first levels, which leaves every sum's bits as ppo_loss's 256-thread tree, since
// a sum from +0 is never -0). Every thread of the block calls it (barriers); `red`: `threads`
// floats of shared memory.
template <class U>
__device__ __forceinline__ void ppo_advantage_stats(const U& u, const float* mb, float* red, unsigned int tid,
                                                    unsigned int threads, float& mean, float& scale) {
  mean = 0.0f;
  scale = 1.0f;
  if (u.normalize == 0u) return;
  const unsigned int n = u.batch;
  float s = 0.0f;
  if (tid < PPO_STAT_THREADS)
    for (unsigned int b = tid; b < n; b += PPO_STAT_THREADS) s += mb[2u * n + b];
  mean = learn_block_sum(s, red, tid, threads) / (float)n;
  float q = 0.0f;
  if (tid < PPO_STAT_THREADS)
    for (unsigned int b = tid; b < n; b += PPO_STAT_THREADS) {
      const float d = mb[2u * n + b] - mean;
      q += d * d;
    }
  const float ss = learn_block_sum(q, red, tid, threads);
  const float sd = n > 1u ? sqrtf(ss / (float)(n - 1u)) : 0.0f;
  scale = 1.0f / (sd + 1e-8f);
}

// The loss head of sample b by one warp (all 32 lanes call it; `valid` the same on every lane):
// its lanes split the logits (k = lane, lane + 32, ..); writes dLogits to deltas[dLogitsOff + b *
// nActions + k] and dValue to deltas[dValueOff + b], and lane 0 adds the sample's LOSS_PARTS parts
// to `sums`. With `tile` (not null) the deltas also go to tile[k * tile_stride] (dLogits) and
// value_tile[0] (dValue): the delta chain's top tiles.
template <class U>
__device__ __forceinline__ void ppo_loss_sample(const U& u, const float* acts, const float* mb, float* deltas,
                                                unsigned int b, bool valid, unsigned int lane, float mean,
                                                float scale, float (&sums)[LOSS_PARTS], float* tile,
                                                unsigned int tile_stride, float* value_tile) {
  const unsigned int n = u.batch;
  const float nf = (float)n;
  const unsigned int na = u.nActions;
  const float* logits = acts + u.logitsOff + b * na;
  float mx = -3.4028234e38f;  // -FLT_MAX: below every finite logit
  if (valid)
    for (unsigned int k = lane; k < na; k += 32u) mx = fmaxf(mx, logits[k]);
  mx = ppo_team_reduce(mx, true);
  float se = 0.0f;
  if (valid)
    for (unsigned int k = lane; k < na; k += 32u) se += expf(logits[k] - mx);
  const float lse = mx + logf(ppo_team_reduce(se, false));
  float h = 0.0f;
  if (valid)
    for (unsigned int k = lane; k < na; k += 32u) {
      const float lp = logits[k] - lse;
      h -= expf(lp) * lp;
    }
  h = ppo_team_reduce(h, false);
  if (!valid) return;
  const unsigned int action = min((unsigned int)fmaxf(mb[b], 0.0f), na - 1u);
  const float log_ratio = logits[action] - lse - mb[n + b];
  const float ratio = expf(log_ratio);
  const float a = (mb[2u * n + b] - mean) * scale;
  const float unclipped = -a * ratio;
  const float clipped_term = -a * fminf(fmaxf(ratio, 1.0f - u.clip), 1.0f + u.clip);
  const float d_new_lp = unclipped >= clipped_term ? -a * ratio / nf : 0.0f;
  float* d_logits = deltas + u.dLogitsOff + b * na;
  for (unsigned int k = lane; k < na; k += 32u) {
    const float lp = logits[k] - lse;
    const float p = expf(lp);
    const float onehot = k == action ? 1.0f : 0.0f;
    const float d = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
    d_logits[k] = d;
    if (tile != nullptr) tile[k * tile_stride] = d;
  }
  if (lane == 0u) {
    const float err = acts[u.valuesOff + b] - mb[3u * n + b];
    const float dv = u.valueCoef * err / nf;
    deltas[u.dValueOff + b] = dv;
    if (value_tile != nullptr) value_tile[0] = dv;
    sums[0] += fmaxf(unclipped, clipped_term);
    sums[1] += 0.5f * err * err;
    sums[2] += h;
    sums[3] += ratio - 1.0f - log_ratio;
    sums[4] += fabsf(ratio - 1.0f) > u.clip ? 1.0f : 0.0f;
  }
}
