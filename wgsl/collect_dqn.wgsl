// collect_dqn: L steps of N episodes in one launch, the WGSL twin of src/collect/dqn.ts. Per
// step: build the state, online Q (dueling: plain / C51 / IQN by the constant HEAD), choose the
// action epsilon-greedily with Philox(Action, e, stepBase + l, 0), step the simulator, target Q
// on the next state for the TD error, write the experience, restart an ended episode.
// Bindings, uniforms and the output layout: src/kernels/collect_layout.ts and collect_dqn.ts
// (features, ohlc, spread, entropy, nets, env_f, env_i, div_window, out_f, out_i; u.*).
//
// Workgroup: WG_X invocations. SEED_VARIANT 0 (the kernel): the workgroup owns TILE_E episodes;
// invocation lid < TILE_E steps episode group * TILE_E + lid, and every layer of every network
// runs on the whole tile through the tile engine (collect_tile.wgsl), one ROWS x ACT_W
// activation buffer in workgroup memory. IQN rows are (episode, tau) pairs, TAU_ROWS taus per
// pass. SEED_VARIANT 1 (benchmark only, plain head): one invocation per episode, every weight
// read from global memory into private arrays (the seed design).
//
// Numerics: f32; layer sums in the reference order (the compiler may fuse multiply-adds),
// division, exp and cos within WGSL's stated accuracy (IQN's cos argument is reduced to
// [-pi, pi] first), so Q-values agree with the reference to a tolerance and actions exactly
// except where two Q-values (or epsilon and u) are within that tolerance of each other.
//!include collect_env.wgsl
//!include collect_tile.wgsl

const HEAD_PLAIN = 0;
const HEAD_C51 = 1;
const HEAD_IQN = 2;
const QW_PLAIN = 48u;
// Q-values of the final head per episode (C51 and IQN; the plain head combines in qv).
const QOUT_LEN = select(1, TILE_E * 48, HEAD != HEAD_PLAIN);
const TRUNK_LEN = select(1, TILE_E * 256, HEAD == HEAD_IQN);
const C51_LEN = select(1, TILE_E * ATOMS, HEAD == HEAD_C51);
const TAU_LEN = select(1, TILE_E * ACT_TAUS, HEAD == HEAD_IQN);
const STATE_PAD = (STATE_DIM + KT - 1) / KT * KT;
const CURIOSITY_IN = CURIOSITY_OUT + 3;
const CURIOSITY_PAD = (CURIOSITY_IN + KT - 1) / KT * KT;
// C51 advantage rows per pass: whole actions of ATOMS logits that fit a qv row.
const C51_ACTIONS = QW / ATOMS;
const PI_F32: f32 = 3.141592653589793;
const TWO_PI_HI: f32 = 6.28125;
const TWO_PI_LO: f32 = 0.0019353071795864769;
const INV_TWO_PI: f32 = 0.15915494309189535;

var<workgroup> tile_bar: array<i32, TILE_E>;
var<workgroup> tile_pf: array<vec4<f32>, TILE_E>;
var<workgroup> tile_cat: array<i32, TILE_E>;
var<workgroup> tile_bonus: array<f32, TILE_E>;
var<workgroup> qout: array<f32, QOUT_LEN>;
var<workgroup> trunk: array<f32, TRUNK_LEN>;
var<workgroup> c51_v: array<f32, C51_LEN>;
var<workgroup> c51_mean: array<f32, C51_LEN>;
var<workgroup> tile_tau: array<f32, TAU_LEN>;

// ---- tiled networks ----

// Rows [0, TILE_E) of act <- the tile's states (bar tile_bar[r], portfolio tile_pf[r]); the
// padding columns up to STATE_PAD are zero. Also writes them to out_f section `section`.
fn fill_states(e0: u32, l: u32, section: u32, lid: u32) {
  let nl = u.n * u.steps;
  for (var idx = lid; idx < TILE_E * STATE_PAD; idx += WG_X) {
    let r = idx / STATE_PAD;
    let k = idx % STATE_PAD;
    var v = 0.0;
    if (k < MARKET_FEATURES) {
      v = features[u32(tile_bar[r]) * MARKET_FEATURES + k];
    } else if (k < STATE_DIM) {
      v = tile_pf[r][k - MARKET_FEATURES];
    }
    act_set(r, k, v);
    let e = e0 + r;
    if (k < STATE_DIM && e < u.n) {
      out_f[section * nl + (e * u.steps + l) * STATE_DIM + k] = v;
    }
  }
  workgroupBarrier();
}

