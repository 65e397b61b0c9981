// Engine 5 of collect_dqn (the weight-streaming engine: f16 weights, f32 math; the WebGPU f16
// precision up to N = 2,048): its workgroup arrays and the step's ops it runs differently from the
// other engines (dual pass, curiosity beside it, flat and merged steps, folded dueling combination).
// A snippet, not a kernel: collect_dqn.wgsl includes it inside its `//!if ENGINE == 5` block, after
// collect_tile_stream.wgsl (dense_gv and its side layers), whose names it uses. The switches
// (constants) are set by src/kernels/collect_engine.ts and collect_dqn.ts; docs/COLLECT.md lists them.

// GV_DUAL 1: whether each episode of the tile restarted at the last step (its next state is not
// the s' the dual pass saw), and the tile's verdict for this step's online pass.
var<workgroup> gv_restart: array<u32, TILE_E>;
var<workgroup> gv_need: u32;
// GV_TABLE 1: the step program, decoded once per launch (op_at of every index); an op is then one
// workgroupUniformLoad, whose barrier also closes the op before it, instead of all the
// workgroup's warps decoding it again (op_at's branches and block offsets, every op of every step).
var<workgroup> gv_prog: array<Op, select(1u, PROGRAM_LEN, GV_TABLE == 1)>;
// GV_CUR 1: the curiosity model's two layers are side layers (collect_tile.wgsl gv_side) of the
// next-state pass's first two, so the step's program has no curiosity ops: the env op steps with
// the bonus left out (it enters the reward last, total = partial + bonus, so adding it later gives
// the same bits), the fill of s' also fills the model's input (bar tile_cbar[r], the bar before the
// step, and the action's category), and the TD op adds the bonus and writes the step.
const CUR_OPS = select(4u, 0u, GV_CUR == 1);
var<workgroup> tile_cbar: array<i32, TILE_E>;
// GV_FLAT 1 (with GV_CUR): the ops from the action on (action and env, fill of s', the next-state
// pass's 4 layers, the dueling combination, TD) are known from their index, so they run without
// the table's loads: each closed by one plain barrier (the action op by the step's verdict load, or
// the online pass's last op by one), and the combination writes Q to gv_qc instead of over the
// advantages, which needs no barrier of its own.
const_assert GV_FLAT == 0 || (GV_CUR == 1 && GV_STRAIGHT == 1 && HEAD == HEAD_PLAIN);
var<workgroup> gv_qc: array<f32, select(1u, ROWS * 48u, GV_FLAT == 1)>;
// GV_RNG 1: the action draw's two words (Philox(Action, e, g, 0).xy) of this step and the next,
// by step parity: the next step's are drawn in the action op by a thread of the second subgroup
// (lid 32 + r), off the chain of the thread that picks the action.
var<workgroup> gv_rng: array<vec2<u32>, select(1u, 2u * TILE_E, GV_RNG == 1)>;
const_assert GV_RNG == 0 || WG_X >= 32u + TILE_E;
// GV_EPWG 1: an acting thread's episode, its step's outcome, action and Q(s, a) live in workgroup
// memory between the ops that use them (loaded at an op's start, stored at its end), so they hold
// no registers across the layer ops.
const EPWG_LEN = select(1u, TILE_E, GV_EPWG == 1);
var<workgroup> gv_ep: array<Episode, EPWG_LEN>;
// GV_MERGE: the outcome, action and Q(s, a) by step parity (the TD op of step l reads l's while
// the action op of step l + 1 beside it writes l + 1's).
const STEP_LEN = select(EPWG_LEN, 2u * TILE_E, GV_MERGE != 0);
var<workgroup> gv_out: array<StepOut, STEP_LEN>;
var<workgroup> gv_a: array<i32, STEP_LEN>;
var<workgroup> gv_qsa: array<f32, STEP_LEN>;
// GV_MERGE 1 or 2 (with GV_FLAT): the TD op of step l also runs the action op of step l + 1 when no
// episode of the tile restarted at step l (the online Q-values of s' are then the next step's):
// one op fewer a step, and the TD op's work off the chain. Beside the target pass's dueling
// combination thread GV_VERDICT leaves the verdict (whether an episode restarted) in gv_need; the
// TD op's barrier is its workgroupUniformLoad, and so is the next step's start (no verdict carried
// from one step to the next in a variable: a build that did so ran at 5.38M against 5.95M, and one
// that decided the merge from a plain load at 5.97M). The TD op runs on thread GV_TD0 + r (the
// action on r, the next draw on 32 + r, GV_RNG), with the bonus computed there. GV_MERGE 2: also no
// barrier of its own before the fill of s' when the action op was skipped (the verdict's load at the
// step's start is one).
const_assert GV_MERGE == 0 || (ENV_AT + 2u == TARGET_AT && GV_FLAT == 1 && GV_EPWG == 1 && GV_RNG == 1 && GV_DUAL == 1);
const_assert GV_MERGE == 0 || (TILE_E <= 32u && GV_TD0 + TILE_E <= GV_VERDICT && ROWS * NUM_ACTIONS <= GV_VERDICT);
const GV_TD0 = 64u;
const GV_VERDICT = WG_X - 32u;
// GV_FOLD 1 (with GV_MERGE): no dueling-combination ops; the acting and TD threads combine their own
// row of qv (the advantages' sum in action order, then (V + A[a]) - mean for each action they look
// at: combine_dueling's formula, the same values), and the verdict is left beside the target pass's
// heads. One op and its barrier fewer a step.
const_assert GV_FOLD == 0 || GV_MERGE != 0;

