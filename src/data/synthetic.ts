/**
 * The built-in market (SPEC 1): a seeded, regime-switching price process with learnable
 * structure, so the CLI, the demo and the tests need no download.
 *
 * Per bar (1-minute bars by default, trading around the clock):
 * - A regime kind that persists for ~500 bars (switch probability 1/500 per bar):
 *   trend (40%: drift of 0.15-0.35 sigma per bar in one direction), mean reversion (40%: the log
 *   price is pulled toward its level at the regime start at 2-8% per bar) or noise (20%).
 * - A volatility state, independent, persisting ~800 bars: low (4 bps per bar) or high (10 bps).
 * - A U-shaped intraday profile over the UTC day (busy at the day's start and end) that scales
 *   volume, volatility (its square root) and the spread.
 * - Jumps (1 bar in 2000) of ~8 sigma, with a volume burst.
 * Trend directions lean against the distance from the start price (P(up) = 0.5 - 0.45 *
 * tanh(dev / 0.25), dev = log price - log start), so the long-run drift is zero and 10M-bar
 * paths stay within a few tens of percent of the start: finite and positive.
 * Prices sit on a 1e-4 grid; open = previous close; high/low are the open/close extremes
 * pushed out by exponential excursions, so OHLC rules hold by construction. The spread
 * averages ~2 bps (wider in high volatility and busy hours).
 *
 * Randomness: Philox4x32-10, key = the seed, counter = (Stream.Synth, bar, block, 0): blocks 0
 * (switches, jump trigger, spread noise) and 1 (return and volume shocks, high/low excursions)
 * every bar, block 2 on a regime change, block 3 on a jump. Bar t's draws depend only on t.
 */
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { Bars } from './types.js';

export interface SynthOptions {
  /** Number of bars (>= 1). */
  bars: number;
  /** Philox key: a non-negative safe integer. */
  seed: number;
  /** First bar's timestamp, ms since epoch (default 2024-01-01T00:00:00Z). */
  startMs?: number;
  /** Bar interval in ms (default 60 000: 1-minute bars). */
  barMs?: number;
}

/** Regime kinds; `regime` codes are kind | (high volatility ? HIGH_VOL : 0). */
export const Regime = { Trend: 0, MeanRevert: 1, Noise: 2 } as const;
export const HIGH_VOL = 4;

export interface SynthPath {
  bars: Bars;
  /** Per-bar regime code (the hidden state), for tests and diagnostics. */
  regime: Uint8Array;
}

const START_PRICE = 100;
const TICK = 1e-4;
const SIGMA_LOW = 4e-4;
const SIGMA_HIGH = 10e-4;
const P_KIND_SWITCH = 1 / 500;
const P_VOL_SWITCH = 1 / 800;
const P_JUMP = 1 / 2000;
/** Trend drift per bar, in units of the bar's sigma: uniform in [TREND_MIN, TREND_MIN + TREND_RANGE). */
const TREND_MIN = 0.15;
const TREND_RANGE = 0.2;
/** Mean-reversion pull per bar: uniform in [KAPPA_MIN, KAPPA_MIN + KAPPA_RANGE). */
const KAPPA_MIN = 0.02;
const KAPPA_RANGE = 0.06;
/** Log-price distance from the start at which trends lean 0.5 * 0.45 * tanh(1) against it. */
const DEV_SCALE = 0.25;
const JUMP_SIGMAS = 8;
const MS_PER_DAY = 86_400_000;

/** Nearest grid price; dividing by the inverse tick keeps the shortest decimal text (100.1234). */
const onGrid = (p: number) => Math.round(p / TICK) / (1 / TICK);

/** U-shaped activity over the UTC day, mean 1 over the day: 0.67 at noon, 1.67 at midnight. */
function intradayProfile(ms: number): number {
  const u = (((ms % MS_PER_DAY) + MS_PER_DAY) % MS_PER_DAY) / MS_PER_DAY - 0.5;
  return (0.5 + 3 * u * u) / 0.75;
}

/** Standard normal pair from two uniforms in [0, 1) (Box-Muller; 1 - u keeps the log finite). */
function boxMuller(u1: number, u2: number, out: Float64Array): void {
  const r = Math.sqrt(-2 * Math.log(1 - u1));
  out[0] = r * Math.cos(2 * Math.PI * u2);
  out[1] = r * Math.sin(2 * Math.PI * u2);
}