// Plain dueling combination of every row of qv: A in columns [0, 45), V in column 45;
// Q[a] = (V + A[a]) - mean(A) written over A.
fn combine_dueling(lid: u32) {
  for (var r = lid; r < ROWS; r += WG_X) {
    let o = r * QW;
    var sum = 0.0;
    for (var a = 0u; a < NUM_ACTIONS; a++) {
      sum = sum + qv[o + a];
    }
    let mean = sum / 45.0;
    let v = qv[o + NUM_ACTIONS];
    for (var a = 0u; a < NUM_ACTIONS; a++) {
      qv[o + a] = (v + qv[o + a]) - mean;
    }
  }
  workgroupBarrier();
}

// Value and advantage streams (fused, same input: the 256 trunk features in act), then the two
// heads (fused, advantage from columns [128, 256), value from [0, 128)) into qv: A at [0, 45),
// V at 45. For the plain and IQN heads.
fn streams_plain(base: u32, lid: u32) {
  dense(
    block(base + NET_Q_VALUE_STREAM_0_W, base + NET_Q_VALUE_STREAM_0_B, 128u, 0u, 256u),
    block(base + NET_Q_ADVANTAGE_STREAM_0_W, base + NET_Q_ADVANTAGE_STREAM_0_B, 128u, 0u, 256u),
    0u, 256u, ACT_LEAKY, false, 0u, lid);
  dense(
    block(base + NET_Q_ADVANTAGE_STREAM_1_W, base + NET_Q_ADVANTAGE_STREAM_1_B, NUM_ACTIONS, 128u, 128u),
    block(base + NET_Q_VALUE_STREAM_1_W, base + NET_Q_VALUE_STREAM_1_B, 1u, 0u, 128u),
    0u, 256u, ACT_NONE, true, 0u, lid);
}

// C51 support point k: vMin + k * delta, delta = (vMax - vMin) / (atoms - 1).
fn c51_atom(k: u32) -> f32 {
  let delta = (u.vMax - u.vMin) / f32(ATOMS - 1);
  return u.vMin + f32(k) * delta;
}

// C51 head (forward.ts forwardC51): V[z], mean over actions of A[a, z], per-action softmax over
// atoms of (V + A) - mean, Q[a] = expectation over the support, into qout. The advantage logits
// do not fit workgroup memory at once: pass 1 accumulates the mean chunk by chunk (actions in
// order, as the reference sums), pass 2 recomputes each chunk and finishes its actions.
fn c51_head(base: u32, lid: u32) {
  dense(
    block(base + NET_Q_ADVANTAGE_STREAM_0_W, base + NET_Q_ADVANTAGE_STREAM_0_B, 128u, 0u, 256u),
    block(base + NET_Q_VALUE_STREAM_0_W, base + NET_Q_VALUE_STREAM_0_B, 128u, 0u, 256u),
    0u, 256u, ACT_LEAKY, false, 0u, lid);
  // act now holds the advantage hidden layer in [0, 128) and the value hidden in [128, 256).
  dense(
    block(base + NET_Q_VALUE_STREAM_1_W, base + NET_Q_VALUE_STREAM_1_B, ATOMS, 128u, 128u),
    NO_BLOCK, 128u, 256u, ACT_NONE, true, 0u, lid);
  for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
    c51_v[idx] = qv[(idx / ATOMS) * QW + idx % ATOMS];
    c51_mean[idx] = 0.0;
  }
  workgroupBarrier();
  let chunks = (NUM_ACTIONS + C51_ACTIONS - 1u) / C51_ACTIONS;
  for (var c = 0u; c < chunks; c++) {
    let a0 = c * C51_ACTIONS;
    let na = min(C51_ACTIONS, NUM_ACTIONS - a0);
    c51_adv_pass(base, a0, na, lid);
    for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
      let o = (idx / ATOMS) * QW + idx % ATOMS;
      var m = c51_mean[idx];
      for (var a = 0u; a < na; a++) {
        m = m + qv[o + a * ATOMS];
      }
      c51_mean[idx] = m;
    }
    workgroupBarrier();
  }
  for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
    c51_mean[idx] = c51_mean[idx] / 45.0;
  }
  workgroupBarrier();
  for (var c = 0u; c < chunks; c++) {
    let a0 = c * C51_ACTIONS;
    let na = min(C51_ACTIONS, NUM_ACTIONS - a0);
    c51_adv_pass(base, a0, na, lid);
    for (var idx = lid; idx < TILE_E * na; idx += WG_X) {
      let r = idx / na;
      let a = idx % na;
      let o = r * QW + a * ATOMS;
      var mx = -3.402823e38;
      for (var z = 0u; z < ATOMS; z++) {
        let logit = (c51_v[r * ATOMS + z] + qv[o + z]) - c51_mean[r * ATOMS + z];
        qv[o + z] = logit;
        mx = max(mx, logit);
      }
      var s = 0.0;
      for (var z = 0u; z < ATOMS; z++) {
        let ez = exp(qv[o + z] - mx);
        qv[o + z] = ez;
        s = s + ez;
      }
      var q = 0.0;
      for (var z = 0u; z < ATOMS; z++) {
        q = q + (qv[o + z] / s) * c51_atom(z);
      }
      qout[r * 48u + a0 + a] = q;
    }
    workgroupBarrier();
  }
}

