// iqn_loss: IQN's quantile Huber loss head on a sampled replay batch (src/learn/dqn_loss.ts
// iqnLoss). Per sample b < batch (rows of 45 quantile values):
//   a* = argmax_a of mean_j online[nextOff + (b nTarget + j) 45 + a] (f32 sums over j ascending,
//        first on ties); y_j = G + d targetNet[targetOff + (b nTarget + j) 45 + a*]
//   for i < nTau: Z = online[qOff + (b nTau + i) 45 + a], tau = taus[tauOff + b nTau + i],
//     delta_j = y_j - Z, wq = |tau - [delta < 0]|, L += wq Huber(delta) / kappa / nTarget,
//     dOut[dOutOff + (b nTau + i) 45 + a] = w (-sum_j wq clip(delta, kappa) / kappa) / nTarget / batch
//   td[b] = L, td[batch + b] = w L; dOut zero off the action.
// Bindings (declared by the preamble generated from src/kernels/iqn_loss.ts):
//   online, targetNet, taus, rows: array<f32>, read; actions: array<i32>, read (clamped);
//   weights: array<f32>, read; dOut, td: array<f32>, read_write
//   u: Uniforms { batch, nTau, nTarget, qOff, nextOff, targetOff, dOutOff, tauOff, kappa }
// Workgroup: WG_X threads, one sample (workgroup b of the flat grid): invocation q < 45 sums action
// q's target quantiles at s', invocation j takes y_j, the invocations zero the sample's dOut row off
// the action and write each i's gradient; invocation 0 takes the argmax and sums the loss over
// (i, j) in the reference's order. Numerics: f32.

var<workgroup> qsum: array<f32, NUM_ACTIONS>;
var<workgroup> y: array<f32, MAX_TAU>;
var<workgroup> zs: array<f32, MAX_TAU>;
var<workgroup> ts: array<f32, MAX_TAU>;
var<workgroup> best_s: u32;

fn huber(x: f32, kappa: f32) -> f32 {
  let a = abs(x);
  return select(kappa * (a - 0.5 * kappa), 0.5 * x * x, a <= kappa);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn iqn_loss(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let b = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (b >= u.batch) {
    return;
  }
  let A = u32(NUM_ACTIONS);
  let a = u32(clamp(actions[b], 0, NUM_ACTIONS - 1));
  let ret = rows[b * u32(REPLAY_F) + u32(RETURN_AT)];
  let disc = rows[b * u32(REPLAY_F) + u32(DISCOUNT_AT)];
  let w = weights[b];
  let next = b * u.nTarget * A;
  let on = b * u.nTau * A;
  for (var k = tid; k < u.nTau * A; k += u32(WG_X)) {
    if (k % A != a) { dOut[u.dOutOff + on + k] = 0.0; }
  }
  for (var q = tid; q < A; q += u32(WG_X)) {
    var s = 0.0;
    for (var j = 0u; j < u.nTarget; j++) { s = s + online[u.nextOff + next + j * A + q]; }
    qsum[q] = s;
  }
  for (var i = tid; i < u.nTau; i += u32(WG_X)) {
    zs[i] = online[u.qOff + on + i * A + a];
    ts[i] = taus[u.tauOff + b * u.nTau + i];
  }
  workgroupBarrier();
  if (tid == 0u) {
    var best = 0u;
    var bestSum = 0.0;
    for (var q = 0u; q < A; q++) {
      if (q == 0u || qsum[q] > bestSum) {
        bestSum = qsum[q];
        best = q;
      }
    }
    best_s = best;
  }
  let best = workgroupUniformLoad(&best_s);
  for (var j = tid; j < u.nTarget; j += u32(WG_X)) {
    y[j] = ret + disc * targetNet[u.targetOff + next + j * A + best];
  }
  workgroupBarrier();
  let nt = f32(u.nTarget);
  for (var i = tid; i < u.nTau; i += u32(WG_X)) {
    var g = 0.0;
    for (var j = 0u; j < u.nTarget; j++) {
      let delta = y[j] - zs[i];
      let wq = abs(ts[i] - select(0.0, 1.0, delta < 0.0));
      g = g - wq * (clamp(delta, -u.kappa, u.kappa) / u.kappa);
    }
    dOut[u.dOutOff + on + i * A + a] = w * (g / nt) / f32(u.batch);
  }
  if (tid == 0u) {
    var loss = 0.0;
    for (var i = 0u; i < u.nTau; i++) {
      for (var j = 0u; j < u.nTarget; j++) {
        let delta = y[j] - zs[i];
        let wq = abs(ts[i] - select(0.0, 1.0, delta < 0.0));
        loss = loss + wq * huber(delta, u.kappa) / u.kappa / nt;
      }
    }
    td[b] = loss;
    td[u.batch + b] = w * loss;
  }
}
