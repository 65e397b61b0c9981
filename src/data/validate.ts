/**
 * SPEC 1 rules, row by row, over a reader's RawTable -> Bars. Strict by default: the first
 * broken rule throws a DataError naming file, row and rule. With `dropInvalid` the offending
 * rows are removed instead and counted; nothing is ever reordered or filled here.
 */
import { DataError } from './errors.js';
import type { RawTable } from './table.js';
import type { Bars } from './types.js';

export interface ValidateOptions {
  /** Drop rows that break a rule (and later rows whose timestamp is not after the last kept one). */
  dropInvalid?: boolean;
}

export interface ValidateResult {
  bars: Bars;
  /** Rows removed by `dropInvalid`. */
  dropped: number;
  /** The first removed row's error message, for the report. */
  firstDropped: string | null;
}

/** A cell's value as text; exponent form from 1e15 on (String writes 1e20 with 21 digits). */
const fmt = (x: number) => (Math.abs(x) >= 1e15 ? x.toExponential() : String(x));

/**
 * Magnitudes beyond these are taken for corrupt cells, not data: prices outside [MIN_PRICE,
 * MAX_PRICE] (f32, which the simulator and the kernels use, keeps ~7 digits across the whole range,
 * and an account of 1 holds between 1e-12 and 1e12 units), volume above MAX_VOLUME, a spread
 * above MAX_SPREAD_BPS (100%). docs/DATA.md, "Degenerate data".
 */
export const MIN_PRICE = 1e-12;
export const MAX_PRICE = 1e12;
export const MAX_VOLUME = 1e18;
export const MAX_SPREAD_BPS = 1e4;

const PRICES = ['open', 'high', 'low', 'close'] as const;
const outOfRange = (x: number) => x < MIN_PRICE || x > MAX_PRICE;

/** The spread of a quote in bps of its mid. */
const quotedSpreadBps = (bid: number, ask: number) => ((ask - bid) / ((ask + bid) / 2)) * 1e4;

/** What a file that lists its newest bar first is told (dropping rows would keep one bar). */
export const NEWEST_FIRST = 'the file runs newest first: reverse its data rows, oldest first';

/**
 * Whether the file's last row is older than its first: an export that lists the newest bar first
 * (Alpha Vantage, Investing.com, Nasdaq.com), which every later row then breaks.
 */
function newestFirst(t: RawTable): boolean {
  let first = Number.NaN;
  let last = Number.NaN;
  for (let r = 0; r < t.n && Number.isNaN(first); r++) first = t.timestamp[r];
  for (let r = t.n - 1; r >= 0 && Number.isNaN(last); r--) last = t.timestamp[r];
  return last < first;
}

