// collect_ppo: L steps of N episodes in one launch, the WGSL twin of src/collect/ppo.ts. Per
// step: build the state, actor logits and critic value, sample the action from the softmax by a
// CDF scan with u from Philox(Action, e, stepBase + l, 0), step the simulator, write the
// experience, restart an ended episode; where the step truncates (or is the last and the
// episode goes on) the critic's value of the pre-restart next state is kept as the bootstrap.
// After the last step each episode's GAE runs backwards over its L steps in the kernel.
// Bindings, uniforms and the output layout: src/kernels/collect_layout.ts and collect_ppo.ts.
// The bootstrap values wait in the advantages section until the GAE scan, which reads each
// one just before it writes the advantage of the same step.
//
// Workgroup: WG_X invocations. SEED_VARIANT 0: the workgroup owns TILE_E episodes; invocation
// lid < TILE_E steps episode group * TILE_E + lid; actor, critic and curiosity layers run on the
// whole tile through the tile engine (collect_tile.wgsl, ACT_W = 512 for the critic). The
// bootstrap critic pass runs only at steps where some episode of the tile needs it.
// SEED_VARIANT 1 (benchmark only): one invocation per episode, private arrays (the seed design).
// Launch: ceil(N / TILE_E) workgroups (seed: ceil(N / WG_X)) over x and y (grid1d), flat id = group.
// Tile engine (constant ENGINE): 0 or 2 (f32).
//
// Numerics: f32; layer sums in the reference order (the compiler may fuse multiply-adds); exp
// and log within WGSL's stated accuracy, so log-probabilities and values agree with the
// reference to a tolerance and actions exactly except where u * sum lies within that tolerance
// of a CDF boundary. The GAE scan repeats the reference's f32 operations in its order.
//!include collect_env.wgsl
//!include collect_tile.wgsl
//!include collect_phases.wgsl

const SEED_W = 512;

var<workgroup> tile_boot: array<i32, TILE_E>;
var<workgroup> boot_any: i32;

// ---- the tiled kernel: a per-step program of ops (see collect_dqn.wgsl) ----

const OP_FILL = 1u;
const OP_SAMPLE = 2u;
const OP_CUR_FILL = 3u;
const OP_CUR_MSE = 4u;
const OP_ENV = 5u;
const OP_BOOT_CHECK = 6u;
const OP_BOOT_STORE = 7u;
// FILL arguments: the state from the episode (and into the states section), the same state
// again, the next state the env op left.
const FILL_STATE = 0u;
const FILL_AGAIN = 1u;
const FILL_NEXT = 2u;

const ACTOR_LEN = 3u;
const CRITIC_LEN = 6u;
// Program: fill s, actor, fill s, critic, sample, curiosity (4 ops), env, boot check, then only
// when some episode of the tile needs a bootstrap value: fill s', critic, store.
const CRITIC_AT = 2u + ACTOR_LEN;
const SAMPLE_AT = CRITIC_AT + CRITIC_LEN;
const CUR_AT = SAMPLE_AT + 1u;
const ENV_AT = CUR_AT + 4u;
const BOOT_AT = ENV_AT + 2u;
const PROGRAM_LEN = BOOT_AT + 2u + CRITIC_LEN;

// Layer j of the actor (logits into qv columns [0, 45)) or of the critic (value into qv 45).
fn actor_op(j: u32) -> Op {
  switch (j) {
    case 0u: { return layer(NET_A_POLICY_LAYER_0_W, NET_A_POLICY_LAYER_0_B, STATE_DIM, 128u, ACT_RELU, false, 0u); }
    case 1u: { return layer(NET_A_POLICY_LAYER_1_W, NET_A_POLICY_LAYER_1_B, 128u, 64u, ACT_RELU, false, 0u); }
    default: { return layer(NET_A_POLICY_OUTPUT_W, NET_A_POLICY_OUTPUT_B, 64u, NUM_ACTIONS, ACT_NONE, true, 0u); }
  }
}

