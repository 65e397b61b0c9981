import { describe, expect, it } from 'vitest';
import { createDqnRollout, type DqnRollout } from '../../../src/collect/rollout.js';
import { createPer, perBeta, perInsert, perSample, perTotal, perUpdate } from '../../../src/learn/per.js';
import { createReplay, insertRollout, REPLAY_F, ReplayF } from '../../../src/learn/replay.js';
import { STATE_DIM } from '../../../src/nets/layout.js';

const f = Math.fround;

/** 2 slots x 5 steps; state k of a row holds idx * 100 + k, next states idx * 100 + 50 + k. */
function rollout(): DqnRollout {
  const r = createDqnRollout(2, 5);
  for (let idx = 0; idx < 10; idx++) {
    for (let k = 0; k < STATE_DIM; k++) {
      r.states[idx * STATE_DIM + k] = idx * 100 + k;
      r.nextStates[idx * STATE_DIM + k] = idx * 100 + 50 + k;
    }
    r.actions[idx] = idx + 1;
    r.rewards[idx] = idx + 1;
  }
  r.dones[1] = 1; // slot 0: the episode ends at step 1
  r.truncateds[7] = 1; // slot 1: truncated at step 2
  return r;
}

describe('replay insert with n-step returns', () => {
  it('folds n = 3 steps, stops at done, truncation and the launch end', () => {
    const rep = createReplay(16);
    const g = 0.5;
    insertRollout(rep, rollout(), g, 3);
    const row = (i: number) => ({
      ret: rep.f[i * REPLAY_F + ReplayF.Return],
      disc: rep.f[i * REPLAY_F + ReplayF.Discount],
      next: rep.f[i * REPLAY_F + ReplayF.Next] / 100,
      state: rep.f[i * REPLAY_F + ReplayF.State] / 100,
      action: rep.i[i],
    });
    // Rewards are idx + 1. Slot 0: rows 0..4, done at 1.
    expect(row(0)).toEqual({ ret: 1 + 0.5 * 2, disc: 0, next: 1.5, state: 0, action: 1 });
    expect(row(1)).toEqual({ ret: 2, disc: 0, next: 1.5, state: 1, action: 2 });
    expect(row(2)).toEqual({ ret: 3 + 0.5 * 4 + 0.25 * 5, disc: 0.125, next: 4.5, state: 2, action: 3 });
    expect(row(3)).toEqual({ ret: 4 + 0.5 * 5, disc: 0.25, next: 4.5, state: 3, action: 4 }); // launch end
    expect(row(4)).toEqual({ ret: 5, disc: 0.5, next: 4.5, state: 4, action: 5 });
    // Slot 1: rows 5..9, truncated at 7 (bootstrapped from its next state).
    expect(row(5)).toEqual({ ret: 6 + 0.5 * 7 + 0.25 * 8, disc: 0.125, next: 7.5, state: 5, action: 6 });
    expect(row(6)).toEqual({ ret: 7 + 0.5 * 8, disc: 0.25, next: 7.5, state: 6, action: 7 });
    expect(row(7)).toEqual({ ret: 8, disc: 0.5, next: 7.5, state: 7, action: 8 });
    expect(row(8)).toEqual({ ret: 9 + 0.5 * 10, disc: 0.25, next: 9.5, state: 8, action: 9 });
    expect(rep.size).toBe(10);
    expect(rep.head).toBe(10);
  });

  it('n = 1 is the one-step transition', () => {
    const rep = createReplay(16);
    insertRollout(rep, rollout(), 0.9, 1);
    expect(rep.f[2 * REPLAY_F + ReplayF.Return]).toBe(3);
    expect(rep.f[2 * REPLAY_F + ReplayF.Discount]).toBe(f(0.9));
    expect(rep.f[1 * REPLAY_F + ReplayF.Discount]).toBe(0);
  });

  it('wraps around the ring and keeps the last rows of an oversized launch', () => {
    const rep = createReplay(7);
    expect(insertRollout(rep, rollout(), 0.5, 3)).toEqual({ first: 3, count: 7 });
    // Rows 3..9 of the launch land at (0 + idx) % 7: idx 7, 8, 9 at 0, 1, 2.
    expect(rep.i[0]).toBe(8);
    expect(rep.i[3]).toBe(4);
    expect(rep.head).toBe(3);
    expect(rep.size).toBe(7);
    expect(insertRollout(rep, rollout(), 0.5, 3)).toEqual({ first: 6, count: 7 });
    expect(rep.i[6]).toBe(4); // launch row 3 at (3 + 3) % 7
  });
});

