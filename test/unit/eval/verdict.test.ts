/** The run's verdict sentence (src/eval/verdict.ts): every figure, what was missed, a flat policy named. */
import { describe, expect, it } from 'vitest';
import type { Metrics, ValidationReport } from '../../../src/eval/metrics.js';
import { verdictSentence } from '../../../src/eval/verdict.js';

const metrics = (totalReturn: number, sharpe: number, trades: number): Metrics => ({
  totalReturn,
  sharpe,
  sortino: sharpe,
  maxDrawdown: 0.1,
  calmar: 0,
  hitRate: 0.5,
  trades,
  turnover: 1,
  avgHoldingBars: 3,
  avgExposure: trades ? 0.5 : 0,
  bars: 1000,
});

const report = (policy: Metrics): ValidationReport => ({
  policy,
  buyHold: metrics(-0.1, -2, 1),
  random: metrics(-0.4, -9, 300),
});

describe('verdictSentence', () => {
  it('says the policy beat both, with every figure', () => {
    expect(verdictSentence('best/ (epoch 3 of 5)', 'test', report(metrics(0.05, 1.5, 120)))).toBe(
      'best/ (epoch 3 of 5) beat buy-and-hold and random on the test split in return and Sharpe: ' +
        'return +5.00% against -10.00% (buy-and-hold) and -40.00% (random), Sharpe 1.50 against -2.00 and -9.00.',
    );
  });

  it('names each baseline and measure the policy missed', () => {
    expect(verdictSentence('last/', 'validation', report(metrics(-0.2, -1, 50)))).toMatch(
      /^last\/ did NOT beat buy-and-hold in return on the validation split: /,
    );
    expect(verdictSentence('last/', 'validation', report(metrics(-0.5, -10, 50)))).toMatch(
      /did NOT beat buy-and-hold in return and Sharpe, nor random in return and Sharpe on the validation split/,
    );
  });

  it('says so when a policy that never traded beats the baselines by standing aside', () => {
    const s = verdictSentence('best/ (epoch 15 of 15)', 'test', report(metrics(0, 0, 0)));
    expect(s).toMatch(/^best\/ \(epoch 15 of 15\) beat buy-and-hold and random/);
    expect(s).toMatch(
      /Sharpe 0\.00 against -2\.00 and -9\.00\. It never traded: it stood flat over the whole split\.$/,
    );
    expect(verdictSentence('x', 'test', report(metrics(0.01, 0.2, 1)))).not.toMatch(/never traded/);
  });
});
