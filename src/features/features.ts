/**
 * The 51 causal market features (SPEC 2), documented one by one in docs/FEATURES.md.
 *
 * computeFeatures(bars, maxLookback) -> `[n, 51]` f32 row-major. Feature t reads bars <= t only:
 * rolling windows end at t (longest FEATURE_WINDOW = 120 bars, so row t depends on bars
 * t - 120 .. t), EMAs and Wilder averages run forward from bar 0. Rows t < maxLookback are
 * warm-up zeros; with maxLookback < 120 the rows just after warm-up see windows shortened by the
 * series start. Everything is dimensionless: log returns and distances are divided by the
 * causal per-bar volatility s_t = sigma60_t + 1e-6 (times sqrt of the horizon), ratios of scales
 * are logged, bounded oscillators are mapped to [-1, 1]. Then every value is clipped to [-5, 5].
 * Small epsilons in every denominator keep flat prices and zero volume finite (they give 0).
 * Computed in f64, stored as f32.
 */
import type { Bars } from '../data/types.js';
import {
  ema,
  emaAlpha,
  mapSeries,
  rollingMax,
  rollingMean,
  rollingMin,
  rollingStd,
  rollingSum,
  windowCount,
} from './rolling.js';

export const FEATURE_NAMES = [
  'ret_1',
  'ret_5',
  'ret_10',
  'ret_20',
  'ret_60',
  'ret_120',
  'rv_60_bps',
  'rv_ratio_10_60',
  'rv_ratio_20_120',
  'park_ratio_20',
  'range_atr_14',
  'atr_ratio_14_120',
  'body',
  'wick_balance',
  'sma_dist_10',
  'sma_dist_20',
  'sma_dist_60',
  'sma_dist_120',
  'ema_cross_5_20',
  'ema_cross_12_48',
  'ema_cross_30_120',
  'rsi_14',
  'rsi_60',
  'macd',
  'macd_signal',
  'macd_hist',
  'bb_pctb_20',
  'bb_width_20',
  'stoch_k_14',
  'stoch_d_14',
  'stoch_k_60',
  'volume_z_20',
  'volume_z_120',
  'volume_ratio_5_60',
  'signed_volume_20',
  'vwap_dist_20',
  'vwap_dist_120',
  'streak',
  'up_frac_20',
  'skew_30',
  'skew_120',
  'kurt_30',
  'kurt_120',
  'dist_high_20',
  'dist_low_20',
  'dist_high_120',
  'dist_low_120',
  'tod_sin',
  'tod_cos',
  'dow_sin',
  'dow_cos',
] as const;

export type FeatureName = (typeof FEATURE_NAMES)[number];
export const FEATURE_COUNT = 51;
/** The longest rolling window, in bars. */
export const FEATURE_WINDOW = 120;
/** Features are clipped to [-CLIP, CLIP]. */
export const FEATURE_CLIP = 5;

const EPS = 1e-8;
/** Floor of the volatility scale s_t: 0.01 bp per bar. */
const SIGMA_FLOOR = 1e-6;
/** Floor for dispersions of log price and log volume levels (above their f64 rounding noise). */
const LEVEL_EPS = 1e-7;
const MS_PER_DAY = 86_400_000;

const logRatio = (a: number, b: number) => Math.log((a + EPS) / (b + EPS));

