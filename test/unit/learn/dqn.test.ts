import { describe, expect, it } from 'vitest';
import { type DqnConfig, defaultConfig } from '../../../src/config.js';
import { c51Loss, type LossRows } from '../../../src/learn/dqn_loss.js';
import {
  createDqnLearner,
  type DqnLearner,
  dqnLossGrad,
  dqnTrainStep,
  epsilonAt,
  learnerTaus,
  updateTarget,
} from '../../../src/learn/dqn_update.js';
import { createDuelingCache, duelingForward, duelingNet } from '../../../src/learn/dueling.js';
import { createPer, perInsert } from '../../../src/learn/per.js';
import { createReplay, REPLAY_F, ReplayF } from '../../../src/learn/replay.js';
import { forwardC51, forwardDueling, forwardIqn, initParams } from '../../../src/nets/forward.js';
import { duelingLayout, NetId, NUM_ACTIONS, type QHead, STATE_DIM } from '../../../src/nets/layout.js';
import { checkGradient, uniforms } from './helpers.js';

const cfg = (over: Partial<DqnConfig> = {}): DqnConfig => ({
  ...defaultConfig.dqn,
  atoms: 11,
  vMin: -2,
  vMax: 2,
  iqnTau: 3,
  batch: 3,
  ...over,
});

describe('dueling batched forward', () => {
  for (const head of ['plain', 'c51', 'iqn'] as QHead[]) {
    it(`${head}: equals the nets' reference forward bit for bit`, () => {
      const c = cfg();
      const layout = duelingLayout(head, c.atoms, c.iqnEmbed);
      const params = initParams(layout, NetId.QOnline, 4);
      const net = duelingNet(layout, head, { vMin: c.vMin, vMax: c.vMax, atoms: c.atoms });
      const B = 3;
      const T = 2;
      const cache = createDuelingCache(net, B, T);
      const x = Float32Array.from(uniforms(B * STATE_DIM, 1, -2, 2));
      const taus = Float32Array.from(uniforms(B * T, 2, 0, 1));
      cache.trunk.acts[0].set(x);
      const out = duelingForward(net, params, cache, B, taus);
      const q = new Float32Array(NUM_ACTIONS);
      for (let b = 0; b < B; b++) {
        const xb = x.subarray(b * STATE_DIM, (b + 1) * STATE_DIM);
        if (head === 'plain') {
          forwardDueling(layout, params, xb, q);
          expect(out.subarray(b * 45, b * 45 + 45)).toEqual(q);
        } else if (head === 'c51') {
          const probs = new Float32Array(45 * c.atoms);
          forwardC51(layout, params, xb, probs, q, net.support);
          // Softmax of the batched logits gives the reference's probabilities.
          const row = out.subarray(b * 45 * c.atoms, (b + 1) * 45 * c.atoms);
          for (let a = 0; a < 45; a++) {
            const l = row.subarray(a * c.atoms, (a + 1) * c.atoms);
            const max = Math.max(...l);
            let s = 0;
            const e = Array.from(l, (v) => {
              const y = Math.fround(Math.exp(Math.fround(v - max)));
              s = Math.fround(s + y);
              return y;
            });
            for (let z = 0; z < c.atoms; z++) expect(Math.fround(e[z] / s)).toBe(probs[a * c.atoms + z]);
          }
        } else {
          const quant = new Float32Array(T * 45);
          forwardIqn(layout, params, xb, taus.subarray(b * T, (b + 1) * T), q, quant);
          expect(out.subarray(b * T * 45, (b + 1) * T * 45)).toEqual(quant);
        }
      }
    });
  }
});

/** An f64 learner with a batch of 3 gathered by hand: one episode end, returns near the support's edges. */
function f64Learner(head: QHead): DqnLearner {
  const c = cfg();
  const layout = duelingLayout(head, c.atoms, c.iqnEmbed);
  const online = Float64Array.from(initParams(layout, NetId.QOnline, 5), (v) => 1.5 * v);
  const l = createDqnLearner(head, c, online, Float64Array);
  l.target.set(Float64Array.from(initParams(layout, NetId.QOnline + 1, 5), (v) => 1.5 * v));
  const x = uniforms(3 * STATE_DIM, 3, -2, 2);
  const nx = uniforms(3 * STATE_DIM, 4, -2, 2);
  l.cur.trunk.acts[0].set(x);
  l.nextOnline.trunk.acts[0].set(nx);
  l.nextTarget.trunk.acts[0].set(nx);
  l.rows.actions.set([3, 44, 17]);
  l.rows.returns.set([0.3, -1.7, 2.5]);
  l.rows.discounts.set([0.97, 0, 0.9]);
  l.rows.weights.set([1, 0.5, 0.8]);
  if (head === 'iqn') learnerTaus(l, [3, 0], 7, 3);
  return l;
}