// GV_CUR 1: the side layer of op i (collect_tile.wgsl gv_side): the curiosity model's first layer
// (input rows 0, hidden rows 1 of gv_cx) beside the next-state pass's first op, its second
// (hidden to the prediction, rows 0) beside the second (GV_PP: the third, so that the first's sums
// are added up in the second op, collect_tile.wgsl gv_red); none elsewhere or without curiosity.
fn gv_side_at(i: u32) -> GvSide {
  if (GV_CUR == 1 && u.curiosity != 0u) {
    if (i == TARGET_AT) {
      return GvSide(block(NET_C_FC1_W, NET_C_FC1_B, 64u, 0u, CURIOSITY_IN), ACT_LEAKY, 0u, TILE_E);
    }
    if (i == TARGET_AT + 1u + GV_PP) {
      return GvSide(block(NET_C_FC2_W, NET_C_FC2_B, CURIOSITY_OUT, 0u, 64u), ACT_NONE, TILE_E, 0u);
    }
  }
  return GvSide(NO_BLOCK, ACT_NONE, 0u, 0u);
}

// The side layer whose sums op i adds up (collect_tile.wgsl gv_side_reduce): its own, or with GV_PP
// the op before's (the dual pass's layers with pp 1 or 2 have no barrier between their sums and
// their end).
fn gv_red_at(i: u32) -> GvSide {
  if (GV_PP == 1) {
    if (i == TARGET_AT + 1u || i == TARGET_AT + 3u) {
      return gv_side_at(i - 1u);
    }
    return GvSide(NO_BLOCK, ACT_NONE, 0u, 0u);
  }
  return gv_side_at(i);
}

// GV_PP 1: the buffers of the next-state pass's layer i (collect_tile.wgsl dense_gv's pp): the first
// three alternate between the two buffers, the heads read the second; 0 without GV_PP.
fn gv_pp_at(i: u32) -> u32 {
  if (GV_PP == 0) {
    return 0u;
  }
  switch (i - TARGET_AT) {
    case 0u, 2u: { return GV_PP_IN0_DIRECT; }
    case 1u: { return GV_PP_IN1_DIRECT; }
    default: { return GV_PP_IN1_Q; }
  }
}

// GV_STRAIGHT 1: dense op i (a constant at each call) with its own dual offset and side layer.
fn gv_dense_at(i: u32, lid: u32) {
  let o = op_at(i);
  gv_delta = select(0u, NET_T_BASE - NET_Q_BASE, GV_DUAL == 1);
  gv_side = gv_side_at(i);
  gv_red = gv_red_at(i);
  dense_gv(o.b0, o.b1, o.act, o.to_q, o.out_col, lid, gv_pp_at(i));
}

