// dqn_loss: the DQN-family loss head on a sampled replay batch (src/learn/dqn_loss.ts): dueling
// double DQN with the Huber loss (atoms == 1) or C51 (atoms > 1). Per sample b < batch:
//   Huber: a* = argmax_a online[nextOff + b 45 + a] (first on ties), y = G + d targetNet[.. a*],
//          delta = Q(s, a) - y; dOut at a = w clip(delta, kappa) / batch; td[b] = delta
//   C51:   a* = argmax of the online next rows' expected values sum_z softmax(l)_z z_k; the target
//          softmax at a* projected on the support (Tz = clamp(G + d z_k), split between floor and
//          ceil); L = -sum m_z logp_z with logp from the log-softmax; dOut over a's atoms =
//          w / batch (p_z sum(m) - m_z); td[b] = L
//   td[batch + b] = w L (L = Huber(delta) for the Huber head); dOut zero off the action.
// Bindings (declared by the preamble generated from src/kernels/dqn_loss.ts):
//   online: array<f32>, read: Q(s) rows at qOff, Q(s') rows at nextOff (45 x atoms per row)
//   targetNet: array<f32>, read: target-net Q(s') rows at targetOff
//   rows: array<f32>, read: [batch, REPLAY_F] replay rows (return at RETURN_AT, discount at DISCOUNT_AT)
//   actions: array<i32>, read (clamped to [0, 45)); weights: array<f32>, read: importance weights
//   dOut: array<f32>, read_write: head-output gradient rows at dOutOff
//   td: array<f32>, read_write: [2 batch] priority signals, then weighted losses
//   u: Uniforms { batch, atoms, qOff, nextOff, targetOff, dOutOff, kappa, vMin, vMax }
// Workgroup: WG_X invocations, one sample (workgroup b of the flat grid). They zero the sample's
// dOut row off the action's atoms; C51: invocation q < 45 takes action q's expected value at s',
// invocation 0 the argmax; the two distributions (target at the argmax, the taken action's) go one
// atom an invocation where the order does not matter (loads, exp, division, the gradient), one
// invocation where it does (maxima, sums, the projection, the loss), in the reference's order.
// Numerics: f32 (the TS reference uses Math.exp / Math.log rounded to f32: tolerance).

var<workgroup> qv: array<f32, NUM_ACTIONS>;
var<workgroup> lt: array<f32, MAX_ATOMS>;
var<workgroup> la: array<f32, MAX_ATOMS>;
var<workgroup> pt: array<f32, MAX_ATOMS>;
var<workgroup> pa: array<f32, MAX_ATOMS>;
var<workgroup> m: array<f32, MAX_ATOMS>;
// Target max, action max, target sum, action sum.
var<workgroup> red: array<f32, 4>;
var<workgroup> best_s: u32;
var<workgroup> msum_s: f32;

// Expected value of the softmax of online[off .. off + n) over the support vMin + z dz: exp(l -
// max) divided by the sum in order, recomputed instead of stored.
fn expected_online(off: u32, n: u32, dz: f32) -> f32 {
  var mx = online[off];
  for (var z = 1u; z < n; z++) { mx = max(mx, online[off + z]); }
  var s = 0.0;
  for (var z = 0u; z < n; z++) { s = s + exp(online[off + z] - mx); }
  var qa = 0.0;
  for (var z = 0u; z < n; z++) { qa = qa + (exp(online[off + z] - mx) / s) * (u.vMin + f32(z) * dz); }
  return qa;
}

