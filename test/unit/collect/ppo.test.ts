import { describe, expect, it } from 'vitest';
import { gaeEpisode } from '../../../src/collect/gae.js';
import { collectPpo, type PpoNets, type Sample, sampleSoftmax } from '../../../src/collect/ppo.js';
import { defaultConfig, SPEC_REWARD_TERMS } from '../../../src/config.js';
import { createStepOut } from '../../../src/env/output.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import { envStep } from '../../../src/env/step.js';
import { forwardMlp, initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  NetId,
  NUM_ACTIONS,
  ppoActorLayout,
  ppoCriticLayout,
  STATE_DIM,
} from '../../../src/nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';
import { randomMarket } from '../env/fixtures.js';

const f = Math.fround;
const market = randomMarket(600, 4);
const params = envParams({ ...defaultConfig.env, ...SPEC_REWARD_TERMS, episodeBars: 5 });
const split = { start: 150, end: 550 };
const curiosity = { layout: curiosityLayout(), params: initParams(curiosityLayout(), NetId.Curiosity, 2) };
const nets: PpoNets = {
  actorLayout: ppoActorLayout(),
  actor: initParams(ppoActorLayout(), NetId.Actor, 2),
  criticLayout: ppoCriticLayout(),
  critic: initParams(ppoCriticLayout(), NetId.Critic, 2),
};
const launch = { steps: 12, stepBase: 40, gamma: 0.99, lambda: 0.95 };

describe('softmax sampling', () => {
  // Two live actions with probabilities 1/4 (action 3) and 3/4 (action 7); the others have
  // logits 200 below, whose exp underflows to 0 in f32.
  const logits = new Float32Array(NUM_ACTIONS).fill(-200);
  logits[3] = 0;
  logits[7] = f(Math.log(3));
  const s: Sample = { action: 0, logProb: 0 };

  it('scans the CDF: u below 1/4 picks action 3, above picks action 7', () => {
    expect(sampleSoftmax(logits, 0, s).action).toBe(3);
    expect(sampleSoftmax(logits, 0.2499, s).action).toBe(3);
    expect(s.logProb).toBeCloseTo(Math.log(0.25), 6);
    expect(sampleSoftmax(logits, 0.2501, s).action).toBe(7);
    expect(s.logProb).toBeCloseTo(Math.log(0.75), 6);
    expect(sampleSoftmax(logits, 1 - 2 ** -24, s).action).toBe(7);
  });

  it('never picks a zero-probability action, also for the last action and u near 1', () => {
    const last = new Float32Array(NUM_ACTIONS).fill(-200);
    last[44] = 0;
    for (const u of [0, 0.5, 1 - 2 ** -24]) expect(sampleSoftmax(last, u, s).action).toBe(44);
    const first = new Float32Array(NUM_ACTIONS).fill(-200);
    first[0] = 0;
    for (const u of [0, 0.5, 1 - 2 ** -24]) expect(sampleSoftmax(first, u, s).action).toBe(0);
  });
});

describe('collectPpo (reference)', () => {
  it('samples from the actor with Philox Stream.Action word 0 and records log-probs and values', () => {
    const out = collectPpo(createEnv(market, split, params, 3, 5), market, params, nets, curiosity, launch);
    const [k0, k1] = seedToKey(5);
    const logits = new Float32Array(NUM_ACTIONS);
    const value = new Float32Array(1);
    const s: Sample = { action: 0, logProb: 0 };
    for (let e = 0; e < 3; e++) {
      for (let l = 0; l < launch.steps; l++) {
        const r = e * launch.steps + l;
        const state = out.states.subarray(r * STATE_DIM, (r + 1) * STATE_DIM);
        forwardMlp(nets.actorLayout, nets.actor, state, logits);
        forwardMlp(nets.criticLayout, nets.critic, state, value);
        const u = u32ToUnitFloat(philox4x32(Stream.Action, e, launch.stepBase + l, 0, k0, k1)[0]);
        sampleSoftmax(logits, u, s);
        expect(out.actions[r]).toBe(s.action);
        expect(out.logProbs[r]).toBe(s.logProb);
        expect(out.values[r]).toBe(value[0]);
        expect(out.returns[r]).toBe(f(out.advantages[r] + out.values[r]));
      }
    }
  });

  it('computes GAE with the critic value of the pre-restart state at truncation and at L', () => {
    const n = 3;
    const out = collectPpo(createEnv(market, split, params, n, 6), market, params, nets, curiosity, launch);
    // Replay the same actions through envStep on a twin environment, evaluating the critic
    // on every next state, then run GAE on the replay.
    const env = createEnv(market, split, params, n, 6);
    const step = createStepOut();
    const value = new Float32Array(1);
    const L = launch.steps;
    let truncations = 0;
    for (let e = 0; e < n; e++) {
      const boot = new Float32Array(L);
      for (let l = 0; l < L; l++) {
        const r = e * L + l;
        envStep(env, market, params, e, out.actions[r], step, curiosity);
        expect(step.total).toBe(out.rewards[r]);
        expect(step.done).toBe(out.dones[r]);
        expect(step.truncated).toBe(out.truncateds[r]);
        forwardMlp(nets.criticLayout, nets.critic, step.nextState, value);
        boot[l] = value[0];
        truncations += step.truncated;
      }
      const adv = new Float32Array(n * L);
      const ret = new Float32Array(n * L);
      gaeEpisode(out.rewards, out.values, out.dones, out.truncateds, boot, e * L, L, 0.99, 0.95, adv, ret);
      expect(Array.from(out.advantages.subarray(e * L, (e + 1) * L))).toEqual(
        Array.from(adv.subarray(e * L, (e + 1) * L)),
      );
    }
    expect(truncations).toBeGreaterThan(0);
  });

  it('is bit-identical for the same seed', () => {
    const a = collectPpo(createEnv(market, split, params, 2, 9), market, params, nets, curiosity, launch);
    const b = collectPpo(createEnv(market, split, params, 2, 9), market, params, nets, curiosity, launch);
    for (const key of [
      'states',
      'actions',
      'logProbs',
      'values',
      'rewards',
      'advantages',
      'returns',
    ] as const) {
      expect(Buffer.from(a[key].buffer).equals(Buffer.from(b[key].buffer))).toBe(true);
    }
  });
});
