import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { makeSplits } from '../../../src/data/splits.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { baselines, buyAndHold } from '../../../src/eval/backtest.js';
import { randomPolicy } from '../../../src/eval/policies.js';
import { buildMarket } from '../../../src/features/market.js';
import { backtestCurves, curveIndices } from '../../../src/report/view.js';

describe('backtest curves', () => {
  const cfg = loadConfig();
  const market = buildMarket(generateSynthetic({ bars: 6000, seed: 3 }), cfg);
  const val = makeSplits(market.n, cfg).val;
  const curves = (maxPoints?: number) =>
    backtestCurves(market, val, 'validation', cfg.env, randomPolicy(5), 1, 525_600, 'test', maxPoints);

  it('draw every bar of a short split', () => {
    const { curves: c } = curves();
    expect(c.time.length).toBe(val.end - val.start);
    expect(c.policy[0]).toBe(1);
  });

  it('chart and tabulate the same baselines as training: buy-and-hold held from one buy', () => {
    const { curves: c, report } = curves();
    const held = buyAndHold(market, val, cfg.env, 525_600);
    expect(report.buyHold).toEqual(held.metrics);
    expect(report.buyHold.trades).toBe(1);
    expect(c.buyHold).toEqual(Array.from(held.trace.equity, (v) => v / held.trace.equity[0]));
    expect({ buyHold: report.buyHold, random: report.random }).toEqual(
      baselines(market, val, cfg.env, 1, 525_600),
    );
  });

  it('thin a long split to its peaks, troughs and deepest drawdown (report.html was 68 MB for 5M bars)', () => {
    const full = curves(1e9);
    const { curves: c, report } = curves(100);
    expect(c.time.length).toBeLessThanOrEqual(101);
    expect(c.time.length).toBeGreaterThan(50);
    for (const k of ['policy', 'buyHold', 'random', 'drawdown'] as const)
      expect(c[k].length).toBe(c.time.length);
    // The first and last bars, the extremes and the maximum drawdown are kept exactly.
    expect(c.time[0]).toBe(full.curves.time[0]);
    expect(c.time.at(-1)).toBe(full.curves.time.at(-1));
    expect(c.policy.at(-1)).toBe(full.curves.policy.at(-1));
    expect(Math.max(...c.policy)).toBe(Math.max(...full.curves.policy));
    expect(Math.min(...c.policy)).toBe(Math.min(...full.curves.policy));
    expect(Math.max(...c.drawdown)).toBeCloseTo(report.policy.maxDrawdown, 12);
    for (let i = 1; i < c.time.length; i++) expect(c.time[i]).toBeGreaterThan(c.time[i - 1]);
    // Metrics and distributions still come from every bar.
    expect(report).toEqual(full.report);
    expect(c.targetShare).toEqual(full.curves.targetShare);
  });

  it('curveIndices keeps everything up to the budget', () => {
    expect(curveIndices([1, 2, 3], [0, 0, 0], 3)).toEqual([0, 1, 2]);
    expect(curveIndices([1, 3, 2, 0.5, 4, 1], [0, 0, 1 / 3, 5 / 6, 0, 0.75], 4)).toEqual([0, 3, 4, 5]);
  });
});
