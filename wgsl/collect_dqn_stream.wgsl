// Engine 5 of collect_dqn (the weight-streaming engine: f16 weights, f32 math; the WebGPU f16
// precision up to N = 2,048): its workgroup arrays and the step's ops it runs differently from the
// other engines (dual pass, curiosity beside it, flat and merged steps, folded dueling combination).
// A snippet, not a kernel: collect_dqn.wgsl includes it inside its `//!if ENGINE == 5` block, after
// collect_tile_stream.wgsl (dense_stream and its side layers), whose names it uses. The switches
// (constants) are set by src/kernels/collect_engine.ts and collect_dqn.ts; docs/COLLECT.md lists them.

// DUAL_PASS 1: whether each episode of the tile restarted at the last step (its next state is not
// the s' the dual pass saw), and the tile's verdict for this step's online pass.
var<workgroup> stream_restart: array<u32, TILE_E>;
var<workgroup> stream_need: u32;
// The step program, decoded once per launch (op_at of every index); an op is then one
// workgroupUniformLoad, whose barrier also closes the op before it, instead of all the
// workgroup's warps decoding it again (op_at's branches and block offsets, every op of every step).
var<workgroup> stream_prog: array<Op, PROGRAM_LEN>;
// CURIOSITY_SIDE 1: the curiosity model's two layers are side layers (collect_tile.wgsl stream_side) of the
// next-state pass's first two, so the step's program has no curiosity ops: the env op steps with
// the bonus left out (it enters the reward last, total = partial + bonus, so adding it later gives
// the same bits), the fill of s' also fills the model's input (bar tile_cbar[r], the bar before the
// step, and the action's category), and the TD op adds the bonus and writes the step.
const CUR_OPS = select(4u, 0u, CURIOSITY_SIDE == 1);
var<workgroup> tile_cbar: array<i32, TILE_E>;
// FLAT_STEP 1 (with CURIOSITY_SIDE): the ops from the action on (action and env, fill of s', the next-state
// pass's 4 layers, the dueling combination, TD) are known from their index, so they run without
// the table's loads: each closed by one plain barrier (the action op by the step's verdict load, or
// the online pass's last op by one), and the combination writes Q to stream_q instead of over the
// advantages, which needs no barrier of its own.
const_assert FLAT_STEP == 0 || (CURIOSITY_SIDE == 1 && HEAD == HEAD_PLAIN);
var<workgroup> stream_q: array<f32, select(1u, ROWS * 48u, FLAT_STEP == 1)>;
// The action draw's two words (Philox(Action, e, g, 0).xy) of this step and the next,
// by step parity: the next step's are drawn in the action op by a thread of the second subgroup
// (lid 32 + r), off the chain of the thread that picks the action.
var<workgroup> stream_draws: array<vec2<u32>, 2u * TILE_E>;
const_assert WG_X >= 32u + TILE_E;
// An acting thread's episode, its step's outcome, action and Q(s, a) live in workgroup
// memory between the ops that use them (loaded at an op's start, stored at its end), so they hold
// no registers across the layer ops.
var<workgroup> stream_episode: array<Episode, TILE_E>;
// TD_WITH_NEXT_ACTION: the outcome, action and Q(s, a) by step parity (the TD op of step l reads l's while
// the action op of step l + 1 beside it writes l + 1's).
const STEP_LEN = select(TILE_E, 2u * TILE_E, TD_WITH_NEXT_ACTION != 0);
var<workgroup> stream_outcome: array<StepOut, STEP_LEN>;
var<workgroup> stream_action: array<i32, STEP_LEN>;
var<workgroup> stream_q_sa: array<f32, STEP_LEN>;
// TD_WITH_NEXT_ACTION 1 (with FLAT_STEP): the TD op of step l also runs the action op of step l + 1 when no
// episode of the tile restarted at step l (the online Q-values of s' are then the next step's):
// one op fewer a step, and the TD op's work off the chain. Beside the target pass's dueling
// combination thread VERDICT_THREAD leaves the verdict (whether an episode restarted) in stream_need; the
// TD op's barrier is its workgroupUniformLoad, and so is the next step's start (no verdict carried
// from one step to the next in a variable: a build that did so ran at 5.38M against 5.95M, and one
// that decided the merge from a plain load at 5.97M). The TD op runs on thread TD_THREAD0 + r (the
// action on r, the next draw on 32 + r), with the bonus computed there. It also takes no
// barrier of its own before the fill of s' when the action op was skipped (the verdict's load at the
// step's start is one).
const_assert TD_WITH_NEXT_ACTION == 0 || (ENV_AT + 2u == TARGET_AT && FLAT_STEP == 1 && DUAL_PASS == 1);
const_assert TD_WITH_NEXT_ACTION == 0 || (TILE_E <= 32u && TD_THREAD0 + TILE_E <= VERDICT_THREAD && ROWS * NUM_ACTIONS <= VERDICT_THREAD);
const TD_THREAD0 = 64u;
const VERDICT_THREAD = WG_X - 32u;
// FOLDED_COMBINE 1 (with TD_WITH_NEXT_ACTION): no dueling-combination ops; the acting and TD threads combine their own
// row of qv (the advantages' sum in action order, then (V + A[a]) - mean for each action they look
// at: combine_dueling's formula, the same values), and the verdict is left beside the target pass's
// heads. One op and its barrier fewer a step.
const_assert FOLDED_COMBINE == 0 || TD_WITH_NEXT_ACTION != 0;