// GV_FLAT 1: op i >= ACT_AT of the step's program, known from the index (GV_CUR: no curiosity ops;
// the dense ops go straight, gv_dense_at, so their blocks are not needed).
fn gv_flat_op(i: u32) -> Op {
  if (i == ACT_AT) {
    return phase(OP_ACT, 0u);
  }
  if (i == ENV_AT) {
    return phase(OP_ENV, 0u);
  }
  if (i < TARGET_AT) {
    return phase(OP_FILL, 1u);
  }
  if (i < TARGET_AT + 4u) {
    return Op(OP_DENSE, NO_BLOCK, NO_BLOCK, 0u, 0u, ACT_NONE, false, 0u, 0u);
  }
  if (i == TARGET_AT + 4u) {
    return phase(OP_COMBINE, 0u);
  }
  return phase(OP_TD, 0u);
}

// Engine 5's fill of s' (GV_DUAL or GV_CUR): the next states (bar tile_bar[r], portfolio
// tile_pf[r], which the env op wrote before the op's barrier) to out_f and act's rows [0, TILE_E),
// with GV_DUAL 1 also rows [TILE_E, 2 TILE_E) (the dual pass's target rows), and with GV_CUR 1 the
// curiosity model's input (the first 32 features of bar tile_cbar[r], one-hot(tile_cat[r]),
// zeros to 40) into gv_cx's rows [0, TILE_E).
fn gv_fill_next(e0: u32, l: u32, lid: u32) {
  for (var idx = lid; idx < TILE_E * (STATE_PAD / 4u); idx += WG_X) {
    let r = idx / (STATE_PAD / 4u);
    let k4 = idx % (STATE_PAD / 4u);
    let e = e0 + r;
    let v = state_quad(r, k4);
    if (e < u.n) {
      write_state_quad(OUT_F_NEXT_STATES, e, l, k4, v);
      // GV_DUAL 1: s' is also the next step's state unless the episode restarted: written now,
      // that step skips its fill of s (unless an episode of the tile restarted).
      if (GV_DUAL == 1 && gv_restart[r] == 0u && l + 1u < u.steps) {
        write_state_quad(OUT_F_STATES, e, l + 1u, k4, v);
      }
    }
    act_v[r * ACT_W4 + k4] = v;
    if (GV_DUAL == 1) {
      act_v[(r + TILE_E) * ACT_W4 + k4] = v;
    }
    // GV_CUR 1: s' begins with the bonus's target (the first 32 features of the bar after
    // tile_cbar, which is tile_bar): kept in workgroup memory for the TD op.
    if (GV_CUR == 1 && k4 < CURIOSITY_OUT / 4u) {
      gv_cx[GV_TGT + r * 8u + k4] = v;
    }
  }
  if (GV_CUR == 1 && u.curiosity != 0u) {
    // The workgroup's last threads (the states take the first).
    let t = WG_X - 1u - lid;
    if (t < TILE_E * 10u) {
      let r = t / 10u;
      gv_cx[r * 16u + t % 10u] = curiosity_quad(tile_cbar[r], tile_cat[r], t % 10u);
    }
  }
}

// GV_CUR 1: episode lid's curiosity bonus from the model's prediction (gv_cx row lid, after its two
// side layers) against the first 32 features of the bar after tile_cbar (curiosity_mse's sum), which
// the fill of s' left at GV_TGT.
fn gv_bonus(lid: u32) -> f32 {
  if (u.curiosity == 0u) {
    return 0.0;
  }
  var acc = 0.0;
  for (var k = 0u; k < CURIOSITY_OUT; k++) {
    let d = gv_cx[lid * 16u + k / 4u][k % 4u] - gv_cx[GV_TGT + lid * 8u + k / 4u][k % 4u];
    acc = acc + d * d;
  }
  return min(u.curiosityScale * (acc * (1.0 / 32.0)), u.curiosityMax);
}

// GV_FOLD: the mean of qv row r's advantages (combine_dueling's sum, in action order).
fn fold_mean(r: u32) -> f32 {
  let o = r * QW;
  var sum = 0.0;
  for (var k = 0u; k < NUM_ACTIONS; k++) {
    sum = sum + qv[o + k];
  }
  return sum / 45.0;
}

