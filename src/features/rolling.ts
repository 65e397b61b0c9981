/**
 * Causal rolling-window primitives over f64 series, O(n) each. A window of `w` ending at t covers
 * x[max(0, t - w + 1) .. t]: at the start of a series it is shorter (counted by windowCount).
 * Sliding sums recompute their window exactly every `w` steps, so add/subtract rounding cannot
 * drift over millions of bars (amortised O(1) per step). Everything at t reads only x[<= t].
 */

/** Bars in the window ending at t: min(w, t + 1). */
export const windowCount = (t: number, w: number) => Math.min(t + 1, w);

/** out[t] = sum of x over the window of w ending at t. */
export function rollingSum(x: Float64Array, w: number): Float64Array {
  const n = x.length;
  const out = new Float64Array(n);
  let s = 0;
  let untilRefresh = w;
  for (let t = 0; t < n; t++) {
    s += x[t];
    if (t >= w) s -= x[t - w];
    if (--untilRefresh === 0) {
      untilRefresh = w;
      s = 0;
      for (let i = Math.max(0, t - w + 1); i <= t; i++) s += x[i];
    }
    out[t] = s;
  }
  return out;
}

/** out[t] = mean of x over the window of w ending at t. */
export function rollingMean(x: Float64Array, w: number): Float64Array {
  const out = rollingSum(x, w);
  for (let t = 0; t < out.length; t++) out[t] /= windowCount(t, w);
  return out;
}

/** out[t] = population standard deviation of x over the window of w ending at t (>= 0). */
export function rollingStd(x: Float64Array, w: number): Float64Array {
  const s1 = rollingSum(x, w);
  const sq = new Float64Array(x.length);
  for (let t = 0; t < x.length; t++) sq[t] = x[t] * x[t];
  const s2 = rollingSum(sq, w);
  for (let t = 0; t < s1.length; t++) {
    const k = windowCount(t, w);
    const m = s1[t] / k;
    const v = s2[t] / k - m * m;
    s1[t] = v > 0 ? Math.sqrt(v) : 0;
  }
  return s1;
}

/** out[t] = max (sign = 1) or min (sign = -1) of x over the window of w ending at t. */
function rollingExtreme(x: Float64Array, w: number, sign: 1 | -1): Float64Array {
  const n = x.length;
  const out = new Float64Array(n);
  // Monotonic deque of indices: each index enters and leaves once, so O(n) in all.
  const deque = new Int32Array(n);
  let head = 0;
  let tail = 0;
  for (let t = 0; t < n; t++) {
    const v = sign * x[t];
    while (tail > head && sign * x[deque[tail - 1]] <= v) tail--;
    deque[tail++] = t;
    if (deque[head] <= t - w) head++;
    out[t] = x[deque[head]];
  }
  return out;
}

export const rollingMax = (x: Float64Array, w: number) => rollingExtreme(x, w, 1);
export const rollingMin = (x: Float64Array, w: number) => rollingExtreme(x, w, -1);

/** out[t] = f(x[t]): a plain loop (TypedArray.map with a callback is several times slower). */
export function mapSeries(x: Float64Array, f: (v: number, t: number) => number): Float64Array {
  const out = new Float64Array(x.length);
  for (let t = 0; t < x.length; t++) out[t] = f(x[t], t);
  return out;
}

/** Exponential moving average with smoothing alpha, started at x[0]. */
export function emaAlpha(x: Float64Array, alpha: number): Float64Array {
  const out = new Float64Array(x.length);
  let e = x.length ? x[0] : 0;
  for (let t = 0; t < x.length; t++) {
    e += alpha * (x[t] - e);
    out[t] = e;
  }
  return out;
}

/** EMA with the usual span convention: alpha = 2 / (span + 1). */
export const ema = (x: Float64Array, span: number) => emaAlpha(x, 2 / (span + 1));
