import { describe, expect, it } from 'vitest';
import { argmaxQ, collectDqn, type DqnNets } from '../../../src/collect/dqn.js';
import type { DqnRollout } from '../../../src/collect/rollout.js';
import { defaultConfig, SPEC_REWARD_TERMS } from '../../../src/config.js';
import type { Market } from '../../../src/data/types.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv, type EnvState } from '../../../src/env/state.js';
import { forwardC51, forwardDueling, forwardIqn, initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  NetId,
  NUM_ACTIONS,
  type QHead,
  STATE_DIM,
} from '../../../src/nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';
import { randomMarket } from '../env/fixtures.js';

const market: Market = randomMarket(600, 2);
// Short episodes so that truncations and restarts happen inside a 20-step launch.
const params = envParams({ ...defaultConfig.env, ...SPEC_REWARD_TERMS, episodeBars: 6 });
const split = { start: 150, end: 550 };
const curiosity = { layout: curiosityLayout(), params: initParams(curiosityLayout(), NetId.Curiosity, 5) };

function nets(head: QHead, seed = 3): DqnNets {
  const layout = duelingLayout(head, 11, 64);
  return {
    head,
    layout,
    online: initParams(layout, NetId.QOnline, seed),
    support: { vMin: -10, vMax: 10, atoms: 11 },
    actTaus: 8,
  };
}

const plain = nets('plain');

function collect(env: EnvState, n: DqnNets, steps: number, stepBase: number, epsilon = 0.5): DqnRollout {
  return collectDqn(env, market, params, n, curiosity, { steps, epsilon, stepBase });
}

/** Row r of a `[rows, width]` buffer. */
const row = (buf: Float32Array | Int32Array, r: number, width = 1) =>
  Array.from(buf.subarray(r * width, (r + 1) * width));

describe('collectDqn (reference)', () => {
  it('two launches of L = 10 equal one launch of L = 20: episodes persist across launches', () => {
    const n = 3;
    const whole = createEnv(market, split, params, n, 9);
    const parts = createEnv(market, split, params, n, 9);
    const one = collect(whole, plain, 20, 0);
    const first = collect(parts, plain, 10, 0);
    const second = collect(parts, plain, 10, 10);
    for (let e = 0; e < n; e++) {
      for (let l = 0; l < 20; l++) {
        const src = l < 10 ? first : second;
        const r = e * 10 + (l % 10);
        const r20 = e * 20 + l;
        for (const key of ['actions', 'rewards', 'dones', 'truncateds'] as const) {
          expect(row(one[key], r20)).toEqual(row(src[key], r));
        }
        expect(row(one.states, r20, STATE_DIM)).toEqual(row(src.states, r, STATE_DIM));
        expect(row(one.nextStates, r20, STATE_DIM)).toEqual(row(src.nextStates, r, STATE_DIM));
        expect(row(one.components, r20, 5)).toEqual(row(src.components, r, 5));
      }
    }
    expect(Array.from(parts.f)).toEqual(Array.from(whole.f));
    expect(Array.from(parts.i)).toEqual(Array.from(whole.i));
    expect(Array.from(parts.window)).toEqual(Array.from(whole.window));
    // the launches did cross episode ends
    expect(one.truncateds.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(one.components.some((c, k) => k % 5 === 4 && c > 0)).toBe(true);
  });

  it('is bit-identical for the same seed and differs for another', () => {
    const a = collect(createEnv(market, split, params, 2, 4), plain, 12, 7);
    const b = collect(createEnv(market, split, params, 2, 4), plain, 12, 7);
    const c = collect(createEnv(market, split, params, 2, 5), plain, 12, 7);
    for (const key of [
      'states',
      'actions',
      'rewards',
      'nextStates',
      'dones',
      'truncateds',
      'components',
    ] as const) {
      expect(Buffer.from(a[key].buffer).equals(Buffer.from(b[key].buffer))).toBe(true);
    }
    expect(Array.from(a.actions)).not.toEqual(Array.from(c.actions));
  });

  it('acts greedily at epsilon 0 and uniformly from Philox word 1 at epsilon 1', () => {
    const greedy = collect(createEnv(market, split, params, 2, 4), plain, 8, 0, 0);
    const q = new Float32Array(NUM_ACTIONS);
    for (let r = 0; r < 16; r++) {
      forwardDueling(
        plain.layout,
        plain.online,
        greedy.states.subarray(r * STATE_DIM, (r + 1) * STATE_DIM),
        q,
      );
      expect(greedy.actions[r]).toBe(argmaxQ(q));
    }
    const random = collect(createEnv(market, split, params, 2, 4), plain, 8, 100, 1);
    const [k0, k1] = seedToKey(4);
    for (let e = 0; e < 2; e++) {
      for (let l = 0; l < 8; l++) {
        const w = philox4x32(Stream.Action, e, 100 + l, 0, k0, k1);
        expect(random.actions[e * 8 + l]).toBe(w[1] % NUM_ACTIONS);
      }
    }
  });

  it('writes dones and truncations, and each next state is the state the following step starts from', () => {
    const out = collect(createEnv(market, split, params, 3, 8), plain, 20, 0);
    let truncated = 0;
    let done = 0;
    for (let r = 0; r < 60; r++) {
      expect(out.dones[r] && out.truncateds[r]).toBe(0);
      truncated += out.truncateds[r];
      done += out.dones[r];
      // within an episode, the next state is the state the following step starts from
      const ended = out.dones[r] || out.truncateds[r];
      if (r % 20 < 19 && !ended) {
        expect(row(out.states, r + 1, STATE_DIM)).toEqual(row(out.nextStates, r, STATE_DIM));
      }
    }
    expect(truncated).toBeGreaterThan(0);
    expect(done).toBeGreaterThan(0);
  });

  it('acts on the expected values of the C51 and IQN heads (IQN taus from Philox Stream.Tau)', () => {
    const [k0, k1] = seedToKey(6);
    for (const head of ['c51', 'iqn'] as const) {
      const net = nets(head);
      const out = collect(createEnv(market, split, params, 2, 6), net, 4, 30, 0);
      const q = new Float32Array(NUM_ACTIONS);
      const probs = new Float32Array(NUM_ACTIONS * 11);
      for (let e = 0; e < 2; e++) {
        for (let l = 0; l < 4; l++) {
          const r = e * 4 + l;
          const s = out.states.subarray(r * STATE_DIM, (r + 1) * STATE_DIM);
          if (head === 'c51') forwardC51(net.layout, net.online, s, probs, q, net.support);
          else {
            const taus = Float32Array.from({ length: 8 }, (_, k) =>
              u32ToUnitFloat(philox4x32(Stream.Tau, e, 30 + l, k >> 2, k0, k1)[k & 3]),
            );
            forwardIqn(net.layout, net.online, s, taus, q);
          }
          expect(out.actions[r]).toBe(argmaxQ(q));
        }
      }
    }
  });
});
