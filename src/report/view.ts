/**
 * What the run charts show, as plain JSON-able data: the browser page builds it live from the
 * worker's epochs, `report.html` from a run directory's log and checkpoint. draw.ts turns it
 * into charts; nothing here touches the DOM.
 */
import type { EnvConfig } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { EXPOSURES, exposureIndex } from '../env/actions.js';
import { backtest, buyAndHold } from '../eval/backtest.js';
import { type Policy, randomPolicy } from '../eval/policies.js';
import type { EpochRecord, RunSummary, ValidationReport } from '../train/runlog.js';

/** One point per finished epoch. */
export interface EpochPoint {
  epoch: number;
  algo: string;
  reward: number;
  /** The loss chart's lines: PPO policy loss, value loss, entropy; DQN family: loss, mean |TD error|, epsilon. */
  losses: [number, number, number];
  /** Validation return of the greedy policy and its Sharpe (the score). */
  valReturn: number;
  valSharpe: number;
}

/** One policy backtested over a split beside the baselines (equity normalised to 1 at the start). */
export interface Curves {
  /** Which checkpoint the policy curve is, e.g. `epoch 3`. */
  label: string;
  split: string;
  /** Bar times, seconds since 1970 (uPlot's time axis); long splits thinned (curveIndices). */
  time: number[];
  policy: number[];
  buyHold: number[];
  random: number[];
  /** The policy's drawdown from its running peak, a fraction in [0, 1]. */
  drawdown: number[];
  /** Share of decisions per target exposure (EXPOSURES: -1, -0.5, 0, 0.5, 1). */
  targetShare: number[];
  /** Share of steps per held-exposure bin, bins centred on HELD_BINS. */
  heldShare: number[];
}

/** Centres of the held-exposure histogram's bins. */
export const HELD_BINS = [-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1];

/**
 * At most this many points per curve (plus the last). A chart is ~560 px wide, and a split of a
 * large file has hundreds of thousands of bars: every bar of a 5M-bar file's validation split made
 * report.html 68 MB.
 */
export const CURVE_POINTS = 2000;

/**
 * The bars a thinned curve keeps: all of them when there are at most `maxPoints`, else per bucket
 * of consecutive bars its first, its lowest and highest equity and its deepest drawdown (so the
 * peaks, troughs and the maximum drawdown are drawn where they happened), and the last bar.
 */
export function curveIndices(
  equity: ArrayLike<number>,
  drawdown: ArrayLike<number>,
  maxPoints: number,
): number[] {
  const n = equity.length;
  if (n <= maxPoints) return Array.from({ length: n }, (_, k) => k);
  const buckets = Math.max(1, Math.floor(maxPoints / 4));
  const size = Math.ceil(n / buckets);
  const out: number[] = [];
  for (let a = 0; a < n; a += size) {
    const b = Math.min(n, a + size);
    let lo = a;
    let hi = a;
    let deep = a;
    for (let k = a + 1; k < b; k++) {
      if (equity[k] < equity[lo]) lo = k;
      if (equity[k] > equity[hi]) hi = k;
      if (drawdown[k] > drawdown[deep]) deep = k;
    }
    for (const k of [...new Set([a, lo, hi, deep])].sort((x, y) => x - y)) out.push(k);
  }
  if (out[out.length - 1] !== n - 1) out.push(n - 1);
  return out;
}

export interface RunView {
  title: string;
  /** One line under the title (backend, data, sizes). */
  subtitle: string;
  epochs: EpochPoint[];
  curves: Curves | null;
  /** The metric table: best/ on validation and test once the run finished, else the last epoch's. */
  tables: { caption: string; report: ValidationReport }[];
  /** The verdict sentences (empty until the run finished). */
  verdict: string[];
}

export function epochPoint(r: EpochRecord): EpochPoint {
  const ppo = r.algo === 'ppo';
  return {
    epoch: r.epoch,
    algo: r.algo,
    reward: r.reward.total,
    losses: ppo
      ? [r.losses.policy, r.losses.value, r.losses.entropy]
      : [r.losses.total, r.losses.td, r.epsilon ?? 0],
    valReturn: r.validation.policy.totalReturn,
    valSharpe: r.validation.policy.sharpe,
  };
}

/** The tables and verdict of a finished run (its log's summary line). */
export function summaryParts(s: RunSummary): Pick<RunView, 'tables' | 'verdict'> {
  return {
    tables: [
      { caption: `validation split, best/ (epoch ${s.best.epoch})`, report: s.best.validation },
      { caption: `test split, best/ (evaluated once, at the end)`, report: s.test },
    ],
    verdict: [s.verdict.validation, s.verdict.test],
  };
}

/**
 * Backtests `policy` over `split` (as `foxhunt backtest` and validation do) beside buy-and-hold
 * and the run's random baseline: the curves and distributions the charts draw, and the metrics.
 */
export function backtestCurves(
  market: Market,
  split: SplitRange,
  splitName: string,
  envCfg: EnvConfig,
  policy: Policy,
  seed: number,
  barsPerYear: number,
  label: string,
  maxPoints = CURVE_POINTS,
): { curves: Curves; report: ValidationReport } {
  const run = (p: Policy) => backtest(market, split, envCfg, p, barsPerYear);
  const mine = run(policy);
  const buyHold = buyAndHold(market, split, envCfg, barsPerYear);
  const random = run(randomPolicy(seed));
  const equity = mine.trace.equity;
  const drawdown = new Float64Array(equity.length);
  let peak = 0;
  for (let k = 0; k < equity.length; k++) {
    peak = Math.max(peak, equity[k]);
    drawdown[k] = 1 - equity[k] / peak;
  }
  const keep = curveIndices(equity, drawdown, maxPoints);
  const norm = (e: Float64Array) => keep.map((k) => e[k] / e[0]);
  const targetShare = EXPOSURES.map(() => 0);
  for (const a of mine.actions) targetShare[exposureIndex(a)] += 1 / mine.actions.length;
  const heldShare = HELD_BINS.map(() => 0);
  for (const x of mine.trace.exposure) heldShare[Math.round((x + 1) * 4)] += 1 / mine.trace.exposure.length;
  const curves = {
    label,
    split: splitName,
    time: keep.map((k) => market.timestamp[split.start + k] / 1000),
    policy: norm(equity),
    buyHold: norm(buyHold.trace.equity),
    random: norm(random.trace.equity),
    drawdown: keep.map((k) => drawdown[k]),
    targetShare,
    heldShare,
  };
  return { curves, report: { policy: mine.metrics, buyHold: buyHold.metrics, random: random.metrics } };
}
