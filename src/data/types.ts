/**
 * The data contract between loading, features, the simulator and the device buffers.
 * Data flows one way: Bars (validated, f64) -> Market (f32 tensors the kernels read).
 */

/** Validated market bars, one entry per bar, timestamps strictly increasing. */
export interface Bars {
  n: number;
  /** Milliseconds since the Unix epoch (UTC). */
  timestamp: Float64Array;
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  volume: Float64Array;
  /** Quoted spread in basis points per bar (from bid/ask or a spread column), or null. */
  spreadBps: Float64Array | null;
}

/** What the simulator and the kernels read: `[T, 51]` features and `[T, 4]` OHLC, f32. */
export interface Market {
  n: number;
  /** `[n, 51]` row-major causal features; warm-up rows (t < maxLookback) are zeros. */
  features: Float32Array;
  /** `[n, 4]` row-major open, high, low, close. */
  ohlc: Float32Array;
  /** `[n]` spread in bps (data's own, else the configured default). */
  spreadBps: Float32Array;
  /** `[n]` ms since epoch, for annualisation and reports. */
  timestamp: Float64Array;
}

/** Bars `[start, end)` whose states an episode may use; an episode needs bar t+1 to act at t. */
export interface SplitRange {
  start: number;
  end: number;
}

export interface Splits {
  train: SplitRange;
  val: SplitRange;
  test: SplitRange;
}