export function simulateSynthetic(opts: SynthOptions): SynthPath {
  const { bars: n, seed } = opts;
  const startMs = opts.startMs ?? Date.UTC(2024, 0, 1);
  const barMs = opts.barMs ?? 60_000;
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`synthetic market: bars must be an integer >= 1, got ${n}`);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(`synthetic market: seed must be a non-negative integer, got ${seed}`);
  if (!(barMs > 0)) throw new Error(`synthetic market: barMs must be > 0, got ${barMs}`);
  const [k0, k1] = seedToKey(seed);
  const perBar = new Uint32Array(4);
  const shocks = new Uint32Array(4);
  const rare = new Uint32Array(4);
  const z = new Float64Array(2);
  const zj = new Float64Array(2);

  const bars: Bars = {
    n,
    timestamp: new Float64Array(n),
    open: new Float64Array(n),
    high: new Float64Array(n),
    low: new Float64Array(n),
    close: new Float64Array(n),
    volume: new Float64Array(n),
    spreadBps: new Float64Array(n),
  };
  const regime = new Uint8Array(n);
  const x0 = Math.log(START_PRICE);
  let x = x0;
  let prevClose = START_PRICE;
  let kind: number = Regime.Noise;
  let highVol = false;
  let direction = 0;
  let strength = 0;
  let kappa = 0;
  let anchor = x0;

  for (let t = 0; t < n; t++) {
    philox4x32(Stream.Synth, t, 0, 0, k0, k1, perBar);
    philox4x32(Stream.Synth, t, 1, 0, k0, k1, shocks);
    if (t === 0 || u32ToUnitFloat(perBar[0]) < P_KIND_SWITCH) {
      philox4x32(Stream.Synth, t, 2, 0, k0, k1, rare);
      const pick = u32ToUnitFloat(rare[0]);
      kind = pick < 0.4 ? Regime.Trend : pick < 0.8 ? Regime.MeanRevert : Regime.Noise;
      const pUp = 0.5 - 0.45 * Math.tanh((x - x0) / DEV_SCALE);
      direction = u32ToUnitFloat(rare[1]) < pUp ? 1 : -1;
      strength = TREND_MIN + TREND_RANGE * u32ToUnitFloat(rare[2]);
      kappa = KAPPA_MIN + KAPPA_RANGE * u32ToUnitFloat(rare[3]);
      anchor = x;
    }
    const uVol = u32ToUnitFloat(perBar[1]);
    if (t === 0) highVol = uVol < 0.3;
    else if (uVol < P_VOL_SWITCH) highVol = !highVol;
    regime[t] = kind | (highVol ? HIGH_VOL : 0);

    const ts = startMs + t * barMs;
    const profile = intradayProfile(ts);
    const sigmaBase = highVol ? SIGMA_HIGH : SIGMA_LOW;
    const sigma = sigmaBase * Math.sqrt(profile);
    boxMuller(u32ToUnitFloat(shocks[0]), u32ToUnitFloat(shocks[1]), z);
    const jump = u32ToUnitFloat(perBar[2]) < P_JUMP;
    let jumpSize = 0;
    if (jump) {
      philox4x32(Stream.Synth, t, 3, 0, k0, k1, rare);
      boxMuller(u32ToUnitFloat(rare[0]), u32ToUnitFloat(rare[1]), zj);
      jumpSize = JUMP_SIGMAS * sigmaBase * zj[0];
    }
    const drift =
      kind === Regime.Trend
        ? direction * strength * sigma
        : kind === Regime.MeanRevert
          ? kappa * (anchor - x)
          : 0;
    x += drift + sigma * z[0] + jumpSize;

    const open = prevClose;
    const close = onGrid(Math.exp(x));
    const excursionHigh = -Math.log(1 - u32ToUnitFloat(shocks[2])) * 0.5 * sigma;
    const excursionLow = -Math.log(1 - u32ToUnitFloat(shocks[3])) * 0.5 * sigma;
    bars.timestamp[t] = ts;
    bars.open[t] = open;
    bars.close[t] = close;
    // Rounding to the grid is monotone, so high >= max(open, close) and low <= min(open, close).
    bars.high[t] = onGrid(Math.max(open, close) * Math.exp(excursionHigh));
    bars.low[t] = Math.max(TICK, onGrid(Math.min(open, close) * Math.exp(-excursionLow)));
    const volume =
      1000 * profile * (highVol ? 1.8 : 1) * Math.exp(0.35 * z[1] - 0.06125) * (1 + 0.5 * Math.abs(z[0]));
    bars.volume[t] = Math.round(jump ? 4 * volume : volume);
    const spread =
      (highVol ? 2.6 : 1.6) * (0.85 + 0.15 * profile) * Math.exp(0.4 * (u32ToUnitFloat(perBar[3]) - 0.5));
    bars.spreadBps![t] = Math.round(spread * 100) / 100;
    prevClose = close;
  }
  return { bars, regime };
}

/** The synthetic market's bars for a seed: same options, same bars, bit for bit. */
export function generateSynthetic(opts: SynthOptions): Bars {
  return simulateSynthetic(opts).bars;
}
