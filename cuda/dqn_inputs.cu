// dqn_inputs: the DQN learner's network inputs from a sampled batch in the replay row layout
// (src/learn/replay.ts): thread i < 2 batch STATE_DIM, half h = i / (batch STATE_DIM) (0: s, 1: s'),
// row b, feature k:
//   acts[outOff + i] = rows[b REPLAY_F + (h == 0 ? STATE_AT : NEXT_AT) + k]
// Bindings (declared by the preamble generated from src/kernels/dqn_inputs.ts):
//   rows: const float* [batch, REPLAY_F]; acts: float*
//   u: Uniforms { batch, outOff }
// Block: WG_X threads, one float each.
#include "grid.cuh"
#include "learn_common.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dqn_inputs(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  const unsigned int half = u.batch * STATE_DIM;
  const unsigned long long gid = flat_thread_id();
  if (gid >= 2ull * half) return;
  const unsigned int i = (unsigned int)gid;
  const unsigned int j = i % half;
  const unsigned int b = j / STATE_DIM;
  const unsigned int k = j - b * STATE_DIM;
  const unsigned int from = i >= half ? NEXT_AT : STATE_AT;
  acts[u.outOff + i] = rows[b * REPLAY_F + from + k];
}
