// ppo_loss: the PPO loss head of one minibatch (src/learn/ppo_loss.ts). From the actor's logits and
// the critic's values in acts, per sample b < batch:
//   A = (adv - mean) / (std + 1e-8) if normalize (unbiased std over the minibatch, 0 for one sample)
//   logp = log_softmax(logits), ratio = exp(logp[action] - oldLogp)
//   policy = max(-A ratio, -A clamp(ratio, 1 - clip, 1 + clip)), entropy H = -sum p logp
//   deltas[dLogitsOff + b nActions + k] = dNewLp ([k == action] - p_k) + entropyCoef p_k (logp_k + H) / batch
//       with dNewLp = -A ratio / batch where the unclipped term is the max, else 0
//   deltas[dValueOff + b] = valueCoef (V - R) / batch
// and, per workgroup g, partials[lossAt + g LOSS_PARTS + part] = its samples' sums of policy,
// 0.5 (V - R)^2, H, (ratio - 1) - log ratio, [|ratio - 1| > clip] (adam_step folds them into the
// update statistics).
// Bindings (declared by the preamble generated from src/kernels/ppo_loss.ts):
//   acts: array<f32>, read: logits rows at logitsOff, values at valuesOff
//   mb: array<f32>, read: action (f32), old log-prob, advantage, return; batch floats each
//   deltas: array<f32>, read_write: output layers' deltas written
//   partials: array<f32>, read_write: LOSS_PARTS sums per workgroup at lossAt
//   u: Uniforms { batch, nActions, logitsOff, valuesOff, dLogitsOff, dValueOff, clip, valueCoef,
//                 entropyCoef, normalize, lossAt }
// Workgroup: WG_Y teams of WG_X = 32 lanes; team t takes samples g PER_GROUP + j WG_Y + t
// (j < PER_TEAM), its lanes splitting the logits (k = lane, lane + 32, ...). Each workgroup computes
// the minibatch's advantage statistics itself (the same tree everywhere). Max, sum of exponentials
// and entropy are team trees in workgroup memory; every thread runs every round (samples past the
// batch contribute neutral values), so all barriers are in uniform control flow.
// Numerics: f32 throughout (the TS reference uses f64 between f32 loads and stores: tolerance);
// an action outside [0, nActions) is clamped.

const THREADS = WG_X * WG_Y;
const PER_GROUP = WG_Y * PER_TEAM;

var<workgroup> red: array<f32, THREADS>;

fn block_sum(v: f32, tid: u32) -> f32 {
  red[tid] = v;
  workgroupBarrier();
  for (var s = u32(THREADS) / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      red[tid] = red[tid] + red[tid + s];
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

// Team trees over the WG_X lanes of team `team` (max when `take_max`, else sum).
fn team_reduce(v: f32, lane: u32, team: u32, take_max: bool) -> f32 {
  let at = team * WG_X + lane;
  red[at] = v;
  workgroupBarrier();
  for (var s = u32(WG_X) / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) {
      if (take_max) {
        red[at] = max(red[at], red[at + s]);
      } else {
        red[at] = red[at] + red[at + s];
      }
    }
    workgroupBarrier();
  }
  let total = red[team * WG_X];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn ppo_loss(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let lane = lid.x;
  let team = lid.y;
  let n = u.batch;
  let nf = f32(n);
  var mean = 0.0;
  var scale = 1.0;
  if (u.normalize != 0u) {
    var s = 0.0;
    for (var b = tid; b < n; b += THREADS) {
      s = s + mb[2u * n + b];
    }
    mean = block_sum(s, tid) / nf;
    var q = 0.0;
    for (var b = tid; b < n; b += THREADS) {
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

  var sums: array<f32, LOSS_PARTS>;
  let na = u.nActions;
  for (var j = 0u; j < PER_TEAM; j++) {
    let b = g * PER_GROUP + j * WG_Y + team;
    let valid = b < n;
    let base = u.logitsOff + b * na;
    var mx = -3.4028234e38;  // -FLT_MAX: below every finite logit
    if (valid) {
      for (var k = lane; k < na; k += WG_X) {
        mx = max(mx, acts[base + k]);
      }
    }
    mx = team_reduce(mx, lane, team, true);
    var se = 0.0;
    if (valid) {
      for (var k = lane; k < na; k += WG_X) {
        se = se + exp(acts[base + k] - mx);
      }
    }
    let lse = mx + log(team_reduce(se, lane, team, false));
    var h = 0.0;
    if (valid) {
      for (var k = lane; k < na; k += WG_X) {
        let lp = acts[base + k] - lse;
        h = h - exp(lp) * lp;
      }
    }
    h = team_reduce(h, lane, team, false);
    if (valid) {
      let action = min(u32(max(mb[b], 0.0)), na - 1u);
      let log_ratio = acts[base + action] - lse - mb[n + b];
      let ratio = exp(log_ratio);
      let a = (mb[2u * n + b] - mean) * scale;
      let unclipped = -a * ratio;
      let clipped_term = -a * clamp(ratio, 1.0 - u.clip, 1.0 + u.clip);
      var d_new_lp = 0.0;
      if (unclipped >= clipped_term) {
        d_new_lp = -a * ratio / nf;
      }
      for (var k = lane; k < na; k += WG_X) {
        let lp = acts[base + k] - lse;
        let p = exp(lp);
        let onehot = select(0.0, 1.0, k == action);
        deltas[u.dLogitsOff + b * na + k] = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
      }
      if (lane == 0u) {
        let err = acts[u.valuesOff + b] - mb[3u * n + b];
        deltas[u.dValueOff + b] = u.valueCoef * err / nf;
        sums[0] = sums[0] + max(unclipped, clipped_term);
        sums[1] = sums[1] + 0.5 * err * err;
        sums[2] = sums[2] + h;
        sums[3] = sums[3] + (ratio - 1.0 - log_ratio);
        sums[4] = sums[4] + select(0.0, 1.0, abs(ratio - 1.0) > u.clip);
      }
    }
  }

  for (var p = 0u; p < LOSS_PARTS; p++) {
    let total = block_sum(sums[p], tid);
    if (tid == 0u) {
      partials[u.lossAt + g * LOSS_PARTS + p] = total;
    }
  }
}
