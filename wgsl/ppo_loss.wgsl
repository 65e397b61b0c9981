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
// batch contribute neutral values), so all barriers are in uniform control flow. The trees and the
// per-sample code are ppo_loss_head.wgsl's, which mlp_delta_chain's loss mode runs too.
// Numerics: f32 throughout (the TS reference uses f64 between f32 loads and stores: tolerance);
// an action outside [0, nActions) is clamped.

const THREADS = WG_X * WG_Y;
const PER_GROUP = WG_Y * PER_TEAM;

//!include ppo_loss_head.wgsl

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
  let stats = advantage_stats(tid);
  var sums: array<f32, LOSS_PARTS>;
  for (var j = 0u; j < PER_TEAM; j++) {
    let b = g * PER_GROUP + j * WG_Y + team;
    loss_sample(b, b < n, lane, team, stats, &sums);
  }

  for (var p = 0u; p < LOSS_PARTS; p++) {
    let total = block_sum(sums[p], tid);
    if (tid == 0u) {
      partials[u.lossAt + g * LOSS_PARTS + p] = total;
    }
  }
}
