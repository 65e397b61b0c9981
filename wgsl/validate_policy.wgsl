// validate_policy: the validation backtest (src/eval/backtest.ts) with PPO's greedy policy, one
// workgroup a launch (descriptor, bindings, chunks and outputs: src/kernels/validate_policy.ts).
// One episode from splitStart, `steps` decisions, steps [stepBegin, stepEnd) of them a launch (the
// episode resumed from and left in env_f / env_i); per step the WG_X invocations build the state
// and run the actor (one output each, f32 sum bias first then inputs in order, as
// src/nets/forward.ts), invocation 0 takes the first argmax of the logits and steps the simulator
// (validate_env.wgsl: barriers close positions without ending the episode; a collapse stops it and
// the rest of the curve stays at the last value with action, exposure and traded 0).
//
// Numerics: f32 in the reference's order; the compiler may fuse a layer's multiply-adds, so a
// logit can differ in its last bits and an action only where two logits tie that closely.
//!include validate_env.wgsl

// The layer input (the state, then each hidden layer), the logits.
var<workgroup> x128: array<f32, 128>;
var<workgroup> logits: array<f32, 64>;
const_assert NET_A_0_OUT <= WG_X && NET_A_1_OUT <= WG_X && NET_A_2_OUT <= 64 && STATE_DIM <= 128;
const_assert NET_A_0_OUT <= 128 && NET_A_1_OUT <= 128 && MARKET_FEATURES <= WG_X;

// Output j of a dense layer (weights row-major [n_out, n_in]) over x128.
fn dense_out(w: u32, b: u32, n_in: u32, j: u32) -> f32 {
  var acc = nets[b + j];
  let row = w + j * n_in;
  for (var k = 0u; k < n_in; k++) {
    acc = acc + nets[row + k] * x128[k];
  }
  return acc;
}

@compute @workgroup_size(WG_X, 1, 1)
fn validate_policy(@builtin(local_invocation_index) lid: u32) {
  let steps = u.steps;
  var ep: Episode;
  if (lid == 0u) {
    validate_open(&ep);
  }
  var l = u.stepBegin;
  loop {
    if (lid == 0u) {
      bar_s = ep.bar;
      let pf = portfolio_features(ep);
      x128[MARKET_FEATURES] = pf.x;
      x128[MARKET_FEATURES + 1u] = pf.y;
      x128[MARKET_FEATURES + 2u] = pf.z;
    }
    let bar = workgroupUniformLoad(&bar_s);
    if (l >= u.stepEnd || workgroupUniformLoad(&stop_s) != 0) {
      break;
    }
    if (lid < MARKET_FEATURES) {
      x128[lid] = features[u32(bar) * MARKET_FEATURES + lid];
    }
    workgroupBarrier();
    var y = 0.0;
    if (lid < NET_A_0_OUT) {
      y = max(dense_out(NET_A_0_W, NET_A_0_B, NET_A_0_IN, lid), 0.0);
    }
    workgroupBarrier();
    if (lid < NET_A_0_OUT) {
      x128[lid] = y;
    }
    workgroupBarrier();
    if (lid < NET_A_1_OUT) {
      y = max(dense_out(NET_A_1_W, NET_A_1_B, NET_A_1_IN, lid), 0.0);
    }
    workgroupBarrier();
    if (lid < NET_A_1_OUT) {
      x128[lid] = y;
    }
    workgroupBarrier();
    if (lid < NET_A_2_OUT) {
      logits[lid] = dense_out(NET_A_2_W, NET_A_2_B, NET_A_2_IN, lid);
    }
    workgroupBarrier();
    if (lid == 0u) {
      var a = 0;
      for (var k = 1; k < i32(NUM_ACTIONS); k++) {
        if (logits[k] > logits[a]) {
          a = k;
        }
      }
      validate_record(&ep, a, l, steps);
    }
    l++;
  }
  // After a collapse the account stays where it ended; the episode goes back for the next launch.
  if (lid == 0u) {
    validate_close(ep, l, steps);
  }
}
