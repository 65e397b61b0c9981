/**
 * Bar intervals and gaps. A gap is a missing bar at the data's modal bar interval: between two
 * bars `d` ms apart there are `ceil(d / modal) - 1` missing bars, at prev + k * modal for every
 * k >= 1 that falls strictly before the next bar (so daily data counts weekends as gaps).
 * Filling them is the explicit `fillGaps` repair: each missing bar becomes a flat bar at the last
 * close (open = high = low = close) with zero volume and the last bar's spread.
 */
import type { Bars } from './types.js';

/** Bars created by fillGaps must stay well below this multiple of the input (a bad timestamp guard). */
const MAX_FILL_FACTOR = 10;

/** The most common interval between consecutive bars (ms); the smallest wins a tie. NaN for n < 2. */
export function modalInterval(ts: Float64Array): number {
  const counts = new Map<number, number>();
  for (let i = 1; i < ts.length; i++) {
    const d = ts[i] - ts[i - 1];
    counts.set(d, (counts.get(d) ?? 0) + 1);
  }
  let best = Number.NaN;
  let bestCount = 0;
  for (const [d, count] of counts) {
    if (count > bestCount || (count === bestCount && d < best)) {
      best = d;
      bestCount = count;
    }
  }
  return best;
}

/** The median interval between consecutive bars (ms); NaN for n < 2. */
export function medianInterval(ts: Float64Array): number {
  if (ts.length < 2) return Number.NaN;
  const d = new Float64Array(ts.length - 1);
  for (let i = 1; i < ts.length; i++) d[i - 1] = ts[i] - ts[i - 1];
  d.sort();
  const m = d.length >> 1;
  return d.length % 2 ? d[m] : (d[m - 1] + d[m]) / 2;
}

/** Missing bars between two bars `d` ms apart, at bar interval `modal`. */
function missingBetween(d: number, modal: number): number {
  // Intervals that are a whole multiple up to f64 noise count as exact (no extra bar).
  return d > modal ? Math.max(0, Math.ceil(d / modal - 1e-9) - 1) : 0;
}

export interface GapStats {
  /** Modal bar interval, ms. */
  modalMs: number;
  /** Intervals with at least one missing bar. */
  gaps: number;
  /** Missing bars in all gaps. */
  missingBars: number;
  /** Longest gap in missing bars, and the 0-based bar index after it. */
  largest: number;
  largestAt: number;
}

export function gapStats(ts: Float64Array): GapStats {
  const modalMs = modalInterval(ts);
  let gaps = 0;
  let missingBars = 0;
  let largest = 0;
  let largestAt = -1;
  for (let i = 1; i < ts.length; i++) {
    const m = missingBetween(ts[i] - ts[i - 1], modalMs);
    if (m > 0) {
      gaps++;
      missingBars += m;
      if (m > largest) {
        largest = m;
        largestAt = i;
      }
    }
  }
  return { modalMs, gaps, missingBars, largest, largestAt };
}

export interface FillResult {
  bars: Bars;
  /** Bars inserted. */
  filled: number;
  /** Gaps (intervals) that were filled. */
  gaps: number;
}

/** Inserts the missing bars (see the file comment). Throws when that would blow the data up. */
export function fillGaps(bars: Bars): FillResult {
  const st = gapStats(bars.timestamp);
  if (st.missingBars === 0) return { bars, filled: 0, gaps: 0 };
  if (st.missingBars > MAX_FILL_FACTOR * bars.n) {
    throw new Error(
      `filling gaps would add ${st.missingBars} bars to ${bars.n} (largest gap: ${st.largest} bars before bar ${st.largestAt + 1} at a ${st.modalMs} ms interval); check the timestamps`,
    );
  }
  const n = bars.n + st.missingBars;
  const out: Bars = {
    n,
    timestamp: new Float64Array(n),
    open: new Float64Array(n),
    high: new Float64Array(n),
    low: new Float64Array(n),
    close: new Float64Array(n),
    volume: new Float64Array(n),
    spreadBps: bars.spreadBps ? new Float64Array(n) : null,
  };
  let w = 0;
  const copy = (i: number) => {
    out.timestamp[w] = bars.timestamp[i];
    out.open[w] = bars.open[i];
    out.high[w] = bars.high[i];
    out.low[w] = bars.low[i];
    out.close[w] = bars.close[i];
    out.volume[w] = bars.volume[i];
    if (out.spreadBps) out.spreadBps[w] = bars.spreadBps![i];
    w++;
  };
  copy(0);
  for (let i = 1; i < bars.n; i++) {
    const prev = bars.timestamp[i - 1];
    const m = missingBetween(bars.timestamp[i] - prev, st.modalMs);
    const c = bars.close[i - 1];
    for (let k = 1; k <= m; k++) {
      out.timestamp[w] = prev + k * st.modalMs;
      out.open[w] = out.high[w] = out.low[w] = out.close[w] = c;
      out.volume[w] = 0;
      if (out.spreadBps) out.spreadBps[w] = bars.spreadBps![i - 1];
      w++;
    }
    copy(i);
  }
  return { bars: out, filled: st.missingBars, gaps: st.gaps };
}
