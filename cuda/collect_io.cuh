// What both collection kernels do around the simulator step: output addressing (the sections of
// src/kernels/collect_layout.ts), the curiosity model's input and error (src/env/curiosity.ts), and
// the per-step outputs both rollouts share (rewards, components, actions, dones, truncateds).
#pragma once

#include "collect_env.cuh"

// Output addressing: section offsets are in units of N * L elements; idx = e * L + l.
struct Out {
  float* f;
  int* i;
  unsigned long long nl, idx;
};
COLLECT_DEVICE float* out_f_at(const Out& o, int section, int width) { return o.f + section * o.nl + o.idx * width; }
COLLECT_DEVICE int* out_i_at(const Out& o, int section) { return o.i + section * o.nl + o.idx; }

// curiosity.ts curiosityMse of the model's prediction `pred` against `next`, the features of bar
// t + 1 (in global memory, read through the read-only path, or not: GLOBAL false, e.g. a state row
// in shared memory, which begins with them).
template <bool GLOBAL = true>
COLLECT_DEVICE float curiosity_mse_next(const float* pred, const float* next) {
  float acc = 0.0f;
  for (int k = 0; k < CURIOSITY_OUT; k++) {
    const float d = fsub(pred[k], GLOBAL ? ldg1(next + k) : next[k]);
    acc = fadd(acc, fmul(d, d));
  }
  return fmul(acc, 1.0f / CURIOSITY_OUT);
}
// The same for decision bar t.
COLLECT_DEVICE float curiosity_mse(const float* pred, const float* features, int t) {
  return curiosity_mse_next(pred, features + (t + 1) * MARKET_FEATURES);
}

// The curiosity input of decision bar t: features[t][0..32) ++ one-hot(category), then zeros.
COLLECT_DEVICE void curiosity_input(float* x, int width, const float* features, int t, int cat) {
  const float* src = features + t * MARKET_FEATURES;
  for (int k = 0; k < CURIOSITY_OUT; k++) x[k] = ldg1(src + k);
  for (int k = 0; k < 3; k++) x[CURIOSITY_OUT + k] = k == cat ? 1.0f : 0.0f;
  for (int k = CURIOSITY_OUT + 3; k < width; k++) x[k] = 0.0f;
}

COLLECT_DEVICE void write_step(const Out& o, const StepOut& so, int action) {
  *out_f_at(o, OUT_F_REWARDS, 1) = so.total;
  float* c = out_f_at(o, OUT_F_COMPONENTS, 5);
  c[0] = so.pnl;
  c[1] = so.barrier;
  c[2] = so.risk;
  c[3] = so.diversity;
  c[4] = so.curiosity;
  *out_i_at(o, OUT_I_ACTIONS) = action;
  *out_i_at(o, OUT_I_DONES) = so.done;
  *out_i_at(o, OUT_I_TRUNCATEDS) = so.truncated;
}

