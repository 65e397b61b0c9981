// The per-step phases collect_dqn and collect_ppo share, as a snippet (`//!include
// collect_phases.wgsl`, after collect_env.wgsl and collect_tile.wgsl): the tile's per-episode
// exchange arrays, building states into the tile, the curiosity bonus on the tile, and the seed
// variant's one-invocation versions (private arrays of SEED_W floats, defined by the kernel).
// Curiosity (env/curiosity.ts): input the first 32 features of bar t ++ one-hot(category),
// target the first 32 features of bar t + 1, mse summed in index order, bonus
// min(scale * mse, max).

const STATE_PAD = (STATE_DIM + KT - 1) / KT * KT;
const CURIOSITY_IN = CURIOSITY_OUT + 3;
const CURIOSITY_PAD = (CURIOSITY_IN + KT - 1) / KT * KT;

// Bar whose features build the tile row's state, its portfolio features, the action's category
// and the curiosity bonus: written by the episode's invocation, read by the whole workgroup.
var<workgroup> tile_bar: array<i32, TILE_E>;
var<workgroup> tile_pf: array<vec4<f32>, TILE_E>;
var<workgroup> tile_cat: array<i32, TILE_E>;
var<workgroup> tile_bonus: array<f32, TILE_E>;

// Columns 4 k4 .. 4 k4 + 3 of tile row r's state: the features of bar tile_bar[r], its portfolio
// features tile_pf[r], zeros past STATE_DIM.
fn state_quad(r: u32, k4: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let k = k4 * 4u + c;
    if (k < MARKET_FEATURES) {
      v[c] = features[u32(tile_bar[r]) * MARKET_FEATURES + k];
    } else if (k < STATE_DIM) {
      v[c] = tile_pf[r][k - MARKET_FEATURES];
    }
  }
  return v;
}

// The state columns (< STATE_DIM) of quad k4 to out_f section `section`, step l of episode e.
fn write_state_quad(section: u32, e: u32, l: u32, k4: u32, v: vec4<f32>) {
  let o = section * u.n * u.steps + (e * u.steps + l) * STATE_DIM;
  for (var c = 0u; c < 4u; c++) {
    let k = k4 * 4u + c;
    if (k < STATE_DIM) {
      out_f[o + k] = v[c];
    }
  }
}

// Rows [0, TILE_E) of act <- the tile's states (bar tile_bar[r], portfolio tile_pf[r]); the
// padding columns up to STATE_PAD are zero. With write_out, also to out_f section `section`.
fn fill_states(e0: u32, l: u32, section: u32, write_out: bool, lid: u32) {
  for (var idx = lid; idx < TILE_E * (STATE_PAD / 4u); idx += WG_X) {
    let r = idx / (STATE_PAD / 4u);
    let k4 = idx % (STATE_PAD / 4u);
    let v = state_quad(r, k4);
    if (write_out && e0 + r < u.n) {
      write_state_quad(section, e0 + r, l, k4, v);
    }
    act_set4(r, k4, v);
  }
}

// Columns 4 k4 .. 4 k4 + 3 of the curiosity model's input: the first 32 features of `bar`,
// one-hot(cat), zeros past CURIOSITY_IN.
fn curiosity_quad(bar: i32, cat: i32, k4: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let k = k4 * 4u + c;
    if (k < CURIOSITY_OUT) {
      v[c] = features[u32(bar) * MARKET_FEATURES + k];
    } else if (k < CURIOSITY_IN) {
      v[c] = select(0.0, 1.0, i32(k - CURIOSITY_OUT) == cat);
    }
  }
  return v;
}

// Curiosity model input of each tile row (env/curiosity.ts): the first 32 features of bar
// tile_bar[r] ++ one-hot(tile_cat[r]), zero padding up to CURIOSITY_PAD.
fn curiosity_fill(lid: u32) {
  for (var idx = lid; idx < TILE_E * (CURIOSITY_PAD / 4u); idx += WG_X) {
    let r = idx / (CURIOSITY_PAD / 4u);
    let k4 = idx % (CURIOSITY_PAD / 4u);
    act_set4(r, k4, curiosity_quad(tile_bar[r], tile_cat[r], k4));
  }
}

// The bonus from the model's prediction in act (after its two layers) against the first 32
// features of the next bar: mse summed in index order, min(scale * mse, max).
fn curiosity_mse(lid: u32) {
  if (lid < TILE_E) {
    let next = u32(tile_bar[lid] + 1) * MARKET_FEATURES;
    var acc = 0.0;
    for (var k = 0u; k < CURIOSITY_OUT; k++) {
      let d = act_get(lid, k) - features[next + k];
      acc = acc + d * d;
    }
    tile_bonus[lid] = min(u.curiosityScale * (acc * (1.0 / 32.0)), u.curiosityMax);
  }
}

// The five reward components of a step (src/collect/rollout.ts Component order).
fn write_components(i: u32, out: StepOut, bonus: f32) {
  let c = OUT_F_COMPONENTS * u.n * u.steps + i * 5u;
  out_f[c] = out.pnl;
  out_f[c + 1u] = out.barrier;
  out_f[c + 2u] = out.risk;
  out_f[c + 3u] = out.diversity;
  out_f[c + 4u] = bonus;
}

// ---- seed variant: one invocation per episode ----

fn seed_dense(
  w: u32, b: u32, n_in: u32, n_out: u32, kind: u32,
  src: ptr<function, array<f32, SEED_W>>, src_off: u32,
  dst: ptr<function, array<f32, SEED_W>>, dst_off: u32,
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

fn seed_state(ep: Episode, x: ptr<function, array<f32, SEED_W>>) {
  let src = u32(ep.bar) * MARKET_FEATURES;
  for (var k = 0u; k < MARKET_FEATURES; k++) {
    (*x)[k] = features[src + k];
  }
  let pf = portfolio_features(ep);
  (*x)[MARKET_FEATURES] = pf.x;
  (*x)[MARKET_FEATURES + 1u] = pf.y;
  (*x)[MARKET_FEATURES + 2u] = pf.z;
}

fn seed_curiosity(t: i32, cat: i32, x: ptr<function, array<f32, SEED_W>>, h: ptr<function, array<f32, SEED_W>>) -> f32 {
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