describe('prioritized replay', () => {
  it('keeps every node the sum of its children and enters new rows at the max priority', () => {
    const per = createPer(5, 0.6, 1e-6);
    expect(per.leaves).toBe(8);
    perInsert(per, 0, 5);
    expect(perTotal(per)).toBe(5);
    perUpdate(per, Int32Array.from([1, 3, 1]), [4, -2, 9], 3); // duplicate: the last wins
    const p = (x: number) => f(f(x + 1e-6) ** 0.6);
    expect(per.tree[8 + 1]).toBe(p(9));
    expect(per.tree[8 + 3]).toBe(p(2));
    expect(per.maxPriority).toBe(f(9 + 1e-6));
    perInsert(per, 4, 3); // wraps: rows 4, 0, 1
    expect(per.tree[8 + 0]).toBe(p(9));
    for (let k = 7; k >= 1; k--) expect(per.tree[k]).toBe(f(per.tree[2 * k] + per.tree[2 * k + 1]));
    expect(per.tree[8 + 5]).toBe(0);
  });

  it('samples rows in proportion to p^alpha (chi-square, fixed seed) with max-normalised weights', () => {
    const n = 10;
    const per = createPer(n, 0.6, 1e-6);
    perInsert(per, 0, n);
    const td = Array.from({ length: n }, (_, i) => (i === 4 ? 0 : i + 1));
    perUpdate(
      per,
      Int32Array.from({ length: n }, (_, i) => i),
      td,
      n,
    );
    const total = perTotal(per);
    const B = 64;
    const rows = new Int32Array(B);
    const w = new Float32Array(B);
    const counts = new Float64Array(n);
    const draws = 400;
    const beta = 0.4;
    for (let s = 0; s < draws; s++) {
      perSample(per, n, B, beta, [7, 0], s, rows, w);
      let maxW = 0;
      for (let j = 0; j < B; j++) {
        counts[rows[j]]++;
        const prob = per.tree[per.leaves + rows[j]] / total;
        const want = (n * prob) ** -beta;
        maxW = Math.max(maxW, want);
        expect(w[j]).toBeGreaterThan(0);
        expect(w[j]).toBeLessThanOrEqual(1);
      }
      for (let j = 0; j < B; j++) {
        const prob = per.tree[per.leaves + rows[j]] / total;
        expect(w[j]).toBeCloseTo((n * prob) ** -beta / maxW, 5);
      }
    }
    let chi2 = 0;
    for (let i = 0; i < n; i++) {
      const expected = (draws * B * per.tree[per.leaves + i]) / total;
      chi2 += (counts[i] - expected) ** 2 / expected;
    }
    // 9 degrees of freedom; stratified sampling makes chi2 smaller than iid draws would. The
    // 0.999 quantile is 27.9; uniform sampling (the mutation tried) gives chi2 in the thousands.
    expect(chi2).toBeLessThan(27.9);
    // Row 4's priority is eps^alpha (~2.5e-4 of the total): next to never.
    expect(counts[4]).toBeLessThan(20);
  });

  it('never picks an empty leaf, even with thresholds at the total', () => {
    const per = createPer(6, 1, 1e-6);
    perInsert(per, 0, 3);
    const rows = new Int32Array(256);
    const w = new Float32Array(256);
    for (let s = 0; s < 50; s++) {
      perSample(per, 3, 256, 1, [1, 2], s, rows, w);
      for (const r of rows) expect(r).toBeLessThan(3);
    }
  });

  it('anneals beta linearly and holds it at the end', () => {
    expect(perBeta(0.4, 1, 0, 100)).toBe(0.4);
    expect(perBeta(0.4, 1, 50, 100)).toBeCloseTo(0.7, 12);
    expect(perBeta(0.4, 1, 150, 100)).toBe(1);
  });
});
