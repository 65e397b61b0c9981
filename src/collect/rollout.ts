/**
 * Output buffers of the reference collectors. Every per-step buffer is indexed
 * `episode * L + step` (episode-major, as one kernel thread per episode writes them); vectors
 * add a trailing dimension: states `[N * L, 54]`, components `[N * L, 5]`.
 */
import { STATE_DIM } from '../nets/layout.js';

/** Trailing index of the reward components buffer. */
export const Component = { Pnl: 0, Barrier: 1, Risk: 2, Diversity: 3, Curiosity: 4 } as const;
export const COMPONENTS = 5;

export interface DqnRollout {
  n: number;
  steps: number;
  /** `[N * L, 54]` state the action was chosen in. */
  states: Float32Array;
  actions: Int32Array;
  rewards: Float32Array;
  /** `[N * L, 54]` state after the step, before any restart of the episode. */
  nextStates: Float32Array;
  /** 1 when the step ended the episode (no bootstrap). */
  dones: Int32Array;
  /** 1 when the step truncated the episode (bootstrapped like a non-terminal step). */
  truncateds: Int32Array;
  /** `[N * L, 5]` pnl, barrier, risk, diversity, curiosity. */
  components: Float32Array;
}

export interface PpoRollout {
  n: number;
  steps: number;
  states: Float32Array;
  actions: Int32Array;
  /** log pi(a | s) of the sampled action under the acting policy. */
  logProbs: Float32Array;
  /** Critic V(s). */
  values: Float32Array;
  rewards: Float32Array;
  dones: Int32Array;
  truncateds: Int32Array;
  /** GAE(gamma, lambda) advantages, cut at episode ends, bootstrapped at truncation and at L. */
  advantages: Float32Array;
  /** advantages + values. */
  returns: Float32Array;
  components: Float32Array;
}

export function createDqnRollout(n: number, steps: number): DqnRollout {
  const m = n * steps;
  return {
    n,
    steps,
    states: new Float32Array(m * STATE_DIM),
    actions: new Int32Array(m),
    rewards: new Float32Array(m),
    nextStates: new Float32Array(m * STATE_DIM),
    dones: new Int32Array(m),
    truncateds: new Int32Array(m),
    components: new Float32Array(m * COMPONENTS),
  };
}

export function createPpoRollout(n: number, steps: number): PpoRollout {
  const m = n * steps;
  return {
    n,
    steps,
    states: new Float32Array(m * STATE_DIM),
    actions: new Int32Array(m),
    logProbs: new Float32Array(m),
    values: new Float32Array(m),
    rewards: new Float32Array(m),
    dones: new Int32Array(m),
    truncateds: new Int32Array(m),
    advantages: new Float32Array(m),
    returns: new Float32Array(m),
    components: new Float32Array(m * COMPONENTS),
  };
}

/** Copies one step's reward components into `components[idx]`. */
export function writeComponents(
  components: Float32Array,
  idx: number,
  c: { pnl: number; barrier: number; risk: number; diversity: number; curiosity: number },
): void {
  const o = idx * COMPONENTS;
  components[o + Component.Pnl] = c.pnl;
  components[o + Component.Barrier] = c.barrier;
  components[o + Component.Risk] = c.risk;
  components[o + Component.Diversity] = c.diversity;
  components[o + Component.Curiosity] = c.curiosity;
}

/** Means over the rollout's N * L steps. */
export interface CollectStats {
  /** Experiences collected. */
  steps: number;
  /** Episodes that ended (done) or were truncated during the rollout. */
  episodesDone: number;
  episodesTruncated: number;
  /** Mean per-step reward and its components (pnl, barrier, risk, diversity, curiosity). */
  reward: Record<'total' | 'pnl' | 'barrier' | 'risk' | 'diversity' | 'curiosity', number>;
}

type Numbers = ArrayLike<number>;

/** Mean reward components and episode ends of one rollout's `count` steps (both engines report these). */
export function summarizeRollout(
  components: Numbers,
  rewards: Numbers,
  dones: Numbers,
  truncateds: Numbers,
  count: number,
): CollectStats {
  const sums = new Float64Array(COMPONENTS);
  let total = 0;
  let done = 0;
  let truncated = 0;
  for (let k = 0; k < count; k++) {
    for (let c = 0; c < COMPONENTS; c++) sums[c] += components[k * COMPONENTS + c];
    total += rewards[k];
    done += dones[k];
    truncated += truncateds[k];
  }
  return {
    steps: count,
    episodesDone: done,
    episodesTruncated: truncated,
    reward: {
      total: total / count,
      pnl: sums[Component.Pnl] / count,
      barrier: sums[Component.Barrier] / count,
      risk: sums[Component.Risk] / count,
      diversity: sums[Component.Diversity] / count,
      curiosity: sums[Component.Curiosity] / count,
    },
  };
}
