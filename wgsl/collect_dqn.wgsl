// collect_dqn: L steps of N episodes in one launch, the WGSL twin of src/collect/dqn.ts. Per
// step: build the state, online Q (dueling: plain / C51 / IQN by the constant HEAD), choose the
// action epsilon-greedily with Philox(Action, e, stepBase + l, 0), step the simulator, write the
// experience, restart an ended episode. New experiences enter the replay at its max priority, so no
// target net runs here.
// Bindings, uniforms and the output layout: src/kernels/collect_layout.ts and collect_dqn.ts
// (features, ohlc, spread, entropy, nets, env_f, env_i, div_window, out_f, out_i; u.*).
//
// Workgroup: WG_X invocations. SEED_VARIANT 0 (the kernel): the workgroup owns TILE_E episodes;
// invocation lid < TILE_E steps episode group * TILE_E + lid, and every layer of both networks
// (online, curiosity) runs on the whole tile through the tile engine (collect_tile.wgsl), one ROWS x ACT_W
// activation buffer in workgroup memory. IQN rows are (episode, tau) pairs, TAU_ROWS taus per
// pass. SEED_VARIANT 1 (benchmark only, plain head): one invocation per episode, every weight
// read from global memory into private arrays (the seed design).
// Launch: ceil(N / TILE_E) workgroups (seed: ceil(N / WG_X)) over x and y (grid1d), flat id = group.
// Tile engine (constant ENGINE; each module holds one): 0 or 2 (f32).
//
// Numerics: f32; layer sums in the reference order (the compiler may fuse multiply-adds),
// division, exp and cos within WGSL's stated accuracy (IQN's cos argument is reduced to
// [-pi, pi] first), so Q-values agree with the reference to a tolerance and actions exactly
// except where two Q-values (or epsilon and u) are within that tolerance of each other.
//!include collect_env.wgsl
//!include collect_tile.wgsl
//!include collect_phases.wgsl

const HEAD_PLAIN = 0;
const HEAD_C51 = 1;
const HEAD_IQN = 2;
const SEED_W = 256;
// Q-values of the final head per episode (C51 and IQN; the plain head combines in qv).
const QOUT_LEN = select(1, TILE_E * 48, HEAD != HEAD_PLAIN);
const TRUNK_LEN = select(1, TILE_E * 256, HEAD == HEAD_IQN);
const C51_LEN = select(1, TILE_E * ATOMS, HEAD == HEAD_C51);
const TAU_LEN = select(1, TILE_E * ACT_TAUS, HEAD == HEAD_IQN);
// C51 advantage rows per pass: whole actions of ATOMS logits that fit a qv row.
const C51_ACTIONS = QW / ATOMS;
const PI_F32: f32 = 3.141592653589793;
const TWO_PI_HI: f32 = 6.28125;
const TWO_PI_LO: f32 = 0.0019353071795864769;
const INV_TWO_PI: f32 = 0.15915494309189535;

var<workgroup> qout: array<f32, QOUT_LEN>;
var<workgroup> trunk: array<f32, TRUNK_LEN>;
var<workgroup> c51_v: array<f32, C51_LEN>;
var<workgroup> c51_mean: array<f32, C51_LEN>;
var<workgroup> tile_tau: array<f32, TAU_LEN>;

// ---- the tiled kernel: a per-step program of ops ----
//
// Every step runs the same program, one op after another, each op on the whole workgroup: the
// layers of every network are DENSE ops of the tile engine, the rest are the phases between
// them. The kernel has one call of `dense` and one copy of each phase, so shader compilers
// (Mesa's LLVM in particular) see a small function instead of every network inlined twice;
// op_at() computes an op's parameters from its index, the layouts' constants and the head.

