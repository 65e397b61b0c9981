// dqn_loss: the DQN-family loss head on a sampled replay batch (src/learn/dqn_loss.ts): dueling
// double DQN with the Huber loss (atoms == 1) or C51 (atoms > 1), with the dueling combination and
// its backward folded in (src/learn/dueling.ts). Per sample b < batch, from the streams' outputs:
//   head outputs Q[a, z] = (V[z] + A[a, z]) - (sum_a A[a, z]) / 45 of online s, online s', target s'
//   Huber: a* = argmax_a Q_online(s', a) (first on ties), y = G + d Q_target(s', a*),
//          delta = Q(s, a) - y; g = w clip(delta, kappa) / batch; td[b] = delta
//   C51:   a* = argmax of the online s' expected values sum_z softmax(Q[a, .])_z z_k; the target
//          softmax at a* projected on the support (Tz = clamp(G + d z_k), split between floor and
//          ceil); L = -sum m_z logp_z with logp from the log-softmax; g_z = w / batch (p_z sum(m) - m_z);
//          td[b] = L
//   td[batch + b] = w L (L = Huber(delta) for the Huber head). The head-output gradient is g at the
//   taken action, zero elsewhere, so the combination's backward is dV = g (the sum over actions)
//   and dA[a', z] = (a' == a ? g_z : 0) - dV_z / 45.
// Bindings (declared by the preamble generated from src/kernels/dqn_loss.ts):
//   acts: array<f32>, read: the online net's V rows (atoms floats) at vOff / nextVOff, A rows (45 x
//     atoms, action-major) at aOff / nextAOff, row b of each at b atoms and b 45 atoms
//   targetActs: array<f32>, read: the target net's, V rows at tvOff and A rows at taOff
//   rows: array<f32>, read: [batch, REPLAY_F] replay rows (return at RETURN_AT, discount at DISCOUNT_AT)
//   actions: array<i32>, read (clamped to [0, 45)); weights: array<f32>, read: importance weights
//   deltas: array<f32>, read_write: dV rows at dVOff, dA rows at dAOff (the streams' output deltas)
//   td: array<f32>, read_write: [2 batch] priority signals, then weighted losses
//   u: Uniforms { batch, atoms, vOff, aOff, nextVOff, nextAOff, tvOff, taOff, dVOff, dAOff, kappa,
//      vMin, vMax }
// Workgroup: WG_X invocations, one sample (workgroup b of the flat grid): the three rows' means an
// (atom, row) an invocation, the s' head outputs into workgroup memory an output an invocation,
// C51's exp(l - max) an output an invocation, invocation q < 45 action q's value at s' (max, sum,
// expectation), invocation 0 the argmax; C51's two distributions
// (target at the argmax, the taken action's) one atom an invocation where the order does not
// matter (loads, exp, division, the gradient), one invocation where it does (maxima, sums, the
// projection, the loss), in the reference's order; the deltas an output an invocation.
// Numerics: f32 (the TS reference uses Math.exp / Math.log rounded to f32: tolerance).