export function computeFeatures(bars: Bars, maxLookback: number): Float32Array {
  if (!Number.isInteger(maxLookback) || maxLookback < 0)
    throw new Error(`computeFeatures: maxLookback must be an integer >= 0, got ${maxLookback}`);
  const n = bars.n;
  const { open: o, high: h, low: l, close: c, volume: v } = bars;
  // Features are built column by column into `cols` ([51, n], contiguous writes), then tiled into
  // the row-major output: writing a column straight into [n, 51] strides 204 bytes per bar and
  // made memory traffic, not arithmetic, the cost.
  const cols = new Float32Array(n * FEATURE_COUNT);
  let col = 0;
  const L = Math.min(maxLookback, n);
  // Each feature is written into `cur` by a plain loop, then clipped into its column.
  const cur = new Float64Array(n);
  const emit = () => {
    const base = col * n;
    for (let t = L; t < n; t++) {
      const x = cur[t];
      cols[base + t] = x > FEATURE_CLIP ? FEATURE_CLIP : Math.max(x, -FEATURE_CLIP);
    }
    col++;
  };

  const lc = mapSeries(c, Math.log);
  const r = new Float64Array(n);
  for (let t = 1; t < n; t++) r[t] = lc[t] - lc[t - 1];
  const sigma60 = rollingStd(r, 60);
  // 1 / s_t: the hot loops multiply instead of dividing.
  const invS = mapSeries(sigma60, (x) => 1 / (x + SIGMA_FLOOR));
  const lh = mapSeries(h, Math.log);
  const ll = mapSeries(l, Math.log);

  // Returns over h bars in units of s_t * sqrt(h).
  for (const hor of [1, 5, 10, 20, 60, 120]) {
    const k = 1 / Math.sqrt(hor);
    for (let t = L; t < n; t++) cur[t] = (lc[t] - lc[t >= hor ? t - hor : 0]) * invS[t] * k;
    emit();
  }

  // Realized volatility.
  const sigma10 = rollingStd(r, 10);
  const sigma20 = rollingStd(r, 20);
  const sigma120 = rollingStd(r, 120);
  for (let t = L; t < n; t++) cur[t] = Math.log1p(sigma60[t] * 1e4);
  emit();
  for (let t = L; t < n; t++) cur[t] = logRatio(sigma10[t], sigma60[t]);
  emit();
  for (let t = L; t < n; t++) cur[t] = logRatio(sigma20[t], sigma120[t]);
  emit();
  const hl2 = new Float64Array(n);
  for (let t = 0; t < n; t++) hl2[t] = (lh[t] - ll[t]) ** 2;
  const park20 = rollingMean(hl2, 20);
  // A sliding mean of squares can come out a rounding step below 0 once a window turns flat.
  for (let t = L; t < n; t++)
    cur[t] = logRatio(Math.sqrt(Math.max(park20[t], 0) / (4 * Math.LN2)), sigma20[t]);
  emit();

  // Range and true range (log units).
  const tr = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    const prev = t > 0 ? lc[t - 1] : lc[t];
    tr[t] = Math.max(lh[t], prev) - Math.min(ll[t], prev);
  }
  const atr14 = rollingMean(tr, 14);
  const atr120 = rollingMean(tr, 120);
  for (let t = L; t < n; t++) cur[t] = (tr[t] + EPS) / (atr14[t] + EPS) - 1;
  emit();
  for (let t = L; t < n; t++) cur[t] = logRatio(atr14[t], atr120[t]);
  emit();
  for (let t = L; t < n; t++) cur[t] = h[t] > l[t] ? (c[t] - o[t]) / (h[t] - l[t]) : 0;
  emit();
  for (let t = L; t < n; t++)
    cur[t] = h[t] > l[t] ? (Math.min(o[t], c[t]) - l[t] - (h[t] - Math.max(o[t], c[t]))) / (h[t] - l[t]) : 0;
  emit();

  // Distance of the log close from its simple moving average.
  for (const w of [10, 20, 60, 120]) {
    const m = rollingMean(lc, w);
    const k = 1 / Math.sqrt(w);
    for (let t = L; t < n; t++) cur[t] = (lc[t] - m[t]) * invS[t] * k;
    emit();
  }

  // EMA crosses of the log close.
  for (const [fast, slow] of [
    [5, 20],
    [12, 48],
    [30, 120],
  ]) {
    const ef = ema(lc, fast);
    const es = ema(lc, slow);
    const k = 1 / Math.sqrt(slow);
    for (let t = L; t < n; t++) cur[t] = (ef[t] - es[t]) * invS[t] * k;
    emit();
  }

  // RSI (Wilder smoothing of gains and losses), mapped to [-1, 1]: (RSI - 50) / 50.
  const gains = mapSeries(r, (x) => Math.max(x, 0));
  const losses = mapSeries(r, (x) => (x < 0 ? -x : 0));
  for (const w of [14, 60]) {
    const g = emaAlpha(gains, 1 / w);
    const d = emaAlpha(losses, 1 / w);
    for (let t = L; t < n; t++) cur[t] = g[t] + d[t] > 0 ? (g[t] - d[t]) / (g[t] + d[t]) : 0;
    emit();
  }

  // MACD (12, 26, 9) of the log close, in units of s_t.
  const ema12 = ema(lc, 12);
  const ema26 = ema(lc, 26);
  const macd = new Float64Array(n);
  for (let t = 0; t < n; t++) macd[t] = ema12[t] - ema26[t];
  const signal = ema(macd, 9);
  for (let t = L; t < n; t++) cur[t] = macd[t] * invS[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = signal[t] * invS[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = (macd[t] - signal[t]) * invS[t];
  emit();

  // Bollinger bands (20 bars, 2 sd) of the log close.
  const m20 = rollingMean(lc, 20);
  const sd20 = rollingStd(lc, 20);
  for (let t = L; t < n; t++) cur[t] = (lc[t] - m20[t]) / (2 * sd20[t] + LEVEL_EPS);
  emit();
  for (let t = L; t < n; t++)
    cur[t] = Math.log((sd20[t] + LEVEL_EPS) / (sigma60[t] * Math.sqrt(20) + LEVEL_EPS));
  emit();

  // Stochastic oscillator, mapped to [-1, 1].
  const stoch = (w: number) => {
    const hh = rollingMax(h, w);
    const ll = rollingMin(l, w);
    const k = new Float64Array(n);
    for (let t = 0; t < n; t++) k[t] = hh[t] > ll[t] ? (2 * (c[t] - ll[t])) / (hh[t] - ll[t]) - 1 : 0;
    return k;
  };
  const k14 = stoch(14);
  const d14 = rollingMean(k14, 3);
  for (let t = L; t < n; t++) cur[t] = k14[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = d14[t];
  emit();
  const k60 = stoch(60);
  for (let t = L; t < n; t++) cur[t] = k60[t];
  emit();

  // Volume.
  const lv = mapSeries(v, Math.log1p);
  for (const w of [20, 120]) {
    const m = rollingMean(lv, w);
    const sd = rollingStd(lv, w);
    for (let t = L; t < n; t++) cur[t] = (lv[t] - m[t]) / (sd[t] + LEVEL_EPS);
    emit();
  }
  const v5 = rollingMean(v, 5);
  const v60 = rollingMean(v, 60);
  // Sliding sums keep rounding dust of a huge volume that left the window: never below 0.
  for (let t = L; t < n; t++) cur[t] = Math.log((Math.max(v5[t], 0) + 1e-9) / (Math.max(v60[t], 0) + 1e-9));
  emit();
  // Windows of zero volume are detected by an exact count, not by a sum that may hold rounding dust.
  const traded = mapSeries(v, (x) => (x > 0 ? 1 : 0));
  const traded20 = rollingSum(traded, 20);
  const sumV20 = rollingSum(v, 20);
  const signedV20 = rollingSum(
    mapSeries(v, (x, t) => x * Math.sign(r[t])),
    20,
  );
  for (let t = L; t < n; t++)
    cur[t] = traded20[t] > 0 && sumV20[t] > 0 ? Math.min(1, Math.max(-1, signedV20[t] / sumV20[t])) : 0;
  emit();

  // Distance from the VWAP of the typical price (its plain mean when no volume traded). The VWAP is
  // held inside the window's typical-price range, where it lies but for the rounding of sums.
  const tp = new Float64Array(n);
  const vtp = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    tp[t] = (h[t] + l[t] + c[t]) / 3;
    vtp[t] = v[t] * tp[t];
  }
  for (const w of [20, 120]) {
    const sv = rollingSum(v, w);
    const svp = rollingSum(vtp, w);
    const cnt = rollingSum(traded, w);
    const mtp = rollingMean(tp, w);
    const tpMin = rollingMin(tp, w);
    const tpMax = rollingMax(tp, w);
    const k = 1 / Math.sqrt(w);
    for (let t = L; t < n; t++) {
      const vwap = cnt[t] > 0 && sv[t] > 0 ? Math.min(tpMax[t], Math.max(tpMin[t], svp[t] / sv[t])) : mtp[t];
      cur[t] = (lc[t] - Math.log(vwap)) * invS[t] * k;
    }
    emit();
  }

  // Streaks: signed run length of up (+) / down (-) closes; flat closes end a run.
  const streak = new Float64Array(n);
  for (let t = 1; t < n; t++) {
    streak[t] = r[t] > 0 ? Math.max(streak[t - 1], 0) + 1 : r[t] < 0 ? Math.min(streak[t - 1], 0) - 1 : 0;
  }
  for (let t = L; t < n; t++) cur[t] = streak[t] / 10;
  emit();
  const up20 = rollingSum(mapSeries(r, Math.sign), 20);
  for (let t = L; t < n; t++) cur[t] = up20[t] / windowCount(t, 20);
  emit();

  // Rolling skewness and log kurtosis (relative to a normal's 3) of one-bar returns.
  const r2 = mapSeries(r, (x) => x * x);
  const r3 = mapSeries(r, (x) => x * x * x);
  const r4 = mapSeries(r2, (x) => x * x);
  const moments = (w: number) => {
    const s1 = rollingSum(r, w);
    const s2 = rollingSum(r2, w);
    const s3 = rollingSum(r3, w);
    const s4 = rollingSum(r4, w);
    const skew = new Float64Array(n);
    const kurt = new Float64Array(n);
    for (let t = 0; t < n; t++) {
      const k = windowCount(t, w);
      const m = s1[t] / k;
      const e2 = s2[t] / k;
      const m2 = e2 - m * m;
      // Below (1e-7)^2 the window is flat up to rounding: shape is undefined, report 0.
      if (m2 <= 1e-14) continue;
      const e3 = s3[t] / k;
      const m3 = e3 - 3 * m * e2 + 2 * m * m * m;
      const m4 = s4[t] / k - 4 * m * e3 + 6 * m * m * e2 - 3 * m * m * m * m;
      skew[t] = m3 / (m2 * Math.sqrt(m2));
      kurt[t] = Math.log(Math.max(m4 / (m2 * m2), 1e-3) / 3);
    }
    return { skew, kurt };
  };
  const mom30 = moments(30);
  const mom120 = moments(120);
  for (let t = L; t < n; t++) cur[t] = mom30.skew[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = mom120.skew[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = mom30.kurt[t];
  emit();
  for (let t = L; t < n; t++) cur[t] = mom120.kurt[t];
  emit();

  // Distance below the rolling high and above the rolling low, in units of s_t * sqrt(w).
  for (const w of [20, 120]) {
    // ln is monotone: the max of ln h is ln of the max of h.
    const hh = rollingMax(lh, w);
    const lowest = rollingMin(ll, w);
    const k = 1 / Math.sqrt(w);
    for (let t = L; t < n; t++) cur[t] = (hh[t] - lc[t]) * invS[t] * k;
    emit();
    for (let t = L; t < n; t++) cur[t] = (lc[t] - lowest[t]) * invS[t] * k;
    emit();
  }

  // Time of day and day of week (UTC), only once some bar interval so far is under a day.
  const ts = bars.timestamp;
  const intraday = new Uint8Array(n);
  let minInterval = Number.POSITIVE_INFINITY;
  for (let t = 1; t < n; t++) {
    minInterval = Math.min(minInterval, ts[t] - ts[t - 1]);
    intraday[t] = minInterval < MS_PER_DAY ? 1 : 0;
  }
  // Angles once per bar; floor-based remainders (fmod on doubles was a visible cost).
  const dayAngle = new Float64Array(n);
  const weekAngle = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    const day = Math.floor(ts[t] / MS_PER_DAY);
    dayAngle[t] = (2 * Math.PI * (ts[t] - day * MS_PER_DAY)) / MS_PER_DAY;
    // 1970-01-01 was a Thursday: (day + 3) mod 7 counts from Monday = 0.
    const weekday = day + 3 - Math.floor((day + 3) / 7) * 7;
    weekAngle[t] = (2 * Math.PI * weekday) / 7;
  }
  for (let t = L; t < n; t++) cur[t] = intraday[t] ? Math.sin(dayAngle[t]) : 0;
  emit();
  for (let t = L; t < n; t++) cur[t] = intraday[t] ? Math.cos(dayAngle[t]) : 0;
  emit();
  for (let t = L; t < n; t++) cur[t] = intraday[t] ? Math.sin(weekAngle[t]) : 0;
  emit();
  for (let t = L; t < n; t++) cur[t] = intraday[t] ? Math.cos(weekAngle[t]) : 0;
  emit();

  if (col !== FEATURE_COUNT)
    throw new Error(`computeFeatures: built ${col} features, expected ${FEATURE_COUNT}`);
  return toRowMajor(cols, n);
}

/** [51, n] -> [n, 51], in tiles of rows small enough that the writes stay in cache. */
function toRowMajor(cols: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n * FEATURE_COUNT);
  const TILE = 1024;
  for (let t0 = 0; t0 < n; t0 += TILE) {
    const t1 = Math.min(n, t0 + TILE);
    for (let j = 0; j < FEATURE_COUNT; j++) {
      const base = j * n;
      for (let t = t0; t < t1; t++) out[t * FEATURE_COUNT + j] = cols[base + t];
    }
  }
  return out;
}
