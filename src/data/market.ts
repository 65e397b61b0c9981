/**
 * Bars -> Market: the f32 tensors the simulator and the kernels read (src/data/types.ts).
 * Prices are stored as given (f32 keeps ~7 significant digits, 0.01 bp at any price level);
 * keeping values relative to an episode's start is the simulator's job (SPEC 7).
 */
import type { Config } from '../config.js';
import { computeFeatures } from '../features/features.js';
import type { Bars, Market } from './types.js';

export function buildMarket(bars: Bars, cfg: Pick<Config, 'data'>): Market {
  const n = bars.n;
  const ohlc = new Float32Array(n * 4);
  for (let t = 0; t < n; t++) {
    ohlc[4 * t] = bars.open[t];
    ohlc[4 * t + 1] = bars.high[t];
    ohlc[4 * t + 2] = bars.low[t];
    ohlc[4 * t + 3] = bars.close[t];
  }
  const spreadBps = bars.spreadBps
    ? Float32Array.from(bars.spreadBps)
    : new Float32Array(n).fill(cfg.data.defaultSpreadBps);
  return {
    n,
    features: computeFeatures(bars, cfg.data.maxLookback),
    ohlc,
    spreadBps,
    timestamp: bars.timestamp.slice(),
  };
}
