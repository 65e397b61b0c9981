import { describe, expect, it } from 'vitest';
import { cloneDefaults } from '../../../src/config.js';
import { encodeAction, OrderType } from '../../../src/env/actions.js';
import { backtest, baselines } from '../../../src/eval/backtest.js';
import {
  argmax,
  BUY_AND_HOLD_ACTION,
  buyAndHoldPolicy,
  ppoGreedyPolicy,
  randomPolicy,
} from '../../../src/eval/policies.js';
import { NUM_ACTIONS, ppoActorLayout } from '../../../src/nets/layout.js';
import { handMarket, randomMarket } from '../env/fixtures.js';

const env = cloneDefaults().env;
const FLAT = encodeAction(2, OrderType.Market, 2);
const SHORT = encodeAction(0, OrderType.Market, 2);

describe('backtest', () => {
  it('runs one step per bar but the last, and a flat policy keeps V_0', () => {
    const m = randomMarket(300, 1);
    const r = backtest(m, { start: 10, end: 210 }, env, () => FLAT, 252);
    expect(r.trace.equity).toHaveLength(200);
    expect(r.metrics.bars).toBe(199);
    expect(Array.from(r.trace.equity).every((v) => v === env.initialCapital)).toBe(true);
    expect(r.metrics).toMatchObject({ totalReturn: 0, trades: 0, turnover: 0, avgExposure: 0 });
  });

  it('buys at the next open plus half the spread, pays the fee and marks at the close', () => {
    const m = handMarket(
      [
        [100, 100, 100, 100],
        [100, 100.3, 99.9, 100.2],
        [100.2, 100.4, 100.1, 100.3],
      ],
      2,
    );
    const r = backtest(m, { start: 0, end: 3 }, env, buyAndHoldPolicy, 252);
    const fill = 100 * (1 + 1e-4);
    const units = (0.95 * 1) / fill;
    const cash = 1 - units * fill * (1 + 1e-4);
    expect(r.trace.equity[1]).toBeCloseTo(cash + units * 100.2, 6);
    expect(r.trace.traded[0]).toBeCloseTo(0.95, 6);
    expect(r.trace.exposure[0]).toBeCloseTo((units * 100.2) / (cash + units * 100.2), 6);
    // The rise pushed exposure above 0.95: the fixed target trims it back (a constant-exposure
    // buy-and-hold), a small sale at the next open; no barrier is touched.
    expect(r.trace.traded[1]).toBeGreaterThan(0);
    expect(r.trace.traded[1]).toBeLessThan(0.002);
    expect(r.trace.equity[2]).toBeCloseTo(cash + units * 100.3, 5);
    expect(r.metrics.trades).toBe(1);
  });

  it('lets barriers close positions without ending the backtest', () => {
    const m = randomMarket(2000, 3);
    const split = { start: 100, end: 1900 };
    const r = backtest(m, split, env, buyAndHoldPolicy, 252);
    expect(r.metrics.bars).toBe(split.end - split.start - 1);
    // The volatile walk fires many barriers; buy-and-hold re-opens after each, so many trades.
    expect(r.metrics.trades).toBeGreaterThan(5);
    expect(r.metrics.avgExposure).toBeGreaterThan(0.5);
    expect(Array.from(r.actions).every((a) => a === BUY_AND_HOLD_ACTION)).toBe(true);
  });

  it('stops trading after the account collapses and keeps the curve flat', () => {
    const m = handMarket([
      [100, 100, 100, 100],
      [100, 10000, 100, 10000],
      [10000, 10000, 100, 100],
      [100, 100, 100, 100],
    ]);
    const r = backtest(m, { start: 0, end: 4 }, env, () => SHORT, 252);
    expect(r.trace.equity[1]).toBeLessThan(0.01);
    expect(r.trace.equity[2]).toBe(r.trace.equity[1]);
    expect(r.trace.equity[3]).toBe(r.trace.equity[1]);
  });

  it('rejects a policy that returns a non-action', () => {
    const m = randomMarket(50, 1);
    expect(() => backtest(m, { start: 0, end: 50 }, env, () => 45, 252)).toThrow(/actions are integers/);
  });
});

describe('baselines', () => {
  it('are deterministic and the random one depends on the seed', () => {
    const m = randomMarket(1500, 2);
    const split = { start: 100, end: 1400 };
    const a = baselines(m, split, env, 7, 252);
    expect(baselines(m, split, env, 7, 252)).toEqual(a);
    expect(baselines(m, split, env, 8, 252).random).not.toEqual(a.random);
    expect(a.random.trades).toBeGreaterThan(10);
  });
});

describe('policies', () => {
  it('random policy covers all actions roughly uniformly from (seed, bar)', () => {
    const p = randomPolicy(5);
    const counts = new Array(NUM_ACTIONS).fill(0);
    const s = new Float32Array(54);
    for (let t = 0; t < 45_000; t++) counts[p(s, t)]++;
    expect(Math.min(...counts)).toBeGreaterThan(850);
    expect(Math.max(...counts)).toBeLessThan(1150);
    expect(p(s, 123)).toBe(randomPolicy(5)(s, 123));
  });

  it('greedy PPO policy is the argmax of the actor logits', () => {
    const layout = ppoActorLayout();
    const actor = new Float32Array(layout.size);
    const out = layout.layers[2];
    actor[out.bOffset + 17] = 3; // zero weights: the logits are the output bias
    actor[out.bOffset + 30] = 3;
    expect(ppoGreedyPolicy(actor)(new Float32Array(54), 0)).toBe(17);
    expect(argmax(Float32Array.from([1, 5, 5, 2]))).toBe(1);
  });
});