fn c51_adv_pass(base: u32, a0: u32, na: u32, lid: u32) {
  dense(
    block(
      base + NET_Q_ADVANTAGE_STREAM_1_W + a0 * ATOMS * 128u,
      base + NET_Q_ADVANTAGE_STREAM_1_B + a0 * ATOMS,
      na * ATOMS, 0u, 128u),
    NO_BLOCK, 0u, 128u, ACT_NONE, true, 0u, lid);
}

// cos with the argument reduced to [-pi, pi] (Cody-Waite, two-part 2 pi): WGSL's cos is only
// specified there, and IQN's arguments reach 63 pi.
fn cos_reduced(x: f32) -> f32 {
  let n = round(x * INV_TWO_PI);
  return cos((x - n * TWO_PI_HI) - n * TWO_PI_LO);
}

// IQN head (forward.ts forwardIqn) on the trunk output in act rows [0, TILE_E): for each pass of
// TAU_ROWS taus, rows (e, t) get the cosine features of tau, tau_embed (ReLU), the product
// with the trunk, both streams and the dueling combination; qout sums Q_tau over the taus in
// order, then divides by their count.
fn iqn_head(base: u32, lid: u32) {
  for (var idx = lid; idx < TILE_E * 256u; idx += WG_X) {
    trunk[idx] = act_get(idx / 256u, idx % 256u);
  }
  for (var idx = lid; idx < TILE_E * 48u; idx += WG_X) {
    qout[idx] = 0.0;
  }
  workgroupBarrier();
  let embed_pad = (IQN_EMBED + KT - 1u) / KT * KT;
  for (var p = 0u; p < ACT_TAUS / TAU_ROWS; p++) {
    for (var idx = lid; idx < TILE_E * TAU_ROWS * embed_pad; idx += WG_X) {
      let r = idx / embed_pad;
      let i = idx % embed_pad;
      let e = r / TAU_ROWS;
      let tau = tile_tau[e * ACT_TAUS + p * TAU_ROWS + r % TAU_ROWS];
      var c = 0.0;
      if (i < IQN_EMBED) {
        c = cos_reduced((f32(i) * PI_F32) * tau);
      }
      act_set(r, i, c);
    }
    workgroupBarrier();
    dense1(base + NET_Q_TAU_EMBED_W, base + NET_Q_TAU_EMBED_B, IQN_EMBED, 256u, ACT_RELU, false, 0u, lid);
    for (var idx = lid; idx < TILE_E * TAU_ROWS * 256u; idx += WG_X) {
      let r = idx / 256u;
      let j = idx % 256u;
      act_set(r, j, trunk[(r / TAU_ROWS) * 256u + j] * act_get(r, j));
    }
    workgroupBarrier();
    streams_plain(base, lid);
    combine_dueling(lid);
    for (var idx = lid; idx < TILE_E * NUM_ACTIONS; idx += WG_X) {
      let e = idx / NUM_ACTIONS;
      let a = idx % NUM_ACTIONS;
      var q = qout[e * 48u + a];
      for (var t = 0u; t < TAU_ROWS; t++) {
        q = q + qv[(e * TAU_ROWS + t) * QW + a];
      }
      qout[e * 48u + a] = q;
    }
    workgroupBarrier();
  }
  for (var idx = lid; idx < TILE_E * NUM_ACTIONS; idx += WG_X) {
    let o = (idx / NUM_ACTIONS) * 48u + idx % NUM_ACTIONS;
    qout[o] = qout[o] / f32(ACT_TAUS);
  }
  workgroupBarrier();
}

