/**
 * The policies a validation backtest runs: the trained greedy policy and the random baseline
 * (buy-and-hold is no policy: it holds its first order, src/eval/backtest.ts). A policy maps the
 * 54-float state at bar `bar` to one of the 45 actions (SPEC 3); the bar index only feeds the
 * random baseline's counter, so a batched GPU rollout can run the same functions.
 */
import { type C51Support, forwardC51, forwardDueling, forwardIqn, forwardMlp } from '../nets/forward.js';
import { type NetLayout, NUM_ACTIONS, ppoActorLayout, type QHead } from '../nets/layout.js';
import { packNet } from '../nets/simd.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';

export type Policy = (state: Float32Array, bar: number) => number;

/** First index of the largest value (ties go to the lower action, as in the kernels). */
export function argmax(xs: Float32Array, n = xs.length): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

/**
 * PPO's greedy policy: the mode of the categorical, i.e. the argmax of the actor's logits. A
 * policy packs its weights once (src/nets/simd.ts): it sees `actor` as it was when made.
 */
export function ppoGreedyPolicy(actor: Float32Array, layout: NetLayout = ppoActorLayout()): Policy {
  const logits = new Float32Array(NUM_ACTIONS);
  const weights = packNet(layout, actor);
  return (state) => {
    forwardMlp(layout, weights, state, logits);
    return argmax(logits, NUM_ACTIONS);
  };
}

/**
 * Uniform over the 45 actions from Philox counter (Stream.Baseline, 0, bar, 0) keyed by the run
 * seed: the same bars get the same actions in every epoch and on every backend, so the baseline
 * is a fixed yardstick. `floor(u * 45)` of a 24-bit u is exact in f64.
 */
export function randomPolicy(seed: number): Policy {
  const [k0, k1] = seedToKey(seed);
  const words = new Uint32Array(4);
  return (_state, bar) => {
    philox4x32(Stream.Baseline, 0, bar, 0, k0, k1, words);
    return Math.floor(u32ToUnitFloat(words[0]) * NUM_ACTIONS);
  };
}

/**
 * A DQN-family greedy policy: the first argmax of the online net's Q (plain: dueling head; C51:
 * the expectation over the support; IQN: the mean over `actTaus` evenly spaced taus
 * (k + 0.5) / K, a fixed quadrature of the mean instead of random draws, so validation is
 * deterministic). It sees `online` as it was when made (packed once, src/nets/simd.ts).
 */
export function dqnGreedyPolicy(
  head: QHead,
  layout: NetLayout,
  online: Float32Array,
  support: C51Support,
  actTaus: number,
): Policy {
  const q = new Float32Array(NUM_ACTIONS);
  const probs = new Float32Array(NUM_ACTIONS * support.atoms);
  const taus = Float32Array.from({ length: actTaus }, (_, k) => (k + 0.5) / actTaus);
  const weights = packNet(layout, online);
  return (state) => {
    if (head === 'plain') forwardDueling(layout, weights, state, q);
    else if (head === 'c51') forwardC51(layout, weights, state, probs, q, support);
    else forwardIqn(layout, weights, state, taus, q);
    return argmax(q, NUM_ACTIONS);
  };
}
