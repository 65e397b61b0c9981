/**
 * What `data check` warns about (exit 0): valid data that trains poorly or not at all, or bars
 * wider than the barriers (daily or hourly bars at the minute-bar defaults). Every feature stays
 * finite on such data (docs/DATA.md, "Degenerate data"); the warnings say where the features
 * carry no information, the barriers close every position, or the splits cannot measure anything.
 */
import type { Config } from '../config.js';
import { makeSplits, SplitError } from './splits.js';
import type { Bars, Splits } from './types.js';

/** Flat bars in a row (open = high = low = close = the previous close) worth a warning. */
export const FLAT_STRETCH_BARS = 20;
/**
 * A close this many times the previous one, or below its inverse, is worth a warning: an unadjusted
 * 2:1 split halves the close in one bar, which real markets rarely do (the S&P 500 fell 20% on its
 * worst day).
 */
export const JUMP_FACTOR = 1.8;

const iso = (ms: number) => new Date(ms).toISOString();

/** The median over bars of (high - low) / close, in bps: how far a typical bar moves. */
export function medianRangeBps(bars: Bars): number {
  const r = new Float64Array(bars.n);
  for (let t = 0; t < bars.n; t++) r[t] = ((bars.high[t] - bars.low[t]) / bars.close[t]) * 1e4;
  r.sort();
  return r[bars.n >> 1];
}

/** `x` rounded to two significant digits (820, 1400): a suggestion, not a measurement. */
const roundTo2 = (x: number) => {
  const p = 10 ** Math.max(0, Math.floor(Math.log10(x)) - 1);
  return Math.round(x / p) * p;
};

/**
 * How many deviations of the discounted one-bar reward (rewardNoise) C51's default support
 * (-3 .. 3) spans on each side on the built-in market, the scale on which that support won on
 * validation: 11.3 to 13.7 over the train splits of seeds 1-6 (deviation 0.22 to 0.27).
 */
export const C51_SUPPORT_SPAN = 12;
/** A support narrower than this many of those standard deviations a side is worth a warning. */
export const C51_SUPPORT_WARN = 4;

/**
 * The standard deviation of the discounted sum of one-bar rewards at full exposure,
 * `pnlScale x std(log return) / sqrt(1 - gamma^2)`, over the split's bars (daily bars move ~20x
 * more than minute bars, and so do their rewards); 0 with fewer than 3 bars.
 */
export function rewardNoise(
  bars: Bars,
  split: { start: number; end: number },
  cfg: { env: Pick<Config['env'], 'pnlScale'>; dqn: Pick<Config['dqn'], 'gamma'> },
): number {
  const c = bars.close;
  let n = 0;
  let sum = 0;
  let sq = 0;
  for (let t = split.start + 1; t < split.end; t++) {
    const r = Math.log(c[t] / c[t - 1]);
    n++;
    sum += r;
    sq += r * r;
  }
  if (n < 2) return 0;
  const std = Math.sqrt(Math.max(0, (sq - (sum * sum) / n) / (n - 1)));
  return (cfg.env.pnlScale * std) / Math.sqrt(1 - cfg.dqn.gamma * cfg.dqn.gamma);
}

/**
 * C51's support against the train split's reward scale (rewardNoise): null when it spans
 * C51_SUPPORT_WARN deviations a side, else the warning, naming the support of the built-in
 * market's span.
 */
export function c51SupportWarning(
  bars: Bars,
  train: { start: number; end: number },
  cfg: Pick<Config, 'env' | 'dqn'>,
): string | null {
  const noise = rewardNoise(bars, train, cfg);
  const { vMin, vMax } = cfg.dqn;
  const half = (vMax - vMin) / 2;
  if (!(noise > 0) || half >= C51_SUPPORT_WARN * noise) return null;
  const wide = roundTo2(C51_SUPPORT_SPAN * noise);
  return (
    `C51's support dqn.vMin ${vMin} .. dqn.vMax ${vMax} spans +-${(half / noise).toFixed(1)} standard deviations of this ` +
    `data's discounted one-bar reward (${noise.toPrecision(3)}: env.pnlScale ${cfg.env.pnlScale} x the train split's bar ` +
    `log-return std / sqrt(1 - gamma^2)), so most returns are clipped onto its ends; ` +
    `the default spans +-${C51_SUPPORT_SPAN} on the built-in market: for the same here pass --dqn.vMin -${wide} --dqn.vMax ${wide}`
  );
}