// Per-atom means of online s, online s', target s'; the s' head outputs; each action's value.
var<workgroup> mean: array<f32, 3 * MAX_ATOMS>;
var<workgroup> next: array<f32, NUM_ACTIONS * MAX_ATOMS>;
var<workgroup> qv: array<f32, NUM_ACTIONS>;
var<workgroup> lt: array<f32, MAX_ATOMS>;
var<workgroup> la: array<f32, MAX_ATOMS>;
var<workgroup> pt: array<f32, MAX_ATOMS>;
var<workgroup> pa: array<f32, MAX_ATOMS>;
var<workgroup> m: array<f32, MAX_ATOMS>;
var<workgroup> g: array<f32, MAX_ATOMS>;
// Target max, action max, target sum, action sum.
var<workgroup> red: array<f32, 4>;
var<workgroup> best_s: u32;
var<workgroup> msum_s: f32;

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

  for (var j = tid; j < 3u * n; j += u32(WG_X)) {
    let which = j / n;
    let z = j - which * n;
    var s = 0.0;
    if (which == 2u) {
      let base = u.taOff + o + z;
      for (var q = 0u; q < u32(NUM_ACTIONS); q++) { s = s + targetActs[base + q * n]; }
    } else {
      let base = select(u.nextAOff, u.aOff, which == 0u) + o + z;
      for (var q = 0u; q < u32(NUM_ACTIONS); q++) { s = s + acts[base + q * n]; }
    }
    mean[which * u32(MAX_ATOMS) + z] = s / f32(NUM_ACTIONS);
  }
  workgroupBarrier();
  for (var k = tid; k < row; k += u32(WG_X)) {
    let z = k % n;
    next[k] = (acts[u.nextVOff + b * n + z] + acts[u.nextAOff + o + k]) - mean[u32(MAX_ATOMS) + z];
  }
  workgroupBarrier();
  // Each action's value at s': C51 its expected value under the softmax of its logits (exp(l - max)
  // an output an invocation, stored over the logits, then each action's sum and expectation in atom
  // order by one invocation), the Huber head's output itself.
  let dz = select(0.0, (u.vMax - u.vMin) / f32(max(n, 2u) - 1u), n > 1u);
  if (n > 1u) {
    for (var q = tid; q < u32(NUM_ACTIONS); q += u32(WG_X)) {
      var top = next[q * n];
      for (var z = 1u; z < n; z++) { top = max(top, next[q * n + z]); }
      qv[q] = top;
    }
    workgroupBarrier();
    for (var k = tid; k < row; k += u32(WG_X)) { next[k] = exp(next[k] - qv[k / n]); }
    workgroupBarrier();
    for (var q = tid; q < u32(NUM_ACTIONS); q += u32(WG_X)) {
      var sum = 0.0;
      for (var z = 0u; z < n; z++) { sum = sum + next[q * n + z]; }
      var qa = 0.0;
      for (var z = 0u; z < n; z++) { qa = qa + (next[q * n + z] / sum) * (u.vMin + f32(z) * dz); }
      qv[q] = qa;
    }
  } else {
    for (var q = tid; q < u32(NUM_ACTIONS); q += u32(WG_X)) { qv[q] = next[q]; }
  }
  workgroupBarrier();
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
  // The target's head outputs at the argmax and the online s outputs at the taken action.
  let best = workgroupUniformLoad(&best_s);
  for (var z = tid; z < n; z += u32(WG_X)) {
    lt[z] = (targetActs[u.tvOff + b * n + z] + targetActs[u.taOff + o + best * n + z]) - mean[2u * u32(MAX_ATOMS) + z];
    la[z] = (acts[u.vOff + b * n + z] + acts[u.aOff + o + a * n + z]) - mean[z];
  }
  workgroupBarrier();
  let ret = rows[b * u32(REPLAY_F) + u32(RETURN_AT)];
  let disc = rows[b * u32(REPLAY_F) + u32(DISCOUNT_AT)];
  let w = weights[b];
  let fb = f32(u.batch);

  if (n == 1u) {
    if (tid == 0u) {
      let y = ret + disc * lt[0];
      let delta = la[0] - y;
      g[0] = w * clamp(delta, -u.kappa, u.kappa) / fb;
      td[b] = delta;
      td[u.batch + b] = w * huber(delta, u.kappa);
    }
  } else {
    // The two distributions: their max (invocation 0 the target, 1 the action), exp(l - max) per
    // atom, the sums in atom order (0 and 1 again), the probabilities per atom; invocation 0 then
    // projects the target and sums the loss in atom order, and the invocations take the action's
    // gradient per atom: the reference's order.
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
    for (var z = tid; z < n; z += u32(WG_X)) { g[z] = scale * (pa[z] * msum_s - m[z]); }
  }
  workgroupBarrier();
  // dV = the sum over actions of the head-output gradient (g at the action, zeros elsewhere: the
  // reference's running sum from +0 gives 0 + g); dA = that gradient less dV / 45.
  for (var z = tid; z < n; z += u32(WG_X)) { deltas[u.dVOff + b * n + z] = 0.0 + g[z]; }
  for (var k = tid; k < row; k += u32(WG_X)) {
    let q = k / n;
    let z = k - q * n;
    let dv = 0.0 + g[z];
    deltas[u.dAOff + o + k] = select(0.0, g[z], q == a) - dv / f32(NUM_ACTIONS);
  }
}