fn critic_op(j: u32) -> Op {
  switch (j) {
    case 0u: { return layer(NET_V_VALUE_LAYER_0_W, NET_V_VALUE_LAYER_0_B, STATE_DIM, 512u, ACT_RELU, false, 0u); }
    case 1u: { return layer(NET_V_VALUE_LAYER_1_W, NET_V_VALUE_LAYER_1_B, 512u, 384u, ACT_RELU, false, 0u); }
    case 2u: { return layer(NET_V_VALUE_LAYER_2_W, NET_V_VALUE_LAYER_2_B, 384u, 256u, ACT_RELU, false, 0u); }
    case 3u: { return layer(NET_V_VALUE_LAYER_3_W, NET_V_VALUE_LAYER_3_B, 256u, 128u, ACT_RELU, false, 0u); }
    case 4u: { return layer(NET_V_VALUE_LAYER_4_W, NET_V_VALUE_LAYER_4_B, 128u, 64u, ACT_RELU, false, 0u); }
    default: { return layer(NET_V_VALUE_OUTPUT_W, NET_V_VALUE_OUTPUT_B, 64u, 1u, ACT_NONE, true, NUM_ACTIONS); }
  }
}

fn op_at(i: u32) -> Op {
  if (i == 0u) {
    return phase(OP_FILL, FILL_STATE);
  }
  if (i < CRITIC_AT - 1u) {
    return actor_op(i - 1u);
  }
  if (i == CRITIC_AT - 1u) {
    return phase(OP_FILL, FILL_AGAIN);
  }
  if (i < SAMPLE_AT) {
    return critic_op(i - CRITIC_AT);
  }
  if (i == SAMPLE_AT) {
    return phase(OP_SAMPLE, 0u);
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
  if (i == ENV_AT + 1u) {
    return phase(OP_BOOT_CHECK, 0u);
  }
  if (i == BOOT_AT) {
    return phase(OP_FILL, FILL_NEXT);
  }
  if (i < BOOT_AT + 1u + CRITIC_LEN) {
    return critic_op(i - BOOT_AT - 1u);
  }
  return phase(OP_BOOT_STORE, 0u);
}

struct Sample {
  action: i32,
  log_prob: f32,
}

// collect/ppo.ts sampleSoftmax: max-shifted exponentials, f32 sum in order, threshold u * sum,
// first action whose running sum exceeds it (the last when none does).
fn sample_softmax(logits: ptr<function, array<f32, 45>>, uf: f32) -> Sample {
  var m = (*logits)[0];
  for (var k = 1u; k < NUM_ACTIONS; k++) {
    m = select(m, (*logits)[k], (*logits)[k] > m);
  }
  var ex: array<f32, 45>;
  var sum = 0.0;
  for (var k = 0u; k < NUM_ACTIONS; k++) {
    ex[k] = exp((*logits)[k] - m);
    sum = sum + ex[k];
  }
  let threshold = uf * sum;
  var a = i32(NUM_ACTIONS) - 1;
  var cdf = 0.0;
  for (var k = 0; k < i32(NUM_ACTIONS) - 1; k++) {
    cdf = cdf + ex[k];
    if (threshold < cdf) {
      a = k;
      break;
    }
  }
  return Sample(a, ((*logits)[a] - m) - log(sum));
}

// collect/gae.ts gaeEpisode over episode e's L steps; boot values wait in the advantages section.
fn gae_episode(e: u32) {
  let nl = u.n * u.steps;
  let g = u.gamma;
  let gl = g * u.lambda;
  var carry_adv = 0.0;
  for (var l = i32(u.steps) - 1; l >= 0; l--) {
    let i = e * u.steps + u32(l);
    let v = out_f[OUT_F_VALUES * nl + i];
    var next = 0.0;
    var carry = 0.0;
    if (out_i[OUT_I_DONES * nl + i] == 0) {
      if (out_i[OUT_I_TRUNCATEDS * nl + i] != 0 || u32(l) == u.steps - 1u) {
        next = out_f[OUT_F_ADVANTAGES * nl + i];
      } else {
        next = out_f[OUT_F_VALUES * nl + i + 1u];
        carry = carry_adv;
      }
    }
    let delta = (out_f[OUT_F_REWARDS * nl + i] + g * next) - v;
    let adv = delta + gl * carry;
    out_f[OUT_F_ADVANTAGES * nl + i] = adv;
    out_f[OUT_F_RETURNS * nl + i] = adv + v;
    carry_adv = adv;
  }
}

fn write_ppo_step(i: u32, a: i32, log_prob: f32, value: f32, out: StepOut, bonus: f32) {
  let nl = u.n * u.steps;
  out_i[OUT_I_ACTIONS * nl + i] = a;
  out_i[OUT_I_DONES * nl + i] = out.done;
  out_i[OUT_I_TRUNCATEDS * nl + i] = out.truncated;
  out_f[OUT_F_LOG_PROBS * nl + i] = log_prob;
  out_f[OUT_F_VALUES * nl + i] = value;
  out_f[OUT_F_REWARDS * nl + i] = out.total;
  write_components(i, out, bonus);
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
    let i_out = e * u.steps + l;
    var s: Sample;
    var value = 0.0;
    var boot = false;
    for (var i = 0u; i < PROGRAM_LEN; i++) {
      if ((u.curiosity == 0u && i >= CUR_AT && i < ENV_AT) || (i >= BOOT_AT && !boot)) {
        continue;
      }
      let o = op_at(i);
      switch (o.kind) {
        case OP_DENSE: {
          dense(o.b0, o.b1, o.k_start, o.n_k, o.act, o.to_q, o.out_col, lid);
        }
        case OP_FILL: {
          if (o.arg == FILL_STATE && lid < TILE_E) {
            tile_bar[lid] = select(u.splitStart, ep.bar, mine);
            tile_pf[lid] = select(vec4<f32>(0.0), vec4<f32>(portfolio_features(ep), 0.0), mine);
          }
          workgroupBarrier();
          fill_states(e0, l, OUT_F_STATES, o.arg == FILL_STATE, lid);
        }
        case OP_SAMPLE: {
          if (mine) {
            var logits: array<f32, 45>;
            for (var k = 0u; k < NUM_ACTIONS; k++) {
              logits[k] = qv[lid * QW + k];
            }
            value = qv[lid * QW + NUM_ACTIONS];
            let w = philox4x32(vec4<u32>(STREAM_ACTION, e, g, 0u), key);
            s = sample_softmax(&logits, u32_to_unit_float(w.x));
            tile_cat[lid] = action_category(s.action);
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
          if (lid < TILE_E) {
            tile_boot[lid] = 0;
          }
          if (mine) {
            let bonus = tile_bonus[lid];
            let out = env_step(e, &ep, s.action, bonus);
            tile_bar[lid] = ep.bar;
            tile_pf[lid] = vec4<f32>(portfolio_features(ep), 0.0);
            write_ppo_step(i_out, s.action, s.log_prob, value, out, bonus);
            tile_boot[lid] = select(0, 1, out.done == 0 && (out.truncated != 0 || l == u.steps - 1u));
            finish_step(e, &ep, out);
          }
        }
        case OP_BOOT_CHECK: {
          if (lid == 0u) {
            var any = 0;
            for (var r = 0u; r < TILE_E; r++) {
              any = any | tile_boot[r];
            }
            boot_any = any;
          }
          boot = workgroupUniformLoad(&boot_any) != 0;
        }
        default: {
          if (mine && tile_boot[lid] != 0) {
            out_f[OUT_F_ADVANTAGES * nl + i_out] = qv[lid * QW + NUM_ACTIONS];
          }
        }
      }
      workgroupBarrier();
    }
  }
  if (mine) {
    gae_episode(e);
    store_episode(e, ep);
  }
}

// ---- seed variant: one invocation per episode ----

// Actor logits (into logits) and critic value of the state in x[0, 54); h and y are scratch.
fn seed_actor(x: ptr<function, array<f32, SEED_W>>, h: ptr<function, array<f32, SEED_W>>,
              y: ptr<function, array<f32, SEED_W>>, logits: ptr<function, array<f32, 45>>) {
  seed_dense(NET_A_POLICY_LAYER_0_W, NET_A_POLICY_LAYER_0_B, STATE_DIM, 128u, ACT_RELU, x, 0u, h, 0u);
  seed_dense(NET_A_POLICY_LAYER_1_W, NET_A_POLICY_LAYER_1_B, 128u, 64u, ACT_RELU, h, 0u, y, 0u);
  seed_dense(NET_A_POLICY_OUTPUT_W, NET_A_POLICY_OUTPUT_B, 64u, NUM_ACTIONS, ACT_NONE, y, 0u, h, 0u);
  for (var k = 0u; k < NUM_ACTIONS; k++) {
    (*logits)[k] = (*h)[k];
  }
}

fn seed_critic(x: ptr<function, array<f32, SEED_W>>, h: ptr<function, array<f32, SEED_W>>,
               y: ptr<function, array<f32, SEED_W>>) -> f32 {
  seed_dense(NET_V_VALUE_LAYER_0_W, NET_V_VALUE_LAYER_0_B, STATE_DIM, 512u, ACT_RELU, x, 0u, h, 0u);
  seed_dense(NET_V_VALUE_LAYER_1_W, NET_V_VALUE_LAYER_1_B, 512u, 384u, ACT_RELU, h, 0u, y, 0u);
  seed_dense(NET_V_VALUE_LAYER_2_W, NET_V_VALUE_LAYER_2_B, 384u, 256u, ACT_RELU, y, 0u, h, 0u);
  seed_dense(NET_V_VALUE_LAYER_3_W, NET_V_VALUE_LAYER_3_B, 256u, 128u, ACT_RELU, h, 0u, y, 0u);
  seed_dense(NET_V_VALUE_LAYER_4_W, NET_V_VALUE_LAYER_4_B, 128u, 64u, ACT_RELU, y, 0u, h, 0u);
  seed_dense(NET_V_VALUE_OUTPUT_W, NET_V_VALUE_OUTPUT_B, 64u, 1u, ACT_NONE, h, 0u, y, 0u);
  return (*y)[0];
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
  var logits: array<f32, 45>;
  for (var l = 0u; l < u.steps; l++) {
    let g = u.stepBase + l;
    let i = e * u.steps + l;
    seed_state(ep, &x);
    for (var k = 0u; k < STATE_DIM; k++) {
      out_f[OUT_F_STATES * nl + i * STATE_DIM + k] = x[k];
    }
    seed_actor(&x, &h, &y, &logits);
    let value = seed_critic(&x, &h, &y);
    let w = philox4x32(vec4<u32>(STREAM_ACTION, e, g, 0u), key);
    let s = sample_softmax(&logits, u32_to_unit_float(w.x));
    var bonus = 0.0;
    if (u.curiosity != 0u) {
      bonus = seed_curiosity(ep.bar, action_category(s.action), &x, &h);
    }
    let out = env_step(e, &ep, s.action, bonus);
    write_ppo_step(i, s.action, s.log_prob, value, out, bonus);
    if (out.done == 0 && (out.truncated != 0 || l == u.steps - 1u)) {
      seed_state(ep, &x);
      out_f[OUT_F_ADVANTAGES * nl + i] = seed_critic(&x, &h, &y);
    }
    finish_step(e, &ep, out);
  }
  gae_episode(e);
  store_episode(e, ep);
}

@compute @workgroup_size(WG_X, 1, 1)
fn collect_ppo(
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