/** Parameter indices to check: a spread over every layer, weights and biases. */
function sampleIndices(l: DqnLearner): number[] {
  const out: number[] = [];
  for (const layer of l.net.layout.layers) {
    const w = layer.in * layer.out;
    for (let k = 0; k < 12; k++) out.push(layer.wOffset + Math.floor(((k + 0.5) * w) / 12));
    for (let k = 0; k < 4; k++) out.push(layer.bOffset + Math.floor(((k + 0.5) * layer.out) / 4));
  }
  return out;
}

// Mutations tried: dA without the mean's share (all three heads fail), the IQN trunk gradient
// without the phi factor (IQN fails).
describe('DQN-family loss gradients', () => {
  for (const head of ['plain', 'c51', 'iqn'] as QHead[]) {
    it(`${head}: the backward agrees with central differences of the loss`, () => {
      const l = f64Learner(head);
      const grad = new Float64Array(l.net.layout.size);
      const loss = dqnLossGrad(l, l.online, grad);
      expect(Number.isFinite(loss)).toBe(true);
      const idx = sampleIndices(l);
      const params = l.online as Float64Array;
      const { worst, live } = checkGradient(params, grad, idx, (p) => dqnLossGrad(l, p));
      expect(worst).toBeLessThan(1e-4);
      expect(live).toBeGreaterThan(idx.length / 2);
    });
  }
});

function expectMass(m: number[], want: number[]): void {
  for (let z = 0; z < want.length; z++) expect(m[z]).toBeCloseTo(want[z], 12);
}

describe('C51 projection and loss', () => {
  const support = { vMin: -2, vMax: 2, atoms: 5 };
  const NEG = -1e30;
  /** Target logits putting all mass on atom `k` for every action; online logits uniform except `low`. */
  function heads(k: number, low = Number.NaN) {
    const row = NUM_ACTIONS * 5;
    const logits = new Float64Array(row);
    if (!Number.isNaN(low)) logits[0] = low;
    const next = new Float64Array(row).fill(NEG);
    for (let a = 0; a < NUM_ACTIONS; a++) next[a * 5 + k] = 0;
    return { logits, next };
  }
  const rows = (ret: number, disc: number): LossRows => ({
    batch: 1,
    actions: Int32Array.of(0),
    returns: Float64Array.of(ret),
    discounts: Float64Array.of(disc),
    weights: Float64Array.of(1),
  });
  const run = (ret: number, disc: number, k: number, low?: number) => {
    const { logits, next } = heads(k, low);
    const dOut = new Float64Array(logits.length);
    const prio = new Float64Array(1);
    const loss = c51Loss(support, logits, next, next, rows(ret, disc), dOut, prio);
    // With uniform online probabilities p = 0.2: dL/dl_z = 0.2 - m_z, so m = 0.2 - dOut.
    return { loss, m: Array.from(dOut.subarray(0, 5), (d) => 0.2 - d), prio: prio[0] };
  };

  it('splits mass between the two neighbouring atoms', () => {
    // Atom 1 (z = -1): Tz = 0.25 + 0.5 * -1 = -0.25, position 1.75: 0.25 to atom 1, 0.75 to atom 2.
    const { loss, m, prio } = run(0.25, 0.5, 1);
    expectMass(m, [0, 0.25, 0.75, 0, 0]);
    expect(loss).toBeCloseTo(Math.log(5), 12);
    expect(prio).toBeCloseTo(Math.log(5), 12);
  });

  it('puts an episode end at the return alone, and clamps to the support', () => {
    const done = run(0.25, 0, 4);
    expectMass(done.m, [0, 0, 0.75, 0.25, 0]);
    const high = run(5, 0.9, 3);
    expectMass(high.m, [0, 0, 0, 0, 1]);
    const exact = run(1, 0.5, 2); // Tz = 1 + 0 = atom 3 exactly: all of it there
    expectMass(exact.m, [0, 0, 0, 1, 0]);
  });

  it('stays finite when the target lands on an atom whose probability underflows', () => {
    const rowsF = rows(-2, 0);
    const logits = new Float32Array(NUM_ACTIONS * 5);
    logits[0] = -200; // exp(-200) is 0 in f32: log(softmax) would be -Infinity
    const next = new Float32Array(NUM_ACTIONS * 5);
    const dOut = new Float32Array(logits.length);
    const prio = new Float32Array(1);
    const loss = c51Loss(support, logits, next, next, rowsF as LossRows, dOut, prio);
    expect(loss).toBeCloseTo(200 + Math.log(4), 3);
    expect(dOut[0]).toBeCloseTo(-1, 6);
  });
});

