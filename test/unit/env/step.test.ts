/**
 * Hand-computed simulator steps. Defaults: fee 1 bp, spread 2 bps (half-spread 1e-4), rebate
 * 0.2 bp, passive offset 1 bp, reserve 5% (target exposure 0.95 for +1), V_0 = 1, profit
 * 50 bps, stop 30 bps. The numbers in the comments are worked out in exact arithmetic; the
 * simulator runs in f32, hence the 6-7 digit tolerances.
 */
import { describe, expect, it } from 'vitest';
import { defaultConfig, type EnvConfig, SPEC_REWARD_TERMS } from '../../../src/config.js';
import type { Market } from '../../../src/data/types.js';
import { encodeAction, OrderType } from '../../../src/env/actions.js';
import { BarrierEvent, createStepOut } from '../../../src/env/output.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv, ENV_F, ENV_I, EnvF, EnvI } from '../../../src/env/state.js';
import { envStep } from '../../../src/env/step.js';
import { handMarket, type Ohlc } from './fixtures.js';

const { Market: MKT, Limit: LIM, Passive: PAS } = OrderType;
/** Exposure index 4 = +1.0, 3 = +0.5, 2 = flat, 0 = -1.0; fraction index 2 = all of the gap. */
const LONG_MARKET_ALL = encodeAction(4, MKT, 2);
const LONG_LIMIT_ALL = encodeAction(4, LIM, 2);
const LONG_LIMIT_THIRD = encodeAction(4, LIM, 0);
const LONG_PASSIVE_ALL = encodeAction(4, PAS, 2);
const HALF_LONG_PASSIVE_ALL = encodeAction(3, PAS, 2);
const FLAT_PASSIVE_ALL = encodeAction(2, PAS, 2);
const SHORT_MARKET_ALL = encodeAction(0, MKT, 2);

/**
 * |actual - expected| <= abs + 2e-6 * |expected|: the f32 simulator against exact arithmetic
 * (a few f32 roundings of relative 6e-8 each). pnl-like values take an absolute tolerance:
 * they are differences of values near 1, so their error is absolute (about 1e-7 * pnlScale).
 */
function near(actual: number, expected: number, abs = 0): void {
  const tol = abs + 2e-6 * Math.abs(expected);
  expect(Math.abs(actual - expected), `${actual} vs ${expected} (tolerance ${tol})`).toBeLessThanOrEqual(tol);
}

/** One episode starting at bar 0: episodeBars = bars - 1 leaves exactly one start bar. */
function setup(bars: Ohlc[], patch: Partial<EnvConfig> = {}) {
  const market: Market = handMarket(bars);
  const params = envParams({
    ...defaultConfig.env,
    ...SPEC_REWARD_TERMS,
    ...patch,
    episodeBars: bars.length - 1,
  });
  const env = createEnv(market, { start: 0, end: bars.length }, params, 1, 7);
  expect(env.i[EnvI.Bar]).toBe(0);
  const out = createStepOut();
  const step = (a: number) => {
    envStep(env, market, params, 0, a, out, null);
    return out;
  };
  return { env, step };
}

