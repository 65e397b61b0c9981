/**
 * Invariants of the simulator over seeded random action sequences on a volatile random walk
 * (and a degenerate flat market): accounting identities, signs, bounds, finiteness, and the
 * restart rules. The test also counts what happened, so that it fails if the data stops
 * exercising fills of every kind, reversals, every barrier event, truncation and restarts.
 */
import { describe, expect, it } from 'vitest';
import { defaultConfig, type EnvConfig, SPEC_REWARD_TERMS } from '../../../src/config.js';
import type { Market } from '../../../src/data/types.js';
import { ACTIONS, EXPOSURES, exposureIndex, orderType } from '../../../src/env/actions.js';
import { BarrierEvent, createStepOut } from '../../../src/env/output.js';
import { envParams } from '../../../src/env/params.js';
import {
  buildState,
  createEnv,
  drawStartBar,
  ENV_F,
  ENV_I,
  EnvF,
  EnvI,
  portfolioValue,
} from '../../../src/env/state.js';
import { envStep } from '../../../src/env/step.js';
import { MARKET_FEATURES, STATE_DIM } from '../../../src/nets/layout.js';
import { philox4x32 } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';
import { handMarket, randomMarket } from './fixtures.js';

const f = Math.fround;

function randomActions(seed: number, count: number): Int32Array {
  const w = new Uint32Array(4);
  return Int32Array.from(
    { length: count },
    (_, k) => philox4x32(Stream.Test, 99, seed, k, 0, 0, w)[0] % ACTIONS,
  );
}

function run(market: Market, episodes: number, steps: number, patch: Partial<EnvConfig>) {
  const params = envParams({ ...defaultConfig.env, ...SPEC_REWARD_TERMS, ...patch });
  const split = { start: 150, end: market.n - 50 };
  const env = createEnv(market, split, params, episodes, 11);
  const out = createStepOut();
  const state = new Float32Array(STATE_DIM);
  const seen = {
    fills: [0, 0, 0],
    reversals: 0,
    events: [0, 0, 0, 0],
    done: 0,
    truncated: 0,
    penalties: 0,
  };
  for (let e = 0; e < episodes; e++) {
    const actions = randomActions(e, steps);
    for (let s = 0; s < steps; s++) {
      const a = actions[s];
      const fb = e * ENV_F;
      const ib = e * ENV_I;
      const t = env.i[ib + EnvI.Bar];
      const unitsBefore = env.f[fb + EnvF.Units];
      const valueBefore = portfolioValue(env, e);
      const costsBefore = env.f[fb + EnvF.CumCosts];
      const restartsBefore = env.i[ib + EnvI.Restarts];
      expect(t).toBeGreaterThanOrEqual(split.start);
      expect(t + 1).toBeLessThan(split.end);
      expect(valueBefore).toBeGreaterThan(0);
      buildState(env, market, e, state, 0);
      if (s > 0 && !out.done && !out.truncated) expect(state).toEqual(out.nextState);

      envStep(env, market, params, e, a, out, null);

      const close1 = market.ohlc[(t + 1) * 4 + 3];
      expect(out.bar).toBe(t);
      expect(out.value).toBe(f(out.cash + f(out.units * close1)));
      expect(out.costs).toBeGreaterThanOrEqual(0);
      expect(out.total).toBe(f(f(f(f(out.pnl + out.barrier) + out.risk) + out.diversity) + out.curiosity));
      expect(out.risk).toBeLessThanOrEqual(0);
      for (const x of [out.units, out.cash, out.value, out.costs, out.total, out.fillPrice, out.exitPrice]) {
        expect(Number.isFinite(x)).toBe(true);
      }
      for (const x of out.nextState) expect(Number.isFinite(x)).toBe(true);
      expect(Array.from(out.nextState.subarray(0, MARKET_FEATURES))).toEqual(
        Array.from(market.features.subarray((t + 1) * MARKET_FEATURES, (t + 2) * MARKET_FEATURES)),
      );
      expect(Math.abs(out.nextState[51])).toBeLessThanOrEqual(5);
      expect(Math.abs(out.nextState[52])).toBeLessThanOrEqual(1);
      expect(out.nextState[53]).toBe(f(market.spreadBps[t + 1] / 10));

      // Exposure bound: a fill moves toward the target and never beyond it, so |units| never
      // exceeds max(|units before|, |target units|) with target units = 0.95 * V_t / price.
      const targetUnits = Math.abs((EXPOSURES[exposureIndex(a)] * 0.95 * valueBefore) / (out.fillPrice || 1));
      const bound = Math.max(Math.abs(unitsBefore), out.filled ? targetUnits : 0) * (1 + 1e-6);
      expect(Math.abs(out.units)).toBeLessThanOrEqual(bound);
      if (!out.filled && out.barrierEvent === BarrierEvent.None) expect(out.units).toBe(unitsBefore);
      if (out.barrierEvent !== BarrierEvent.None) expect(out.units).toBe(0);

      if (out.filled) seen.fills[orderType(a)]++;
      if (out.filled && unitsBefore * out.units < 0) seen.reversals++;
      seen.events[out.barrierEvent]++;
      seen.done += out.done;
      seen.truncated += out.truncated;
      if (out.diversity < 0) seen.penalties++;
      expect(out.done && out.truncated).toBeFalsy();

      const ended = out.done || out.truncated;
      expect(env.i[ib + EnvI.Restarts]).toBe(restartsBefore + (ended ? 1 : 0));
      if (ended) {
        // restarted at once at the Philox draw for this restart count, flat with V_0
        expect(env.i[ib + EnvI.Bar]).toBe(drawStartBar(env, params, e, restartsBefore + 1));
        expect(env.i[ib + EnvI.Step]).toBe(0);
        expect(env.f[fb + EnvF.Cash]).toBe(params.initialCapital);
        expect(env.f[fb + EnvF.Units]).toBe(0);
        expect(env.i[ib + EnvI.DivCount]).toBe(0);
      } else {
        expect(env.f[fb + EnvF.CumCosts]).toBeGreaterThanOrEqual(costsBefore);
        expect(env.i[ib + EnvI.Bar]).toBe(t + 1);
      }
      if (out.truncated) expect(env.i[ib + EnvI.Step]).toBe(0);
    }
  }
  return seen;
}

