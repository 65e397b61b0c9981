import { describe, expect, it } from 'vitest';
import { feistelHalfBits, shuffleIndex, shufflePermutation } from '../../../src/learn/shuffle.js';

describe('minibatch shuffle', () => {
  it('is a permutation of [0, count) for awkward and round sizes', () => {
    for (const count of [1, 2, 3, 5, 16, 17, 255, 256, 257, 1000, 4097, 64_000]) {
      const perm = shufflePermutation(count, 3, 1);
      const seen = new Uint8Array(count);
      for (const p of perm) {
        expect(p).toBeLessThan(count);
        seen[p]++;
      }
      expect(seen.every((s) => s === 1)).toBe(true);
    }
  });

  it('keeps the Feistel domain under 4 * count', () => {
    for (const count of [2, 3, 5, 1000, 64_000, 2 ** 31 - 1, 2 ** 31]) {
      const domain = 2 ** (2 * feistelHalfBits(count));
      expect(domain).toBeGreaterThanOrEqual(count);
      expect(domain).toBeLessThan(4 * count);
    }
    // The largest domain still yields indices in range (32-bit words, no sign trouble).
    const count = 2 ** 31 - 1;
    for (const i of [0, 1, count - 1]) expect(shuffleIndex(i, count, 0, 9)).toBeLessThan(count);
  });

  it('is deterministic per (seed, epoch) and differs across epochs and seeds', () => {
    const a = shufflePermutation(1000, 4, 77);
    expect(shufflePermutation(1000, 4, 77)).toEqual(a);
    const fixedPoints = (b: Uint32Array) => b.reduce((n, p, i) => n + (p === a[i] ? 1 : 0), 0);
    expect(fixedPoints(shufflePermutation(1000, 5, 77))).toBeLessThan(20);
    expect(fixedPoints(shufflePermutation(1000, 4, 78))).toBeLessThan(20);
    // Not the identity either.
    expect(a.reduce((n, p, i) => n + (p === i ? 1 : 0), 0)).toBeLessThan(20);
  });

  it('sends an index to every position about equally often across epochs', () => {
    // Chi-square of where index 0 lands among 10 positions over 5000 epochs (9 dof;
    // p = 0.001 critical value 27.9).
    const count = 10;
    const epochs = 5000;
    const hits = new Array(count).fill(0);
    for (let e = 0; e < epochs; e++) hits[shuffleIndex(0, count, e, 5)]++;
    const expected = epochs / count;
    const chi2 = hits.reduce((s, h) => s + (h - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(27.9);
  });

  it('rejects indices outside the domain', () => {
    expect(() => shuffleIndex(10, 10, 0, 1)).toThrow(/outside \[0, 10\)/);
    expect(() => shuffleIndex(0, 0, 0, 1)).toThrow(/count 0/);
  });
});
