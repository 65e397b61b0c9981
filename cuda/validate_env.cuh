// The simulator side of the validation backtest, shared by validate_policy and validate_dqn (one
// block, one episode over the split, steps [u.stepBegin, u.stepEnd) of it a launch; bindings,
// chunks and outputs: src/kernels/validate_policy.ts). Thread 0 owns the episode: validate_open
// starts it (the first launch) or resumes it from env_f / env_i, validate_record steps it with the
// greedy action (collect_env.cuh env_step; barrierTerminates is 0, so only a collapse ends the
// episode) and writes the step's trace; validate_close fills the launch's steps after a collapse
// with the last value and action, exposure and traded 0, and leaves the episode and the stop flag
// (env_i[ENV_I]) for the next launch. OUT_F_* / OUT_I_* are the kernel's output constants.
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

// Thread 0, at the launch's start: the episode flat at splitStart and no stop in the first launch
// (stepBegin 0), else the episode and the stop flag as the previous launch left them.
COLLECT_DEVICE void validate_open(Episode& ep, const Market& m, const EnvScalars& p, int* div_window,
                                  const float* env_f, const int* env_i, unsigned step_begin, volatile int* stop) {
  if (step_begin == 0) {
    start_episode(ep, m, p, div_window, p.split_start);
    *stop = 0;
  } else {
    load_episode(ep, env_f, env_i, 0);
    *stop = env_i[ENV_I];
  }
}

// Thread 0, after the loop stopped at step l: the launch's steps from l to step_end, after a
// collapse (none otherwise: l = step_end), keep the account where it ended; then the episode and
// the stop flag go back to env_f / env_i for the next launch.
COLLECT_DEVICE void validate_close(const Episode& ep, unsigned l, unsigned step_end, unsigned steps, int stop,
                                   float* env_f, int* env_i, float* out_f, int* out_i) {
  const float last = portfolio_value(ep);
  for (unsigned k = l; k < step_end; k++) {
    out_f[OUT_F_VALUES * steps + k] = last;
    out_f[OUT_F_EXPOSURE * steps + k] = 0.0f;
    out_f[OUT_F_TRADED * steps + k] = 0.0f;
    out_i[OUT_I_ACTIONS * steps + k] = 0;
  }
  store_episode(ep, env_f, env_i, 0);
  env_i[ENV_I] = stop;
}

// The block's start of step l: thread 0 writes the portfolio features into x[MARKET_FEATURES ..]
// and the bar, then (after a barrier) every thread sees whether the episode goes on (l < end, no
// stop); if it does,
// the first MARKET_FEATURES threads load the bar's market features into x and the block meets.
COLLECT_DEVICE bool validate_state(const Episode& ep, const float* __restrict__ features, float* x,
                                   volatile int* bar_s, volatile int* stop, unsigned l, unsigned end) {
  const int r = threadIdx.x;
  if (r == 0) {
    state_portfolio(ep, x + MARKET_FEATURES);
    *bar_s = ep.bar;
  }
  block_sync();
  const int bar = *bar_s;
  if (l >= end || *stop != 0) return false;
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
