// replay_insert: one collect_dqn launch into the device replay ring and its PER leaves (the twin of
// src/kernels/replay_insert.ts, which states the contract).
// phase 0: thread i < count folds rollout row idx = skip + i's n-step return (f32, same order as
//          src/learn/replay.ts; __fmul_rn/__fadd_rn keep NVRTC from fusing them), writes ring row
//          (head + idx) % capacity and its action, and sets its leaf tree[leaves + row] =
//          maxPriority ^ alpha (maxPriority: f32 bits in state[0]).
// phase 1: thread i < count recomputes node k = (leaves + (first + i) % capacity) >> level as
//          tree[2k] + tree[2k + 1], unless the previous thread's row has the same ancestor.
// Bindings (declared by the preamble generated from src/kernels/replay_insert.ts):
//   rolloutF: const float*: states, nextStates, rewards at statesOff, nextOff, rewardsOff
//   rolloutI: const int*: actions, dones, truncateds at actionsOff, donesOff, truncOff
//   ringF: float*: [capacity, ROW_F] rows; ringI: int*: actions
//   tree: float*: [2 * leaves] sum tree; state: const unsigned int*: [0] maxPriority bits
// Block: WG_X threads, 1-D, flat id over x and y (grid1d).
#include "grid.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) replay_insert(KERNEL_ARGS) {
  const unsigned long long i64 = flat_thread_id();
  if (i64 >= u.count) return;
  const unsigned int i = (unsigned int)i64;
  const unsigned int C = u.capacity;
  if (u.phase == 1u) {
    const unsigned int k = (u.leaves + (u.first + i) % C) >> u.level;
    if (i > 0u && ((u.leaves + (u.first + i - 1u) % C) >> u.level) == k) return;
    tree[k] = __fadd_rn(tree[2u * k], tree[2u * k + 1u]);
    return;
  }
  const unsigned int idx = u.skip + i;
  const unsigned int L = u.steps;
  const unsigned int e = idx / L;
  const unsigned int l = idx - e * L;
  const unsigned int row = (u.head + idx) % C;
  float ret = 0.0f;
  float disc = 1.0f;
  unsigned int last = idx;
  for (unsigned int k = 0u; k < u.nStep && l + k < L; k++) {
    const unsigned int t = e * L + l + k;
    ret = __fadd_rn(ret, __fmul_rn(disc, rolloutF[u.rewardsOff + t]));
    disc = __fmul_rn(disc, u.gamma);
    last = t;
    if (rolloutI[u.donesOff + t] != 0 || rolloutI[u.truncOff + t] != 0) break;
  }
  const unsigned long long o = (unsigned long long)row * ROW_F;
  for (unsigned int c = 0u; c < STATE_DIM; c++) {
    ringF[o + c] = rolloutF[u.statesOff + (unsigned long long)idx * STATE_DIM + c];
    ringF[o + STATE_DIM + c] = rolloutF[u.nextOff + (unsigned long long)last * STATE_DIM + c];
  }
  ringF[o + 2u * STATE_DIM] = ret;
  ringF[o + 2u * STATE_DIM + 1u] = rolloutI[u.donesOff + last] != 0 ? 0.0f : disc;
  ringI[row] = rolloutI[u.actionsOff + idx];
  tree[u.leaves + row] = powf(__uint_as_float(state[0]), u.alpha);
}
