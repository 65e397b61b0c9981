// curiosity_gather: the curiosity model's training batch from a PPO rollout, with the CPU engine's
// rule: walk j = 0, 1, ... of the shuffle permutation of `epoch`; row idx = perm(j) is kept when
// it is not done, not truncated and idx % steps != steps - 1 (its next row is the same episode's
// next bar); kept rows fill slots r = 0, 1, ... until `batch` rows or the rollout runs out:
//   acts[r inDim + c] = states[idx][c] (c < outDim), acts[r inDim + outDim + k] = [k == category]
//   targets[r outDim + c] = states[idx + 1][c];  sched[0] = rows kept
// category: 0 for exposure index (action / 9) 0-1, 1 for 2, 2 for 3-4.
// Bindings (declared by the preamble generated from src/kernels/curiosity_gather.ts):
//   rolloutF: const float*: states rows of stateDim at statesOff
//   rolloutI: const int*: actions at actOff, dones at doneOff, truncateds at truncOff
//   acts: float*, written: input rows [batch, inDim]; targets: float*, written [batch, outDim]
//   sched: unsigned int*: sched[0] = rows kept
//   u: Uniforms { count, steps, batch, epoch, key0, key1, stateDim, inDim, outDim, statesOff, actOff,
//                 doneOff, truncOff }
// Block: one of WG_X threads (a power of two), WG_X permutation positions per round; a
// Hillis-Steele scan of the keep flags gives kept rows their slots (the WGSL twin's steps; a warp
// ballot would be faster but would not be the twin). Exact, deterministic.
#include "learn_common.cuh"
#include "shuffle.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) curiosity_gather(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  __shared__ unsigned int scan[WG_X];
  __shared__ unsigned int rows;
  const unsigned int tid = threadIdx.x;
  if (tid == 0u) rows = 0u;
  __syncthreads();
  for (unsigned int base = 0; base < u.count; base += WG_X) {
    const unsigned int j = base + tid;
    unsigned int keep = 0u, idx = 0u;
    if (j < u.count) {
      idx = shuffle_index(j, u.count, u.epoch, SHUFFLE_STREAM, u.key0, u.key1);
      const bool ends = rolloutI[u.doneOff + idx] != 0 || rolloutI[u.truncOff + idx] != 0 || idx % u.steps == u.steps - 1u;
      keep = ends ? 0u : 1u;
    }
    scan[tid] = keep;
    __syncthreads();
    for (unsigned int off = 1u; off < WG_X; off <<= 1) {
      const unsigned int v = tid >= off ? scan[tid - off] : 0u;
      __syncthreads();
      scan[tid] += v;
      __syncthreads();
    }
    const unsigned int r = rows + scan[tid] - keep;
    if (keep == 1u && r < u.batch) {
      const unsigned int s = u.statesOff + idx * u.stateDim;
      for (unsigned int c = 0; c < u.outDim; c++) {
        acts[r * u.inDim + c] = rolloutF[s + c];
        targets[r * u.outDim + c] = rolloutF[s + u.stateDim + c];
      }
      const unsigned int x = (unsigned int)rolloutI[u.actOff + idx] / 9u;
      const unsigned int cat = x <= 1u ? 0u : (x == 2u ? 1u : 2u);
      for (unsigned int k = 0; k < u.inDim - u.outDim; k++) acts[r * u.inDim + u.outDim + k] = k == cat ? 1.0f : 0.0f;
    }
    __syncthreads();
    if (tid == 0u) rows = min(u.batch, rows + scan[WG_X - 1u]);
    __syncthreads();
    if (rows >= u.batch) break;
  }
  if (tid == 0u) sched[0] = rows;
}
