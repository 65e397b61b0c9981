/** Text renderings of validation results for the CLI: the metrics table and one-line summaries. */
import type { Metrics } from '../eval/metrics.js';
import type { EpochRecord, ValidationReport } from './runlog.js';

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(2)}%`;
/** Fixed digits, or 3 significant digits in exponent form when the value is huge (Calmar of a short split). */
const num = (x: number, digits = 2) => (Math.abs(x) >= 1e5 ? x.toExponential(2) : x.toFixed(digits));

const COLUMNS: [string, (m: Metrics) => string][] = [
  ['return', (m) => pct(m.totalReturn)],
  ['sharpe', (m) => num(m.sharpe)],
  ['sortino', (m) => num(m.sortino)],
  ['max dd', (m) => pct(-m.maxDrawdown)],
  ['calmar', (m) => num(m.calmar)],
  ['hit rate', (m) => `${(100 * m.hitRate).toFixed(1)}%`],
  ['trades', (m) => String(m.trades)],
  ['turnover/y', (m) => num(m.turnover, 1)],
  ['avg hold', (m) => num(m.avgHoldingBars, 1)],
  ['avg |exp|', (m) => num(m.avgExposure)],
];

/** Rows policy / buy-and-hold / random, one column per metric, right-aligned. */
export function metricsTable(v: ValidationReport): string {
  const rows: [string, Metrics][] = [
    ['policy', v.policy],
    ['buy-and-hold', v.buyHold],
    ['random', v.random],
  ];
  const cells = [
    ['', ...COLUMNS.map(([h]) => h)],
    ...rows.map(([name, m]) => [name, ...COLUMNS.map(([, f]) => f(m))]),
  ];
  const widths = cells[0].map((_, c) => Math.max(...cells.map((r) => r[c].length)));
  return cells
    .map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '))
    .join('\n');
}

/** Wall-clock so far and the estimated time left, for the progress lines. */
/** A phase's steps so far (the CPU engines' train steps) and the time its rate leaves for the rest. */
export interface PhaseSteps {
  done: number;
  total: number;
  leftMs: number;
}

export interface Timing {
  elapsedMs: number;
  /** null until an epoch of this session has finished. */
  etaMs: number | null;
}

/** `1h02m`, `4m05s`, `12s`. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/**
 * The ETA after `done` of `todo` epochs of this session took `elapsedMs`: the mean epoch time so
 * far times the epochs left (checkpoint and validation included, as they recur every epoch).
 */
export function timing(elapsedMs: number, done: number, todo: number): Timing {
  return { elapsedMs, etaMs: done > 0 ? (elapsedMs / done) * (todo - done) : null };
}

const timeText = (t: Timing | undefined) =>
  t ? `  ${duration(t.elapsedMs)} elapsed${t.etaMs === null ? '' : `, ETA ${duration(t.etaMs)}`}` : '';

/** The epoch's loss, or (DQN family) why no train step ran: the replay holds less than a batch. */
const lossText = (r: EpochRecord) =>
  r.losses.trainSteps === 0
    ? `no train step (the replay holds ${r.losses.replaySize} rows, under a batch)`
    : `loss ${num(r.losses.total, 4)}`;

/** One plain line per finished epoch (non-TTY progress). */
export function epochLine(r: EpochRecord, epochs: number, time?: Timing): string {
  const v = r.validation;
  const t = r.timeMs;
  return (
    `epoch ${r.epoch}/${epochs}  ${lossText(r)}  ` +
    (r.epsilon === undefined ? `entropy ${num(r.entropy ?? 0, 3)}  ` : `epsilon ${num(r.epsilon, 3)}  `) +
    `reward ${num(r.reward.total, 4)}  val ${pct(v.policy.totalReturn)} sharpe ${num(v.policy.sharpe)}  ` +
    `(buy-and-hold ${pct(v.buyHold.totalReturn)} ${num(v.buyHold.sharpe)}, random ${pct(v.random.totalReturn)} ` +
    `${num(v.random.sharpe)})  ${(t.collect / 1000).toFixed(1)}s collect ${(t.update / 1000).toFixed(1)}s update` +
    timeText(time)
  );
}

/** The TTY progress line: a bar over epochs, the current phase and the last validation. */
export function progressLine(
  epoch: number,
  epochs: number,
  phase: string,
  last: EpochRecord | null,
  time?: Timing,
  steps?: PhaseSteps,
): string {
  if (steps) phase = `${phase} ${steps.done}/${steps.total} (${duration(steps.leftMs)} left)`;
  const width = 20;
  const done = Math.round((width * (epoch - 1)) / epochs);
  const bar = `${'#'.repeat(done)}${'-'.repeat(width - done)}`;
  const val = last
    ? `  last val ${pct(last.validation.policy.totalReturn)} sharpe ${num(last.validation.policy.sharpe)}`
    : '';
  return `epoch ${epoch}/${epochs} [${bar}] ${phase.padEnd(10)}${val}${timeText(time)}`;
}
