/**
 * Bars -> Market: the f32 tensors the simulator and the kernels read (src/data/types.ts).
 * Prices are stored as given (f32 keeps ~7 significant digits, 0.01 bp at any price level);
 * keeping values relative to an episode's start is the simulator's job (SPEC 7).
 */
import type { Config } from '../config.js';
import { DataError } from '../data/errors.js';
import type { Bars, Market } from '../data/types.js';
import { computeFeatures, FEATURE_COUNT, FEATURE_NAMES } from './features.js';

const OHLC = ['open', 'high', 'low', 'close'] as const;

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

/** Where a market holds its first non-finite input: the column, the bar and its time. */
export interface NonFinite {
  column: string;
  bar: number;
  timestamp: number;
  value: number;
}

/** The first non-finite value of `market`'s inputs (features, OHLC, spread), bar by bar, or null. */
export function firstNonFinite(market: Market): NonFinite | null {
  const at = (column: string, bar: number, value: number): NonFinite => ({
    column,
    bar,
    timestamp: market.timestamp[bar],
    value,
  });
  for (let t = 0; t < market.n; t++) {
    for (let k = 0; k < FEATURE_COUNT; k++) {
      const x = market.features[t * FEATURE_COUNT + k];
      if (!Number.isFinite(x)) return at(FEATURE_NAMES[k], t, x);
    }
    for (let k = 0; k < 4; k++) {
      const x = market.ohlc[t * 4 + k];
      if (!Number.isFinite(x)) return at(OHLC[k], t, x);
    }
    if (!Number.isFinite(market.spreadBps[t])) return at('spread', t, market.spreadBps[t]);
  }
  return null;
}

export const describeNonFinite = (b: NonFinite) =>
  `${b.column} is ${b.value} at bar ${b.bar} (${new Date(b.timestamp).toISOString()})`;

/**
 * Training's check before its first epoch: a DataError naming the column, bar and time of the
 * first non-finite input. `data check` keeps such values out of the files it accepts, so one
 * here is a foxhunt bug in the features, which the message says.
 */
export function assertMarketFinite(market: Market, source: string): void {
  const bad = firstNonFinite(market);
  if (!bad) return;
  throw new DataError(
    source,
    `bar ${bad.bar} (${new Date(bad.timestamp).toISOString()})`,
    'non-finite input',
    `${bad.column}=${bad.value}; training would diverge, so it did not start. ` +
      `"foxhunt data features" shows the values; please report the rows up to this bar as a foxhunt bug`,
  );
}
