// Helpers shared by the learner kernels (mlp_forward, mlp_backward, ppo_loss, adam_step,
// curiosity_loss; the PDL wait also ppo_gather and curiosity_gather): activations and their
// derivatives exactly as src/learn/mlp.ts defines them, and a block-wide sum whose order is fixed
// (a power-of-two tree over thread ids), so a reduction gives the same bits on every run.
#pragma once

// Programmatic Dependent Launch (KernelSpec.pdl): a kernel launched with it may start while the
// previous kernel of the stream is still finishing, so every learner kernel runs this first, before
// any global read or write (ppo_gather: before any store and any read of what the update writes). griddepcontrol.wait returns once the previous grid has completed and
// its memory is visible, which is plain stream order; without PDL it returns at once. Below sm_90
// (and in the host emulator, which has no __CUDA_ARCH__) it is nothing.
// LEARN_PDL_TRIGGER (a spec constant, --pdl early) also lets the next PDL kernel launch at once
// (griddepcontrol.launch_dependents): it fires once every block of this grid has run it, so its
// blocks are all resident by then, and the next kernel still waits for this one to complete.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(LEARN_PDL_TRIGGER)
#define LEARN_GRID_DEP_WAIT() asm volatile("griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;" ::: "memory")
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LEARN_GRID_DEP_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define LEARN_GRID_DEP_WAIT() \
  do {                        \
  } while (0)
#endif

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
