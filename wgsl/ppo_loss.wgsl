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
//   acts: array<f32>, read: logits rows at logitsOff, values at valuesOff
//   mb: array<f32>, read: action (f32), old log-prob, advantage, return; batch floats each
//   deltas: array<f32>, read_write: output layers' deltas written
//   stats: array<f32>, read_write: update statistics, added to by thread 0
//   u: Uniforms { batch, nActions, logitsOff, valuesOff, dLogitsOff, dValueOff, clip, valueCoef,
//                 entropyCoef, normalize }
// Workgroup: one of WG_X threads (a power of two); thread t takes samples t, t + WG_X, ...; the
// advantage statistics and the loss sums are tree reductions in a fixed order (deterministic).
// Numerics: f32 throughout (the TS reference uses f64 between f32 loads and stores: tolerance);
// an action outside [0, nActions) is clamped.

var<workgroup> red: array<f32, WG_X>;

fn block_sum(v: f32, tid: u32) -> f32 {
  red[tid] = v;
  workgroupBarrier();
  for (var s = u32(WG_X) / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      red[tid] = red[tid] + red[tid + s];
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn ppo_loss(@builtin(local_invocation_index) tid: u32) {
  let n = u.batch;
  let nf = f32(n);
  var mean = 0.0;
  var scale = 1.0;
  if (u.normalize != 0u) {
    var s = 0.0;
    for (var b = tid; b < n; b += WG_X) {
      s = s + mb[2u * n + b];
    }
    mean = block_sum(s, tid) / nf;
    var q = 0.0;
    for (var b = tid; b < n; b += WG_X) {
      let d = mb[2u * n + b] - mean;
      q = q + d * d;
    }
    let ss = block_sum(q, tid);
    var sd = 0.0;
    if (n > 1u) {
      sd = sqrt(ss / f32(n - 1u));
    }
    scale = 1.0 / (sd + 1e-8);
  }

  var policy = 0.0;
  var value = 0.0;
  var entropy = 0.0;
  var kl = 0.0;
  var clipped = 0.0;
  let na = u.nActions;
  for (var b = tid; b < n; b += WG_X) {
    let base = u.logitsOff + b * na;
    var mx = acts[base];
    for (var k = 1u; k < na; k++) {
      mx = max(mx, acts[base + k]);
    }
    var sum_exp = 0.0;
    for (var k = 0u; k < na; k++) {
      sum_exp = sum_exp + exp(acts[base + k] - mx);
    }
    let lse = mx + log(sum_exp);
    var h = 0.0;
    for (var k = 0u; k < na; k++) {
      let lp = acts[base + k] - lse;
      h = h - exp(lp) * lp;
    }
    let action = min(u32(max(mb[b], 0.0)), na - 1u);
    let log_ratio = acts[base + action] - lse - mb[n + b];
    let ratio = exp(log_ratio);
    let a = (mb[2u * n + b] - mean) * scale;
    let unclipped = -a * ratio;
    let clipped_term = -a * clamp(ratio, 1.0 - u.clip, 1.0 + u.clip);
    policy = policy + max(unclipped, clipped_term);
    entropy = entropy + h;
    kl = kl + (ratio - 1.0 - log_ratio);
    if (abs(ratio - 1.0) > u.clip) {
      clipped = clipped + 1.0;
    }
    var d_new_lp = 0.0;
    if (unclipped >= clipped_term) {
      d_new_lp = -a * ratio / nf;
    }
    for (var k = 0u; k < na; k++) {
      let lp = acts[base + k] - lse;
      let p = exp(lp);
      let onehot = select(0.0, 1.0, k == action);
      deltas[u.dLogitsOff + b * na + k] = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
    }
    let err = acts[u.valuesOff + b] - mb[3u * n + b];
    value = value + err * err;
    deltas[u.dValueOff + b] = u.valueCoef * err / nf;
  }

  let sp = block_sum(policy, tid);
  let sv = block_sum(value, tid);
  let se = block_sum(entropy, tid);
  let sk = block_sum(kl, tid);
  let sc = block_sum(clipped, tid);
  if (tid == 0u) {
    stats[STAT_POLICY] = stats[STAT_POLICY] + sp / nf;
    stats[STAT_VALUE] = stats[STAT_VALUE] + 0.5 * sv / nf;
    stats[STAT_ENTROPY] = stats[STAT_ENTROPY] + se / nf;
    stats[STAT_KL] = stats[STAT_KL] + sk / nf;
    stats[STAT_CLIPFRAC] = stats[STAT_CLIPFRAC] + sc / nf;
  }
}