const OP_FILL = 1u;
const OP_COMBINE = 2u;
const OP_ACT = 3u;
const OP_CUR_FILL = 4u;
const OP_CUR_MSE = 5u;
const OP_ENV = 6u;
const OP_TAUS = 8u;
const OP_C51_V = 9u;
const OP_C51_SUM = 10u;
const OP_C51_DIV = 11u;
const OP_C51_Q = 12u;
const OP_IQN_TRUNK = 13u;
const OP_IQN_COS = 14u;
const OP_IQN_MUL = 15u;
const OP_IQN_SUM = 16u;
const OP_IQN_DIV = 17u;

const C51_CHUNKS = (NUM_ACTIONS + C51_ACTIONS - 1) / C51_ACTIONS;
const IQN_PASSES = ACT_TAUS / TAU_ROWS;
const IQN_OPS = 7u;
// Ops of one network forward (net_op) per head.
const NET_LEN = select(select(4 + IQN_OPS * IQN_PASSES, 6 + 4 * C51_CHUNKS, HEAD == HEAD_C51), 5, HEAD == HEAD_PLAIN);
// Program: [taus (IQN)], fill s, online net, action, curiosity (4 ops), env, fill s' (its output).
const PRE = select(1u, 2u, HEAD == HEAD_IQN);
const ACT_AT = PRE + NET_LEN;
const CUR_AT = ACT_AT + 1u;
const ENV_AT = CUR_AT + 4u;
const PROGRAM_LEN = ENV_AT + 2u;

// Value and advantage streams fused (same input, the trunk's 256 features; value first).
fn streams_op() -> Op {
  return Op(OP_DENSE,
    block(NET_Q_VALUE_STREAM_0_W, NET_Q_VALUE_STREAM_0_B, 128u, 0u, 256u),
    block(NET_Q_ADVANTAGE_STREAM_0_W, NET_Q_ADVANTAGE_STREAM_0_B, 128u, 0u, 256u),
    0u, 256u, ACT_LEAKY, false, 0u, 0u);
}

// The two plain heads fused into qv: advantage (from columns [128, 256)) at [0, 45), value
// (from [0, 128)) at 45.
fn heads_op() -> Op {
  return Op(OP_DENSE,
    block(NET_Q_ADVANTAGE_STREAM_1_W, NET_Q_ADVANTAGE_STREAM_1_B, NUM_ACTIONS, 128u, 128u),
    block(NET_Q_VALUE_STREAM_1_W, NET_Q_VALUE_STREAM_1_B, 1u, 0u, 128u),
    0u, 256u, ACT_NONE, true, 0u, 0u);
}

// C51 advantage logits of actions [c * C51_ACTIONS, ..) into qv; C51's streams put the advantage
// hidden layer first (columns [0, 128)).
fn c51_chunk_op(c: u32) -> Op {
  let a0 = c * C51_ACTIONS;
  let na = min(C51_ACTIONS, NUM_ACTIONS - a0);
  return Op(OP_DENSE,
    block(NET_Q_ADVANTAGE_STREAM_1_W + a0 * ATOMS * 128u, NET_Q_ADVANTAGE_STREAM_1_B + a0 * ATOMS,
      na * ATOMS, 0u, 128u),
    NO_BLOCK, 0u, 128u, ACT_NONE, true, 0u, c);
}

