/**
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
 * the one generator of foxhunt (SPEC 7). Integer-only, so the WGSL and CUDA twins
 * produce bit-identical streams; the 32x32->64 multiply is built from 16-bit halves,
 * exactly as WGSL (which has no 64-bit integers) must do it.
 */

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product a * b, from 16-bit halves. */
export function mulhi32(a: number, b: number): number {
  const aLo = a & 0xffff;
  const aHi = a >>> 16;
  const bLo = b & 0xffff;
  const bHi = b >>> 16;
  const lolo = aLo * bLo;
  const hilo = aHi * bLo;
  const lohi = aLo * bHi;
  const hihi = aHi * bHi;
  // cross = (lolo >> 16) + low16(hilo) + low16(lohi) < 3 * 2^16: carries into the high word.
  const cross = (lolo >>> 16) + (hilo & 0xffff) + (lohi & 0xffff);
  return (hihi + (hilo >>> 16) + (lohi >>> 16) + (cross >>> 16)) >>> 0;
}

/**
 * One Philox4x32-10 block: counter (4 u32) and key (2 u32) -> 4 u32.
 * Writes into `out` (reused to keep hot loops allocation-free) and returns it.
 */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array = new Uint32Array(4),
): Uint32Array {
  let x0 = c0 >>> 0;
  let x1 = c1 >>> 0;
  let x2 = c2 >>> 0;
  let x3 = c3 >>> 0;
  let key0 = k0 >>> 0;
  let key1 = k1 >>> 0;
  for (let round = 0; round < 10; round++) {
    const hi0 = mulhi32(M0, x0);
    const lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi32(M1, x2);
    const lo1 = Math.imul(M1, x2) >>> 0;
    x0 = (hi1 ^ x1 ^ key0) >>> 0;
    x1 = lo1;
    x2 = (hi0 ^ x3 ^ key1) >>> 0;
    x3 = lo0;
    key0 = (key0 + W0) >>> 0;
    key1 = (key1 + W1) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
  return out;
}

/** SPEC 7 float conversion: the top 24 bits of a u32 as a float in [0, 1), exact in f32. */
export function u32ToUnitFloat(x: number): number {
  return (x >>> 8) * 2 ** -24;
}

/** The run seed as the Philox key: low and high u32 of a non-negative safe integer. */
export function seedToKey(seed: number): [number, number] {
  return [seed >>> 0, Math.floor(seed / 2 ** 32) >>> 0];
}
