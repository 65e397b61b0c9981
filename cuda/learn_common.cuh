// Helpers shared by the learner kernels (mlp_forward, mlp_backward, ppo_loss, adam_step,
// curiosity_loss): activations and their derivatives exactly as src/learn/mlp.ts defines them,
// and a block-wide sum whose order is fixed (a power-of-two tree over thread ids), so a reduction
// gives the same bits on every run.
#pragma once

// act: 0 none, 1 relu, 2 leaky 0.01. `a < 0` (not max) so that NaN and -0 pass through as in the
// twins.
__device__ __forceinline__ float learn_activate(float a, unsigned int act) {
  if (act == 1u) return a < 0.0f ? 0.0f : a;
  if (act == 2u) return a < 0.0f ? a * 0.01f : a;
  return a;
}

// The activation's derivative read from its output y: relu' = y > 0, leaky' = y > 0 ? 1 : 0.01
// (at a pre-activation of exactly 0 this is PyTorch's choice too).
__device__ __forceinline__ float learn_act_derivative(float y, unsigned int act) {
  if (act == 1u) return y > 0.0f ? 1.0f : 0.0f;
  if (act == 2u) return y > 0.0f ? 1.0f : 0.01f;
  return 1.0f;
}

// Sum of v over the n threads of the block (n a power of two, tid < n), in a fixed tree order;
// every thread gets the result. `scratch` holds n floats of shared memory.
__device__ __forceinline__ float learn_block_sum(float v, float* scratch, unsigned int tid, unsigned int n) {
  scratch[tid] = v;
  __syncthreads();
  for (unsigned int s = n >> 1; s > 0u; s >>= 1) {
    if (tid < s) scratch[tid] += scratch[tid + s];
    __syncthreads();
  }
  const float total = scratch[0];
  __syncthreads();
  return total;
}
