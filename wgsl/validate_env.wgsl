// The simulator side of the validation backtest, shared by validate_policy and validate_dqn (one
// workgroup, one episode over the split, steps [u.stepBegin, u.stepEnd) of it a launch; bindings,
// chunks and outputs: src/kernels/validate_policy.ts). Invocation 0 owns the episode: validate_open
// starts it flat at splitStart (the first launch) or resumes it from env_f / env_i, validate_record
// steps it with the greedy action and writes the step's trace (collect_env.wgsl's order and
// barrier phases, then the mark to market of env_step; no reward, no diversity window: they do
// not move the equity), validate_close fills the launch's steps after a collapse and leaves the
// episode and the stop flag for the next launch. Barriers close positions without ending the
// episode; a collapse (V <= collapseFraction * V_0) sets stop_s.
//
// The traded notional is |cash change + fee change| of each phase (the order's, a barrier
// exit's), which equals the backtest's |units| * price sums up to the f32 rounding of the cash.
//!include collect_env.wgsl

// The episode's bar and the stop flag, shared with the other invocations.
var<workgroup> bar_s: i32;
var<workgroup> stop_s: i32;

struct Traced {
  value: f32,
  exposure: f32,
  traded: f32,
  collapsed: bool,
}

// env_step without the reward: order, barrier (when no position was opened), mark to market.
fn validate_step(ep: ptr<function, Episode>, a: i32) -> Traced {
  let t = (*ep).bar;
  let cash0 = (*ep).cash;
  let costs0 = (*ep).costs;
  let opened = execute_order(ep, a);
  let cash1 = (*ep).cash;
  let costs1 = (*ep).costs;
  if (!opened) {
    check_barrier(ep);
  }
  let order_notional = abs((cash1 - cash0) + (costs1 - costs0));
  let exit_notional = abs(((*ep).cash - cash1) + ((*ep).costs - costs1));
  let close1 = ohlc[u32(t + 1) * 4u + 3u];
  (*ep).last = close1;
  (*ep).spread = spread[t + 1];
  (*ep).bar = t + 1;
  (*ep).step = (*ep).step + 1;
  let value = portfolio_value(*ep);
  var r: Traced;
  r.value = value;
  r.exposure = position_norm((*ep).units, close1, value);
  r.traded = order_notional + exit_notional;
  r.collapsed = value <= u.collapseFraction * (*ep).v0;
  return r;
}

// Invocation 0, at the launch's start: the episode flat at splitStart and no stop in the first
// launch, else the episode and the stop flag (env_i[ENV_I]) as the previous launch left them.
fn validate_open(ep: ptr<function, Episode>) {
  if (u.stepBegin == 0u) {
    start_episode(0u, ep, u.splitStart);
    stop_s = 0;
  } else {
    *ep = load_episode(0u);
    stop_s = env_i[ENV_I];
  }
}

// Invocation 0: step l of `steps` with action a, its trace written; stop_s = 1 at a collapse.
fn validate_record(ep: ptr<function, Episode>, a: i32, l: u32, steps: u32) {
  let r = validate_step(ep, a);
  out_f[OUT_F_VALUES * steps + l] = r.value;
  out_f[OUT_F_EXPOSURE * steps + l] = r.exposure;
  out_f[OUT_F_TRADED * steps + l] = r.traded;
  out_i[OUT_I_ACTIONS * steps + l] = a;
  if (r.collapsed) {
    stop_s = 1;
  }
}

// Invocation 0, after the loop stopped at step l: the launch's steps from l on, after a collapse
// (none otherwise: l = stepEnd), keep the account where it ended (action, exposure and traded 0);
// then the episode and the stop flag go back to env_f / env_i for the next launch.
fn validate_close(ep: Episode, l: u32, steps: u32) {
  let last = portfolio_value(ep);
  for (var k = l; k < u.stepEnd; k++) {
    out_f[OUT_F_VALUES * steps + k] = last;
    out_f[OUT_F_EXPOSURE * steps + k] = 0.0;
    out_f[OUT_F_TRADED * steps + k] = 0.0;
    out_i[OUT_I_ACTIONS * steps + k] = 0;
  }
  store_episode(0u, ep);
  env_i[ENV_I] = stop_s;
}