fn huber(x: f32, kappa: f32) -> f32 {
  let a = abs(x);
  return select(kappa * (a - 0.5 * kappa), 0.5 * x * x, a <= kappa);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn dqn_loss(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let b = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (b >= u.batch) {
    return;
  }
  let n = u.atoms;
  let row = u32(NUM_ACTIONS) * n;
  let o = b * row;
  let a = u32(clamp(actions[b], 0, NUM_ACTIONS - 1));
  for (var k = tid; k < row; k += u32(WG_X)) {
    if (k / n != a) { dOut[u.dOutOff + o + k] = 0.0; }
  }
  let ret = rows[b * u32(REPLAY_F) + u32(RETURN_AT)];
  let disc = rows[b * u32(REPLAY_F) + u32(DISCOUNT_AT)];
  let w = weights[b];
  let fb = f32(u.batch);

  if (n == 1u) {
    // (The return stays outside the per-invocation branch: workgroupBarrier below needs uniform
    // control flow.)
    if (tid == 0u) {
      var best = 0u;
      for (var q = 1u; q < u32(NUM_ACTIONS); q++) {
        if (online[u.nextOff + o + q] > online[u.nextOff + o + best]) { best = q; }
      }
      let y = ret + disc * targetNet[u.targetOff + o + best];
      let delta = online[u.qOff + o + a] - y;
      dOut[u.dOutOff + o + a] = w * clamp(delta, -u.kappa, u.kappa) / fb;
      td[b] = delta;
      td[u.batch + b] = w * huber(delta, u.kappa);
    }
    return;
  }

  let dz = (u.vMax - u.vMin) / f32(n - 1u);
  for (var q = tid; q < u32(NUM_ACTIONS); q += u32(WG_X)) {
    qv[q] = expected_online(u.nextOff + o + q * n, n, dz);
  }
  workgroupBarrier();
  // The target distribution at the argmax and the taken action's: logits, their max (invocation 0
  // for the target, 1 for the action), exp(l - max) per atom, the sums in atom order (0 and 1
  // again), the probabilities per atom; invocation 0 then projects the target and sums the loss in
  // atom order, and the invocations write the action's gradient per atom: the reference's order.
  if (tid == 0u) {
    var best = 0u;
    var bestQ = 0.0;
    for (var q = 0u; q < u32(NUM_ACTIONS); q++) {
      if (q == 0u || qv[q] > bestQ) {
        bestQ = qv[q];
        best = q;
      }
    }
    best_s = best;
  }
  let best = workgroupUniformLoad(&best_s);
  for (var z = tid; z < n; z += u32(WG_X)) {
    lt[z] = targetNet[u.targetOff + o + best * n + z];
    la[z] = online[u.qOff + o + a * n + z];
  }
  workgroupBarrier();
  if (tid < 2u) {
    var top = select(la[0], lt[0], tid == 0u);
    for (var z = 1u; z < n; z++) { top = max(top, select(la[z], lt[z], tid == 0u)); }
    red[tid] = top;
  }
  workgroupBarrier();
  for (var z = tid; z < n; z += u32(WG_X)) {
    pt[z] = exp(lt[z] - red[0]);
    pa[z] = exp(la[z] - red[1]);
  }
  workgroupBarrier();
  if (tid < 2u) {
    var sum = 0.0;
    for (var z = 0u; z < n; z++) { sum = sum + select(pa[z], pt[z], tid == 0u); }
    red[2u + tid] = sum;
  }
  workgroupBarrier();
  for (var z = tid; z < n; z += u32(WG_X)) {
    pt[z] = pt[z] / red[2];
    pa[z] = pa[z] / red[3];
    m[z] = 0.0;
  }
  workgroupBarrier();
  if (tid == 0u) {
    for (var k = 0u; k < n; k++) {
      let tz = clamp(ret + disc * (u.vMin + f32(k) * dz), u.vMin, u.vMax);
      let pos = (tz - u.vMin) / dz;
      let lo = min(n - 1u, u32(floor(pos)));
      let hi = min(n - 1u, u32(ceil(pos)));
      if (lo == hi) {
        m[lo] = m[lo] + pt[k];
      } else {
        m[lo] = m[lo] + pt[k] * (f32(hi) - pos);
        m[hi] = m[hi] + pt[k] * (pos - f32(lo));
      }
    }
    let mx = red[1];
    let lse = log(red[3]);
    var ce = 0.0;
    var msum = 0.0;
    for (var z = 0u; z < n; z++) {
      ce = ce - m[z] * ((la[z] - mx) - lse);
      msum = msum + m[z];
    }
    msum_s = msum;
    td[b] = ce;
    td[u.batch + b] = w * ce;
  }
  workgroupBarrier();
  let scale = w / fb;
  for (var z = tid; z < n; z += u32(WG_X)) {
    dOut[u.dOutOff + o + a * n + z] = scale * (pa[z] * msum_s - m[z]);
  }
}
