// The minibatch shuffle of src/learn/shuffle.ts: a keyed bijection of [0, count) each thread
// evaluates for its own index. 4-round balanced Feistel network on 2h-bit words,
// h = max(1, ceil(bits(count-1)/2)), round k: (L, R) -> (R, L xor (word 0 of
// Philox(counter = (stream, epoch, R, k), key) & mask)), cycle walking until the word lands in
// [0, count). Integer-only: bit-identical to the TS and WGSL twins.
#pragma once
#include "philox.cuh"

#define SHUFFLE_ROUNDS 4u

__device__ __forceinline__ unsigned int feistel_half_bits(unsigned int count) {
  const unsigned int bits = count > 1u ? 32u - (unsigned int)__clz((int)(count - 1u)) : 0u;
  return max(1u, (bits + 1u) / 2u);
}

// The image of `index` (< count) under the permutation of `epoch`; `stream` is Stream.Shuffle.
__device__ __forceinline__ unsigned int shuffle_index(unsigned int index, unsigned int count, unsigned int epoch,
                                                      unsigned int stream, unsigned int key0, unsigned int key1) {
  const unsigned int h = feistel_half_bits(count);
  const unsigned int mask = (1u << h) - 1u;
  unsigned int x = index;
  do {
    unsigned int left = x >> h;
    unsigned int right = x & mask;
#pragma unroll
    for (unsigned int k = 0; k < SHUFFLE_ROUNDS; k++) {
      const unsigned int f = philox4x32_10(make_uint4(stream, epoch, right, k), key0, key1).x & mask;
      const unsigned int next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << h) | right;
  } while (x >= count);
  return x;
}
