/**
 * Per-episode simulator state in flat typed arrays: exactly the buffers the GPU keeps on the
 * device between launches, so episodes persist across rollouts and a parity test can compare
 * the whole state bit for bit. Layouts (per episode, see docs/ENV.md):
 *
 *   f[e * ENV_F + EnvF.*]   f32: the SPEC portfolio (8 floats) then the two barrier levels
 *   i[e * ENV_I + EnvI.*]   i32: bars, counters, barrier expiry, diversity head/count/histogram
 *   window[e * W + k]       i32: the circular window of the last W action categories
 */
import type { Market, SplitRange } from '../data/types.js';
import { MARKET_FEATURES } from '../nets/layout.js';
import { philox4x32, seedToKey } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { EnvParams } from './params.js';

const f = Math.fround;

/** Float fields per episode. The first 8 are SPEC 3's portfolio state, in its order. */
export const EnvF = {
  Cash: 0,
  Units: 1,
  /** Fill price of the position's opening trade; 0 when flat. */
  EntryPrice: 2,
  InitialCapital: 3,
  /** Spread of the current bar, bps. */
  Spread: 4,
  /** Close of the current bar: the mark price. */
  LastPrice: 5,
  ReservePct: 6,
  /** Fees paid in this episode (the half-spread is inside the fill prices, not here). */
  CumCosts: 7,
  /** Favourable barrier price of the open position (0 when flat). */
  ProfitLevel: 8,
  /** Adverse barrier price of the open position (0 when flat). */
  StopLevel: 9,
} as const;
export const ENV_F = 10;

/** Integer fields per episode. */
export const EnvI = {
  /** Current bar t: the state is built from it, the next order executes in bar t + 1. */
  Bar: 0,
  /** The bar this episode started at. */
  StartBar: 1,
  /** Steps taken in this episode. */
  Step: 2,
  /** Bar at which the time barrier fires; -1 when no position is open. */
  Expiry: 3,
  /** Episodes this slot has finished: the Philox counter of its start bar draw. */
  Restarts: 4,
  /** Next write position in the diversity window. */
  DivHead: 5,
  /** Filled entries of the diversity window (<= W). */
  DivCount: 6,
  /** Histogram of the window: Hist + Category.{Short, Flat, Long}. */
  Hist: 7,
} as const;
export const ENV_I = 10;

export interface EnvState {
  /** Parallel episodes N. */
  n: number;
  /** Diversity window length W. */
  w: number;
  /** Bars the episodes may touch (states, fills and next states all lie in [start, end)). */
  split: SplitRange;
  /** Philox key from the run seed. */
  key: [number, number];
  f: Float32Array;
  i: Int32Array;
  window: Int32Array;
}

/** How many start bars a split offers: an episode touches bars s .. s + episodeBars. */
export function startBarCount(split: SplitRange, episodeBars: number): number {
  return split.end - split.start - episodeBars;
}

const words = new Uint32Array(4);

/**
 * Start bar of episode slot `e` after `restarts` finished episodes:
 * split.start + word0 % count, word0 of Philox(EpisodeStart, e, restarts, 0). The modulo bias
 * (count / 2^32) is negligible and identical on every backend.
 */
export function drawStartBar(env: EnvState, params: EnvParams, e: number, restarts: number): number {
  const count = startBarCount(env.split, params.episodeBars);
  philox4x32(Stream.EpisodeStart, e, restarts, 0, env.key[0], env.key[1], words);
  return env.split.start + (words[0] % count);
}

