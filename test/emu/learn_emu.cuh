// What the learner kernels need beyond test/emu/collect_emu.cuh (the fiber emulator
// of the CUDA subset) to compile as host C++: `__shared__` arrays become function statics (blocks
// run one after another and the threads of a block are fibers, so a static is exactly one block's
// shared memory), launch-bounds and alignment attributes, and the few intrinsics and atomics they use.
#pragma once

#include <algorithm>
#include <cmath>

#include "collect_emu.cuh"

using std::max;
using std::min;

#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))

static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
static inline float __fsqrt_rn(float x) { return std::sqrt(x); }
// Blocks run one after another, so memory is coherent without fences and an atomic is a plain
// read-modify-write (the split dW's last block is simply the last slice to run).
static inline void __threadfence() {}
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
  const unsigned int old = *p;
  *p = old + v;
  return old;
}
static inline float4 __ldcg(const float4* p) { return *p; }