describe('simulator invariants over random actions', () => {
  it('hold on a volatile random walk, and the data exercises every path', () => {
    const seen = run(randomMarket(1200, 5), 6, 300, { episodeBars: 12, maxHoldingBars: 3 });
    expect(Math.min(...seen.fills)).toBeGreaterThan(20);
    expect(seen.reversals).toBeGreaterThan(5);
    expect(seen.events[BarrierEvent.Profit]).toBeGreaterThan(5);
    expect(seen.events[BarrierEvent.Stop]).toBeGreaterThan(5);
    expect(seen.events[BarrierEvent.Time]).toBeGreaterThan(0);
    expect(seen.truncated).toBeGreaterThan(0);
    expect(seen.penalties).toBeGreaterThan(0);
  });

  it('stay finite on flat prices with zero spread', () => {
    const bars = Array.from({ length: 400 }, () => [50, 50, 50, 50] as [number, number, number, number]);
    const market = handMarket(bars, 0);
    const seen = run(market, 3, 200, { episodeBars: 30 });
    // passive orders never fill when nothing trades through; market and limit orders do
    expect(seen.fills[2]).toBe(0);
    expect(seen.fills[0]).toBeGreaterThan(0);
  });

  it('draws start bars uniformly inside the split, leaving room for a whole episode', () => {
    const market = randomMarket(400, 1);
    const params = envParams({ ...defaultConfig.env, ...SPEC_REWARD_TERMS, episodeBars: 50 });
    const env = createEnv(market, { start: 100, end: 160 }, params, 4, 3);
    const hits = new Set<number>();
    for (let r = 0; r < 400; r++) hits.add(drawStartBar(env, params, r % 4, r));
    // 160 - 100 - 50 = 10 possible starts: 100..109 (the last episode reaches bar 159)
    expect([...hits].sort((a, b) => a - b)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
    expect(() => createEnv(market, { start: 100, end: 150 }, params, 1, 3)).toThrow(/env.episodeBars/);
  });
});
