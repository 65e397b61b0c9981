// philox_stream: words[i] = word (i & 3) of Philox4x32-10 with
// counter = (stream, base + (i >> 2), step, 0) and key = (key0, key1), for i < n.
// Bindings (declared by the preamble generated from src/kernels/philox_stream.ts):
//   words: u32*, written, at least n elements
//   u: Uniforms { n, stream, base, step, key0, key1 } (all u32)
// Block: WG_X threads, one 4-word block per thread; blocks spread over x and y (grid1d), so the
// flat thread id is flat_block_id() * threads + local index (grid.cuh).
// Exact integer arithmetic; base + block wraps modulo 2^32 like the TS reference.
#include "grid.cuh"
#include "philox.cuh"

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) philox_stream(KERNEL_ARGS) {
  const unsigned long long block = flat_thread_id();
  // Blocks needed, written so that n close to 2^32 cannot overflow.
  const unsigned int blocks = (u.n >> 2) + ((u.n & 3u) != 0u ? 1u : 0u);
  if (block >= blocks) return;
  const uint4 r = philox4x32_10(make_uint4(u.stream, u.base + (unsigned int)block, u.step, 0u), u.key0, u.key1);
  const unsigned long long first = block * 4;
  if (first + 4 <= u.n) {
    // words comes from cuMemAlloc (256-byte aligned) and first is a multiple of 4: one 16-byte store.
    reinterpret_cast<uint4*>(words)[block] = r;
    return;
  }
  const unsigned int w[4] = {r.x, r.y, r.z, r.w};
  for (unsigned int k = 0; first + k < u.n; k++) words[first + k] = w[k];
}
