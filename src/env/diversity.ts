/**
 * Diversity penalty (SPEC 5): a circular window of the last W action categories per episode,
 * the current action included; Shannon entropy in bits of the 3-category histogram over the
 * filled part; penalty when at least `diversityMinActions` are in the window and H < threshold.
 *
 * The histogram is kept incrementally beside the window. The decision is made without a
 * logarithm on the device: with n entries and counts c_k, n * H = T[n] - sum_k T[c_k] where
 * T[c] = c log2 c is the host-built `entropyTable`, so the test is
 *   f32(f32(f32(T[n] - T[c0]) - T[c1]) - T[c2]) < f32(n * cutoff)
 * (f32 adds and one multiply: bit-identical on every backend).
 */
import type { EnvParams } from './params.js';
import { ENV_I, EnvI, type EnvState } from './state.js';

const f = Math.fround;

/** Pushes `cat` into slot e's window (evicting the oldest when full) and updates the histogram. */
export function pushCategory(env: EnvState, e: number, cat: number): void {
  const ib = e * ENV_I;
  const wb = e * env.w;
  const head = env.i[ib + EnvI.DivHead];
  const count = env.i[ib + EnvI.DivCount];
  if (count === env.w) env.i[ib + EnvI.Hist + env.window[wb + head]] -= 1;
  else env.i[ib + EnvI.DivCount] = count + 1;
  env.window[wb + head] = cat;
  env.i[ib + EnvI.Hist + cat] += 1;
  env.i[ib + EnvI.DivHead] = head + 1 === env.w ? 0 : head + 1;
}

/** n * H in bits of a histogram (c0, c1, c2) with n = c0 + c1 + c2, from the entropy table. */
export function entropyTimesCount(t: Float32Array, n: number, c0: number, c1: number, c2: number): number {
  return f(f(f(t[n] - t[c0]) - t[c1]) - t[c2]);
}

/** The diversity reward of slot e after this step's push: the penalty or 0. */
export function diversityReward(env: EnvState, params: EnvParams, e: number): number {
  const ib = e * ENV_I;
  const n = env.i[ib + EnvI.DivCount];
  if (n < params.diversityMinActions) return 0;
  const nh = entropyTimesCount(
    params.entropyTable,
    n,
    env.i[ib + EnvI.Hist],
    env.i[ib + EnvI.Hist + 1],
    env.i[ib + EnvI.Hist + 2],
  );
  return nh < f(n * params.diversityCutoff) ? params.diversityPenalty : 0;
}
