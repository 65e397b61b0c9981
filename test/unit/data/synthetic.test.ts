import { describe, expect, it } from 'vitest';
import { cloneDefaults } from '../../../src/config.js';
import { makeSplits } from '../../../src/data/splits.js';
import { generateSynthetic, HIGH_VOL, Regime, simulateSynthetic } from '../../../src/data/synthetic.js';
import { encodeAction, OrderType } from '../../../src/env/actions.js';
import { backtest, buyAndHold } from '../../../src/eval/backtest.js';
import { computeFeatures, FEATURE_COUNT, FEATURE_NAMES } from '../../../src/features/features.js';
import { buildMarket } from '../../../src/features/market.js';

describe('synthetic market', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = generateSynthetic({ bars: 5000, seed: 11 });
    const b = generateSynthetic({ bars: 5000, seed: 11 });
    const c = generateSynthetic({ bars: 5000, seed: 12 });
    for (const k of ['timestamp', 'open', 'high', 'low', 'close', 'volume', 'spreadBps'] as const) {
      expect(b[k], k).toEqual(a[k]);
    }
    let same = 0;
    for (let t = 0; t < 5000; t++) if (a.close[t] === c.close[t]) same++;
    expect(same).toBeLessThan(50);
    // Bar t's draws depend on t only: a shorter run is a prefix of a longer one.
    expect(generateSynthetic({ bars: 1000, seed: 11 }).close).toEqual(a.close.subarray(0, 1000));
  });

  it('obeys the SPEC 1 bar rules, with a spread and a U-shaped intraday volume profile', () => {
    const bars = generateSynthetic({ bars: 20 * 1440, seed: 3 });
    const byHour = new Float64Array(24);
    const broken: number[] = [];
    const { open: o, high: h, low: l, close: c } = bars;
    for (let t = 0; t < bars.n; t++) {
      const ok =
        o[t] > 0 &&
        l[t] > 0 &&
        h[t] >= Math.max(o[t], c[t]) &&
        l[t] <= Math.min(o[t], c[t]) &&
        bars.volume[t] >= 0 &&
        bars.spreadBps![t] > 0 &&
        (t === 0 || bars.timestamp[t] - bars.timestamp[t - 1] === 60_000);
      if (!ok) broken.push(t);
      byHour[new Date(bars.timestamp[t]).getUTCHours()] += bars.volume[t];
    }
    expect(broken).toEqual([]);
    expect(byHour[0]).toBeGreaterThan(1.8 * byHour[12]);
    expect(byHour[23]).toBeGreaterThan(1.8 * byHour[12]);
  });

  it('switches between persistent regimes of every kind', () => {
    const { regime } = simulateSynthetic({ bars: 100_000, seed: 4 });
    const kinds = new Set<number>();
    let switches = 0;
    for (let t = 0; t < regime.length; t++) {
      kinds.add(regime[t]);
      if (t > 0 && regime[t] !== regime[t - 1]) switches++;
    }
    for (const k of [Regime.Trend, Regime.MeanRevert, Regime.Noise]) {
      expect(kinds.has(k) && kinds.has(k | HIGH_VOL)).toBe(true);
    }
    // Regimes last hundreds of bars: ~1/500 + 1/800 switches per bar.
    expect(regime.length / switches).toBeGreaterThan(150);
  });

  it('stays finite, positive and near its start price over 1M bars', () => {
    const bars = generateSynthetic({ bars: 1_000_000, seed: 9 });
    let lo = Number.POSITIVE_INFINITY;
    let hi = 0;
    for (let t = 0; t < bars.n; t++) {
      lo = Math.min(lo, bars.low[t]);
      hi = Math.max(hi, bars.high[t]);
    }
    expect(lo).toBeGreaterThan(25);
    expect(hi).toBeLessThan(400);
  });

  // The learnable structure: a fixed rule that reads one trend feature earns a clearly positive
  // return after costs on held-out bars, on the long and on the short side, so it is not the
  // drift (there is none by design) that pays.
  it('lets a fixed feature-reading rule beat costs on held-out bars, long and short', () => {
    const n = 150_000;
    const feeBps = 1;
    const signal = FEATURE_NAMES.indexOf('ema_cross_12_48');
    for (const seed of [1, 2]) {
      const bars = generateSynthetic({ bars: n, seed });
      const f = computeFeatures(bars, 120);
      const start = Math.floor(0.7 * n);
      let pos = 0;
      const pnl = { long: 0, short: 0 };
      let costs = 0;
      for (let t = start; t < n - 1; t++) {
        const x = f[t * FEATURE_COUNT + signal];
        const next = x > 0.5 ? 1 : x < -0.5 ? -1 : 0;
        // Decide at close t, trade at close t (= open t+1) paying the fee and half the spread.
        costs += (Math.abs(next - pos) * (feeBps + bars.spreadBps![t] / 2)) / 1e4;
        pos = next;
        const r = Math.log(bars.close[t + 1] / bars.close[t]);
        if (pos > 0) pnl.long += r;
        if (pos < 0) pnl.short -= r;
      }
      const total = pnl.long + pnl.short - costs;
      expect(costs).toBeGreaterThan(0.05);
      expect(total, `seed ${seed}`).toBeGreaterThan(0.15);
      // Each side's gross profit covers the costs its trades bore (at most half of the total each way).
      expect(pnl.long - costs / 2, `seed ${seed} long`).toBeGreaterThan(0);
      expect(pnl.short - costs / 2, `seed ${seed} short`).toBeGreaterThan(0);
    }
  });

  // SPEC 1's clause at the size `foxhunt train` uses: the same rule, as a policy through the
  // simulator (next-open fills, the spread, fees, the 30 / 50 bps barriers), against the held
  // buy-and-hold of src/eval/backtest.ts, on the validation and test splits of default-size markets.
  it('lets the rule beat buy-and-hold in return and Sharpe on most default-size splits', () => {
    const cfg = cloneDefaults();
    const signal = FEATURE_NAMES.indexOf('ema_cross_12_48');
    const long = encodeAction(4, OrderType.Market, 2);
    const short = encodeAction(0, OrderType.Market, 2);
    const flat = encodeAction(2, OrderType.Market, 2);
    const rule = (s: Float32Array) => (s[signal] > 0.5 ? long : s[signal] < -0.5 ? short : flat);
    const barsPerYear = 365 * 1440;
    const lost: string[] = [];
    let splits = 0;
    for (let seed = 201; seed <= 210; seed++) {
      const market = buildMarket(generateSynthetic({ bars: cfg.data.synthBars, seed }), cfg);
      const { val, test } = makeSplits(market.n, cfg);
      for (const [name, split] of [
        ['val', val],
        ['test', test],
      ] as const) {
        const held = buyAndHold(market, split, cfg.env, barsPerYear).metrics;
        const ruled = backtest(market, split, cfg.env, rule, barsPerYear).metrics;
        splits++;
        if (!(ruled.totalReturn > held.totalReturn && ruled.sharpe > held.sharpe))
          lost.push(`${seed} ${name}`);
      }
    }
    // 19 of 20 beat it when written (the rule fails where a split's trends mostly point one way).
    expect(splits).toBe(20);
    expect(lost.length, lost.join(', ')).toBeLessThanOrEqual(4);
  });
});