// GV_FOLD: Q[a] of qv row r, whose advantages' mean is m.
fn fold_q(r: u32, a: u32, m: f32) -> f32 {
  return (qv[r * QW + NUM_ACTIONS] + qv[r * QW + a]) - m;
}

// GV_FOLD: argmax_q of qv row r (ties to the lower action).
fn fold_argmax(r: u32, m: f32) -> u32 {
  var best = 0u;
  var best_q = fold_q(r, 0u, m);
  for (var a = 1u; a < NUM_ACTIONS; a++) {
    let q = fold_q(r, a, m);
    if (q > best_q) {
      best = a;
      best_q = q;
    }
  }
  return best;
}

// GV_MERGE: the action op of step l: thread 32 + r draws step l + 1's action words (GV_RNG),
// thread r (the acting thread) picks the action and steps the simulator.
fn gv_act(e0: u32, l: u32, lid: u32) {
  let g = u.stepBase + l;
  let key = vec2<u32>(u.key0, u.key1);
  let pb = (l & 1u) * TILE_E;
  if (lid >= 32u && lid < 32u + TILE_E && l + 1u < u.steps) {
    let r = lid - 32u;
    gv_rng[((l + 1u) & 1u) * TILE_E + r] = philox4x32(vec4<u32>(STREAM_ACTION, e0 + r, g + 1u, 0u), key).xy;
  }
  if (lid < TILE_E && e0 + lid < u.n) {
    let e = e0 + lid;
    var ep = gv_ep[lid];
    if (GV_ENV == 1) {
      gv_env_prefetch(e, ep);
    }
    let w = gv_rng[pb + lid];
    var a = 0;
    var q_sa = 0.0;
    if (GV_FOLD == 1) {
      let m = fold_mean(lid);
      if (u32_to_unit_float(w.x) < u.epsilon) {
        a = i32(w.y % NUM_ACTIONS);
      } else {
        a = i32(fold_argmax(lid, m));
      }
      q_sa = fold_q(lid, u32(a), m);
    } else {
      if (u32_to_unit_float(w.x) < u.epsilon) {
        a = i32(w.y % NUM_ACTIONS);
      } else {
        a = i32(argmax_q(lid));
      }
      q_sa = final_q(lid, u32(a));
    }
    tile_cat[lid] = action_category(a);
    tile_bonus[lid] = 0.0;
    let out = env_op(e, l, lid, a, &ep);
    gv_ep[lid] = ep;
    gv_out[pb + lid] = out;
    gv_a[pb + lid] = a;
    gv_qsa[pb + lid] = q_sa;
  }
}

// GV_MERGE: beside the target pass's dueling combination (GV_FOLD: its heads), whether an episode of
// the tile restarted at this step (the restart flags of its action op), for the TD op and the next
// step's start.
fn gv_verdict(lid: u32) {
  if (lid == GV_VERDICT) {
    var any = 0u;
    for (var r = 0u; r < TILE_E; r++) {
      any = any | gv_restart[r];
    }
    gv_need = any;
  }
}

// GV_MERGE: the TD op of step l on thread GV_TD0 + r: the bonus into the reward, the step
// written, the TD error.
fn gv_td(e0: u32, l: u32, lid: u32) {
  if (lid < GV_TD0 || lid >= GV_TD0 + TILE_E || e0 + lid - GV_TD0 >= u.n) {
    return;
  }
  let r = lid - GV_TD0;
  let e = e0 + r;
  let pl = (l & 1u) * TILE_E + r;
  var out = gv_out[pl];
  let a = gv_a[pl];
  let bonus = gv_bonus(r);
  out.total = out.total + bonus;
  write_step(e, l, a, out, bonus);
  var td_target = out.total;
  if (out.done == 0) {
    var q_next = 0.0;
    if (GV_FOLD == 1) {
      let m = fold_mean(r + TD_ROW0);
      q_next = fold_q(r + TD_ROW0, fold_argmax(r + TD_ROW0, m), m);
    } else {
      q_next = final_q(r + TD_ROW0, argmax_q(r + TD_ROW0));
    }
    td_target = out.total + u.gamma * q_next;
  }
  out_f[OUT_F_TD_ERRORS * u.n * u.steps + e * u.steps + l] = abs(td_target - gv_qsa[pl]);
}
