import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../../src/config.js';
import { entropyTimesCount, pushCategory } from '../../../src/env/diversity.js';
import { ENTROPY_TIE_MARGIN, entropyTable, envParams } from '../../../src/env/params.js';
import { createEnv, ENV_I, EnvI } from '../../../src/env/state.js';
import { randomMarket } from './fixtures.js';

/** Shannon entropy in bits of a histogram, in f64. */
function entropyBits(counts: number[]): number {
  const n = counts.reduce((a, b) => a + b, 0);
  return -counts.filter((c) => c > 0).reduce((h, c) => h + (c / n) * Math.log2(c / n), 0);
}

describe('diversity entropy', () => {
  it('the f32 table decision equals the exact "H < 1 bit" for every histogram of a 100-window', () => {
    const w = defaultConfig.env.diversityWindow;
    const table = entropyTable(w);
    const cutoff = Math.fround(1 - ENTROPY_TIE_MARGIN);
    let ties = 0;
    let mismatches = 0;
    for (let n = 1; n <= w; n++) {
      for (let c0 = 0; c0 <= n; c0++) {
        for (let c1 = 0; c0 + c1 <= n; c1++) {
          const c2 = n - c0 - c1;
          const exact = entropyBits([c0, c1, c2]);
          // exact ties (a 50/50 split of two categories) are not below the threshold
          if (Math.abs(exact - 1) < 1e-12) ties++;
          const below = exact < 1 - 1e-12;
          const table32 = entropyTimesCount(table, n, c0, c1, c2) < Math.fround(n * cutoff);
          if (below !== table32) mismatches++;
          expect(Math.abs(entropyTimesCount(table, n, c0, c1, c2) / n - exact)).toBeLessThan(2e-6);
        }
      }
    }
    expect(ties).toBe(3 * 50);
    expect(mismatches).toBe(0);
  });

  it('keeps the circular window and its histogram consistent over many pushes', () => {
    const params = envParams({ ...defaultConfig.env, diversityWindow: 7, episodeBars: 10 });
    const env = createEnv(randomMarket(40, 3), { start: 0, end: 40 }, params, 2, 1);
    const cats = Array.from({ length: 50 }, (_, k) => (k * k + 3 * k) % 3);
    cats.forEach((c, k) => {
      pushCategory(env, 1, c);
      const last = cats.slice(Math.max(0, k + 1 - 7), k + 1);
      const ib = ENV_I;
      expect(env.i[ib + EnvI.DivCount]).toBe(last.length);
      for (let cat = 0; cat < 3; cat++) {
        expect(env.i[ib + EnvI.Hist + cat]).toBe(last.filter((x) => x === cat).length);
      }
    });
    // slot 0 untouched
    expect(env.i[EnvI.DivCount]).toBe(0);
  });
});
