import { describe, expect, it } from 'vitest';
import { cloneDefaults } from '../../../src/config.js';
import { fillGaps, gapStats, medianInterval, modalInterval } from '../../../src/data/gaps.js';
import { makeSplits, minBars, SplitError } from '../../../src/data/splits.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import type { Bars } from '../../../src/data/types.js';
import { buildMarket } from '../../../src/features/market.js';

describe('splits', () => {
  it('lays out warm-up, train, gap, val, gap, test chronologically by the fractions', () => {
    const cfg = cloneDefaults();
    const n = 10_360;
    const s = makeSplits(n, cfg);
    const L = cfg.data.maxLookback;
    // 10 360 - 3 * 120 = 10 000 bars shared 70 / 15 / 15.
    expect(s.train).toEqual({ start: L, end: L + 7000 });
    expect(s.val).toEqual({ start: L + 7000 + L, end: L + 7000 + L + 1500 });
    expect(s.test).toEqual({ start: s.val.end + L, end: n });
    expect(s.test.end - s.test.start).toBe(1500);
  });

  it('keeps a gap of maxLookback bars between splits for other lookbacks and fractions', () => {
    const cfg = cloneDefaults();
    cfg.data.maxLookback = 60;
    cfg.data.trainFrac = 0.5;
    cfg.data.valFrac = 0.25;
    const s = makeSplits(5000, cfg);
    expect(s.train.start).toBe(60);
    expect(s.val.start - s.train.end).toBe(60);
    expect(s.test.start - s.val.end).toBe(60);
    expect(s.test.end).toBe(5000);
    expect(s.train.end - s.train.start).toBe(Math.floor(0.5 * (5000 - 180)));
  });

  it('names the numbers when the data is too short for the config', () => {
    const cfg = cloneDefaults();
    expect(() => makeSplits(1000, cfg)).toThrow(SplitError);
    try {
      makeSplits(1000, cfg);
    } catch (err) {
      const m = (err as Error).message;
      expect(m).toContain('1000 bars');
      expect(m).toContain('train 448');
      expect(m).toContain('501 (env.episodeBars + 1)');
      expect(m).toContain('data.maxLookback');
    }
    expect(() => makeSplits(1200, cfg)).not.toThrow();
  });

  it('gives the fewest bars that split (minBars), for the default episode and a shorter one', () => {
    const cfg = cloneDefaults();
    for (const episodeBars of [500, 250]) {
      cfg.env.episodeBars = episodeBars;
      const n = minBars(cfg);
      expect(() => makeSplits(n - 1, cfg)).toThrow(SplitError);
      for (let m = n; m < n + 50; m++) expect(() => makeSplits(m, cfg)).not.toThrow();
    }
    // 3 x 120 warm-up and gap bars, then 251 training bars at 70%: 719.
    expect(minBars(cfg)).toBe(719);
  });
});

function barsAt(times: number[]): Bars {
  const n = times.length;
  return {
    n,
    timestamp: Float64Array.from(times),
    open: Float64Array.from(times, (_, i) => 100 + i),
    high: Float64Array.from(times, (_, i) => 101 + i),
    low: Float64Array.from(times, (_, i) => 99 + i),
    close: Float64Array.from(times, (_, i) => 100.5 + i),
    volume: new Float64Array(n).fill(5),
    spreadBps: new Float64Array(n).fill(3),
  };
}

describe('gaps', () => {
  const m = 60_000;
  it('measures modal and median intervals and counts missing bars at the modal interval', () => {
    const ts = [0, m, 2 * m, 5 * m, 6 * m, 7 * m, 9.5 * m];
    expect(modalInterval(Float64Array.from(ts))).toBe(m);
    expect(medianInterval(Float64Array.from(ts))).toBe(m);
    const st = gapStats(Float64Array.from(ts));
    // 3m apart: 2 missing; 2.5m apart: bars at +1m and +2m are missing.
    expect(st).toMatchObject({ gaps: 2, missingBars: 4, largest: 2 });
  });

  it('fills gaps with flat zero-volume bars carrying the last close and spread', () => {
    const f = fillGaps(barsAt([0, m, 4 * m, 5 * m]));
    expect(f.filled).toBe(2);
    expect(f.gaps).toBe(1);
    expect(Array.from(f.bars.timestamp)).toEqual([0, m, 2 * m, 3 * m, 4 * m, 5 * m]);
    expect(Array.from(f.bars.close)).toEqual([100.5, 101.5, 101.5, 101.5, 102.5, 103.5]);
    expect(Array.from(f.bars.high.subarray(2, 4))).toEqual([101.5, 101.5]);
    expect(Array.from(f.bars.volume)).toEqual([5, 5, 0, 0, 5, 5]);
    expect(Array.from(f.bars.spreadBps!)).toEqual([3, 3, 3, 3, 3, 3]);
  });

  it('refuses to blow the data up on a bad timestamp', () => {
    expect(() => fillGaps(barsAt([0, m, 2 * m, 1e6 * m]))).toThrow(/would add \d+ bars/);
  });
});

describe('buildMarket', () => {
  it('packs OHLC as [n, 4] f32, the data spread or the configured default, and the features', () => {
    const cfg = cloneDefaults();
    const bars = generateSynthetic({ bars: 500, seed: 1 });
    const market = buildMarket(bars, cfg);
    expect(market.n).toBe(500);
    expect(market.features.length).toBe(500 * 51);
    expect(market.ohlc.length).toBe(500 * 4);
    expect(market.ohlc[4 * 7 + 3]).toBe(Math.fround(bars.close[7]));
    expect(market.ohlc[4 * 7 + 1]).toBe(Math.fround(bars.high[7]));
    expect(market.spreadBps[9]).toBe(Math.fround(bars.spreadBps![9]));
    cfg.data.defaultSpreadBps = 2.5;
    const noQuotes = buildMarket({ ...bars, spreadBps: null }, cfg);
    expect(Array.from(noQuotes.spreadBps.subarray(0, 3))).toEqual([2.5, 2.5, 2.5]);
    expect(Array.from(market.timestamp)).toEqual(Array.from(bars.timestamp));
  });
});
