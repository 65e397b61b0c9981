// The simulator side of the validation backtest, shared by validate_policy and validate_dqn (one
// block, one episode over the split; bindings and outputs: src/kernels/validate_policy.ts). Thread
// 0 owns the episode: validate_record steps it with the greedy action (collect_env.cuh env_step;
// barrierTerminates is 0, so only a collapse ends the episode) and writes the step's trace;
// validate_flat_tail fills the steps after a collapse with the last value and action, exposure
// and traded 0. OUT_F_* / OUT_I_* are the kernel's output constants.
//
// Numerics: the reference's f32 arithmetic, so values agree bit for bit; the traded notional
// |traded units| * fill price + |units closed| * exit price is rounded in f32 (the host backtest
// sums it in f64).
#pragma once

#include "collect_env.cuh"

// Thread 0: step l of `steps` with action a, its trace written; true at a collapse.
COLLECT_DEVICE bool validate_record(Episode& ep, const Market& m, const EnvScalars& p, int* div_window, int a,
                                    unsigned l, unsigned steps, float* out_f, int* out_i) {
  const float units_before = ep.units;
  StepOut so;
  env_step(ep, m, p, div_window, a, 0.0f, false, so);
  const float after_order = so.filled ? fadd(units_before, so.traded) : units_before;
  const float exit_notional = so.exit_price > 0.0f ? fmul(fabsf(after_order), so.exit_price) : 0.0f;
  out_f[OUT_F_VALUES * steps + l] = so.value;
  out_f[OUT_F_EXPOSURE * steps + l] = position_norm(so.units, ep.last, so.value);
  out_f[OUT_F_TRADED * steps + l] = fadd(fmul(fabsf(so.traded), so.fill_price), exit_notional);
  out_i[OUT_I_ACTIONS * steps + l] = a;
  return so.done;
}

// Thread 0, after the loop stopped at step l: the account stays where it ended.
COLLECT_DEVICE void validate_flat_tail(const Episode& ep, unsigned l, unsigned steps, float* out_f, int* out_i) {
  const float last = portfolio_value(ep);
  for (unsigned k = l; k < steps; k++) {
    out_f[OUT_F_VALUES * steps + k] = last;
    out_f[OUT_F_EXPOSURE * steps + k] = 0.0f;
    out_f[OUT_F_TRADED * steps + k] = 0.0f;
    out_i[OUT_I_ACTIONS * steps + k] = 0;
  }
}

// The block's start of step l: thread 0 writes the portfolio features into x[MARKET_FEATURES ..]
// and the bar, then (after a barrier) every thread sees whether the episode goes on; if it does,
// the first MARKET_FEATURES threads load the bar's market features into x and the block meets.
COLLECT_DEVICE bool validate_state(const Episode& ep, const float* __restrict__ features, float* x,
                                   volatile int* bar_s, volatile int* stop, unsigned l, unsigned steps) {
  const int r = threadIdx.x;
  if (r == 0) {
    state_portfolio(ep, x + MARKET_FEATURES);
    *bar_s = ep.bar;
  }
  block_sync();
  const int bar = *bar_s;
  if (l >= steps || *stop != 0) return false;
  if (r < MARKET_FEATURES) x[r] = features[bar * MARKET_FEATURES + r];
  block_sync();
  return true;
}

// The block's end of step l: thread 0 takes the first argmax of the 45 scores and records the
// step (a collapse sets *stop), then the block meets.
COLLECT_DEVICE void validate_act(Episode& ep, const Market& m, const EnvScalars& p, int* div_window,
                                 const float* scores, volatile int* stop, unsigned l, unsigned steps,
                                 float* out_f, int* out_i) {
  if (threadIdx.x == 0) {
    int a = 0;
    for (int k = 1; k < NUM_ACTIONS; k++)
      if (scores[k] > scores[a]) a = k;
    if (validate_record(ep, m, p, div_window, a, l, steps, out_f, out_i)) *stop = 1;
  }
  block_sync();
}
