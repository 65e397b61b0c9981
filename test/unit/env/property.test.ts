/**
 * The simulator's 3 portfolio features (value_norm, position_norm, spread_norm: the part of the
 * state the collection kernels compute themselves, mirroring src/env/) and its rewards stay
 * finite and in range under random actions on degenerate but valid series (test/unit/data/series.fixtures.ts),
 * with spreads up to the largest `data check` accepts.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { cloneDefaults, defaultConfig } from '../../../src/config.js';
import { MAX_SPREAD_BPS } from '../../../src/data/validate.js';
import { ACTIONS } from '../../../src/env/actions.js';
import { createStepOut } from '../../../src/env/output.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import { envStep } from '../../../src/env/step.js';
import { buildMarket } from '../../../src/features/market.js';
import { MARKET_FEATURES } from '../../../src/nets/layout.js';
import { philox4x32 } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';
import { buildSeries, seriesSpec } from '../data/series.fixtures.js';

const L = 120;
const EPISODES = 4;
const STEPS = 300;

describe('portfolio features on degenerate series (property)', () => {
  it('are finite and in range, and so are the rewards, under random actions', () => {
    const params = envParams({ ...defaultConfig.env, episodeBars: 64 });
    const cfg = cloneDefaults();
    const out = createStepOut();
    const w = new Uint32Array(4);
    fc.assert(
      fc.property(seriesSpec, fc.constantFrom(0, 2, MAX_SPREAD_BPS), (spec, spread) => {
        const bars = buildSeries(spec, L + 200);
        bars.spreadBps = Float64Array.from({ length: bars.n }, (_, t) => (t % 3 === 0 ? spread : spread / 2));
        const market = buildMarket(bars, cfg);
        const env = createEnv(market, { start: L, end: market.n }, params, EPISODES, spec.seed);
        for (let e = 0; e < EPISODES; e++) {
          for (let s = 0; s < STEPS; s++) {
            const a = philox4x32(Stream.Test, spec.seed, e, s, 41, 0, w)[0] % ACTIONS;
            envStep(env, market, params, e, a, out, null);
            const [value, position, spreadNorm] = out.nextState.subarray(MARKET_FEATURES);
            const where = `episode ${e} step ${s}: value ${value}, position ${position}, spread ${spreadNorm}, reward ${out.total}`;
            if (!(Math.abs(value) <= 5 && Math.abs(position) <= 1 && spreadNorm >= 0 && spreadNorm <= 1e3))
              throw new Error(where);
            if (!Number.isFinite(out.total) || !Number.isFinite(out.value)) throw new Error(where);
          }
        }
      }),
      { numRuns: 60, seed: 20261204 },
    );
  });
});
