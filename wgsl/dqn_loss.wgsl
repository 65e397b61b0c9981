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
// dOut row off the action's atoms; C51: invocation q < 45 takes action q's expected value at s';
// invocation 0 takes the argmax and the rest of the sample (two MAX_ATOMS distributions), each in
// the reference's order.
// Numerics: f32 (the TS reference uses Math.exp / Math.log rounded to f32: tolerance).

var<private> p: array<f32, MAX_ATOMS>;
var<private> m: array<f32, MAX_ATOMS>;
var<workgroup> qv: array<f32, NUM_ACTIONS>;

// Softmax of buf[off .. off + n) into p (max subtracted); returns (max, log sum exp(l - max)).
fn softmax_online(off: u32, n: u32) -> vec2<f32> {
  var mx = online[off];
  for (var z = 1u; z < n; z++) { mx = max(mx, online[off + z]); }
  var s = 0.0;
  for (var z = 0u; z < n; z++) {
    let e = exp(online[off + z] - mx);
    p[z] = e;
    s = s + e;
  }
  for (var z = 0u; z < n; z++) { p[z] = p[z] / s; }
  return vec2<f32>(mx, log(s));
}

fn softmax_target(off: u32, n: u32) {
  var mx = targetNet[off];
  for (var z = 1u; z < n; z++) { mx = max(mx, targetNet[off + z]); }
  var s = 0.0;
  for (var z = 0u; z < n; z++) {
    let e = exp(targetNet[off + z] - mx);
    p[z] = e;
    s = s + e;
  }
  for (var z = 0u; z < n; z++) { p[z] = p[z] / s; }
}

fn huber(x: f32, kappa: f32) -> f32 {
  let a = abs(x);
  return select(kappa * (a - 0.5 * kappa), 0.5 * x * x, a <= kappa);
}

// Expected value of the softmax of online[off .. off + n) over the support vMin + z dz, the
// probabilities rounded as softmax_online rounds them, recomputed instead of stored.
fn expected_online(off: u32, n: u32, dz: f32) -> f32 {
  var mx = online[off];
  for (var z = 1u; z < n; z++) { mx = max(mx, online[off + z]); }
  var s = 0.0;
  for (var z = 0u; z < n; z++) { s = s + exp(online[off + z] - mx); }
  var qa = 0.0;
  for (var z = 0u; z < n; z++) { qa = qa + (exp(online[off + z] - mx) / s) * (u.vMin + f32(z) * dz); }
  return qa;
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
  if (tid != 0u) {
    return;
  }
  var best = 0u;
  var bestQ = 0.0;
  for (var q = 0u; q < u32(NUM_ACTIONS); q++) {
    if (q == 0u || qv[q] > bestQ) {
      bestQ = qv[q];
      best = q;
    }
  }
  softmax_target(u.targetOff + o + best * n, n);
  for (var z = 0u; z < n; z++) { m[z] = 0.0; }
  for (var k = 0u; k < n; k++) {
    let tz = clamp(ret + disc * (u.vMin + f32(k) * dz), u.vMin, u.vMax);
    let pos = (tz - u.vMin) / dz;
    let lo = min(n - 1u, u32(floor(pos)));
    let hi = min(n - 1u, u32(ceil(pos)));
    if (lo == hi) {
      m[lo] = m[lo] + p[k];
    } else {
      m[lo] = m[lo] + p[k] * (f32(hi) - pos);
      m[hi] = m[hi] + p[k] * (pos - f32(lo));
    }
  }
  let la = u.qOff + o + a * n;
  let stats = softmax_online(la, n);
  var ce = 0.0;
  var msum = 0.0;
  for (var z = 0u; z < n; z++) {
    let logp = (online[la + z] - stats.x) - stats.y;
    ce = ce - m[z] * logp;
    msum = msum + m[z];
  }
  let scale = w / fb;
  for (var z = 0u; z < n; z++) { dOut[u.dOutOff + o + a * n + z] = scale * (p[z] * msum - m[z]); }
  td[b] = ce;
  td[u.batch + b] = w * ce;
}