// Q-values of the states in act rows [0, TILE_E) under the dueling net at `base` (online 0,
// target NET_T_BASE - NET_Q_BASE); read them with final_q.
fn q_forward(base: u32, lid: u32) {
  dense1(base + NET_Q_SHARED_LAYERS_0_W, base + NET_Q_SHARED_LAYERS_0_B, STATE_DIM, 256u, ACT_LEAKY, false, 0u, lid);
  dense1(base + NET_Q_SHARED_LAYERS_1_W, base + NET_Q_SHARED_LAYERS_1_B, 256u, 256u, ACT_LEAKY, false, 0u, lid);
  if (HEAD == HEAD_PLAIN) {
    streams_plain(base, lid);
    combine_dueling(lid);
  } else if (HEAD == HEAD_C51) {
    c51_head(base, lid);
  } else {
    iqn_head(base, lid);
  }
}

fn final_q(r: u32, a: u32) -> f32 {
  if (HEAD == HEAD_PLAIN) {
    return qv[r * QW + a];
  }
  return qout[r * 48u + a];
}

// First index of the largest Q-value of tile row r (ties go to the lower action).
fn argmax_q(r: u32) -> u32 {
  var best = 0u;
  var best_q = final_q(r, 0u);
  for (var a = 1u; a < NUM_ACTIONS; a++) {
    let q = final_q(r, a);
    if (q > best_q) {
      best = a;
      best_q = q;
    }
  }
  return best;
}

// Curiosity bonus of each tile episode (env/curiosity.ts): input features of bar tile_bar[r]
// [0, 32) ++ one-hot(tile_cat[r]), target the first 32 features of the next bar.
fn curiosity_tile(lid: u32) {
  for (var idx = lid; idx < TILE_E * CURIOSITY_PAD; idx += WG_X) {
    let r = idx / CURIOSITY_PAD;
    let k = idx % CURIOSITY_PAD;
    var v = 0.0;
    if (k < CURIOSITY_OUT) {
      v = features[u32(tile_bar[r]) * MARKET_FEATURES + k];
    } else if (k < CURIOSITY_IN) {
      v = select(0.0, 1.0, i32(k - CURIOSITY_OUT) == tile_cat[r]);
    }
    act_set(r, k, v);
  }
  workgroupBarrier();
  dense1(NET_C_FC1_W, NET_C_FC1_B, CURIOSITY_IN, 64u, ACT_LEAKY, false, 0u, lid);
  dense1(NET_C_FC2_W, NET_C_FC2_B, 64u, CURIOSITY_OUT, ACT_NONE, false, 0u, lid);
  if (lid < TILE_E) {
    let next = u32(tile_bar[lid] + 1) * MARKET_FEATURES;
    var acc = 0.0;
    for (var k = 0u; k < CURIOSITY_OUT; k++) {
      let d = act_get(lid, k) - features[next + k];
      acc = acc + d * d;
    }
    tile_bonus[lid] = min(u.curiosityScale * (acc * (1.0 / 32.0)), u.curiosityMax);
  }
  workgroupBarrier();
}

fn write_step(e: u32, l: u32, a: i32, out: StepOut, bonus: f32) {
  let nl = u.n * u.steps;
  let i = e * u.steps + l;
  out_i[OUT_I_ACTIONS * nl + i] = a;
  out_i[OUT_I_DONES * nl + i] = out.done;
  out_i[OUT_I_TRUNCATEDS * nl + i] = out.truncated;
  out_f[OUT_F_REWARDS * nl + i] = out.total;
  let c = OUT_F_COMPONENTS * nl + i * 5u;
  out_f[c] = out.pnl;
  out_f[c + 1u] = out.barrier;
  out_f[c + 2u] = out.risk;
  out_f[c + 3u] = out.diversity;
  out_f[c + 4u] = bonus;
}

