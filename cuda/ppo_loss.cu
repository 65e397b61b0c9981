// ppo_loss: the PPO loss head of one minibatch (src/learn/ppo_loss.ts). From the actor's logits and
// the critic's values in acts, per sample b < batch:
//   A = (adv - mean) / (std + 1e-8) if normalize (unbiased std over the minibatch, 0 for one sample)
//   logp = log_softmax(logits), ratio = exp(logp[action] - oldLogp)
//   policy = max(-A ratio, -A clamp(ratio, 1 - clip, 1 + clip)), entropy H = -sum p logp
//   deltas[dLogitsOff + b nActions + k] = dNewLp ([k == action] - p_k) + entropyCoef p_k (logp_k + H) / batch
//       with dNewLp = -A ratio / batch where the unclipped term is the max, else 0
//   deltas[dValueOff + b] = valueCoef (V - R) / batch
// and stats[STAT_*] += the minibatch means of policy, 0.5 (V - R)^2, H, (ratio - 1) - log ratio,
// [|ratio - 1| > clip].
// Bindings (declared by the preamble generated from src/kernels/ppo_loss.ts):
//   acts: const float*: logits rows at logitsOff, values at valuesOff
//   mb: const float*: action (f32), old log-prob, advantage, return; batch floats each
//   deltas: float*, written: output layers' deltas
//   stats: float*: update statistics, added to by thread 0
//   u: Uniforms { batch, nActions, logitsOff, valuesOff, dLogitsOff, dValueOff, clip, valueCoef,
//                 entropyCoef, normalize }
// Block: one of WG_X threads (a power of two); thread t takes samples t, t + WG_X, ...; the
// advantage statistics and the loss sums are tree reductions in a fixed order (deterministic).
// Numerics: f32 with the accurate expf/logf (no fast-math) (the TS reference uses f64 between f32
// loads and stores: tolerance); an action outside [0, nActions) is clamped.
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) ppo_loss(KERNEL_ARGS) {
  __shared__ float red[WG_X];
  const unsigned int tid = threadIdx.x;
  const unsigned int n = u.batch;
  const float nf = (float)n;
  float mean = 0.0f;
  float scale = 1.0f;
  if (u.normalize != 0u) {
    float s = 0.0f;
    for (unsigned int b = tid; b < n; b += WG_X) s += mb[2u * n + b];
    mean = learn_block_sum(s, red, tid, WG_X) / nf;
    float q = 0.0f;
    for (unsigned int b = tid; b < n; b += WG_X) {
      const float d = mb[2u * n + b] - mean;
      q += d * d;
    }
    const float ss = learn_block_sum(q, red, tid, WG_X);
    const float sd = n > 1u ? sqrtf(ss / (float)(n - 1u)) : 0.0f;
    scale = 1.0f / (sd + 1e-8f);
  }

  float policy = 0.0f, value = 0.0f, entropy = 0.0f, kl = 0.0f, clipped = 0.0f;
  const unsigned int na = u.nActions;
  for (unsigned int b = tid; b < n; b += WG_X) {
    const float* logits = acts + u.logitsOff + b * na;
    float mx = logits[0];
    for (unsigned int k = 1; k < na; k++) mx = fmaxf(mx, logits[k]);
    float sum_exp = 0.0f;
    for (unsigned int k = 0; k < na; k++) sum_exp += expf(logits[k] - mx);
    const float lse = mx + logf(sum_exp);
    float h = 0.0f;
    for (unsigned int k = 0; k < na; k++) {
      const float lp = logits[k] - lse;
      h -= expf(lp) * lp;
    }
    const unsigned int action = min((unsigned int)fmaxf(mb[b], 0.0f), na - 1u);
    const float log_ratio = logits[action] - lse - mb[n + b];
    const float ratio = expf(log_ratio);
    const float a = (mb[2u * n + b] - mean) * scale;
    const float unclipped = -a * ratio;
    const float clipped_term = -a * fminf(fmaxf(ratio, 1.0f - u.clip), 1.0f + u.clip);
    policy += fmaxf(unclipped, clipped_term);
    entropy += h;
    kl += ratio - 1.0f - log_ratio;
    if (fabsf(ratio - 1.0f) > u.clip) clipped += 1.0f;
    const float d_new_lp = unclipped >= clipped_term ? -a * ratio / nf : 0.0f;
    float* d_logits = deltas + u.dLogitsOff + b * na;
    for (unsigned int k = 0; k < na; k++) {
      const float lp = logits[k] - lse;
      const float p = expf(lp);
      const float onehot = k == action ? 1.0f : 0.0f;
      d_logits[k] = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
    }
    const float err = acts[u.valuesOff + b] - mb[3u * n + b];
    value += err * err;
    deltas[u.dValueOff + b] = u.valueCoef * err / nf;
  }

  const float sp = learn_block_sum(policy, red, tid, WG_X);
  const float sv = learn_block_sum(value, red, tid, WG_X);
  const float se = learn_block_sum(entropy, red, tid, WG_X);
  const float sk = learn_block_sum(kl, red, tid, WG_X);
  const float sc = learn_block_sum(clipped, red, tid, WG_X);
  if (tid == 0u) {
    stats[STAT_POLICY] += sp / nf;
    stats[STAT_VALUE] += 0.5f * sv / nf;
    stats[STAT_ENTROPY] += se / nf;
    stats[STAT_KL] += sk / nf;
    stats[STAT_CLIPFRAC] += sc / nf;
  }
}
