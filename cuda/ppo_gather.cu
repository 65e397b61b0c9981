// ppo_gather: minibatch `minibatch` of update epoch `epochSlot` from the rollout, in the order of
// the device shuffle: sample j < batch is rollout row
//   s = shuffle_index(minibatch * batch + j, count, sched[0] + epochSlot, key)
// Its state goes to acts[j * stateDim ..] (the networks' input rows) and its action (as f32,
// exact), old log-prob, advantage and return to mb[j], mb[batch + j], mb[2 batch + j], mb[3 batch + j].
// Bindings (declared by the preamble generated from src/kernels/ppo_gather.ts):
//   rolloutF: const float*: states rows at statesOff, log-probs at logpOff, advantages at advOff,
//             returns at retOff (element offsets)
//   rolloutI: const int*: actions at actOff
//   sched: const unsigned int*: sched[0] = first shuffle epoch of this update
//   acts: float*, written: rows 0..batch of stateDim floats
//   mb: float*, written: 4 * batch floats
//   u: Uniforms { count, batch, minibatch, epochSlot, key0, key1, stateDim, statesOff, logpOff,
//                 advOff, retOff, actOff, rows }
// Block: WG_X threads take u.rows <= WG_X samples (CUDA dispatches 4: a 512-sample minibatch is 128
// blocks): threads lid < rows each compute a sample's rollout row into shared memory, then the
// block copies the rows' states together (neighbouring threads, neighbouring floats) — with 4 rows
// of 54 floats one round of COPY_BATCH loads in flight per thread, where 64 rows took 7 dependent
// rounds on 8 blocks.
// Exact: integer shuffle and plain copies.
#include "grid.cuh"
#include "learn_common.cuh"
#include "shuffle.cuh"

#define COPY_BATCH 8u

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) ppo_gather(KERNEL_ARGS) {
  // Loads before the PDL wait: nothing in an update writes the rollout or the schedule (they are
  // written before it), so a block may load its rows while the previous kernel finishes (adam_step
  // triggers its dependents early, LEARN_PDL_TRIGGER: the learner's EARLY_TRIGGER); the stores,
  // which the previous step's launches read, wait for it. Without PDL the wait returns at once.
  __shared__ unsigned int rows[WG_X];
  const unsigned int lid = threadIdx.x;
  const unsigned int per = u.rows;
  const unsigned int b0 = (unsigned int)flat_block_id() * per;
  const unsigned int j = b0 + lid;
  const bool mine = lid < per && j < u.batch;
  float m0 = 0.0f, m1 = 0.0f, m2 = 0.0f, m3 = 0.0f;
  if (mine) {
    const unsigned int s =
        shuffle_index(u.minibatch * u.batch + j, u.count, sched[0] + u.epochSlot, SHUFFLE_STREAM, u.key0, u.key1);
    rows[lid] = s;
    m0 = (float)rolloutI[u.actOff + s];
    m1 = rolloutF[u.logpOff + s];
    m2 = rolloutF[u.advOff + s];
    m3 = rolloutF[u.retOff + s];
  }
  __syncthreads();
  const unsigned int n = min(per, u.batch - min(b0, u.batch));
  // COPY_BATCH loads in flight per thread before their stores: the copy waits on one trip to memory
  // per COPY_BATCH floats instead of one per float. The first batch (all of it at 4 rows) is loaded
  // before the wait.
  const unsigned int total = n * u.stateDim;
  float v[COPY_BATCH];
  auto load = [&](unsigned int e0) {
#pragma unroll
    for (unsigned int q = 0; q < COPY_BATCH; q++) {
      const unsigned int e = e0 + q * WG_X + lid;
      v[q] = e < total ? rolloutF[u.statesOff + rows[e / u.stateDim] * u.stateDim + e % u.stateDim] : 0.0f;
    }
  };
  load(0u);
  LEARN_GRID_DEP_WAIT();
  auto store = [&](unsigned int e0) {
#pragma unroll
    for (unsigned int q = 0; q < COPY_BATCH; q++) {
      const unsigned int e = e0 + q * WG_X + lid;
      if (e < total) acts[b0 * u.stateDim + e] = v[q];
    }
  };
  if (mine) {
    mb[j] = m0;
    mb[u.batch + j] = m1;
    mb[2u * u.batch + j] = m2;
    mb[3u * u.batch + j] = m3;
  }
  store(0u);
  for (unsigned int e0 = COPY_BATCH * WG_X; e0 < total; e0 += COPY_BATCH * WG_X) {
    load(e0);
    store(e0);
  }
}