fn tiled_collect(group: u32, lid: u32) {
  let e0 = group * TILE_E;
  let e = e0 + lid;
  let mine = lid < TILE_E && e < u.n;
  let key = vec2<u32>(u.key0, u.key1);
  let nl = u.n * u.steps;
  var ep: Episode;
  if (mine) {
    ep = load_episode(e);
  }
  for (var l = 0u; l < u.steps; l++) {
    let g = u.stepBase + l;
    if (lid < TILE_E) {
      tile_bar[lid] = select(u.splitStart, ep.bar, mine);
      tile_pf[lid] = select(vec4<f32>(0.0), vec4<f32>(portfolio_features(ep), 0.0), mine);
    }
    if (HEAD == HEAD_IQN) {
      for (var idx = lid; idx < TILE_E * ACT_TAUS; idx += WG_X) {
        let k = idx % ACT_TAUS;
        let w = philox4x32(vec4<u32>(STREAM_TAU, e0 + idx / ACT_TAUS, g, k >> 2u), key);
        tile_tau[idx] = u32_to_unit_float(w[k & 3u]);
      }
    }
    workgroupBarrier();
    fill_states(e0, l, OUT_F_STATES, lid);
    q_forward(0u, lid);

    var a = 0;
    var q_sa = 0.0;
    if (mine) {
      let w = philox4x32(vec4<u32>(STREAM_ACTION, e, g, 0u), key);
      if (u32_to_unit_float(w.x) < u.epsilon) {
        a = i32(w.y % NUM_ACTIONS);
      } else {
        a = i32(argmax_q(lid));
      }
      q_sa = final_q(lid, u32(a));
      tile_cat[lid] = action_category(a);
    }
    workgroupBarrier();
    if (u.curiosity != 0u) {
      curiosity_tile(lid);
    } else if (lid < TILE_E) {
      tile_bonus[lid] = 0.0;
    }
    workgroupBarrier();

    var out: StepOut;
    if (mine) {
      let bonus = tile_bonus[lid];
      out = env_step(e, &ep, a, bonus);
      tile_bar[lid] = ep.bar;
      tile_pf[lid] = vec4<f32>(portfolio_features(ep), 0.0);
      write_step(e, l, a, out, bonus);
      finish_step(e, &ep, out);
    }
    workgroupBarrier();
    fill_states(e0, l, OUT_F_NEXT_STATES, lid);
    q_forward(NET_T_BASE - NET_Q_BASE, lid);
    if (mine) {
      var td_target = out.total;
      if (out.done == 0) {
        td_target = out.total + u.gamma * final_q(lid, argmax_q(lid));
      }
      out_f[OUT_F_TD_ERRORS * nl + e * u.steps + l] = abs(td_target - q_sa);
    }
    workgroupBarrier();
  }
  if (mine) {
    store_episode(e, ep);
  }
}

// ---- seed variant: one invocation per episode, plain head ----

fn seed_dense(
  w: u32, b: u32, n_in: u32, n_out: u32, kind: u32,
  src: ptr<function, array<f32, 256>>, src_off: u32,
  dst: ptr<function, array<f32, 256>>, dst_off: u32,
) {
  for (var j = 0u; j < n_out; j++) {
    var acc = nets[b + j];
    let row = w + j * n_in;
    for (var k = 0u; k < n_in; k++) {
      acc = acc + nets[row + k] * (*src)[src_off + k];
    }
    (*dst)[dst_off + j] = activate(acc, kind);
  }
}

// Plain dueling Q of the state in x[0, 54) into q; h and y are scratch.
fn seed_q(
  base: u32,
  x: ptr<function, array<f32, 256>>,
  h: ptr<function, array<f32, 256>>,
  y: ptr<function, array<f32, 256>>,
  q: ptr<function, array<f32, 48>>,
) {
  seed_dense(base + NET_Q_SHARED_LAYERS_0_W, base + NET_Q_SHARED_LAYERS_0_B, STATE_DIM, 256u, ACT_LEAKY, x, 0u, h, 0u);
  seed_dense(base + NET_Q_SHARED_LAYERS_1_W, base + NET_Q_SHARED_LAYERS_1_B, 256u, 256u, ACT_LEAKY, h, 0u, y, 0u);
  seed_dense(base + NET_Q_VALUE_STREAM_0_W, base + NET_Q_VALUE_STREAM_0_B, 256u, 128u, ACT_LEAKY, y, 0u, h, 0u);
  seed_dense(base + NET_Q_ADVANTAGE_STREAM_0_W, base + NET_Q_ADVANTAGE_STREAM_0_B, 256u, 128u, ACT_LEAKY, y, 0u, h, 128u);
  seed_dense(base + NET_Q_VALUE_STREAM_1_W, base + NET_Q_VALUE_STREAM_1_B, 128u, 1u, ACT_NONE, h, 0u, y, 0u);
  seed_dense(base + NET_Q_ADVANTAGE_STREAM_1_W, base + NET_Q_ADVANTAGE_STREAM_1_B, 128u, NUM_ACTIONS, ACT_NONE, h, 128u, y, 1u);
  var sum = 0.0;
  for (var a = 0u; a < NUM_ACTIONS; a++) {
    sum = sum + (*y)[1u + a];
  }
  let mean = sum / 45.0;
  for (var a = 0u; a < NUM_ACTIONS; a++) {
    (*q)[a] = ((*y)[0] + (*y)[1u + a]) - mean;
  }
}

