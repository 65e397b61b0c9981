import { describe, expect, it } from 'vitest';
import { computeMetrics, type EquityTrace, inferBarsPerYear, tradesOf } from '../../../src/eval/metrics.js';

const trace = (equity: number[], exposure: number[], traded?: number[]): EquityTrace => ({
  equity: Float64Array.from(equity),
  exposure: Float64Array.from(exposure),
  traded: Float64Array.from(traded ?? exposure.map(() => 0)),
});

describe('computeMetrics', () => {
  // Long for two bars (+10%, -10%), closed in the third (+10%), flat in the fourth.
  // Returns 0.1, -0.1, 0.1, 0: mean 0.025, sample std sqrt(0.0275 / 3), downside sqrt(0.01 / 4).
  const t = trace([1, 1.1, 0.99, 1.089, 1.089], [1, 1, 0, 0], [1, 0, 0.99, 0]);
  const m = computeMetrics(t, 4);

  it('computes return, Sharpe and Sortino by hand', () => {
    expect(m.totalReturn).toBeCloseTo(0.089, 12);
    expect(m.sharpe).toBeCloseTo((0.025 / Math.sqrt(0.0275 / 3)) * 2, 12);
    expect(m.sortino).toBeCloseTo((0.025 / 0.05) * 2, 12);
  });

  it('computes drawdown and Calmar', () => {
    expect(m.maxDrawdown).toBeCloseTo(0.1, 12);
    // barsPerYear / n = 1, so CAGR = total return.
    expect(m.calmar).toBeCloseTo(0.089 / 0.1, 12);
  });

  it('computes trades, hit rate, holding, turnover and exposure', () => {
    expect(m.trades).toBe(1);
    expect(m.hitRate).toBe(1);
    expect(m.avgHoldingBars).toBe(2);
    expect(m.turnover).toBeCloseTo(1.99 / ((1.1 + 0.99 + 1.089 + 1.089) / 4), 12);
    expect(m.avgExposure).toBe(0.5);
    expect(m.bars).toBe(4);
  });

  it('gives finite zeros for a flat policy', () => {
    const flat = computeMetrics(trace([1, 1, 1], [0, 0]), 252);
    expect(flat).toMatchObject({
      totalReturn: 0,
      sharpe: 0,
      sortino: 0,
      maxDrawdown: 0,
      calmar: 0,
      hitRate: 0,
      trades: 0,
      turnover: 0,
      avgHoldingBars: 0,
      avgExposure: 0,
    });
  });

  it('keeps Calmar finite when CAGR overflows (a short split of fast bars)', () => {
    // +50% over 2 steps at 1-second bars: (1.5)^(barsPerYear / 2) - 1 is Infinity in f64.
    const m = computeMetrics(trace([1, 1.6, 1.5], [1, 1]), 252 * 86_400);
    expect(m.calmar).toBe(Number.MAX_VALUE);
    expect(JSON.parse(JSON.stringify(m)).calmar).toBe(Number.MAX_VALUE);
  });

  it('stays finite and non-negative where the account goes below zero, and through an account of exactly 0', () => {
    // A short through a gap: 1 -> -0.5 (a loss of 150%), then the stopped account stays there.
    const m = computeMetrics(trace([1, 1, -0.5, -0.5], [-1, -1, 0], [1, 0, 0]), 3);
    expect(m.totalReturn).toBeCloseTo(-1.5, 12);
    expect(m.maxDrawdown).toBeCloseTo(1.5, 12);
    expect(m.turnover).toBeCloseTo(1 / ((1 + 0.5 + 0.5) / 3), 12);
    const zero = computeMetrics(trace([1, 0, 0, 0.1], [1, 0, 1], [1, 0, 0.1]), 3);
    for (const v of Object.values(zero)) expect(Number.isFinite(v)).toBe(true);
  });

  it('annualises Sharpe by sqrt(barsPerYear)', () => {
    const a = computeMetrics(t, 1).sharpe;
    expect(computeMetrics(t, 100).sharpe).toBeCloseTo(a * 10, 12);
  });

  it('rejects a mismatched trace and a bad annualisation', () => {
    expect(() => computeMetrics(trace([1, 1], [0, 0]), 252)).toThrow(/one more entry/);
    expect(() => computeMetrics(t, 0)).toThrow(/barsPerYear/);
  });
});

