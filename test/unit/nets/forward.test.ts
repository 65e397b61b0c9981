import { describe, expect, it } from 'vitest';
import {
  c51Atom,
  forwardC51,
  forwardDueling,
  forwardIqn,
  forwardMlp,
  initParams,
} from '../../../src/nets/forward.js';
import {
  buildLayout,
  curiosityLayout,
  duelingLayout,
  type Layer,
  NetId,
  type NetLayout,
  NUM_ACTIONS,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

// Independent f64 reference in matrix form: weights sliced into row arrays, y = act(W x + b).
type Vec = number[];
function matrix(params: Float32Array, layer: Layer): { W: Vec[]; b: Vec } {
  const W: Vec[] = [];
  for (let j = 0; j < layer.out; j++) {
    W.push(Array.from(params.subarray(layer.wOffset + j * layer.in, layer.wOffset + (j + 1) * layer.in)));
  }
  return { W, b: Array.from(params.subarray(layer.bOffset, layer.bOffset + layer.out)) };
}
function linear64(params: Float32Array, layer: Layer, x: Vec): Vec {
  const { W, b } = matrix(params, layer);
  const y = W.map((row, j) => row.reduce((s, w, i) => s + w * x[i], 0) + b[j]);
  if (layer.act === 'relu') return y.map((v) => Math.max(v, 0));
  if (layer.act === 'leaky') return y.map((v) => (v >= 0 ? v : 0.01 * v));
  return y;
}
const byName = (layout: NetLayout, name: string) => layout.layers.find((l) => l.name === name)!;
function chain64(layout: NetLayout, params: Float32Array, x: Vec): Vec {
  return layout.layers.reduce((h, layer) => linear64(params, layer, h), x);
}
function streams64(layout: NetLayout, params: Float32Array, h: Vec): { v: Vec; a: Vec } {
  const vh = linear64(params, byName(layout, 'value_stream.0'), h);
  const ah = linear64(params, byName(layout, 'advantage_stream.0'), h);
  return {
    v: linear64(params, byName(layout, 'value_stream.1'), vh),
    a: linear64(params, byName(layout, 'advantage_stream.1'), ah),
  };
}
function trunk64(layout: NetLayout, params: Float32Array, x: Vec): Vec {
  const h0 = linear64(params, byName(layout, 'shared_layers.0'), x);
  return linear64(params, byName(layout, 'shared_layers.1'), h0);
}
function dueling64(v: number, a: Vec): Vec {
  const mean = a.reduce((s, y) => s + y, 0) / a.length;
  return a.map((y) => v + y - mean);
}

function randomInput(n: number, seed: number): Float32Array {
  const x = new Float32Array(n);
  const w = new Uint32Array(4);
  for (let i = 0; i < n; i++) {
    philox4x32(Stream.Test, seed, i, 0, 7, 0, w);
    x[i] = Math.fround(4 * u32ToUnitFloat(w[0]) - 2);
  }
  return x;
}

/** Every element within 1e-5 of the reference, relative to the reference vector's scale. */
function expectClose(got: ArrayLike<number>, want: Vec, rel = 1e-5): void {
  const scale = Math.max(...want.map(Math.abs), 1e-3);
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  expect(worst / scale).toBeLessThan(rel);
}

// Perturbs the init so biases and weights are not all tiny and activations hit both signs.
function params(layout: NetLayout, netId: number, seed: number): Float32Array {
  return initParams(layout, netId, seed).map((v) => Math.fround(v * 1.5));
}

describe('forwardMlp', () => {
  // Hand-worked 2 -> 2 -> 1: W1 = [[1, -2], [0.5, 0.25]], b1 = [0.5, -1], W2 = [[2, -3]], b2 = [0.1].
  const tiny = (act: 'relu' | 'leaky') =>
    buildLayout('tiny', [
      { name: 'l0', in: 2, out: 2, act },
      { name: 'l1', in: 2, out: 1, act: 'none' },
    ]);
  const p = new Float32Array([1, -2, 0.5, 0.25, 0.5, -1, 2, -3, 0.1]);

  it('matches a hand-worked ReLU example', () => {
    // x = [3, 1]: h = relu([0.5 + 3 - 2, -1 + 1.5 + 0.25]) = [1.5, 0.75]; y = 0.1 + 3 - 2.25 = 0.85.
    const out = new Float32Array(1);
    forwardMlp(tiny('relu'), p, new Float32Array([3, 1]), out);
    expect(out[0]).toBeCloseTo(0.85, 6);
    // x = [1, 2]: h = relu([-2.5, 0]) = [0, 0]; y = b2 = f32(0.1) exactly.
    forwardMlp(tiny('relu'), p, new Float32Array([1, 2]), out);
    expect(out[0]).toBe(Math.fround(0.1));
  });

  it('matches a hand-worked LeakyReLU example', () => {
    // x = [1, 2]: h = leaky([-2.5, 0]) = [-0.025, 0]; y = 0.1 + 2 * -0.025 = 0.05.
    const out = new Float32Array(1);
    forwardMlp(tiny('leaky'), p, new Float32Array([1, 2]), out);
    expect(out[0]).toBeCloseTo(0.05, 6);
  });

  it('agrees with an f64 matrix-form reference on the actor, critic and curiosity nets', () => {
    const cases: [NetLayout, number][] = [
      [ppoActorLayout(), NetId.Actor],
      [ppoCriticLayout(), NetId.Critic],
      [curiosityLayout(), NetId.Curiosity],
    ];
    for (const [layout, id] of cases) {
      const w = params(layout, id, 11);
      const last = layout.layers[layout.layers.length - 1];
      const out = new Float32Array(last.out);
      for (let s = 0; s < 3; s++) {
        const x = randomInput(layout.layers[0].in, s);
        forwardMlp(layout, w, x, out);
        expectClose(out, chain64(layout, w, Array.from(x)));
      }
    }
  });

  it('rejects a parameter buffer of the wrong size', () => {
    const layout = ppoActorLayout();
    expect(() =>
      forwardMlp(layout, new Float32Array(layout.size - 1), new Float32Array(54), new Float32Array(45)),
    ).toThrow(/params have/);
  });
});

describe('forwardDueling', () => {
  const layout = duelingLayout('plain');
  const w = params(layout, NetId.QOnline, 3);

  it('agrees with an f64 reference and Q - V has zero mean over actions', () => {
    const q = new Float32Array(NUM_ACTIONS);
    for (let s = 0; s < 3; s++) {
      const x = randomInput(54, 100 + s);
      forwardDueling(layout, w, x, q);
      const { v, a } = streams64(layout, w, trunk64(layout, w, Array.from(x)));
      expectClose(q, dueling64(v[0], a));
      // sum_a (A[a] - mean A) = 0, so mean_a Q[a] = V.
      const meanQ = q.reduce((t, y) => t + y, 0) / NUM_ACTIONS;
      expect(Math.abs(meanQ - v[0])).toBeLessThan(1e-5 * Math.max(1, Math.abs(v[0])));
    }
  });
});

describe('forwardC51', () => {
  const atoms = 51;
  const support = { vMin: -10, vMax: 10, atoms };
  const layout = duelingLayout('c51', atoms);
  const w = params(layout, NetId.QOnline, 5);

  it('spaces the support evenly from vMin to vMax', () => {
    expect(c51Atom(support, 0)).toBe(-10);
    expect(c51Atom(support, 25)).toBeCloseTo(0, 6);
    expect(c51Atom(support, 50)).toBeCloseTo(10, 5);
  });

  it('gives per-action distributions that sum to 1 and agree with an f64 reference', () => {
    const probs = new Float32Array(NUM_ACTIONS * atoms);
    const q = new Float32Array(NUM_ACTIONS);
    const x = randomInput(54, 200);
    forwardC51(layout, w, x, probs, q, support);
    const { v, a } = streams64(layout, w, trunk64(layout, w, Array.from(x)));
    const z = Array.from({ length: atoms }, (_, k) => -10 + (20 * k) / (atoms - 1));
    const wantP: number[] = [];
    const wantQ: number[] = [];
    for (let k = 0; k < NUM_ACTIONS; k++) {
      const logits = z.map((_, j) => {
        const meanA = Array.from({ length: NUM_ACTIONS }, (_, b) => a[b * atoms + j]).reduce(
          (s, y) => s + y,
          0,
        );
        return v[j] + a[k * atoms + j] - meanA / NUM_ACTIONS;
      });
      const m = Math.max(...logits);
      const e = logits.map((l) => Math.exp(l - m));
      const s = e.reduce((t, y) => t + y, 0);
      const p = e.map((y) => y / s);
      wantP.push(...p);
      wantQ.push(p.reduce((t, y, j) => t + y * z[j], 0));
      const sum = probs.subarray(k * atoms, (k + 1) * atoms).reduce((t, y) => t + y, 0);
      expect(Math.abs(sum - 1)).toBeLessThan(1e-5);
    }
    expectClose(probs, wantP);
    expectClose(q, wantQ);
  });
});

describe('forwardIqn', () => {
  const layout = duelingLayout('iqn');
  const w = params(layout, NetId.QOnline, 9);
  const taus = new Float32Array([0.05, 0.5, 0.9375]);

  it('agrees with an f64 reference per tau and averages the quantiles', () => {
    const x = randomInput(54, 300);
    const q = new Float32Array(NUM_ACTIONS);
    const quant = new Float32Array(taus.length * NUM_ACTIONS);
    forwardIqn(layout, w, x, taus, q, quant);
    const h1 = trunk64(layout, w, Array.from(x));
    const embed = byName(layout, 'tau_embed');
    const wantMean = new Array(NUM_ACTIONS).fill(0);
    taus.forEach((tau, t) => {
      const c = Array.from({ length: 64 }, (_, i) => Math.cos(Math.PI * i * tau));
      const phi = linear64(w, embed, c);
      const { v, a } = streams64(
        layout,
        w,
        h1.map((y, j) => y * phi[j]),
      );
      const qt = dueling64(v[0], a);
      expectClose(quant.subarray(t * NUM_ACTIONS, (t + 1) * NUM_ACTIONS), qt);
      qt.forEach((y, k) => {
        wantMean[k] += y / taus.length;
      });
    });
    expectClose(q, wantMean);
    // Different taus must give different quantiles (the embedding is wired in).
    expect(quant[0]).not.toBe(quant[NUM_ACTIONS]);
  });
});

describe('initParams', () => {
  const layout = ppoActorLayout();

  it('keeps every weight and bias within +/- 1/sqrt(in) and fills the range', () => {
    const p = initParams(layout, NetId.Actor, 1);
    for (const layer of layout.layers) {
      const bound = Math.fround(1 / Math.sqrt(layer.in));
      const vals = p.subarray(layer.wOffset, layer.bOffset + layer.out);
      const max = vals.reduce((m, y) => Math.max(m, y), -Infinity);
      const min = vals.reduce((m, y) => Math.min(m, y), Infinity);
      expect(max).toBeLessThanOrEqual(bound);
      expect(min).toBeGreaterThanOrEqual(-bound);
      expect(max).toBeGreaterThan(0.9 * bound);
      expect(min).toBeLessThan(-0.9 * bound);
      const mean = vals.reduce((s, y) => s + y, 0) / vals.length;
      expect(Math.abs(mean)).toBeLessThan(0.1 * bound);
    }
  });

  it('draws element e from word e & 3 of Philox(Init, netId, e >> 2, 0)', () => {
    const p = initParams(layout, NetId.Actor, 12345);
    const [k0, k1] = seedToKey(12345);
    for (const e of [0, 5, 6911, 6912, 7000, layout.size - 1]) {
      const word = philox4x32(Stream.Init, NetId.Actor, e >> 2, 0, k0, k1)[e & 3];
      const layer = layout.layers.find((l) => e >= l.wOffset && e < l.bOffset + l.out)!;
      const bound = Math.fround(1 / Math.sqrt(layer.in));
      expect(p[e]).toBe(Math.fround((2 * u32ToUnitFloat(word) - 1) * bound));
    }
  });

  it('is deterministic per seed and distinct per network id and seed', () => {
    const a = initParams(layout, NetId.Actor, 7);
    const b = initParams(layout, NetId.Actor, 7);
    expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer))).toBe(true);
    const other = initParams(layout, NetId.Critic, 7);
    const reseeded = initParams(layout, NetId.Actor, 8);
    let sameId = 0;
    let sameSeed = 0;
    for (let i = 0; i < a.length; i++) {
      if (a[i] === other[i]) sameId++;
      if (a[i] === reseeded[i]) sameSeed++;
    }
    expect(sameId).toBeLessThan(a.length / 100);
    expect(sameSeed).toBeLessThan(a.length / 100);
  });
});
