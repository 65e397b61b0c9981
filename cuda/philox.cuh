// Philox4x32-10 (Salmon et al., SC'11), the CUDA twin of src/rng/philox.ts (SPEC 7): counter
// (4 u32) and key (2 u32) -> 4 u32, bit-identical to the TS and WGSL versions. The 32x32->64
// multiply uses __umulhi for the high word (TS and WGSL build it from 16-bit halves; the result
// is the same integer). Integer-only: no rounding anywhere.
#pragma once

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 philox4x32_10(uint4 ctr, unsigned int key0, unsigned int key1) {
#pragma unroll
  for (int round = 0; round < 10; round++) {
    const unsigned int hi0 = __umulhi(PHILOX_M0, ctr.x);
    const unsigned int lo0 = PHILOX_M0 * ctr.x;
    const unsigned int hi1 = __umulhi(PHILOX_M1, ctr.z);
    const unsigned int lo1 = PHILOX_M1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key0, lo1, hi0 ^ ctr.w ^ key1, lo0);
    key0 += PHILOX_W0;
    key1 += PHILOX_W1;
  }
  return ctr;
}

// SPEC 7: the top 24 bits as a float in [0, 1), exact in f32.
__device__ __forceinline__ float philox_unit_float(unsigned int x) {
  return (float)(x >> 8) * 5.9604644775390625e-8f;  // 2^-24
}