// Op j of the online dueling net.
fn net_op(j: u32) -> Op {
  if (j == 0u) {
    return layer(NET_Q_SHARED_LAYERS_0_W, NET_Q_SHARED_LAYERS_0_B, STATE_DIM, 256u, ACT_LEAKY, false, 0u);
  }
  if (j == 1u) {
    return layer(NET_Q_SHARED_LAYERS_1_W, NET_Q_SHARED_LAYERS_1_B, 256u, 256u, ACT_LEAKY, false, 0u);
  }
  if (HEAD == HEAD_PLAIN) {
    switch (j) {
      case 2u: { return streams_op(); }
      case 3u: { return heads_op(); }
      default: { return phase(OP_COMBINE, 0u); }
    }
  }
  if (HEAD == HEAD_C51) {
    // 2 advantage-first streams, 3 value logits, 4 keep V, then pass 1 (chunk, sum) x C,
    // the division, pass 2 (chunk, softmax and expectation) x C.
    if (j == 2u) {
      return Op(OP_DENSE,
        block(NET_Q_ADVANTAGE_STREAM_0_W, NET_Q_ADVANTAGE_STREAM_0_B, 128u, 0u, 256u),
        block(NET_Q_VALUE_STREAM_0_W, NET_Q_VALUE_STREAM_0_B, 128u, 0u, 256u),
        0u, 256u, ACT_LEAKY, false, 0u, 0u);
    }
    if (j == 3u) {
      return Op(OP_DENSE, block(NET_Q_VALUE_STREAM_1_W, NET_Q_VALUE_STREAM_1_B, ATOMS, 128u, 128u),
        NO_BLOCK, 128u, 256u, ACT_NONE, true, 0u, 0u);
    }
    if (j == 4u) {
      return phase(OP_C51_V, 0u);
    }
    let k = j - 5u;
    if (k < 2u * C51_CHUNKS) {
      if (k % 2u == 0u) {
        return c51_chunk_op(k / 2u);
      }
      return phase(OP_C51_SUM, k / 2u);
    }
    if (k == 2u * C51_CHUNKS) {
      return phase(OP_C51_DIV, 0u);
    }
    let k2 = k - 2u * C51_CHUNKS - 1u;
    if (k2 % 2u == 0u) {
      return c51_chunk_op(k2 / 2u);
    }
    return phase(OP_C51_Q, k2 / 2u);
  }
  // IQN: 2 keep the trunk, then per pass of TAU_ROWS taus: cosines, tau_embed, product with the
  // trunk, streams, heads, dueling combination, sum over the pass's taus; then the mean.
  if (j == 2u) {
    return phase(OP_IQN_TRUNK, 0u);
  }
  let k = j - 3u;
  if (k >= IQN_OPS * IQN_PASSES) {
    return phase(OP_IQN_DIV, 0u);
  }
  let p = k / IQN_OPS;
  switch (k % IQN_OPS) {
    case 0u: { return phase(OP_IQN_COS, p); }
    case 1u: { return layer(NET_Q_TAU_EMBED_W, NET_Q_TAU_EMBED_B, IQN_EMBED, 256u, ACT_RELU, false, 0u); }
    case 2u: { return phase(OP_IQN_MUL, p); }
    case 3u: { return streams_op(); }
    case 4u: { return heads_op(); }
    case 5u: { return phase(OP_COMBINE, p); }
    default: { return phase(OP_IQN_SUM, p); }
  }
}

// Op i of a step's program.
fn op_at(i: u32) -> Op {
  if (HEAD == HEAD_IQN && i == 0u) {
    return phase(OP_TAUS, 0u);
  }
  if (i < PRE) {
    return phase(OP_FILL, 0u);
  }
  if (i < ACT_AT) {
    return net_op(i - PRE);
  }
  if (i == ACT_AT) {
    return phase(OP_ACT, 0u);
  }
  if (i < ENV_AT) {
    switch (i - CUR_AT) {
      case 0u: { return phase(OP_CUR_FILL, 0u); }
      case 1u: { return layer(NET_C_FC1_W, NET_C_FC1_B, CURIOSITY_IN, 64u, ACT_LEAKY, false, 0u); }
      case 2u: { return layer(NET_C_FC2_W, NET_C_FC2_B, 64u, CURIOSITY_OUT, ACT_NONE, false, 0u); }
      default: { return phase(OP_CUR_MSE, 0u); }
    }
  }
  if (i == ENV_AT) {
    return phase(OP_ENV, 0u);
  }
  return phase(OP_FILL, 1u);
}

