// Philox4x32-10 (Salmon et al., SC'11): the WGSL twin of src/rng/philox.ts and cuda/philox.cuh.
// A snippet, not a kernel: kernels that draw random numbers pull it in with a line
// `//!include philox.wgsl` (resolved by scripts/gen-kernels.mjs). It declares no bindings.
// WGSL has no 64-bit integers, so the high word of each 32x32 product is built from 16-bit
// halves exactly as `mulhi32` in the TS reference: the three twins are bit-identical.
// u32 arithmetic wraps modulo 2^32 in WGSL, which gives the low word directly.

const PHILOX_M0: u32 = 0xd2511f53u;
const PHILOX_M1: u32 = 0xcd9e8d57u;
const PHILOX_W0: u32 = 0x9e3779b9u;
const PHILOX_W1: u32 = 0xbb67ae85u;

// High 32 bits of the 64-bit product a * b.
fn mulhi32(a: u32, b: u32) -> u32 {
  let a_lo = a & 0xffffu;
  let a_hi = a >> 16u;
  let b_lo = b & 0xffffu;
  let b_hi = b >> 16u;
  let lolo = a_lo * b_lo;
  let hilo = a_hi * b_lo;
  let lohi = a_lo * b_hi;
  let hihi = a_hi * b_hi;
  // cross < 3 * 2^16: its carry is the only one that reaches the high word.
  let cross = (lolo >> 16u) + (hilo & 0xffffu) + (lohi & 0xffffu);
  return hihi + (hilo >> 16u) + (lohi >> 16u) + (cross >> 16u);
}

// One Philox4x32-10 block: 4 counter words and 2 key words -> 4 random words.
fn philox4x32(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var x = counter;
  var k = key;
  for (var round = 0u; round < 10u; round++) {
    let hi0 = mulhi32(PHILOX_M0, x.x);
    let lo0 = PHILOX_M0 * x.x;
    let hi1 = mulhi32(PHILOX_M1, x.z);
    let lo1 = PHILOX_M1 * x.z;
    x = vec4<u32>(hi1 ^ x.y ^ k.x, lo1, hi0 ^ x.w ^ k.y, lo0);
    k = k + vec2<u32>(PHILOX_W0, PHILOX_W1);
  }
  return x;
}

// SPEC 7: the top 24 bits as a float in [0, 1); exact in f32 (2^-24 is a power of two).
fn u32_to_unit_float(x: u32) -> f32 {
  return f32(x >> 8u) * (1.0 / 16777216.0);
}
