/**
 * Backtest metrics from a per-bar equity curve (SPEC 10). Everything is computed in f64 on the
 * host from what one backtest recorded; definitions (written down in docs/TRAINING.md):
 *
 * - Bar returns `r_k = V_k / V_{k-1} - 1`, k = 1..n, one per decision step.
 * - Sharpe = mean(r) / std(r) * sqrt(barsPerYear), sample std (n - 1), risk-free rate 0;
 *   0 when std is 0 (a flat policy has neither risk nor return).
 * - Sortino = mean(r) / sqrt(mean(min(r, 0)^2)) * sqrt(barsPerYear), downside deviation
 *   over all bars with target 0; 0 when no bar lost (the ratio is undefined, and JSON has no Infinity).
 * - Max drawdown = max_k (1 - V_k / max_{j<=k} V_j), a fraction: above 1 where the account went
 *   below zero (a short through a gap can lose more than the account).
 * - Calmar = CAGR / max drawdown with CAGR = (V_n / V_0)^(barsPerYear / n) - 1; 0 without drawdown.
 *   Capped at the largest finite double: a short split of fast bars can overflow CAGR (JSON has no
 *   Infinity, and the log would read it back as null).
 * - Trades are maximal runs of a non-zero position sign. A step's PnL belongs to the position
 *   held when the step began, or, when the step began flat, to the position it opened; so in a
 *   reversal the closing trade carries the whole bar. A position still open at the end counts
 *   as closed at the last mark.
 * - Hit rate = fraction of trades with PnL > 0 (0 without trades).
 * - Average holding = mean bars per trade, from the bar it opened to the bar it closed.
 * - Turnover = sum of traded notional / mean |equity|, per year (times barsPerYear / n).
 * - Average |exposure| = mean over steps of |units * close / V| after the step.
 */

export interface EquityTrace {
  /** Portfolio value at each mark: `equity[0] = V_0` before the first decision, `equity[k]` after step k. */
  equity: Float64Array;
  /** Exposure `units * close / V` after each step; length `equity.length - 1`. */
  exposure: Float64Array;
  /** Traded notional (|units| * fill price, all phases and barrier closes) in each step. */
  traded: Float64Array;
}

export interface Metrics {
  /** V_n / V_0 - 1. */
  totalReturn: number;
  sharpe: number;
  sortino: number;
  /** Fraction in [0, 1]. */
  maxDrawdown: number;
  calmar: number;
  /** Fraction of closed trades with positive PnL. */
  hitRate: number;
  /** Number of trades (position runs), including one open at the end. */
  trades: number;
  /** Traded notional / mean equity, per year. */
  turnover: number;
  /** Mean trade length in bars. */
  avgHoldingBars: number;
  /** Mean |exposure| over steps. */
  avgExposure: number;
  /** Decision steps in the backtest. */
  bars: number;
}

export interface Trade {
  /** Step (1-based) whose bar opened the position. */
  open: number;
  /** Step whose bar closed it (n for a position still open at the end). */
  close: number;
  /** Equity change attributed to the trade (costs included). */
  pnl: number;
}

const sign = (x: number): number => (x > 0 ? 1 : x < 0 ? -1 : 0);

/** Splits the trace into trades by the attribution rule in the file comment. */
export function tradesOf(trace: EquityTrace): Trade[] {
  const n = trace.exposure.length;
  const trades: Trade[] = [];
  let current: Trade | null = null;
  let before = 0;
  for (let k = 1; k <= n; k++) {
    const after = sign(trace.exposure[k - 1]);
    const pnl = trace.equity[k] - trace.equity[k - 1];
    if (before === 0 && after !== 0) {
      current = { open: k, close: k, pnl };
    } else if (current) {
      current.pnl += pnl;
      if (after !== before) {
        current.close = k;
        trades.push(current);
        current = after !== 0 ? { open: k, close: k, pnl: 0 } : null;
      }
    }
    before = after;
  }
  if (current) {
    current.close = n;
    trades.push(current);
  }
  return trades;
}

/**
 * Annualisation factor from timestamps (ms), used when cfg.train.barsPerYear is 0. The days of a
 * year are 365 for a market that trades at weekends (at least SATURDAY_SHARE of the bars fall on a
 * UTC Saturday: crypto, or the synthetic market) and 252 trading days otherwise. Saturday, not the
 * weekend: a 24/5 market opens on Sunday evening UTC, and daily FX bars stamped at the New York
 * close (22:00 UTC, Sunday to Thursday, as Oanda writes them) put a fifth of the bars on a Sunday,
 * but nothing that trades five days a week has a bar on a UTC Saturday. Intraday data (median
 * spacing under 20 h) -> those days * median bars per UTC day; daily-like spacing (under 4 days)
 * -> those days; coarser -> 365.25 days / spacing.
 */