// Plain dueling combination of every row of qv: A in columns [0, 45), V in column 45;
// Q[a] = (V + A[a]) - mean(A) written over A. Where the workgroup has a thread for every row and
// action, thread (r, a) sums row r's advantages in action order itself (the same sum, from
// broadcast reads) and writes its own Q[a] after a barrier; else a thread per row does all.
fn combine_dueling(lid: u32) {
  if (ROWS * NUM_ACTIONS <= WG_X) {
    let r = lid / NUM_ACTIONS;
    let a = lid % NUM_ACTIONS;
    var q = 0.0;
    if (r < ROWS) {
      let o = r * QW;
      var sum = 0.0;
      for (var k = 0u; k < NUM_ACTIONS; k++) {
        sum = sum + qv[o + k];
      }
      let mean = sum / 45.0;
      q = (qv[o + NUM_ACTIONS] + qv[o + a]) - mean;
    }
    workgroupBarrier();
    if (r < ROWS) {
      qv[r * QW + a] = q;
    }
    return;
  }
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
}

// C51 support point k: vMin + k * delta, delta = (vMax - vMin) / (atoms - 1).
fn c51_atom(k: u32) -> f32 {
  let delta = (u.vMax - u.vMin) / f32(ATOMS - 1);
  return u.vMin + f32(k) * delta;
}

// C51 (forward.ts forwardC51), per tile row: V[z] kept; mean over actions of A[a, z] summed
// chunk by chunk in action order; per action of a chunk, the softmax over atoms of
// (V + A) - mean and Q[a] = expectation over the support, into qout.
fn c51_phase(kind: u32, c: u32, lid: u32) {
  let a0 = c * C51_ACTIONS;
  let na = min(C51_ACTIONS, NUM_ACTIONS - a0);
  if (kind == OP_C51_V) {
    for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
      c51_v[idx] = qv[(idx / ATOMS) * QW + idx % ATOMS];
      c51_mean[idx] = 0.0;
    }
  } else if (kind == OP_C51_SUM) {
    for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
      let o = (idx / ATOMS) * QW + idx % ATOMS;
      var m = c51_mean[idx];
      for (var a = 0u; a < na; a++) {
        m = m + qv[o + a * ATOMS];
      }
      c51_mean[idx] = m;
    }
  } else if (kind == OP_C51_DIV) {
    for (var idx = lid; idx < TILE_E * ATOMS; idx += WG_X) {
      c51_mean[idx] = c51_mean[idx] / 45.0;
    }
  } else {
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
  }
}

// cos with the argument reduced to [-pi, pi] (Cody-Waite, two-part 2 pi): WGSL's cos is only
// specified there, and IQN's arguments reach 63 pi.
fn cos_reduced(x: f32) -> f32 {
  let n = round(x * INV_TWO_PI);
  return cos((x - n * TWO_PI_HI) - n * TWO_PI_LO);
}

