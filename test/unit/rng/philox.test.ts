import { describe, expect, it } from 'vitest';
import { mulhi32, philox4x32, seedToKey, u32ToUnitFloat } from '../../../src/rng/philox.js';

const hex = (a: Uint32Array) => Array.from(a, (x) => x.toString(16).padStart(8, '0'));

describe('Philox4x32-10', () => {
  // Known-answer vectors from Random123's kat_vectors (philox4x32 10 rounds).
  it('matches the Random123 known-answer vectors', () => {
    expect(hex(philox4x32(0, 0, 0, 0, 0, 0))).toEqual(['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
    expect(hex(philox4x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff))).toEqual([
      '408f276d',
      '41c83b0e',
      'a20bc7c6',
      '6d5451fd',
    ]);
    expect(hex(philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0))).toEqual([
      'd16cfe09',
      '94fdcceb',
      '5001e420',
      '24126ea1',
    ]);
  });

  it('builds the 64-bit high word from 16-bit halves exactly', () => {
    const cases = [
      [0xffffffff, 0xffffffff],
      [0xd2511f53, 0x12345678],
      [0xcd9e8d57, 0xfedcba98],
      [1, 0xffffffff],
      [0x10000, 0x10000],
    ];
    for (const [a, b] of cases) {
      const want = Number((BigInt(a) * BigInt(b)) >> 32n);
      expect(mulhi32(a, b)).toBe(want);
    }
  });

  it('converts to floats in [0, 1) from the top 24 bits', () => {
    expect(u32ToUnitFloat(0)).toBe(0);
    expect(u32ToUnitFloat(0xffffffff)).toBe(1 - 2 ** -24);
    expect(u32ToUnitFloat(0x80000000)).toBe(0.5);
    expect(Math.fround(u32ToUnitFloat(0x12345678))).toBe(u32ToUnitFloat(0x12345678));
  });

  it('splits a seed into two u32 key words', () => {
    expect(seedToKey(1)).toEqual([1, 0]);
    expect(seedToKey(2 ** 32 + 5)).toEqual([5, 1]);
  });
});