// CURIOSITY_SIDE 1: the side layer of op i (collect_tile.wgsl stream_side): the curiosity model's first layer
// (input rows 0, hidden rows 1 of stream_curiosity_rows) beside the next-state pass's first op, its second
// (hidden to the prediction, rows 0) beside the second (PING_PONG: the third, so that the first's sums
// are added up in the second op, collect_tile.wgsl stream_reduce); none elsewhere or without curiosity.
fn stream_side_at(i: u32) -> StreamSide {
  if (CURIOSITY_SIDE == 1 && u.curiosity != 0u) {
    if (i == TARGET_AT) {
      return StreamSide(block(NET_C_FC1_W, NET_C_FC1_B, 64u, 0u, CURIOSITY_IN), ACT_LEAKY, 0u, TILE_E);
    }
    if (i == TARGET_AT + 1u + PING_PONG) {
      return StreamSide(block(NET_C_FC2_W, NET_C_FC2_B, CURIOSITY_OUT, 0u, 64u), ACT_NONE, TILE_E, 0u);
    }
  }
  return StreamSide(NO_BLOCK, ACT_NONE, 0u, 0u);
}

// The side layer whose sums op i adds up (collect_tile.wgsl stream_side_reduce): its own, or with PING_PONG
// the op before's (the dual pass's layers with pp 1 or 2 have no barrier between their sums and
// their end).
fn stream_reduce_at(i: u32) -> StreamSide {
  if (PING_PONG == 1) {
    if (i == TARGET_AT + 1u || i == TARGET_AT + 3u) {
      return stream_side_at(i - 1u);
    }
    return StreamSide(NO_BLOCK, ACT_NONE, 0u, 0u);
  }
  return stream_side_at(i);
}

// PING_PONG 1: the buffers of the next-state pass's layer i (collect_tile.wgsl dense_stream's pp): the first
// three alternate between the two buffers, the heads read the second; 0 without PING_PONG.
fn stream_pp_at(i: u32) -> u32 {
  if (PING_PONG == 0) {
    return 0u;
  }
  switch (i - TARGET_AT) {
    case 0u, 2u: { return PING_PONG_IN0_DIRECT; }
    case 1u: { return PING_PONG_IN1_DIRECT; }
    default: { return PING_PONG_IN1_Q; }
  }
}

