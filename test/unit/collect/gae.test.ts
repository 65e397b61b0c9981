import { describe, expect, it } from 'vitest';
import { gaeEpisode } from '../../../src/collect/gae.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

const f = Math.fround;

/**
 * An independent plain loop: split the slot's steps into episode segments first, then run the
 * textbook backward recursion inside each segment, bootstrapping its last step with 0 (done)
 * or with the boot value (truncated, or cut by the end of the launch).
 */
function gaeBySegments(
  r: Float32Array,
  v: Float32Array,
  done: Int32Array,
  trunc: Int32Array,
  boot: Float32Array,
  gamma: number,
  lambda: number,
): { adv: Float32Array; ret: Float32Array } {
  const n = r.length;
  const adv = new Float32Array(n);
  const ret = new Float32Array(n);
  const g = f(gamma);
  const gl = f(g * f(lambda));
  let start = 0;
  while (start < n) {
    let end = start;
    while (end < n - 1 && !done[end] && !trunc[end]) end++;
    let next = 0;
    for (let t = end; t >= start; t--) {
      const nextValue = t === end ? (done[t] ? 0 : boot[t]) : v[t + 1];
      const delta = f(f(r[t] + f(g * nextValue)) - v[t]);
      next = t === end ? delta : f(delta + f(gl * next));
      adv[t] = next;
      ret[t] = f(next + v[t]);
    }
    start = end + 1;
  }
  return { adv, ret };
}

describe('GAE', () => {
  it('matches a hand-computed 4-step slot (gamma 0.5, lambda 0.5, truncation at step 1)', () => {
    const r = Float32Array.from([1, 0, 2, 4]);
    const v = Float32Array.from([0.5, 0.25, 1, 2]);
    const done = Int32Array.from([0, 0, 1, 0]);
    const trunc = Int32Array.from([0, 1, 0, 0]);
    const boot = Float32Array.from([0, 3, 0, 8]);
    const adv = new Float32Array(4);
    const ret = new Float32Array(4);
    gaeEpisode(r, v, done, trunc, boot, 0, 4, 0.5, 0.5, adv, ret);
    // step 3 (last, goes on): delta = 4 + 0.5 * 8 - 2 = 6
    // step 2 (done):          delta = 2 - 1 = 1, no carry
    // step 1 (truncated):     delta = 0 + 0.5 * 3 - 0.25 = 1.25, no carry
    // step 0:                 delta = 1 + 0.5 * 0.25 - 0.5 = 0.625; adv = 0.625 + 0.25 * 1.25
    expect(Array.from(adv)).toEqual([0.9375, 1.25, 1, 6]);
    expect(Array.from(ret)).toEqual([1.4375, 1.5, 2, 8]);
  });

  it('equals an independently written segment loop exactly on random slots', () => {
    const w = new Uint32Array(4);
    const u = (k: number, j: number) => u32ToUnitFloat(philox4x32(Stream.Test, 7, k, j, 0, 0, w)[0]);
    for (let trial = 0; trial < 200; trial++) {
      const L = 1 + (trial % 37);
      const r = Float32Array.from({ length: L }, (_, t) => 4 * u(trial, t) - 2);
      const v = Float32Array.from({ length: L }, (_, t) => 10 * u(trial, 1000 + t) - 5);
      const boot = Float32Array.from({ length: L }, (_, t) => 10 * u(trial, 2000 + t) - 5);
      const done = Int32Array.from({ length: L }, (_, t) => (u(trial, 3000 + t) < 0.1 ? 1 : 0));
      const trunc = Int32Array.from({ length: L }, (_, t) => (!done[t] && u(trial, 4000 + t) < 0.1 ? 1 : 0));
      // embed the slot at an offset, as in an [N * L] buffer
      const base = 3 * L;
      const padF = (x: Float32Array) => {
        const y = new Float32Array(5 * L);
        y.set(x, base);
        return y;
      };
      const padI = (x: Int32Array) => {
        const y = new Int32Array(5 * L);
        y.set(x, base);
        return y;
      };
      const adv = new Float32Array(5 * L);
      const ret = new Float32Array(5 * L);
      gaeEpisode(padF(r), padF(v), padI(done), padI(trunc), boot, base, L, 0.99, 0.95, adv, ret);
      const want = gaeBySegments(r, v, done, trunc, boot, 0.99, 0.95);
      expect(Array.from(adv.subarray(base, base + L))).toEqual(Array.from(want.adv));
      expect(Array.from(ret.subarray(base, base + L))).toEqual(Array.from(want.ret));
    }
  });
});
