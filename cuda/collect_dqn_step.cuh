// The per-episode DQN decisions both collect_dqn kernels (tiled / seed in collect_dqn.cu, cluster
// in collect_dqn_cluster.cu) take on one thread: greedy action, epsilon-greedy choice from Philox.
// Twin of src/collect/dqn.ts step 2; needs the preamble (NUM_ACTIONS,
// STREAM_ACTION), philox.cuh and collect_env.cuh's StepOut (through collect_io.cuh).
#pragma once

#include "collect_io.cuh"

COLLECT_DEVICE int argmax_q(const float* q) {
  int best = 0;
  for (int a = 1; a < NUM_ACTIONS; a++)
    if (q[a] > q[best]) best = a;
  return best;
}

// Epsilon-greedy (src/collect/dqn.ts step 2).
COLLECT_DEVICE int choose_action(const float* q, unsigned e, unsigned g, float epsilon, unsigned k0, unsigned k1) {
  const uint4 w = philox4x32_10(make_uint4(STREAM_ACTION, e, g, 0u), k0, k1);
  return philox_unit_float(w.x) < epsilon ? (int)(w.y % NUM_ACTIONS) : argmax_q(q);
}