// Dense op i (a constant at each call) with its own dual offset and side layer.
fn stream_dense_at(i: u32, lid: u32) {
  let o = op_at(i);
  stream_delta = select(0u, NET_T_BASE - NET_Q_BASE, DUAL_PASS == 1);
  stream_side = stream_side_at(i);
  stream_reduce = stream_reduce_at(i);
  dense_stream(o.b0, o.b1, o.act, o.to_q, o.out_col, lid, stream_pp_at(i));
}

// FLAT_STEP 1: op i >= ACT_AT of the step's program, known from the index (CURIOSITY_SIDE: no curiosity ops;
// the dense ops go straight, stream_dense_at, so their blocks are not needed).
fn stream_flat_op(i: u32) -> Op {
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

// Engine 5's fill of s' (DUAL_PASS or CURIOSITY_SIDE): the next states (bar tile_bar[r], portfolio
// tile_pf[r], which the env op wrote before the op's barrier) to out_f and act's rows [0, TILE_E),
// with DUAL_PASS 1 also rows [TILE_E, 2 TILE_E) (the dual pass's target rows), and with CURIOSITY_SIDE 1 the
// curiosity model's input (the first 32 features of bar tile_cbar[r], one-hot(tile_cat[r]),
// zeros to 40) into stream_curiosity_rows's rows [0, TILE_E).
fn stream_fill_next(e0: u32, l: u32, lid: u32) {
  for (var idx = lid; idx < TILE_E * (STATE_PAD / 4u); idx += WG_X) {
    let r = idx / (STATE_PAD / 4u);
    let k4 = idx % (STATE_PAD / 4u);
    let e = e0 + r;
    let v = state_quad(r, k4);
    if (e < u.n) {
      write_state_quad(OUT_F_NEXT_STATES, e, l, k4, v);
      // DUAL_PASS 1: s' is also the next step's state unless the episode restarted: written now,
      // that step skips its fill of s (unless an episode of the tile restarted).
      if (DUAL_PASS == 1 && stream_restart[r] == 0u && l + 1u < u.steps) {
        write_state_quad(OUT_F_STATES, e, l + 1u, k4, v);
      }
    }
    act_v[r * ACT_W4 + k4] = v;
    if (DUAL_PASS == 1) {
      act_v[(r + TILE_E) * ACT_W4 + k4] = v;
    }
    // CURIOSITY_SIDE 1: s' begins with the bonus's target (the first 32 features of the bar after
    // tile_cbar, which is tile_bar): kept in workgroup memory for the TD op.
    if (CURIOSITY_SIDE == 1 && k4 < CURIOSITY_OUT / 4u) {
      stream_curiosity_rows[BONUS_TARGET_ROW + r * 8u + k4] = v;
    }
  }
  if (CURIOSITY_SIDE == 1 && u.curiosity != 0u) {
    // The workgroup's last threads (the states take the first).
    let t = WG_X - 1u - lid;
    if (t < TILE_E * 10u) {
      let r = t / 10u;
      stream_curiosity_rows[r * 16u + t % 10u] = curiosity_quad(tile_cbar[r], tile_cat[r], t % 10u);
    }
  }
}

// CURIOSITY_SIDE 1: episode lid's curiosity bonus from the model's prediction (stream_curiosity_rows row lid, after its two
// side layers) against the first 32 features of the bar after tile_cbar (curiosity_mse's sum), which
// the fill of s' left at BONUS_TARGET_ROW.
fn stream_bonus(lid: u32) -> f32 {
  if (u.curiosity == 0u) {
    return 0.0;
  }
  var acc = 0.0;
  for (var k = 0u; k < CURIOSITY_OUT; k++) {
    let d = stream_curiosity_rows[lid * 16u + k / 4u][k % 4u] - stream_curiosity_rows[BONUS_TARGET_ROW + lid * 8u + k / 4u][k % 4u];
    acc = acc + d * d;
  }
  return min(u.curiosityScale * (acc * (1.0 / 32.0)), u.curiosityMax);
}

// FOLDED_COMBINE: the mean of qv row r's advantages (combine_dueling's sum, in action order).
fn fold_mean(r: u32) -> f32 {
  let o = r * QW;
  var sum = 0.0;
  for (var k = 0u; k < NUM_ACTIONS; k++) {
    sum = sum + qv[o + k];
  }
  return sum / 45.0;
}

// FOLDED_COMBINE: Q[a] of qv row r, whose advantages' mean is m.
fn fold_q(r: u32, a: u32, m: f32) -> f32 {
  return (qv[r * QW + NUM_ACTIONS] + qv[r * QW + a]) - m;
}

// FOLDED_COMBINE: argmax_q of qv row r (ties to the lower action).
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

// TD_WITH_NEXT_ACTION: the action op of step l: thread 32 + r draws step l + 1's action words,
// thread r (the acting thread) picks the action and steps the simulator.
fn stream_act(e0: u32, l: u32, lid: u32) {
  let g = u.stepBase + l;
  let key = vec2<u32>(u.key0, u.key1);
  let pb = (l & 1u) * TILE_E;
  if (lid >= 32u && lid < 32u + TILE_E && l + 1u < u.steps) {
    let r = lid - 32u;
    stream_draws[((l + 1u) & 1u) * TILE_E + r] = philox4x32(vec4<u32>(STREAM_ACTION, e0 + r, g + 1u, 0u), key).xy;
  }
  if (lid < TILE_E && e0 + lid < u.n) {
    let e = e0 + lid;
    var ep = stream_episode[lid];
    stream_env_prefetch(e, ep);
    let w = stream_draws[pb + lid];
    var a = 0;
    var q_sa = 0.0;
    if (FOLDED_COMBINE == 1) {
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
    stream_episode[lid] = ep;
    stream_outcome[pb + lid] = out;
    stream_action[pb + lid] = a;
    stream_q_sa[pb + lid] = q_sa;
  }
}

// TD_WITH_NEXT_ACTION: beside the target pass's dueling combination (FOLDED_COMBINE: its heads), whether an episode of
// the tile restarted at this step (the restart flags of its action op), for the TD op and the next
// step's start.
fn stream_verdict(lid: u32) {
  if (lid == VERDICT_THREAD) {
    var any = 0u;
    for (var r = 0u; r < TILE_E; r++) {
      any = any | stream_restart[r];
    }
    stream_need = any;
  }
}

// TD_WITH_NEXT_ACTION: the TD op of step l on thread TD_THREAD0 + r: the bonus into the reward, the step
// written, the TD error.
fn stream_td(e0: u32, l: u32, lid: u32) {
  if (lid < TD_THREAD0 || lid >= TD_THREAD0 + TILE_E || e0 + lid - TD_THREAD0 >= u.n) {
    return;
  }
  let r = lid - TD_THREAD0;
  let e = e0 + r;
  let pl = (l & 1u) * TILE_E + r;
  var out = stream_outcome[pl];
  let a = stream_action[pl];
  let bonus = stream_bonus(r);
  out.total = out.total + bonus;
  write_step(e, l, a, out, bonus);
  var td_target = out.total;
  if (out.done == 0) {
    var q_next = 0.0;
    if (FOLDED_COMBINE == 1) {
      let m = fold_mean(r + TD_ROW0);
      q_next = fold_q(r + TD_ROW0, fold_argmax(r + TD_ROW0, m), m);
    } else {
      q_next = final_q(r + TD_ROW0, argmax_q(r + TD_ROW0));
    }
    td_target = out.total + u.gamma * q_next;
  }
  out_f[OUT_F_TD_ERRORS * u.n * u.steps + e * u.steps + l] = abs(td_target - stream_q_sa[pl]);
}
