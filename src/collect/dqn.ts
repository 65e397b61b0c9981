/**
 * Reference DQN-family rollout (the TS twin of the collect_dqn kernels): N episode slots, each
 * taking L steps with epsilon-greedy actions on the online network and writing the experiences
 * (they enter the replay at its max priority, so the collection needs no target network). Slots
 * are independent, so the loop order (slot-major here, one thread per slot on the device) does not
 * change any result.
 *
 * Per step of slot e at global step g = stepBase + l:
 *   1. s = buildState; Q_online(s) (plain: dueling head; C51: expectation over the support;
 *      IQN: mean over K taus, tau_k = word (k & 3) of Philox(Tau, e, g, k >> 2) as a unit float).
 *   2. w = Philox(Action, e, g, 0); u = unit float of w0; u < epsilon -> a = w1 % 45 (modulo bias
 *      45 / 2^32, identical on every backend), else a = first argmax of Q_online(s).
 *   3. envStep (curiosity bonus inside); s' = the state after the step, before any restart.
 */
import type { Market } from '../data/types.js';
import type { CuriosityModel } from '../env/curiosity.js';
import { createStepOut } from '../env/output.js';
import type { EnvParams } from '../env/params.js';
import { buildState, type EnvState } from '../env/state.js';
import { envStep } from '../env/step.js';
import { type C51Support, forwardC51, forwardDueling, forwardIqn, type Weights } from '../nets/forward.js';
import { type NetLayout, NUM_ACTIONS, type QHead, STATE_DIM } from '../nets/layout.js';
import { packNet } from '../nets/simd.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { createDqnRollout, type DqnRollout, writeComponents } from './rollout.js';

const f = Math.fround;

export interface DqnNets {
  head: QHead;
  /** `duelingLayout(head, atoms, iqnEmbed)`. */
  layout: NetLayout;
  online: Float32Array;
  /** C51 support (read for head 'c51'). */
  support: C51Support;
  /** IQN taus per acting evaluation K (read for head 'iqn'). */
  actTaus: number;
}

/** Per-launch scalars (uniforms of the kernel). */
export interface DqnLaunch {
  /** Steps per slot L. */
  steps: number;
  /** Exploration rate of this launch. */
  epsilon: number;
  /** Global step of the launch's first step (the Philox step counter). */
  stepBase: number;
}

/** First index of the largest of the 45 values (ties go to the lower action). */
export function argmaxQ(q: Float32Array): number {
  let best = 0;
  for (let a = 1; a < NUM_ACTIONS; a++) if (q[a] > q[best]) best = a;
  return best;
}

const tauWords = new Uint32Array(4);

/** IQN acting taus of slot e at global step g: word k & 3 of Philox(Tau, e, g, k >> 2). */
export function actingTaus(key: [number, number], e: number, g: number, taus: Float32Array): void {
  const w = tauWords;
  for (let k = 0; k < taus.length; k++) {
    if ((k & 3) === 0) philox4x32(Stream.Tau, e, g, k >> 2, key[0], key[1], w);
    taus[k] = u32ToUnitFloat(w[k & 3]);
  }
}

/** Q-values of `x` under `params` with the nets' head. */
function qValues(
  nets: DqnNets,
  params: Weights,
  x: Float32Array,
  taus: Float32Array,
  probs: Float32Array,
  q: Float32Array,
): void {
  if (nets.head === 'plain') forwardDueling(nets.layout, params, x, q);
  else if (nets.head === 'c51') forwardC51(nets.layout, params, x, probs, q, nets.support);
  else forwardIqn(nets.layout, params, x, taus, q);
}

export function collectDqn(
  env: EnvState,
  market: Market,
  params: EnvParams,
  nets: DqnNets,
  curiosity: CuriosityModel | null,
  launch: DqnLaunch,
  out: DqnRollout = createDqnRollout(env.n, launch.steps),
): DqnRollout {
  const L = launch.steps;
  if (out.n !== env.n || out.steps !== L) {
    throw new Error(
      `collectDqn: rollout buffers are for ${out.n} x ${out.steps}, the launch is ${env.n} x ${L}`,
    );
  }
  const epsilon = f(launch.epsilon);
  const step = createStepOut();
  const state = new Float32Array(STATE_DIM);
  const q = new Float32Array(NUM_ACTIONS);
  const probs = new Float32Array(NUM_ACTIONS * nets.support.atoms);
  const taus = new Float32Array(nets.actTaus);
  const w = new Uint32Array(4);
  // The net is fixed for the launch: packed once for the SIMD forward passes.
  const online = packNet(nets.layout, nets.online);
  for (let e = 0; e < env.n; e++) {
    for (let l = 0; l < L; l++) {
      const g = (launch.stepBase + l) >>> 0;
      const idx = e * L + l;
      buildState(env, market, e, state, 0);
      if (nets.head === 'iqn') actingTaus(env.key, e, g, taus);
      qValues(nets, online, state, taus, probs, q);
      philox4x32(Stream.Action, e, g, 0, env.key[0], env.key[1], w);
      const a = u32ToUnitFloat(w[0]) < epsilon ? w[1] % NUM_ACTIONS : argmaxQ(q);

      envStep(env, market, params, e, a, step, curiosity);
      out.states.set(state, idx * STATE_DIM);
      out.actions[idx] = a;
      out.rewards[idx] = step.total;
      out.nextStates.set(step.nextState, idx * STATE_DIM);
      out.dones[idx] = step.done;
      out.truncateds[idx] = step.truncated;
      writeComponents(out.components, idx, step);
    }
  }
  return out;
}