describe('dqnTrainStep', () => {
  // Mutation tried: the Huber gradient's sign flipped (the loss grows; fails).
  it('fits terminal returns through PER sampling, clip and Adam (the loss falls, priorities follow)', () => {
    // 32 terminal transitions (discount 0): the target is the return alone, 1 for even actions,
    // -1 for odd; 60 steps of batch 16 at lr 1e-3 should fit them.
    const c = cfg({ batch: 16, lr: 1e-3, replayCapacity: 32, targetEvery: 10 });
    const layout = duelingLayout('plain');
    const l = createDqnLearner('plain', c, initParams(layout, NetId.QOnline, 2));
    const rep = createReplay(32);
    const x = uniforms(32 * STATE_DIM, 9, -1, 1);
    for (let i = 0; i < 32; i++) {
      const o = i * REPLAY_F;
      for (let k = 0; k < STATE_DIM; k++) {
        rep.f[o + ReplayF.State + k] = x[i * STATE_DIM + k];
        rep.f[o + ReplayF.Next + k] = x[i * STATE_DIM + k];
      }
      rep.i[i] = i % 45;
      rep.f[o + ReplayF.Return] = i % 2 === 0 ? 1 : -1;
      rep.f[o + ReplayF.Discount] = 0;
    }
    rep.size = 32;
    const per = createPer(32, 0.6, 1e-6);
    perInsert(per, 0, 32);
    const losses: number[] = [];
    for (let s = 0; s < 60; s++) losses.push(dqnTrainStep(l, rep, per, [1, 0], 0.4).loss);
    const early = losses.slice(0, 5).reduce((a, b) => a + b) / 5;
    const late = losses.slice(-5).reduce((a, b) => a + b) / 5;
    expect(late).toBeLessThan(early / 4);
    expect(l.steps).toBe(60);
    expect(l.target).toEqual(l.online); // step 60 was a hard sync
    // Every row was visited and got a priority from its TD error (not the insert's max of 1).
    for (let i = 0; i < 32; i++) expect(per.tree[per.leaves + i]).toBeLessThan(1);
  });
});

describe('target network and epsilon', () => {
  it('hard-copies every targetEvery steps, else Polyak-averages', () => {
    const l = f64Learner('plain');
    l.cfg = { ...l.cfg, targetEvery: 2 };
    const before = l.target[10];
    l.online[10] = 5;
    l.steps = 1;
    updateTarget(l);
    expect(l.target[10]).toBe(before);
    l.steps = 2;
    updateTarget(l);
    expect(l.target[10]).toBe(5);
    l.cfg = { ...l.cfg, targetEvery: 0, polyakTau: 0.25 };
    l.online[10] = 1;
    updateTarget(l);
    expect(l.target[10]).toBe(5 + 0.25 * (1 - 5));
  });

  it('decays epsilon linearly over the decay epochs, then holds the floor', () => {
    const c = cfg({ epsilonStart: 1, epsilonEnd: 0.1, epsilonDecayEpochs: 4 });
    expect(epsilonAt(c, 0)).toBe(1);
    expect(epsilonAt(c, 2)).toBeCloseTo(0.55, 12);
    expect(epsilonAt(c, 4)).toBeCloseTo(0.1, 12);
    expect(epsilonAt(c, 9)).toBeCloseTo(0.1, 12);
  });
});
