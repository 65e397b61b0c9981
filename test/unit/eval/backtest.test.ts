import { describe, expect, it } from 'vitest';
import { cloneDefaults } from '../../../src/config.js';
import { encodeAction, OrderType } from '../../../src/env/actions.js';
import { BUY_AND_HOLD_ACTION, backtest, baselines, buyAndHold } from '../../../src/eval/backtest.js';
import { argmax, ppoGreedyPolicy, randomPolicy } from '../../../src/eval/policies.js';
import { NUM_ACTIONS, ppoActorLayout } from '../../../src/nets/layout.js';
import { handMarket, type Ohlc, randomMarket } from '../env/fixtures.js';

const env = cloneDefaults().env;
const FLAT = encodeAction(2, OrderType.Market, 2);
const SHORT = encodeAction(0, OrderType.Market, 2);
/** Target exposure +1 by market order, the full gap, every bar: a policy through the simulator. */
const LONG = encodeAction(4, OrderType.Market, 2);
const alwaysLong = () => LONG;

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
    const r = backtest(m, { start: 0, end: 3 }, env, alwaysLong, 252);
    const fill = 100 * (1 + 1e-4);
    const units = (0.95 * 1) / fill;
    const cash = 1 - units * fill * (1 + 1e-4);
    expect(r.trace.equity[1]).toBeCloseTo(cash + units * 100.2, 6);
    expect(r.trace.traded[0]).toBeCloseTo(0.95, 6);
    expect(r.trace.exposure[0]).toBeCloseTo((units * 100.2) / (cash + units * 100.2), 6);
    // The rise pushed exposure above 0.95: the fixed target trims it back, a small sale at the
    // next open; no barrier is touched.
    expect(r.trace.traded[1]).toBeGreaterThan(0);
    expect(r.trace.traded[1]).toBeLessThan(0.002);
    expect(r.trace.equity[2]).toBeCloseTo(cash + units * 100.3, 5);
    expect(r.metrics.trades).toBe(1);
  });

  it('lets barriers close positions without ending the backtest', () => {
    const m = randomMarket(2000, 3);
    const split = { start: 100, end: 1900 };
    const r = backtest(m, split, env, alwaysLong, 252);
    expect(r.metrics.bars).toBe(split.end - split.start - 1);
    // The volatile walk fires many barriers; the policy re-opens after each, so many trades.
    expect(r.metrics.trades).toBeGreaterThan(5);
    expect(r.metrics.avgExposure).toBeGreaterThan(0.5);
    expect(Array.from(r.actions).every((a) => a === LONG)).toBe(true);
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

/**
 * A steady rise of 0.2% a bar whose bars span about 100 bps from low to high: wider than the
 * 30 bps stop and the 50 bps profit target, so a position held through the simulator meets a
 * barrier within a bar or two. The spread changes every bar (2 + t % 5 bps).
 */
function risingMarket(n: number): ReturnType<typeof handMarket> {
  const bars: Ohlc[] = [];
  let close = 100;
  for (let t = 0; t < n; t++) {
    const open = close;
    close = open * 1.002;
    bars.push([open, close * 1.004, open * 0.996, close]);
  }
  const m = handMarket(bars);
  for (let t = 0; t < n; t++) m.spreadBps[t] = 2 + (t % 5);
  return m;
}

describe('buyAndHold', () => {
  it('buys once at the first decision and holds the units, marked at every close, where barriers would fire', () => {
    const m = risingMarket(300);
    const split = { start: 7, end: 260 };
    const steps = split.end - split.start - 1;
    // Through the simulator the same target is closed by barriers again and again.
    expect(backtest(m, split, env, alwaysLong, 252).metrics.trades).toBeGreaterThan(20);

    const r = buyAndHold(m, split, env, 252);
    const s = split.start;
    // Independently, in f64: a market buy at the next open plus half the decision bar's spread
    // of (1 - reservePct) * V_0, the fee from cash, then nothing.
    const fill = m.ohlc[(s + 1) * 4] * (1 + m.spreadBps[s] / 2e4);
    const units = ((1 - env.reservePct) * env.initialCapital) / fill;
    const cash = env.initialCapital - units * fill * (1 + env.feeBps / 1e4);
    expect(r.trace.equity).toHaveLength(steps + 1);
    expect(r.trace.equity[0]).toBe(env.initialCapital);
    for (let k = 1; k <= steps; k++) {
      const close = m.ohlc[(s + k) * 4 + 3];
      const value = cash + units * close;
      expect(Math.abs(r.trace.equity[k] / value - 1), `bar ${k}`).toBeLessThan(1e-6);
      expect(Math.abs(r.trace.exposure[k - 1] - (units * close) / value), `bar ${k}`).toBeLessThan(1e-6);
    }
    // Held to the end and marked, not sold: the last value is the position at the last close.
    const last = m.ohlc[(split.end - 1) * 4 + 3];
    expect(r.metrics.totalReturn).toBeCloseTo((cash + units * last) / env.initialCapital - 1, 5);
    expect(r.metrics.trades).toBe(1);
    expect(r.metrics.avgHoldingBars).toBe(steps - 1);
    expect(r.trace.traded[0]).toBeCloseTo(units * fill, 6);
    expect(Array.from(r.trace.traded.subarray(1)).every((x) => x === 0)).toBe(true);
    expect(Array.from(r.actions).every((a) => a === BUY_AND_HOLD_ACTION)).toBe(true);
  });

  it("pays exactly one market buy's costs: the simulator's first step of the same order", () => {
    const m = randomMarket(600, 4);
    const split = { start: 50, end: 550 };
    const r = buyAndHold(m, split, env, 252);
    const policy = backtest(m, split, env, alwaysLong, 252);
    // Step 1 is the same order through the same fill and fee functions, bit for bit.
    expect(r.trace.equity[1]).toBe(policy.trace.equity[1]);
    expect(r.trace.traded[0]).toBe(policy.trace.traded[0]);
    expect(r.trace.exposure[0]).toBe(policy.trace.exposure[0]);
    // Without costs the held units would be worth exactly their notional at cost; the difference
    // is the half-spread in the fill and one fee, whatever the price does after.
    const s = split.start;
    const fill = m.ohlc[(s + 1) * 4] * (1 + m.spreadBps[s] / 2e4);
    const units = (1 - env.reservePct) / fill;
    const costs = units * (fill - m.ohlc[(s + 1) * 4]) + units * fill * (env.feeBps / 1e4);
    const last = m.ohlc[(split.end - 1) * 4 + 3];
    const frictionless = 1 + units * (last - m.ohlc[(s + 1) * 4]);
    expect(r.trace.equity[split.end - split.start - 1]).toBeCloseTo(frictionless - costs, 6);
  });

  it('stops at the collapse level and keeps the curve flat after it', () => {
    // No reserve: the whole account is long, so a 99.5% fall takes V below 1% of V_0; the
    // rebound after it is not held any more.
    const noReserve = { ...env, reservePct: 0 };
    const m = handMarket([
      [100, 100, 100, 100],
      [100, 100, 100, 100],
      [100, 100, 50, 50],
      [50, 50, 0.5, 0.5],
      [0.5, 100, 0.5, 100],
      [100, 100, 100, 100],
    ]);
    const r = buyAndHold(m, { start: 0, end: 6 }, noReserve, 252);
    const units = 1 / (100 * (1 + 1e-4));
    const cash = 1 - units * 100 * (1 + 1e-4) * (1 + 1e-4);
    expect(r.trace.equity[2]).toBeCloseTo(cash + units * 50, 6);
    expect(r.trace.equity[3]).toBeCloseTo(cash + units * 0.5, 6);
    expect(r.trace.equity[3]).toBeLessThan(0.01);
    expect(r.trace.equity[4]).toBe(r.trace.equity[3]);
    expect(r.trace.equity[5]).toBe(r.trace.equity[3]);
    expect(Array.from(r.trace.exposure.subarray(3))).toEqual([0, 0]);
    // The reserve keeps 5% in cash: the same fall does not collapse it, and the rebound counts.
    const held = buyAndHold(m, { start: 0, end: 6 }, env, 252);
    expect(held.trace.equity[5]).toBeGreaterThan(0.9);
  });

  it('rejects a split without a step', () => {
    expect(() => buyAndHold(randomMarket(50, 1), { start: 3, end: 4 }, env, 252)).toThrow(/has no step/);
  });
});

describe('baselines', () => {
  it('hold buy-and-hold (one trade) and run the random policy through the simulator', () => {
    const m = randomMarket(1500, 2);
    const split = { start: 100, end: 1400 };
    const b = baselines(m, split, env, 7, 252);
    expect(b.buyHold).toEqual(buyAndHold(m, split, env, 252).metrics);
    expect(b.buyHold.trades).toBe(1);
    expect(b.random).toEqual(backtest(m, split, env, randomPolicy(7), 252).metrics);
  });

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