describe('envStep, hand-computed', () => {
  it('market buy: fills at open + half spread, pays the fee, marks at the close', () => {
    const { env, step } = setup([
      [100, 100, 100, 100],
      [100.5, 101.5, 100, 101],
      [101, 101, 101, 101],
    ]);
    const o = step(LONG_MARKET_ALL);
    // fill = 100.5 * (1 + 1e-4) = 100.51005; target units = 0.95 / 100.51005 = 0.00945179114
    expect(o.filled).toBe(1);
    near(o.fillPrice, 100.51005);
    near(o.traded, 0.00945179114);
    near(o.units, 0.00945179114);
    // cash = 1 - 0.95 - fee 0.95e-4 = 0.049905
    near(o.costs, 0.000095);
    near(o.cash, 0.049905);
    // V = 0.049905 + 0.00945179114 * 101 = 1.00453590507
    near(o.value, 1.004535905);
    near(o.pnl, 0.45359050687, 5e-5);
    // position_norm = 0.95463090 / 1.00453591 = 0.95032034 -> risk = -0.5 * 0.15032034
    near(o.risk, -0.07516017);
    expect(o.barrierEvent).toBe(BarrierEvent.None);
    expect(o.diversity).toBe(0);
    near(o.total, 0.45359050687 - 0.07516017, 5e-5);
    // entry = fill; long barriers at entry * 1.005 and entry * 0.997; expiry = bar 1 + 120
    near(env.f[EnvF.EntryPrice], 100.51005);
    near(env.f[EnvF.ProfitLevel], 101.01260025);
    near(env.f[EnvF.StopLevel], 100.20851985);
    expect(env.i[EnvI.Expiry]).toBe(121);
    near(o.nextState[52], 0.95032034);
  });

  it('passive buy does not fill when the low only touches its price (needs a trade through)', () => {
    // passive buy price = 100 * (1 - 1e-4) = 99.99 (the f32 product, used as the bar's low)
    const price = Math.fround(100 * Math.fround(1 - 1e-4));
    const touch = setup([
      [100, 100, 100, 100],
      [100, 100.2, price, 100.1],
      [100, 100, 100, 100],
    ]);
    const o = touch.step(LONG_PASSIVE_ALL);
    expect(o.filled).toBe(0);
    expect(o.units).toBe(0);
    expect(o.cash).toBe(1);
    expect(o.costs).toBe(0);
    expect(o.value).toBe(1);
    expect(o.pnl).toBe(0);
    expect(touch.env.i[EnvI.Expiry]).toBe(-1);

    // one f32 step lower the bar trades through: fills at 99.99, fee (1 - 0.2) bp of 0.95
    const below = Math.fround(price - 1e-5);
    const through = setup([
      [100, 100, 100, 100],
      [100, 100.2, below, 100.1],
      [100, 100, 100, 100],
    ]);
    const p = through.step(LONG_PASSIVE_ALL);
    expect(p.filled).toBe(1);
    expect(p.fillPrice).toBe(price);
    near(p.costs, 0.95 * 0.8e-4);
  });

  it('a partial fraction trades a third of the remaining gap each step', () => {
    const { step } = setup([
      [100, 100, 100, 100],
      [100, 100.2, 99.8, 100],
      [100, 100.2, 99.8, 100],
      [100, 100, 100, 100],
    ]);
    // step 1: limit buy at 100, target units 0.0095, trades 0.0095 / 3 = 0.00316667
    const a = step(LONG_LIMIT_THIRD);
    expect(a.fillPrice).toBe(100);
    near(a.traded, 0.0031666667);
    // cash = 1 - 0.31666667 - 0.31666667e-4 = 0.68330167; V = 0.99996833
    near(a.cash, 0.6833016667);
    near(a.value, 0.9999683333);
    // step 2: target units 0.95 * 0.99996833 / 100 = 0.00949970; gap 0.00633303, a third 0.00211101
    const b = step(LONG_LIMIT_THIRD);
    near(b.traded, 0.0021110108);
    near(b.units, 0.0052776775);
    near(b.cash, 0.4721794732);
    near(b.value, 0.9999472232);
    expect(b.barrierEvent).toBe(BarrierEvent.None);
  });

  it('long-to-short reversal: two phases at one price, both pay the fee', () => {
    const { env, step } = setup([
      [100, 100, 100, 100],
      [100, 100.2, 99.9, 100],
      // the old long's stop (99.7) and the new short's stop (100.29) are both inside this bar
      [100, 100.5, 99.6, 100],
      [100, 100, 100, 100],
    ]);
    // long 0.0095 units at 100: cash 0.049905, V_1 = 0.999905
    step(LONG_LIMIT_ALL);
    const o = step(SHORT_MARKET_ALL);
    // sell fill = 100 * (1 - 1e-4) = 99.99; target units = -0.95 * 0.999905 / 99.99 = -0.00950004750
    near(o.fillPrice, 99.99);
    near(o.units, -0.0095000475);
    near(o.traded, -0.0190000475);
    // phase 1 fee 0.0095 * 99.99e-4 = 9.499050e-5, phase 2 fee 0.94990975e-4: 1.89981e-4
    near(o.costs, 0.000189981475);
    // cash = 0.049905 + 0.949905 - 9.49905e-5 + 0.94990975 - 9.4990975e-5 = 1.94952977
    near(o.cash, 1.949529769);
    // V_2 = 1.94952977 - 0.00950004750 * 100 = 0.99952502
    near(o.value, 0.999525018);
    near(o.pnl, -0.038001805, 5e-5);
    // neither the reversed long nor the just-opened short is barrier-checked in this bar
    expect(o.barrierEvent).toBe(BarrierEvent.None);
    expect(o.done).toBe(0);
    // the short's barriers: profit 99.99 * 0.995, stop 99.99 * 1.003, expiry bar 2 + 120
    near(env.f[EnvF.EntryPrice], 99.99);
    near(env.f[EnvF.ProfitLevel], 99.49005);
    near(env.f[EnvF.StopLevel], 100.28997);
    expect(env.i[EnvI.Expiry]).toBe(122);
    near(env.f[EnvF.CumCosts], 0.000095 + 0.000189981475);
  });

  it('stop-loss and take-profit touched in one bar: the adverse barrier counts', () => {
    const { env, step } = setup([
      [100, 100, 100, 100],
      [100, 100.5, 99.9, 100.5],
      // opens between the levels, then touches profit 100.5 and stop 99.7; the agent's passive
      // sell at 100.5 * 1.0001 = 100.51005 does not fill (high 100.505 is not above it)
      [100.2, 100.505, 99.6, 100],
      [100, 100, 100, 100],
    ]);
    // long 0.0095 at 100; V_1 = 0.049905 + 0.0095 * 100.5 = 1.004655
    step(LONG_LIMIT_ALL);
    const o = step(HALF_LONG_PASSIVE_ALL);
    expect(o.filled).toBe(0);
    expect(o.barrierEvent).toBe(BarrierEvent.Stop);
    // exit at the stop with half the spread against: 99.7 * (1 - 1e-4) = 99.69003
    near(o.exitPrice, 99.69003);
    near(o.costs, 0.0000947055285);
    // cash = 0.049905 + 0.0095 * 99.69003 - fee = 0.99686558; flat
    expect(o.units).toBe(0);
    near(o.cash, 0.9968655795);
    near(o.value, 0.9968655795);
    // pnl = 100 * (0.99686558 - 1.004655) / 1.004655 = -0.77533288; barrier_scale -0.5
    near(o.pnl, -0.7753328783, 5e-5);
    near(o.barrier, 0.3876664392, 5e-5);
    near(o.total, -0.3876664392, 5e-5);
    expect(o.done).toBe(1);
    expect(o.truncated).toBe(0);
    // the episode restarted at once (one start bar in this split: bar 0)
    expect(env.i[EnvI.Restarts]).toBe(1);
    expect(env.i[EnvI.Bar]).toBe(0);
    expect(env.f[EnvF.Cash]).toBe(1);
  });

  it('a bar that gaps through the stop fills the stop at its open, not at the stop level', () => {
    const { env, step } = setup([
      [100, 100, 100, 100],
      [100, 100.2, 99.9, 100],
      // opens at 98, far below the stop 99.7, and even trades back above it: the exit is 98
      [98, 99.9, 97.5, 99.8],
      [100, 100, 100, 100],
    ]);
    step(LONG_LIMIT_ALL);
    expect(env.f[EnvF.StopLevel]).toBe(Math.fround(100 * Math.fround(1 - 0.003)));
    const o = step(HALF_LONG_PASSIVE_ALL);
    expect(o.barrierEvent).toBe(BarrierEvent.Stop);
    // 98 * (1 - 1e-4) = 97.9902: the gap's loss is taken whole
    near(o.exitPrice, 97.9902);
    expect(o.units).toBe(0);
    near(o.cash, 0.049905 + 0.0095 * 97.9902 - 0.0095 * 97.9902 * 1e-4);
  });

  it('a bar that gaps through the profit level fills it at the open, above the level', () => {
    const { step } = setup([
      [100, 100, 100, 100],
      [100, 100.2, 99.9, 100],
      // opens at 102 above the profit level 100.5 and then falls through the stop 99.7: the
      // open came first, so the profit exit at 102 stands
      [102, 102.5, 99, 99.5],
      [100, 100, 100, 100],
    ]);
    step(LONG_LIMIT_ALL);
    const o = step(HALF_LONG_PASSIVE_ALL);
    expect(o.barrierEvent).toBe(BarrierEvent.Profit);
    near(o.exitPrice, 102 * (1 - 1e-4));
  });

  it('a short gapped through its stop buys back at the open', () => {
    const { step } = setup([
      [100, 100, 100, 100],
      [100, 100.2, 99.9, 100],
      [103, 103.5, 102, 102.5],
      [100, 100, 100, 100],
    ]);
    step(SHORT_MARKET_ALL);
    const o = step(FLAT_PASSIVE_ALL);
    expect(o.barrierEvent).toBe(BarrierEvent.Stop);
    near(o.exitPrice, 103 * (1 + 1e-4));
  });

  it('the time barrier closes at the close of the expiry bar', () => {
    const bars: Ohlc[] = [
      [100, 100, 100, 100],
      [100, 100.2, 99.9, 100],
      [100, 100, 99.9, 100],
      [100, 100, 99.9, 100],
      [100, 100, 100, 100],
    ];
    // maxHoldingBars 2: opened in bar 1, expiry = bar 3. Flat passive sells at 100.01 never
    // fill (highs are 100), so the agent does not trade after the opening buy.
    for (const terminates of [true, false]) {
      const { env, step } = setup(bars, { maxHoldingBars: 2, barrierTerminates: terminates });
      step(LONG_LIMIT_ALL);
      expect(env.i[EnvI.Expiry]).toBe(3);
      const hold = step(FLAT_PASSIVE_ALL);
      expect(hold.filled).toBe(0);
      expect(hold.barrierEvent).toBe(BarrierEvent.None);
      const o = step(FLAT_PASSIVE_ALL);
      expect(o.barrierEvent).toBe(BarrierEvent.Time);
      // exit = close_3 * (1 - 1e-4) = 99.99; cash = 0.049905 + 0.0095 * 99.99 - 0.94990e-4
      near(o.exitPrice, 99.99);
      near(o.cash, 0.9997150095);
      near(o.pnl, -0.0190008551, 5e-5);
      expect(Math.abs(o.barrier)).toBe(0);
      expect(o.done).toBe(terminates ? 1 : 0);
      if (!terminates) {
        // the episode goes on, flat, with its barriers cleared
        expect(env.i[EnvI.Bar]).toBe(3);
        expect(env.f[EnvF.Units]).toBe(0);
        expect(env.i[EnvI.Expiry]).toBe(-1);
      }
    }
  });

  it('a collapse of the account ends the episode and keeps everything finite', () => {
    const { env, step } = setup([
      [100, 100, 100, 100],
      // the short opens at this bar's open and is not barrier-checked in it: the close at 250
      // marks it straight into a wipe-out
      [100, 250, 100, 250],
      [250, 250, 250, 250],
    ]);
    const o = step(SHORT_MARKET_ALL);
    // sell fill 99.99, units = -0.95 / 99.99 = -0.00950095; cash = 1 + 0.95 - 0.95e-4 = 1.949905
    near(o.units, -0.0095009501);
    near(o.cash, 1.949905);
    // V = 1.949905 - 0.00950095 * 250 = -0.42533252 <= 0.01 * V_0
    near(o.value, -0.4253325238);
    expect(o.done).toBe(1);
    expect(o.barrierEvent).toBe(BarrierEvent.None);
    // position_norm of a non-positive value is the position's sign: risk = -0.5 * (1 - 0.8)
    expect(o.nextState[52]).toBe(-1);
    near(o.risk, -0.1);
    near(o.pnl, -142.5332524, 5e-5);
    for (const x of o.nextState) expect(Number.isFinite(x)).toBe(true);
    expect(env.i[EnvI.Restarts]).toBe(1);
  });

  it('diversity penalty starts exactly at the 10th action when entropy is below 1 bit', () => {
    const flatBars: Ohlc[] = Array.from({ length: 30 }, () => [100, 100, 100, 100]);
    // Long, Short alternating then Long: counts after n actions; n < 10 never penalised.
    const cats = [4, 0, 4, 0, 4, 0, 4, 0, 4, 4];
    const { step } = setup(flatBars);
    const got = cats.map((x) => step(encodeAction(x, PAS, 0)).diversity);
    // after 10: Long 6, Short 4 -> H = 0.971 bits < 1 -> -0.1 (the first 9 are below min count)
    expect(got).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, Math.fround(-0.1)]);

    // A 5/5 split has exactly 1 bit: not below the threshold, no penalty.
    const tie = setup(flatBars);
    const tieGot = [4, 0, 4, 0, 4, 0, 4, 0, 4, 0].map((x) => tie.step(encodeAction(x, PAS, 0)).diversity);
    expect(tieGot[9]).toBe(0);
    // One category only: H = 0 from the 10th action on.
    const mono = setup(flatBars);
    const monoGot = Array.from({ length: 12 }, () => mono.step(encodeAction(2, PAS, 0)).diversity);
    expect(monoGot.map((d) => d < 0)).toEqual([...Array(9).fill(false), true, true, true]);
  });

  it('keeps the layout sizes the kernels rely on', () => {
    expect(ENV_F).toBe(10);
    expect(ENV_I).toBe(10);
  });
});
