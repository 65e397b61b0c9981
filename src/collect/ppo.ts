/**
 * Reference PPO rollout (the TS twin of the collect_ppo kernels): N episode slots, L steps
 * each, actions sampled from the actor's softmax, then GAE per slot (src/collect/gae.ts).
 *
 * Per step of slot e at global step g = stepBase + l:
 *   1. s = buildState; logits = actor(s); v = critic(s).
 *   2. Softmax sampling by a CDF scan: m = max logit; p_k = f32(exp(f32(logit_k - m))) (f64 exp
 *      rounded to f32); S = f32 sum in k order; threshold = f32(u * S) with u the unit float of
 *      word0 of Philox(Action, e, g, 0); a = first k with threshold < f32 running sum of p_0..p_k
 *      (45th action when none, which rounding cannot produce); log pi = f32(f32(logit_a - m)
 *      - f32(log S)).
 *   3. envStep (curiosity bonus inside).
 *   4. When the step truncates, or it is the launch's last step and the episode goes on:
 *      boot[l] = critic(s') with s' the state after the step, before any restart.
 * Exp and log are transcendental: GPU results may differ by ulps, so a parity test compares
 * actions exactly except where u * S lies within a few ulps of a CDF boundary.
 */
import type { Market } from '../data/types.js';
import type { CuriosityModel } from '../env/curiosity.js';
import { createStepOut } from '../env/output.js';
import type { EnvParams } from '../env/params.js';
import { buildState, type EnvState } from '../env/state.js';
import { envStep } from '../env/step.js';
import { forwardMlp } from '../nets/forward.js';
import { type NetLayout, NUM_ACTIONS, STATE_DIM } from '../nets/layout.js';
import { packNet } from '../nets/simd.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { gaeEpisode } from './gae.js';
import { createPpoRollout, type PpoRollout, writeComponents } from './rollout.js';

const f = Math.fround;

export interface PpoNets {
  actorLayout: NetLayout;
  actor: Float32Array;
  criticLayout: NetLayout;
  critic: Float32Array;
}

/** Per-launch scalars (uniforms of the kernel). */
export interface PpoLaunch {
  /** Steps per slot L. */
  steps: number;
  /** Global step of the launch's first step (the Philox step counter). */
  stepBase: number;
  gamma: number;
  lambda: number;
}

/** The sampled action and its log-probability (one record reused by the caller). */
export interface Sample {
  action: number;
  logProb: number;
}

const expd = new Float32Array(NUM_ACTIONS);

/** Samples from softmax(logits[0..45)) with the unit float `u` (see the file header, step 2). */
export function sampleSoftmax(logits: Float32Array, u: number, out: Sample): Sample {
  let m = logits[0];
  for (let k = 1; k < NUM_ACTIONS; k++) if (logits[k] > m) m = logits[k];
  let sum = 0;
  for (let k = 0; k < NUM_ACTIONS; k++) {
    expd[k] = f(Math.exp(f(logits[k] - m)));
    sum = f(sum + expd[k]);
  }
  const threshold = f(u * sum);
  let a = NUM_ACTIONS - 1;
  let cdf = 0;
  for (let k = 0; k < NUM_ACTIONS - 1; k++) {
    cdf = f(cdf + expd[k]);
    if (threshold < cdf) {
      a = k;
      break;
    }
  }
  out.action = a;
  out.logProb = f(f(logits[a] - m) - f(Math.log(sum)));
  return out;
}

export function collectPpo(
  env: EnvState,
  market: Market,
  params: EnvParams,
  nets: PpoNets,
  curiosity: CuriosityModel | null,
  launch: PpoLaunch,
  out: PpoRollout = createPpoRollout(env.n, launch.steps),
): PpoRollout {
  const L = launch.steps;
  if (out.n !== env.n || out.steps !== L) {
    throw new Error(
      `collectPpo: rollout buffers are for ${out.n} x ${out.steps}, the launch is ${env.n} x ${L}`,
    );
  }
  const step = createStepOut();
  const state = new Float32Array(STATE_DIM);
  const logits = new Float32Array(NUM_ACTIONS);
  const value = new Float32Array(1);
  const boot = new Float32Array(L);
  const sample: Sample = { action: 0, logProb: 0 };
  const w = new Uint32Array(4);
  // Both nets are fixed for the launch: packed once for the SIMD forward passes.
  const actor = packNet(nets.actorLayout, nets.actor);
  const critic = packNet(nets.criticLayout, nets.critic);
  for (let e = 0; e < env.n; e++) {
    boot.fill(0);
    for (let l = 0; l < L; l++) {
      const g = (launch.stepBase + l) >>> 0;
      const idx = e * L + l;
      buildState(env, market, e, state, 0);
      forwardMlp(nets.actorLayout, actor, state, logits);
      forwardMlp(nets.criticLayout, critic, state, value);
      const v = value[0];
      philox4x32(Stream.Action, e, g, 0, env.key[0], env.key[1], w);
      sampleSoftmax(logits, u32ToUnitFloat(w[0]), sample);

      envStep(env, market, params, e, sample.action, step, curiosity);

      if (!step.done && (step.truncated || l === L - 1)) {
        forwardMlp(nets.criticLayout, critic, step.nextState, value);
        boot[l] = value[0];
      }
      out.states.set(state, idx * STATE_DIM);
      out.actions[idx] = sample.action;
      out.logProbs[idx] = sample.logProb;
      out.values[idx] = v;
      out.rewards[idx] = step.total;
      out.dones[idx] = step.done;
      out.truncateds[idx] = step.truncated;
      writeComponents(out.components, idx, step);
    }
    gaeEpisode(
      out.rewards,
      out.values,
      out.dones,
      out.truncateds,
      boot,
      e * L,
      L,
      launch.gamma,
      launch.lambda,
      out.advantages,
      out.returns,
    );
  }
  return out;
}
