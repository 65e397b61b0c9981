/**
 * Degenerate but valid market series for the property tests (fast-check): each is a chain of
 * segments (random walks of any volatility, flat bars longer than every lookback, one-bar jumps
 * of x10 or /10, one-tick moves, huge volume next to none) at a price level anywhere in the
 * range `data check` accepts, at a bar interval from a minute to a month, with long gaps.
 * fast-check draws the structure; the noise inside a segment comes from Philox (Stream.Test).
 */
import fc from 'fast-check';
import type { Bars } from '../../../src/data/types.js';
import { MAX_PRICE, MAX_VOLUME, MIN_PRICE } from '../../../src/data/validate.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

export type Segment =
  | { kind: 'walk'; bars: number; log10Vol: number }
  | { kind: 'flat'; bars: number }
  | { kind: 'tick'; bars: number }
  | { kind: 'jump'; up: boolean; gapOpen: boolean };

export type VolumeMode = 'normal' | 'zero' | 'sparse' | 'spiky';

export interface SeriesSpec {
  log10Price: number;
  barMs: number;
  volume: VolumeMode;
  log10Volume: number;
  segments: Segment[];
  /** Bar indices after which the timestamps jump by `gapBars` intervals. */
  gaps: { at: number; bars: number }[];
  seed: number;
}

const MINUTE = 60_000;
export const INTERVALS = [
  MINUTE,
  30 * MINUTE,
  60 * MINUTE,
  1440 * MINUTE,
  7 * 1440 * MINUTE,
  30 * 1440 * MINUTE,
];

const segment: fc.Arbitrary<Segment> = fc.oneof(
  fc.record({
    kind: fc.constant('walk' as const),
    bars: fc.integer({ min: 1, max: 300 }),
    log10Vol: fc.double({ min: -6, max: -0.5, noNaN: true }),
  }),
  fc.record({ kind: fc.constant('flat' as const), bars: fc.integer({ min: 1, max: 400 }) }),
  fc.record({ kind: fc.constant('tick' as const), bars: fc.integer({ min: 1, max: 200 }) }),
  fc.record({ kind: fc.constant('jump' as const), up: fc.boolean(), gapOpen: fc.boolean() }),
);

export const seriesSpec: fc.Arbitrary<SeriesSpec> = fc.record({
  log10Price: fc.double({ min: Math.log10(MIN_PRICE), max: Math.log10(MAX_PRICE), noNaN: true }),
  barMs: fc.constantFrom(...INTERVALS),
  volume: fc.constantFrom<VolumeMode>('normal', 'zero', 'sparse', 'spiky'),
  log10Volume: fc.double({ min: -3, max: Math.log10(MAX_VOLUME) - 1, noNaN: true }),
  segments: fc.array(segment, { minLength: 1, maxLength: 12 }),
  gaps: fc.array(fc.record({ at: fc.nat(2000), bars: fc.integer({ min: 2, max: 5000 }) }), { maxLength: 4 }),
  seed: fc.nat(),
});

/**
 * The bars of `spec`, at least `minBars` long (a random walk is appended when the segments are
 * shorter). Valid by construction: prices within [MIN_PRICE, MAX_PRICE] (a move that would leave
 * the range goes the other way), low <= open, close <= high, volume in [0, MAX_VOLUME].
 */
export function buildSeries(spec: SeriesSpec, minBars: number): Bars {
  const segs = [...spec.segments];
  let total = segs.reduce((s, g) => s + (g.kind === 'jump' ? 1 : g.bars), 0);
  if (total < minBars) {
    segs.push({ kind: 'walk', bars: minBars - total, log10Vol: -2 });
    total = minBars;
  }
  const n = total;
  const w = new Uint32Array(4);
  const u = (t: number, k: number) => {
    philox4x32(Stream.Test, spec.seed, t, k >> 2, 23, 0, w);
    return u32ToUnitFloat(w[k & 3]);
  };
  // One e-fold inside the accepted range, so that a bar's wicks (< 1 in log units) stay inside too.
  const lo = Math.log(MIN_PRICE) + 1;
  const hi = Math.log(MAX_PRICE) - 1;
  // A log-price move that would leave the accepted range is reversed.
  const move = (from: number, by: number) => (from + by > hi || from + by < lo ? from - by : from + by);
  const b: Bars = {
    n,
    timestamp: new Float64Array(n),
    open: new Float64Array(n),
    high: new Float64Array(n),
    low: new Float64Array(n),
    close: new Float64Array(n),
    volume: new Float64Array(n),
    spreadBps: null,
  };
  let lc = Math.min(hi, Math.max(lo, spec.log10Price * Math.LN10));
  let t = 0;
  const put = (open: number, close: number, wickUp: number, wickDown: number) => {
    const o = Math.exp(open);
    const c = Math.exp(close);
    b.open[t] = o;
    b.close[t] = c;
    b.high[t] = Math.max(o, c) * Math.exp(wickUp);
    b.low[t] = Math.min(o, c) * Math.exp(-wickDown);
    t++;
  };
  for (const g of segs) {
    if (g.kind === 'jump') {
      const to = move(lc, g.up ? Math.LN10 : -Math.LN10);
      put(g.gapOpen ? to : lc, to, 0, 0);
      lc = to;
    } else if (g.kind === 'flat') {
      for (let k = 0; k < g.bars; k++) put(lc, lc, 0, 0);
    } else if (g.kind === 'tick') {
      // Moves of one part in 1e7 or none: ranges that are zero or at the edge of f64 rounding.
      for (let k = 0; k < g.bars; k++) {
        const r = u(t, 0);
        const to = r < 0.3 ? move(lc, 1e-7) : r < 0.6 ? move(lc, -1e-7) : lc;
        put(lc, to, r < 0.8 ? 0 : 1e-7, r > 0.9 ? 1e-7 : 0);
        lc = to;
      }
    } else {
      const vol = 10 ** g.log10Vol;
      for (let k = 0; k < g.bars; k++) {
        const open = move(lc, vol * 0.3 * (u(t, 1) - 0.5));
        const to = move(open, vol * 2 * (u(t, 2) - 0.5));
        put(open, to, vol * u(t, 3), vol * u(t, 4));
        lc = to;
      }
    }
  }
  const level = 10 ** spec.log10Volume;
  for (let k = 0; k < n; k++) {
    const r = u(k, 5);
    const v =
      spec.volume === 'zero'
        ? 0
        : spec.volume === 'sparse'
          ? r < 0.5
            ? 0
            : level * r
          : spec.volume === 'spiky'
            ? r < 0.02
              ? MAX_VOLUME
              : r < 0.6
                ? 0
                : level * 1e-6 * r
            : level * (0.5 + r);
    b.volume[k] = Math.min(MAX_VOLUME, v);
  }
  const gapAfter = new Map(spec.gaps.map((g) => [g.at, g.bars]));
  let ts = Date.UTC(2001, 0, 1);
  for (let k = 0; k < n; k++) {
    b.timestamp[k] = ts;
    ts += spec.barMs * (gapAfter.get(k) ?? 1);
  }
  return b;
}