describe('tradesOf', () => {
  it('gives the reversal bar to the closing trade', () => {
    const trades = tradesOf(trace([1, 1.02, 1.01, 1.03, 1.0], [1, -1, -1, 0]));
    expect(trades.map((x) => [x.open, x.close])).toEqual([
      [1, 2],
      [2, 4],
    ]);
    expect(trades[0].pnl).toBeCloseTo(0.01, 12);
    expect(trades[1].pnl).toBeCloseTo(-0.01, 12);
    const m = computeMetrics(trace([1, 1.02, 1.01, 1.03, 1.0], [1, -1, -1, 0]), 252);
    expect(m.hitRate).toBe(0.5);
    expect(m.avgHoldingBars).toBe(1.5);
  });

  it('closes a position still open at the last mark', () => {
    const trades = tradesOf(trace([1, 1, 1.01, 1.02], [0, 0.5, 0.5]));
    expect(trades).toHaveLength(1);
    expect(trades[0].open).toBe(2);
    expect(trades[0].close).toBe(3);
    expect(trades[0].pnl).toBeCloseTo(0.02, 12);
  });

  it('keeps one trade while the size changes on the same side', () => {
    expect(tradesOf(trace([1, 1, 1, 1, 1], [0.5, 1, 0.5, 0]))).toHaveLength(1);
  });
});

describe('inferBarsPerYear', () => {
  const minute = 60_000;
  const hour = 60 * minute;
  const day = 86_400_000;
  const monday = 4 * day; // 1970-01-05
  /** `perDay` bars `step` apart from `open` on `count` trading days, Monday to Friday. */
  const weekdays = (count: number, perDay: number, step: number, open = 13.5 * hour) =>
    Float64Array.from({ length: count * perDay }, (_, i) => {
      const k = Math.floor(i / perDay);
      return monday + (Math.floor(k / 5) * 7 + (k % 5)) * day + open + (i % perDay) * step;
    });
  const aroundTheClock = (count: number, step: number, start = monday) =>
    Float64Array.from({ length: count }, (_, i) => start + i * step);

  it('uses 252 days times the bars of a trading session for weekday intraday data', () => {
    expect(inferBarsPerYear(weekdays(10, 78, 5 * minute))).toBe(252 * 78);
    expect(inferBarsPerYear(weekdays(10, 24, hour, 0))).toBe(252 * 24);
  });

  it('uses 365 days for a market that trades at weekends, whatever day it starts on', () => {
    expect(inferBarsPerYear(aroundTheClock(24 * 30, hour))).toBe(365 * 24);
    expect(inferBarsPerYear(aroundTheClock(60_000, minute, Date.UTC(2024, 0, 1)))).toBe(365 * 1440);
    expect(inferBarsPerYear(aroundTheClock(400, day, Date.UTC(2021, 5, 5)))).toBe(365);
  });

  it('keeps 252 days for a 24/5 market that opens on Sunday evening (UTC)', () => {
    // Forex: Sunday 22:00 to Friday 22:00 UTC, hourly.
    const bars: number[] = [];
    for (let week = 0; week < 8; week++) {
      const sunday = monday - day + week * 7 * day;
      for (let h = 22; h < 22 + 5 * 24; h++) bars.push(sunday + h * hour);
    }
    expect(inferBarsPerYear(Float64Array.from(bars))).toBe(252 * 24);
  });

  it('keeps 252 days for daily FX stamped at the New York close, Sunday to Thursday 22:00 UTC', () => {
    // Oanda's daily candles: a fifth of the bars fall on a UTC Sunday, none on a Saturday.
    const sundayToThursday = weekdays(60, 1, 0).map((t) => t - 2 * hour);
    expect(inferBarsPerYear(sundayToThursday)).toBe(252);
    // Daily bars with a short Sunday candle each week (6 a week, a sixth on Sunday).
    const withSunday = [...weekdays(40, 1, 0)];
    for (let week = 0; week < 8; week++) withSunday.push(monday - day + week * 7 * day + 22 * hour);
    expect(inferBarsPerYear(Float64Array.from(withSunday).sort())).toBe(252);
  });

  it('uses 252 for weekday daily bars and 365.25 / spacing for coarser bars', () => {
    expect(inferBarsPerYear(weekdays(30, 1, 0))).toBe(252);
    expect(inferBarsPerYear(Float64Array.from({ length: 10 }, (_, i) => i * 7 * day))).toBeCloseTo(
      365.25 / 7,
      12,
    );
  });
});
