/**
 * What `data check` warns about (exit 0): valid data that trains poorly or not at all, or bars
 * wider than the barriers (daily or hourly bars at the minute-bar defaults). Every feature stays
 * finite on such data (docs/DATA.md, "Degenerate data"); the warnings say where the features
 * carry no information, the barriers close every position, or the splits cannot measure anything.
 */
import type { Config } from '../config.js';
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

/** One line per problem found; `splits` is null when the data is too short to split at all. */
export function dataWarnings(bars: Bars, splits: Splits | null, cfg: Pick<Config, 'env'>): string[] {
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
