/**
 * Small markets for the simulator tests: one built bar by bar from hand-written OHLC, one a
 * seeded random walk with valid OHLC, varying spreads and random features (Philox Stream.Test),
 * volatile enough that every barrier, fill type and restart occurs within a few hundred bars.
 */
import type { Market } from '../../../src/data/types.js';
import { MARKET_FEATURES } from '../../../src/nets/layout.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

export type Ohlc = [open: number, high: number, low: number, close: number];

function market(n: number): Market {
  return {
    n,
    features: new Float32Array(n * MARKET_FEATURES),
    ohlc: new Float32Array(n * 4),
    spreadBps: new Float32Array(n),
    timestamp: Float64Array.from({ length: n }, (_, t) => 1_700_000_000_000 + t * 60_000),
  };
}

/** Bars as given, a constant spread, features k / 100 + t / 1000 (distinct per bar). */
export function handMarket(bars: Ohlc[], spreadBps = 2): Market {
  const m = market(bars.length);
  bars.forEach((b, t) => {
    m.ohlc.set(b, t * 4);
    m.spreadBps[t] = spreadBps;
    for (let k = 0; k < MARKET_FEATURES; k++) m.features[t * MARKET_FEATURES + k] = k / 100 + t / 1000;
  });
  return m;
}

/** A seeded random walk of `n` bars around 100 with 0.1-0.4% bar volatility. */
export function randomMarket(n: number, seed: number): Market {
  const m = market(n);
  const w = new Uint32Array(4);
  const u = (t: number, k: number) => {
    philox4x32(Stream.Test, seed, t, k >> 2, 0, 0, w);
    return u32ToUnitFloat(w[k & 3]);
  };
  let close = 100;
  for (let t = 0; t < n; t++) {
    const vol = 0.001 + 0.003 * u(t, 0);
    const open = close * (1 + vol * 0.3 * (u(t, 1) - 0.5));
    close = open * (1 + vol * 2 * (u(t, 2) - 0.5));
    const high = Math.max(open, close) * (1 + vol * u(t, 3));
    const low = Math.min(open, close) * (1 - vol * u(t, 4));
    m.ohlc.set([open, high, low, close], t * 4);
    m.spreadBps[t] = 1 + 4 * u(t, 5);
    for (let k = 0; k < MARKET_FEATURES; k++) m.features[t * MARKET_FEATURES + k] = 2 * u(t, 8 + k) - 1;
  }
  return m;
}
