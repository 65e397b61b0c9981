/**
 * The 3 portfolio features of every collection parity case's reference states (value_norm,
 * position_norm, spread_norm: the part of the state the kernels compute themselves) are finite
 * and in range. A kernel passes its case only by matching these values (NaN matches only NaN,
 * src/parity/compare.ts), so its own portfolio features are finite too.
 */
import { describe, expect, it } from 'vitest';
import { MARKET_FEATURES, STATE_DIM } from '../../../src/nets/layout.js';
import { collectParityCases } from '../../../src/parity/collect_cases.js';

describe('collection parity cases: portfolio features', () => {
  it('are finite and in range in every reference state', async () => {
    const seen = new Set<string>();
    const kernels = new Set<string>();
    let states = 0;
    // One case per kernel and head: the variants and tile engines of one kernel share the reference.
    for (const c of collectParityCases()) {
      const key = `${c.kernel} ${c.name.split(' ')[1]}`;
      if (kernels.has(key)) continue;
      kernels.add(key);
      const expected = await c.expected();
      for (const [name, buf] of Object.entries(expected)) {
        if (!/(^|:)(states|nextStates)$/.test(name)) continue;
        seen.add(name);
        for (let r = 0; r < buf.length / STATE_DIM; r++) {
          const [value, position, spread] = buf.subarray(
            r * STATE_DIM + MARKET_FEATURES,
            (r + 1) * STATE_DIM,
          );
          if (!(Math.abs(value) <= 5 && Math.abs(position) <= 1 && spread >= 0 && Number.isFinite(spread)))
            throw new Error(`${c.name} ${name} row ${r}: ${value}, ${position}, ${spread}`);
          states++;
        }
      }
    }
    expect([...seen].sort()).toEqual(['1:nextStates', '1:states', '2:nextStates', '2:states']);
    expect(kernels.size).toBeGreaterThan(2);
    expect(states).toBeGreaterThan(1000);
  });
});