/** One line per problem found; `splits` is null when the data is too short to split at all. */
export function dataWarnings(
  bars: Bars,
  splits: Splits | null,
  cfg: Pick<Config, 'env'> & Partial<Pick<Config, 'dqn' | 'train'>>,
): string[] {
  const n = bars.n;
  const out: string[] = [];
  const { open: o, high: h, low: l, close: c, volume: v, timestamp: ts } = bars;

  let traded = 0;
  for (let t = 0; t < n; t++) if (v[t] > 0) traded++;
  if (traded === 0) {
    out.push(
      'volume is 0 on every bar: the volume features are 0 and the VWAP features use the plain mean price',
    );
  }

  let stretches = 0;
  let longest = 0;
  let longestAt = -1;
  let run = 0;
  for (let t = 1; t <= n; t++) {
    const flat = t < n && o[t] === c[t - 1] && h[t] === c[t - 1] && l[t] === c[t - 1] && c[t] === c[t - 1];
    if (flat) {
      run++;
      continue;
    }
    if (run >= FLAT_STRETCH_BARS) {
      stretches++;
      if (run > longest) {
        longest = run;
        longestAt = t - run;
      }
    }
    run = 0;
  }
  if (stretches > 0) {
    out.push(
      `${stretches} flat stretch(es) of ${FLAT_STRETCH_BARS}+ bars (open = high = low = close, unchanged; longest ${longest} ` +
        `from ${iso(ts[longestAt])}): the return features read 0 there and saturate at +-5 on the next move`,
    );
  }

  let jumps = 0;
  let firstJump = -1;
  for (let t = 1; t < n; t++) {
    const ratio = c[t] / c[t - 1];
    if (ratio > JUMP_FACTOR || ratio < 1 / JUMP_FACTOR) {
      jumps++;
      if (firstJump < 0) firstJump = t;
    }
  }
  if (jumps > 0) {
    out.push(
      `${jumps} close(s) more than ${JUMP_FACTOR}x away from the previous one (first at ${iso(ts[firstJump])}): ` +
        'an unadjusted split (adjust the prices before it) or a bad tick (fix the row)?',
    );
  }

  const range = medianRangeBps(bars);
  if (range > cfg.env.stopLossBps) {
    const stop = roundTo2(3 * range);
    const profit = roundTo2((stop * cfg.env.profitTargetBps) / cfg.env.stopLossBps);
    out.push(
      `the median bar spans ${Math.round(range)} bps from low to high, more than env.stopLossBps (${cfg.env.stopLossBps}): ` +
        `most of the agent's positions close at a barrier within a bar or two; ` +
        `for bars this wide set barriers a few bars wide, e.g. --env.stopLossBps ${stop} --env.profitTargetBps ${profit}`,
    );
  }

  if (splits && cfg.dqn && cfg.train?.algo === 'c51') {
    const support = c51SupportWarning(bars, splits.train, { env: cfg.env, dqn: cfg.dqn });
    if (support) out.push(support);
  }

  if (!splits) {
    out.push('no train/val/test splits: the data is too short for the config (splits line)');
  } else {
    const small = (['val', 'test'] as const).filter(
      (k) => splits[k].end - splits[k].start < cfg.env.episodeBars,
    );
    if (small.length > 0) {
      out.push(
        `the ${small.join(' and ')} split${small.length > 1 ? 's are' : ' is'} shorter than one episode ` +
          `(env.episodeBars ${cfg.env.episodeBars}): too few bars to validate on; use more data`,
      );
    }
  }
  return out;
}

/**
 * data check's warnings on the bars a run trains on, with the run's config (the C51 support's
 * among them); none when the data cannot be split (training says why). `foxhunt train` prints
 * them, the demo page shows them in its info lines.
 */
export function trainWarnings(bars: Bars, cfg: Config): string[] {
  let splits: Splits;
  try {
    splits = makeSplits(bars.n, cfg);
  } catch (err) {
    if (err instanceof SplitError) return [];
    throw err;
  }
  return dataWarnings(bars, splits, cfg);
}