/** Resets slot `e` to a fresh episode at `bar`: flat, cash V_0, empty window. */
export function startEpisode(env: EnvState, market: Market, params: EnvParams, e: number, bar: number): void {
  const fb = e * ENV_F;
  const ib = e * ENV_I;
  const pf = env.f;
  pf[fb + EnvF.Cash] = params.initialCapital;
  pf[fb + EnvF.Units] = 0;
  pf[fb + EnvF.EntryPrice] = 0;
  pf[fb + EnvF.InitialCapital] = params.initialCapital;
  pf[fb + EnvF.Spread] = market.spreadBps[bar];
  pf[fb + EnvF.LastPrice] = market.ohlc[bar * 4 + 3];
  pf[fb + EnvF.ReservePct] = params.reservePct;
  pf[fb + EnvF.CumCosts] = 0;
  pf[fb + EnvF.ProfitLevel] = 0;
  pf[fb + EnvF.StopLevel] = 0;
  const pi = env.i;
  pi[ib + EnvI.Bar] = bar;
  pi[ib + EnvI.StartBar] = bar;
  pi[ib + EnvI.Step] = 0;
  pi[ib + EnvI.Expiry] = -1;
  pi[ib + EnvI.DivHead] = 0;
  pi[ib + EnvI.DivCount] = 0;
  pi[ib + EnvI.Hist] = 0;
  pi[ib + EnvI.Hist + 1] = 0;
  pi[ib + EnvI.Hist + 2] = 0;
  env.window.fill(0, e * env.w, (e + 1) * env.w);
}

/** Counts one more finished episode in slot `e` and starts the next at a fresh random bar. */
export function restartEpisode(env: EnvState, market: Market, params: EnvParams, e: number): void {
  const restarts = env.i[e * ENV_I + EnvI.Restarts] + 1;
  env.i[e * ENV_I + EnvI.Restarts] = restarts;
  startEpisode(env, market, params, e, drawStartBar(env, params, e, restarts));
}

/**
 * N episodes over `split`, each started at its draw with restart count 0. Throws when the
 * split is too short for one episode.
 */
export function createEnv(
  market: Market,
  split: SplitRange,
  params: EnvParams,
  n: number,
  seed: number,
): EnvState {
  if (!(split.start >= 0 && split.end <= market.n && split.start < split.end)) {
    throw new Error(
      `env: split [${split.start}, ${split.end}) is not inside the ${market.n} bars of the data`,
    );
  }
  if (startBarCount(split, params.episodeBars) < 1) {
    throw new Error(
      `env: the split [${split.start}, ${split.end}) has ${split.end - split.start} bars but an episode ` +
        `needs env.episodeBars + 1 = ${params.episodeBars + 1}: use more data or lower env.episodeBars`,
    );
  }
  const env: EnvState = {
    n,
    w: params.diversityWindow,
    split: { start: split.start, end: split.end },
    key: seedToKey(seed),
    f: new Float32Array(n * ENV_F),
    i: new Int32Array(n * ENV_I),
    window: new Int32Array(n * params.diversityWindow),
  };
  for (let e = 0; e < n; e++) startEpisode(env, market, params, e, drawStartBar(env, params, e, 0));
  return env;
}

/** V = cash + units * last_price of slot `e`, f32. */
export function portfolioValue(env: EnvState, e: number): number {
  const fb = e * ENV_F;
  return f(env.f[fb + EnvF.Cash] + f(env.f[fb + EnvF.Units] * env.f[fb + EnvF.LastPrice]));
}

/**
 * units * price / value clipped to [-1, 1]; a non-positive value (only possible on the step
 * that collapses the account) gives the sign of the position.
 */
export function positionNorm(units: number, price: number, value: number): number {
  if (!(value > 0)) return units > 0 ? 1 : units < 0 ? -1 : 0;
  const x = f(f(units * price) / value);
  return Math.min(1, Math.max(-1, x));
}

/**
 * The 54-float state of slot `e` into out[off .. off + 54): features of the current bar, then
 * value_norm = clip(V / V_0 - 1, -5, 5), position_norm, spread_norm = spread_bps / 10.
 */
export function buildState(env: EnvState, market: Market, e: number, out: Float32Array, off: number): void {
  const fb = e * ENV_F;
  const bar = env.i[e * ENV_I + EnvI.Bar];
  const src = bar * MARKET_FEATURES;
  for (let k = 0; k < MARKET_FEATURES; k++) out[off + k] = market.features[src + k];
  const value = portfolioValue(env, e);
  const vn = f(f(value / env.f[fb + EnvF.InitialCapital]) - 1);
  out[off + MARKET_FEATURES] = Math.min(5, Math.max(-5, vn));
  out[off + MARKET_FEATURES + 1] = positionNorm(env.f[fb + EnvF.Units], env.f[fb + EnvF.LastPrice], value);
  out[off + MARKET_FEATURES + 2] = f(env.f[fb + EnvF.Spread] / 10);
}