// IQN (forward.ts forwardIqn) on the trunk output in act rows [0, TILE_E): rows (e, t) of pass p
// get the cosine features of tau_(p * TAU_ROWS + t), then after tau_embed the product with the
// trunk; after the streams and the dueling combination qout sums Q_tau over the taus in order,
// then divides by their count.
fn iqn_phase(kind: u32, p: u32, lid: u32) {
  if (kind == OP_IQN_TRUNK) {
    for (var idx = lid; idx < TILE_E * 256u; idx += WG_X) {
      trunk[idx] = act_get(idx / 256u, idx % 256u);
    }
    for (var idx = lid; idx < TILE_E * 48u; idx += WG_X) {
      qout[idx] = 0.0;
    }
  } else if (kind == OP_IQN_COS) {
    let embed4 = (IQN_EMBED + KT - 1u) / KT * KT / 4u;
    for (var idx = lid; idx < TILE_E * TAU_ROWS * embed4; idx += WG_X) {
      let r = idx / embed4;
      let i4 = idx % embed4;
      let tau = tile_tau[(r / TAU_ROWS) * ACT_TAUS + p * TAU_ROWS + r % TAU_ROWS];
      var c = vec4<f32>(0.0);
      for (var q = 0u; q < 4u; q++) {
        let i = i4 * 4u + q;
        if (i < IQN_EMBED) {
          c[q] = cos_reduced((f32(i) * PI_F32) * tau);
        }
      }
      act_set4(r, i4, c);
    }
  } else if (kind == OP_IQN_MUL) {
    for (var idx = lid; idx < TILE_E * TAU_ROWS * 64u; idx += WG_X) {
      let r = idx / 64u;
      let j = (idx % 64u) * 4u;
      let t = (r / TAU_ROWS) * 256u + j;
      let h = vec4<f32>(act_get(r, j), act_get(r, j + 1u), act_get(r, j + 2u), act_get(r, j + 3u));
      act_set4(r, j / 4u, vec4<f32>(trunk[t], trunk[t + 1u], trunk[t + 2u], trunk[t + 3u]) * h);
    }
  } else if (kind == OP_IQN_SUM) {
    for (var idx = lid; idx < TILE_E * NUM_ACTIONS; idx += WG_X) {
      let e = idx / NUM_ACTIONS;
      let a = idx % NUM_ACTIONS;
      var q = qout[e * 48u + a];
      for (var t = 0u; t < TAU_ROWS; t++) {
        q = q + qv[(e * TAU_ROWS + t) * QW + a];
      }
      qout[e * 48u + a] = q;
    }
  } else {
    for (var idx = lid; idx < TILE_E * NUM_ACTIONS; idx += WG_X) {
      let o = (idx / NUM_ACTIONS) * 48u + idx % NUM_ACTIONS;
      qout[o] = qout[o] / f32(ACT_TAUS);
    }
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

fn write_step(e: u32, l: u32, a: i32, out: StepOut, bonus: f32) {
  let nl = u.n * u.steps;
  let i = e * u.steps + l;
  out_i[OUT_I_ACTIONS * nl + i] = a;
  out_i[OUT_I_DONES * nl + i] = out.done;
  out_i[OUT_I_TRUNCATEDS * nl + i] = out.truncated;
  out_f[OUT_F_REWARDS * nl + i] = out.total;
  write_components(i, out, bonus);
}

fn tiled_collect(group: u32, lid: u32) {
  let e0 = group * TILE_E;
  let e = e0 + lid;
  let mine = lid < TILE_E && e < u.n;
  let key = vec2<u32>(u.key0, u.key1);
  var ep: Episode;
  if (mine) {
    ep = load_episode(e);
  }
  for (var l = 0u; l < u.steps; l++) {
    let g = u.stepBase + l;
    var a = 0;
    for (var i = 0u; i < PROGRAM_LEN; i++) {
      if (u.curiosity == 0u && i >= CUR_AT && i < ENV_AT) {
        continue;
      }
      let o = op_at(i);
      switch (o.kind) {
        case OP_DENSE: {
          dense(o.b0, o.b1, o.k_start, o.n_k, o.act, o.to_q, o.out_col, lid);
        }
        case OP_TAUS: {
          for (var idx = lid; idx < TILE_E * ACT_TAUS; idx += WG_X) {
            let k = idx % ACT_TAUS;
            let w = philox4x32(vec4<u32>(STREAM_TAU, e0 + idx / ACT_TAUS, g, k >> 2u), key);
            tile_tau[idx] = u32_to_unit_float(w[k & 3u]);
          }
        }
        case OP_FILL: {
          // arg 0: the state s_t of each episode; arg 1: the next state the env op left.
          if (o.arg == 0u && lid < TILE_E) {
            tile_bar[lid] = select(u.splitStart, ep.bar, mine);
            tile_pf[lid] = select(vec4<f32>(0.0), vec4<f32>(portfolio_features(ep), 0.0), mine);
          }
          workgroupBarrier();
          fill_states(e0, l, select(u32(OUT_F_NEXT_STATES), u32(OUT_F_STATES), o.arg == 0u), true, lid);
        }
        case OP_COMBINE: {
          combine_dueling(lid);
        }
        case OP_ACT: {
          if (mine) {
            let w = philox4x32(vec4<u32>(STREAM_ACTION, e, g, 0u), key);
            if (u32_to_unit_float(w.x) < u.epsilon) {
              a = i32(w.y % NUM_ACTIONS);
            } else {
              a = i32(argmax_q(lid));
            }
            tile_cat[lid] = action_category(a);
            tile_bonus[lid] = 0.0;
          }
        }
        case OP_CUR_FILL: {
          curiosity_fill(lid);
        }
        case OP_CUR_MSE: {
          curiosity_mse(lid);
        }
        case OP_ENV: {
          if (mine) {
            let bonus = tile_bonus[lid];
            let out = env_step(e, &ep, a, bonus);
            tile_bar[lid] = ep.bar;
            tile_pf[lid] = vec4<f32>(portfolio_features(ep), 0.0);
            write_step(e, l, a, out, bonus);
            finish_step(e, &ep, out);
          }
        }
        case OP_C51_V, OP_C51_SUM, OP_C51_DIV, OP_C51_Q: {
          c51_phase(o.kind, o.arg, lid);
        }
        default: {
          iqn_phase(o.kind, o.arg, lid);
        }
      }
      workgroupBarrier();
    }
  }
  if (mine) {
    store_episode(e, ep);
  }
}

// ---- seed variant: one invocation per episode, plain head ----

// Plain dueling Q of the state in x[0, 54) into q; h and y are scratch.
fn seed_q(
  x: ptr<function, array<f32, SEED_W>>,
  h: ptr<function, array<f32, SEED_W>>,
  y: ptr<function, array<f32, SEED_W>>,
  q: ptr<function, array<f32, 48>>,
) {
  seed_dense(NET_Q_SHARED_LAYERS_0_W, NET_Q_SHARED_LAYERS_0_B, STATE_DIM, 256u, ACT_LEAKY, x, 0u, h, 0u);
  seed_dense(NET_Q_SHARED_LAYERS_1_W, NET_Q_SHARED_LAYERS_1_B, 256u, 256u, ACT_LEAKY, h, 0u, y, 0u);
  seed_dense(NET_Q_VALUE_STREAM_0_W, NET_Q_VALUE_STREAM_0_B, 256u, 128u, ACT_LEAKY, y, 0u, h, 0u);
  seed_dense(NET_Q_ADVANTAGE_STREAM_0_W, NET_Q_ADVANTAGE_STREAM_0_B, 256u, 128u, ACT_LEAKY, y, 0u, h, 128u);
  seed_dense(NET_Q_VALUE_STREAM_1_W, NET_Q_VALUE_STREAM_1_B, 128u, 1u, ACT_NONE, h, 0u, y, 0u);
  seed_dense(NET_Q_ADVANTAGE_STREAM_1_W, NET_Q_ADVANTAGE_STREAM_1_B, 128u, NUM_ACTIONS, ACT_NONE, h, 128u, y, 1u);
  var sum = 0.0;
  for (var a = 0u; a < NUM_ACTIONS; a++) {
    sum = sum + (*y)[1u + a];
  }
  let mean = sum / 45.0;
  for (var a = 0u; a < NUM_ACTIONS; a++) {
    (*q)[a] = ((*y)[0] + (*y)[1u + a]) - mean;
  }
}

fn seed_collect(e: u32) {
  if (e >= u.n) {
    return;
  }
  let key = vec2<u32>(u.key0, u.key1);
  let nl = u.n * u.steps;
  var ep = load_episode(e);
  var x: array<f32, SEED_W>;
  var h: array<f32, SEED_W>;
  var y: array<f32, SEED_W>;
  var q: array<f32, 48>;
  for (var l = 0u; l < u.steps; l++) {
    let g = u.stepBase + l;
    let i = e * u.steps + l;
    seed_state(ep, &x);
    for (var k = 0u; k < STATE_DIM; k++) {
      out_f[OUT_F_STATES * nl + i * STATE_DIM + k] = x[k];
    }
    seed_q(&x, &h, &y, &q);
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