export function inferBarsPerYear(timestamp: Float64Array): number {
  const n = timestamp.length;
  if (n < 2) throw new Error('inferBarsPerYear: need at least 2 timestamps to infer the bar spacing');
  const gaps = new Float64Array(n - 1);
  for (let i = 1; i < n; i++) gaps[i - 1] = timestamp[i] - timestamp[i - 1];
  const spacing = median(gaps);
  const day = 86_400_000;
  if (spacing >= 4 * day) return (365.25 * day) / spacing;
  let saturday = 0;
  for (let i = 0; i < n; i++) {
    // 1970-01-01 was a Thursday: day index + 4 mod 7 is the weekday with Sunday = 0.
    const weekday = (((Math.floor(timestamp[i] / day) + 4) % 7) + 7) % 7;
    if (weekday === 6) saturday++;
  }
  const days = saturday >= SATURDAY_SHARE * n ? 365 : 252;
  if (spacing >= (20 * day) / 24) return days;
  const perDay = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const d = Math.floor(timestamp[i] / day);
    perDay.set(d, (perDay.get(d) ?? 0) + 1);
  }
  return days * median(Float64Array.from(perDay.values()));
}

/** Share of bars on a UTC Saturday from which a market trades 365 days a year: half of 24/7's 1/7. */
const SATURDAY_SHARE = 1 / 14;

function median(xs: Float64Array): number {
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function computeMetrics(trace: EquityTrace, barsPerYear: number): Metrics {
  const { equity, exposure, traded } = trace;
  const n = exposure.length;
  if (equity.length !== n + 1 || traded.length !== n) {
    throw new Error(
      `computeMetrics: equity needs one more entry than exposure and traded (${equity.length}, ${n}, ${traded.length})`,
    );
  }
  if (n === 0) throw new Error('computeMetrics: the backtest has no steps');
  if (!(barsPerYear > 0)) throw new Error(`computeMetrics: barsPerYear must be > 0, got ${barsPerYear}`);

  let sum = 0;
  let downSq = 0;
  let peak = equity[0];
  let maxDrawdown = 0;
  let tradedSum = 0;
  let equitySum = 0;
  let exposureSum = 0;
  for (let k = 1; k <= n; k++) {
    // An account at exactly 0 has no return (0 / 0 would make every ratio NaN, which JSON loses).
    const r = equity[k - 1] !== 0 ? equity[k] / equity[k - 1] - 1 : 0;
    sum += r;
    if (r < 0) downSq += r * r;
    peak = Math.max(peak, equity[k]);
    maxDrawdown = Math.max(maxDrawdown, 1 - equity[k] / peak);
    tradedSum += traded[k - 1];
    equitySum += Math.abs(equity[k]);
    exposureSum += Math.abs(exposure[k - 1]);
  }
  const mean = sum / n;
  let sq = 0;
  for (let k = 1; k <= n; k++) {
    const d = equity[k] / equity[k - 1] - 1 - mean;
    sq += d * d;
  }
  const std = n > 1 ? Math.sqrt(sq / (n - 1)) : 0;
  const downside = Math.sqrt(downSq / n);
  const annual = Math.sqrt(barsPerYear);
  const growth = equity[n] / equity[0];
  const cagr = growth > 0 ? growth ** (barsPerYear / n) - 1 : -1;

  const trades = tradesOf(trace);
  let wins = 0;
  let held = 0;
  for (const t of trades) {
    if (t.pnl > 0) wins++;
    held += t.close - t.open;
  }
  return {
    totalReturn: growth - 1,
    sharpe: std > 0 ? (mean / std) * annual : 0,
    sortino: downside > 0 ? (mean / downside) * annual : 0,
    maxDrawdown,
    calmar: maxDrawdown > 0 ? Math.min(cagr / maxDrawdown, Number.MAX_VALUE) : 0,
    hitRate: trades.length ? wins / trades.length : 0,
    trades: trades.length,
    turnover: (tradedSum / (equitySum / n)) * (barsPerYear / n),
    avgHoldingBars: trades.length ? held / trades.length : 0,
    avgExposure: exposureSum / n,
    bars: n,
  };
}

/** A policy's metrics on a split beside the two baselines'. */
export interface ValidationReport {
  policy: Metrics;
  buyHold: Metrics;
  random: Metrics;
}