/** The first rule that row `r` breaks, as [rule, detail], or null when the row is valid. */
function rowProblem(t: RawTable, r: number, lastTs: number): [string, string] | null {
  const cell = t.problems.get(r);
  if (cell) return [cell.rule, cell.detail];
  const o = t.open[r];
  const h = t.high[r];
  const l = t.low[r];
  const c = t.close[r];
  const v = t.volume[r];
  const nonPositive = !(o > 0) ? 'open' : !(h > 0) ? 'high' : !(l > 0) ? 'low' : !(c > 0) ? 'close' : null;
  if (nonPositive) return ['price <= 0', `${nonPositive}=${fmt(t[nonPositive][r])}`];
  const absurd = PRICES.find((k) => outOfRange(t[k][r]));
  if (absurd)
    return [
      'price out of range',
      `${absurd}=${fmt(t[absurd][r])}; prices must lie in [${MIN_PRICE}, ${MAX_PRICE}]: fix the cell, or rescale the series`,
    ];
  if (h < l) return ['high < low', `high=${fmt(h)}, low=${fmt(l)}`];
  if (h < Math.max(o, c))
    return ['high < max(open, close)', `high=${fmt(h)}, open=${fmt(o)}, close=${fmt(c)}`];
  if (l > Math.min(o, c)) return ['low > min(open, close)', `low=${fmt(l)}, open=${fmt(o)}, close=${fmt(c)}`];
  if (v < 0) return ['volume < 0', `volume=${fmt(v)}`];
  if (v > MAX_VOLUME)
    return ['volume out of range', `volume=${fmt(v)}; at most ${MAX_VOLUME}: fix the cell, or count in lots`];
  if (t.spread && t.spread[r] < 0) return ['spread < 0', `spread=${fmt(t.spread[r])}`];
  if (t.spread && t.spread[r] > MAX_SPREAD_BPS)
    return ['spread out of range', `spread=${fmt(t.spread[r])} bps; at most ${MAX_SPREAD_BPS} (100%)`];
  if (!t.spread && t.bid && t.ask) {
    const b = t.bid[r];
    const a = t.ask[r];
    if (!(b > 0) || !(a > 0)) return ['bid/ask <= 0', `bid=${fmt(b)}, ask=${fmt(a)}`];
    if (outOfRange(b) || outOfRange(a))
      return [
        'bid/ask out of range',
        `bid=${fmt(b)}, ask=${fmt(a)}; quotes must lie in [${MIN_PRICE}, ${MAX_PRICE}]`,
      ];
    if (a < b) return ['ask < bid', `bid=${fmt(b)}, ask=${fmt(a)}`];
    if (quotedSpreadBps(b, a) > MAX_SPREAD_BPS)
      return ['spread out of range', `bid=${fmt(b)}, ask=${fmt(a)}; at most ${MAX_SPREAD_BPS} bps (100%)`];
  }
  const ts = t.timestamp[r];
  if (ts === lastTs)
    return ['duplicate timestamp', `${new Date(ts).toISOString()} repeats the previous row's`];
  if (ts < lastTs)
    return [
      'timestamp before previous row',
      `${new Date(ts).toISOString()} < ${new Date(lastTs).toISOString()}; rows must be in time order${
        newestFirst(t) ? ` (${NEWEST_FIRST})` : ''
      }`,
    ];
  return null;
}

export function validateTable(t: RawTable, opts: ValidateOptions = {}): ValidateResult {
  if (t.n === 0) throw new DataError(t.file, 'file', 'empty file', 'no data rows after the header');
  const n = t.n;
  const timestamp = new Float64Array(n);
  const open = new Float64Array(n);
  const high = new Float64Array(n);
  const low = new Float64Array(n);
  const close = new Float64Array(n);
  const volume = new Float64Array(n);
  const quoted = t.spread !== null || (t.bid !== null && t.ask !== null);
  const spreadBps = quoted ? new Float64Array(n) : null;
  let dropped = 0;
  let firstDropped: string | null = null;
  let lastTs = Number.NEGATIVE_INFINITY;
  let w = 0;
  for (let r = 0; r < n; r++) {
    const problem = rowProblem(t, r, lastTs);
    if (problem) {
      // Only the first dropped row's message is kept: building one per row cost more than the rest.
      if (!opts.dropInvalid || dropped === 0) {
        const err = new DataError(t.file, t.where(r), problem[0], problem[1]);
        if (!opts.dropInvalid) throw err;
        firstDropped = err.message;
      }
      dropped++;
      continue;
    }
    timestamp[w] = lastTs = t.timestamp[r];
    open[w] = t.open[r];
    high[w] = t.high[r];
    low[w] = t.low[r];
    close[w] = t.close[r];
    volume[w] = t.volume[r];
    if (spreadBps) {
      if (t.spread) spreadBps[w] = t.spread[r];
      else {
        const b = t.bid![r];
        const a = t.ask![r];
        spreadBps[w] = quotedSpreadBps(b, a);
      }
    }
    w++;
  }
  if (w === 0) throw new DataError(t.file, 'file', 'no valid rows', `all ${n} data rows were dropped`);
  const cut = (a: Float64Array) => (w === n ? a : a.slice(0, w));
  return {
    bars: {
      n: w,
      timestamp: cut(timestamp),
      open: cut(open),
      high: cut(high),
      low: cut(low),
      close: cut(close),
      volume: cut(volume),
      spreadBps: spreadBps ? cut(spreadBps) : null,
    },
    dropped,
    firstDropped,
  };
}