fn seed_state(ep: Episode, x: ptr<function, array<f32, 256>>) {
  let src = u32(ep.bar) * MARKET_FEATURES;
  for (var k = 0u; k < MARKET_FEATURES; k++) {
    (*x)[k] = features[src + k];
  }
  let pf = portfolio_features(ep);
  (*x)[MARKET_FEATURES] = pf.x;
  (*x)[MARKET_FEATURES + 1u] = pf.y;
  (*x)[MARKET_FEATURES + 2u] = pf.z;
}

fn seed_curiosity(t: i32, cat: i32, x: ptr<function, array<f32, 256>>, h: ptr<function, array<f32, 256>>) -> f32 {
  let src = u32(t) * MARKET_FEATURES;
  for (var k = 0u; k < CURIOSITY_OUT; k++) {
    (*x)[k] = features[src + k];
  }
  for (var k = 0u; k < 3u; k++) {
    (*x)[CURIOSITY_OUT + k] = select(0.0, 1.0, i32(k) == cat);
  }
  seed_dense(NET_C_FC1_W, NET_C_FC1_B, CURIOSITY_IN, 64u, ACT_LEAKY, x, 0u, h, 0u);
  seed_dense(NET_C_FC2_W, NET_C_FC2_B, 64u, CURIOSITY_OUT, ACT_NONE, h, 0u, x, 0u);
  let next = src + MARKET_FEATURES;
  var acc = 0.0;
  for (var k = 0u; k < CURIOSITY_OUT; k++) {
    let d = (*x)[k] - features[next + k];
    acc = acc + d * d;
  }
  return min(u.curiosityScale * (acc * (1.0 / 32.0)), u.curiosityMax);
}

fn seed_collect(e: u32) {
  if (e >= u.n) {
    return;
  }
  let key = vec2<u32>(u.key0, u.key1);
  let nl = u.n * u.steps;
  var ep = load_episode(e);
  var x: array<f32, 256>;
  var h: array<f32, 256>;
  var y: array<f32, 256>;
  var q: array<f32, 48>;
  for (var l = 0u; l < u.steps; l++) {
    let g = u.stepBase + l;
    let i = e * u.steps + l;
    seed_state(ep, &x);
    for (var k = 0u; k < STATE_DIM; k++) {
      out_f[OUT_F_STATES * nl + i * STATE_DIM + k] = x[k];
    }
    seed_q(0u, &x, &h, &y, &q);
    let w = philox4x32(vec4<u32>(STREAM_ACTION, e, g, 0u), key);
    var a = 0;
    if (u32_to_unit_float(w.x) < u.epsilon) {
      a = i32(w.y % NUM_ACTIONS);
    } else {
      for (var k = 1; k < 45; k++) {
        if (q[k] > q[a]) {
          a = k;
        }
      }
    }
    let q_sa = q[a];
    var bonus = 0.0;
    if (u.curiosity != 0u) {
      bonus = seed_curiosity(ep.bar, action_category(a), &x, &h);
    }
    let out = env_step(e, &ep, a, bonus);
    write_step(e, l, a, out, bonus);
    seed_state(ep, &x);
    for (var k = 0u; k < STATE_DIM; k++) {
      out_f[OUT_F_NEXT_STATES * nl + i * STATE_DIM + k] = x[k];
    }
    finish_step(e, &ep, out);
    var td_target = out.total;
    if (out.done == 0) {
      seed_q(NET_T_BASE - NET_Q_BASE, &x, &h, &y, &q);
      var best = q[0];
      for (var k = 1; k < 45; k++) {
        best = max(best, q[k]);
      }
      td_target = out.total + u.gamma * best;
    }
    out_f[OUT_F_TD_ERRORS * nl + i] = abs(td_target - q_sa);
  }
  store_episode(e, ep);
}

@compute @workgroup_size(WG_X, 1, 1)
fn collect_dqn(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let group = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (SEED_VARIANT == 1) {
    seed_collect(group * WG_X + lid);
    return;
  }
  tiled_collect(group, lid);
}
