/**
 * The simulator's scalars as the kernels receive them: every EnvConfig field that the step
 * reads, converted once on the host from f64 to the f32 (or integer) uniform the kernels get.
 * Derived factors (`1 + bps / 1e4`, cost rates) are computed in f64 and rounded once, so the
 * TS reference and the kernels start every launch from the same bits. See docs/ENV.md.
 */
import type { EnvConfig } from '../config.js';

const f = Math.fround;

/** V_{t+1} <= COLLAPSE_FRACTION * V_0 ends the episode (done): the account is wiped out. */
export const COLLAPSE_FRACTION = 0.01;

/**
 * Subtracted from the entropy threshold so that exact ties (a 50/50 split of two categories
 * has exactly 1 bit) count as "not below" on every backend despite f32 rounding of the
 * entropy table; for windows up to 100 the nearest non-tie entropy is 5.6e-5 bits from 1 bit,
 * far outside this margin (test/unit/env/diversity.test.ts enumerates them all).
 */
export const ENTROPY_TIE_MARGIN = 1e-5;

/** Half a basis point: half-spread fraction = spread_bps * HALF_BP. */
export const HALF_BP = f(0.5e-4);

export interface EnvParams {
  /** Cost per unit notional of market and limit orders and of barrier exits: feeBps / 1e4. */
  marketRate: number;
  /** Cost per unit notional of passive orders: (feeBps - rebateBps) / 1e4 (negative = net rebate). */
  passiveRate: number;
  /** Passive buy price factor 1 - passiveOffsetBps / 1e4 (below the last close). */
  passiveDown: number;
  /** Passive sell price factor 1 + passiveOffsetBps / 1e4 (above the last close). */
  passiveUp: number;
  /** Cash reserve fraction copied into each episode's portfolio at its start. */
  reservePct: number;
  /** V_0 of every episode. */
  initialCapital: number;
  /** Long profit / short stop factor 1 + profitTargetBps / 1e4. */
  profitUp: number;
  /** Short profit factor 1 - profitTargetBps / 1e4. */
  profitDown: number;
  /** Short stop factor 1 + stopLossBps / 1e4. */
  stopUp: number;
  /** Long stop factor 1 - stopLossBps / 1e4. */
  stopDown: number;
  /** Bars a position may stay open before the time barrier closes it (integer). */
  maxHoldingBars: number;
  /** Whether a fired barrier ends the episode. */
  barrierTerminates: boolean;
  pnlScale: number;
  /** Reward multiplier bonus of a profit barrier step (+) and a stop barrier step (-). */
  barrierScale: number;
  riskThreshold: number;
  riskScale: number;
  /** Diversity window length W (integer). */
  diversityWindow: number;
  /** Actions in the window before the penalty can apply (integer). */
  diversityMinActions: number;
  /** Penalty iff count * H < count * diversityCutoff, cutoff = threshold - ENTROPY_TIE_MARGIN. */
  diversityCutoff: number;
  /** Diversity reward when the penalty applies (<= 0). */
  diversityPenalty: number;
  curiosityScale: number;
  curiosityMax: number;
  /** Steps after which an episode is truncated (integer). */
  episodeBars: number;
  /** Collapse level factor: done when V <= collapseFraction * V_0. */
  collapseFraction: number;
  /**
   * `entropyTable[c] = f32(c * log2(c))` for c in 0..W (0 log 0 = 0): the window's entropy
   * times its count is `T[n] - T[c0] - T[c1] - T[c2]`, f32 adds only, so every backend that
   * uploads this table makes identical diversity decisions (no transcendental on the device).
   */
  entropyTable: Float32Array;
}

/** `c * log2(c)` for c in 0..w, computed in f64 and rounded to f32 once. */
export function entropyTable(w: number): Float32Array {
  const t = new Float32Array(w + 1);
  for (let c = 2; c <= w; c++) t[c] = c * Math.log2(c);
  return t;
}

/** The f32 uniforms of the simulator from the (validated) environment config. */
export function envParams(cfg: EnvConfig): EnvParams {
  return {
    marketRate: f(cfg.feeBps / 1e4),
    passiveRate: f((cfg.feeBps - cfg.rebateBps) / 1e4),
    passiveDown: f(1 - cfg.passiveOffsetBps / 1e4),
    passiveUp: f(1 + cfg.passiveOffsetBps / 1e4),
    reservePct: f(cfg.reservePct),
    initialCapital: f(cfg.initialCapital),
    profitUp: f(1 + cfg.profitTargetBps / 1e4),
    profitDown: f(1 - cfg.profitTargetBps / 1e4),
    stopUp: f(1 + cfg.stopLossBps / 1e4),
    stopDown: f(1 - cfg.stopLossBps / 1e4),
    maxHoldingBars: cfg.maxHoldingBars,
    barrierTerminates: cfg.barrierTerminates,
    pnlScale: f(cfg.pnlScale),
    barrierScale: f(cfg.barrierRewardScale),
    riskThreshold: f(cfg.riskThreshold),
    riskScale: f(cfg.riskPenaltyScale),
    diversityWindow: cfg.diversityWindow,
    diversityMinActions: cfg.diversityMinActions,
    diversityCutoff: f(cfg.diversityEntropyThreshold - ENTROPY_TIE_MARGIN),
    diversityPenalty: f(cfg.diversityPenalty),
    curiosityScale: f(cfg.curiosityScale),
    curiosityMax: f(cfg.curiosityMaxReward),
    episodeBars: cfg.episodeBars,
    collapseFraction: f(COLLAPSE_FRACTION),
    entropyTable: entropyTable(cfg.diversityWindow),
  };
}
