import { describe, expect, it, vi } from 'vitest';
import {
  backwardMlp,
  createMlpCache,
  type Floats,
  forwardMlpBatch,
  inputGradMlp,
} from '../../../src/learn/mlp.js';
import { forwardMlp, initParams } from '../../../src/nets/forward.js';
import {
  buildLayout,
  curiosityLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { checkGradient, uniforms } from './helpers.js';

/** Loss = sum(c * output): its gradient w.r.t. the output is c. */
function projectedLoss(
  layout: NetLayout,
  params: Floats,
  x: Float64Array,
  c: Float64Array,
  batch: number,
): number {
  const cache = createMlpCache(layout, batch, Float64Array);
  cache.acts[0].set(x);
  const out = forwardMlpBatch(layout, params, cache, batch);
  let s = 0;
  for (let k = 0; k < c.length; k++) s += c[k] * out[k];
  return s;
}

function f64Params(layout: NetLayout, netId: number, seed: number): Float64Array {
  return Float64Array.from(initParams(layout, netId, seed), (v) => 1.5 * v);
}

function gradOf(layout: NetLayout, params: Float64Array, x: Float64Array, c: Float64Array, batch: number) {
  const cache = createMlpCache(layout, batch, Float64Array);
  cache.acts[0].set(x);
  forwardMlpBatch(layout, params, cache, batch);
  const grad = new Float64Array(layout.size);
  backwardMlp(layout, params, cache, c, batch, grad);
  return grad;
}

/** The reference's input-gradient sum: f32(acc + f32(d[b, j] W[j, i])) over j ascending, nonzero d, from +0. */
function inputSum(
  d: Float32Array,
  w: Float32Array,
  b: number,
  i: number,
  n: number,
  nOut: number,
  wOffset: number,
): number {
  const f = Math.fround;
  let acc = 0;
  for (let j = 0; j < nOut; j++) {
    const v = d[b * nOut + j];
    if (v !== 0) acc = f(acc + f(v * w[wOffset + j * n + i]));
  }
  return acc;
}

/** The critic's params of `seed`, a cache of `batch` random input rows (seed + 1), its forward pass. */
function criticForward(batch: number, seed: number) {
  const layout = ppoCriticLayout();
  const p32 = initParams(layout, NetId.Critic, seed);
  const cache = createMlpCache(layout, batch);
  cache.acts[0].set(Float32Array.from(uniforms(batch * 54, seed + 1, -2, 2)));
  forwardMlpBatch(layout, p32, cache, batch);
  return { layout, p32, cache };
}

describe('backwardMlp', () => {
  it('agrees with central differences on every parameter of a small mixed-activation net', () => {
    const layout = buildLayout('small', [
      { name: 'a', in: 5, out: 7, act: 'leaky' },
      { name: 'b', in: 7, out: 6, act: 'relu' },
      { name: 'c', in: 6, out: 3, act: 'none' },
    ]);
    const batch = 4;
    const params = uniforms(layout.size, 1);
    const x = uniforms(batch * 5, 2, -2, 2);
    const c = uniforms(batch * 3, 3);
    const grad = gradOf(layout, params, x, c, batch);
    const all = Array.from({ length: layout.size }, (_, k) => k);
    const { worst, live } = checkGradient(params, grad, all, (p) => projectedLoss(layout, p, x, c, batch));
    expect(worst).toBeLessThan(1e-3);
    expect(live).toBeGreaterThan(layout.size / 2);
  });

  it('agrees with central differences on a sample of the real actor, critic and curiosity params', () => {
    const cases: [NetLayout, number][] = [
      [ppoActorLayout(), NetId.Actor],
      [ppoCriticLayout(), NetId.Critic],
      [curiosityLayout(), NetId.Curiosity],
    ];
    for (const [layout, id] of cases) {
      const batch = 3;
      const nIn = layout.layers[0].in;
      const nOut = layout.layers[layout.layers.length - 1].out;
      const params = f64Params(layout, id, 4);
      const x = uniforms(batch * nIn, 5, -2, 2);
      const c = uniforms(batch * nOut, 6);
      const grad = gradOf(layout, params, x, c, batch);
      // Every layer's weights and biases are sampled: 12 weights and 4 biases per layer.
      const picks: number[] = [];
      const r = uniforms(16 * layout.layers.length, 7, 0, 1);
      layout.layers.forEach((l, i) => {
        for (let s = 0; s < 12; s++) picks.push(l.wOffset + Math.floor(r[16 * i + s] * l.in * l.out));
        for (let s = 12; s < 16; s++) picks.push(l.bOffset + Math.floor(r[16 * i + s] * l.out));
      });
      const { worst, live } = checkGradient(params, grad, picks, (p) =>
        projectedLoss(layout, p, x, c, batch),
      );
      expect(worst).toBeLessThan(1e-3);
      expect(live).toBeGreaterThan(picks.length / 3);
    }
  });

  it('in f32 buffers, forwards bit for bit like forwardMlp and stays close to the f64 gradient', () => {
    const layout = ppoCriticLayout();
    const batch = 5;
    const p32 = initParams(layout, NetId.Critic, 8);
    const x = Float32Array.from(uniforms(batch * 54, 9, -2, 2));
    const cache = createMlpCache(layout, batch);
    cache.acts[0].set(x);
    const out = forwardMlpBatch(layout, p32, cache, batch);
    const single = new Float32Array(1);
    for (let b = 0; b < batch; b++) {
      forwardMlp(layout, p32, x.subarray(b * 54, (b + 1) * 54), single);
      expect(out[b]).toBe(single[0]);
    }
    const c = uniforms(batch, 10);
    const g32 = new Float32Array(layout.size);
    backwardMlp(layout, p32, cache, Float32Array.from(c), batch, g32);
    const g64 = gradOf(layout, Float64Array.from(p32), Float64Array.from(x), c, batch);
    let scale = 0;
    let worst = 0;
    for (let k = 0; k < layout.size; k++) {
      scale = Math.max(scale, Math.abs(g64[k]));
      worst = Math.max(worst, Math.abs(g32[k] - g64[k]));
    }
    expect(scale).toBeGreaterThan(0);
    expect(worst / scale).toBeLessThan(1e-4);
  });

  it("in f32 buffers, gives the input gradient of the reference's loop bit for bit", () => {
    const batch = 4;
    const { layout, p32, cache } = criticForward(batch, 3);
    backwardMlp(
      layout,
      p32,
      cache,
      Float32Array.from(uniforms(batch, 5)),
      batch,
      new Float32Array(layout.size),
    );
    const d = cache.deltas[0] as Float32Array;
    d[3] = 0; // a zero delta is skipped, as in the reference
    const dx = new Float32Array(batch * 54).fill(Number.NaN);
    inputGradMlp(layout, p32, cache, batch, dx);
    // dx[b, i] = f32(dx + f32(d[b, j] * W0[j, i])) over j ascending, nonzero d, from +0.
    const { in: n, out: nOut, wOffset } = layout.layers[0];
    for (let b = 0; b < batch; b++) {
      for (let i = 0; i < n; i++) {
        expect(Object.is(dx[b * n + i], inputSum(d, p32, b, i, n, nOut, wOffset))).toBe(true);
      }
    }
  });

  it("in f32 buffers, gives the weight gradients of the reference's loops bit for bit", () => {
    // Layer by layer from the output: g[j, i] = sum_b f32(d[b, j] x[b, i]), b ascending over the
    // nonzero deltas from +0; the deltas below are f32(sum_j d[b, j] W[j, i]) times act'(x).
    const batch = 6;
    const { layout, p32, cache } = criticForward(batch, 11);
    const c = Float32Array.from(uniforms(batch, 13));
    c[2] = 0;
    const g32 = new Float32Array(layout.size).fill(Number.NaN);
    backwardMlp(layout, p32, cache, c, batch, g32);
    const f = Math.fround;
    const layers = layout.layers;
    let d = Float32Array.from(c);
    for (let l = layers.length - 1; l >= 0; l--) {
      const { in: n, out: nOut, wOffset, bOffset } = layers[l];
      const x = cache.acts[l] as Float32Array;
      for (let j = 0; j < nOut; j++) {
        let gb = 0;
        for (let b = 0; b < batch; b++) if (d[b * nOut + j] !== 0) gb = f(gb + d[b * nOut + j]);
        expect(Object.is(g32[bOffset + j], gb)).toBe(true);
        for (let i = 0; i < n; i++) {
          let acc = 0;
          for (let b = 0; b < batch; b++) {
            const v = d[b * nOut + j];
            if (v !== 0) acc = f(acc + f(v * x[b * n + i]));
          }
          if (!Object.is(g32[wOffset + j * n + i], acc))
            expect([l, j, i, g32[wOffset + j * n + i]]).toEqual([l, j, i, acc]);
        }
      }
      if (l === 0) break;
      const prev = new Float32Array(batch * n);
      for (let b = 0; b < batch; b++) {
        for (let i = 0; i < n; i++) {
          prev[b * n + i] = f(inputSum(d, p32, b, i, n, nOut, wOffset) * (x[b * n + i] > 0 ? 1 : 0));
        }
      }
      d = prev;
    }
  });

  it('without WebAssembly SIMD (scalar forward and sums), gives the same gradients bit for bit', async () => {
    const batch = 5;
    const { layout, p32, cache } = criticForward(batch, 21);
    const c = Float32Array.from(uniforms(batch, 22));
    const simd = new Float32Array(layout.size);
    backwardMlp(layout, p32, cache, c, batch, simd);
    vi.resetModules();
    vi.stubGlobal('WebAssembly', undefined);
    try {
      const scalar = await import('../../../src/learn/mlp.js');
      const cache2 = scalar.createMlpCache(layout, batch);
      cache2.acts[0].set(cache.acts[0].subarray(0, batch * 54));
      scalar.forwardMlpBatch(layout, p32, cache2, batch);
      const plain = new Float32Array(layout.size);
      scalar.backwardMlp(layout, p32, cache2, c, batch, plain);
      expect(plain.every((v, k) => Object.is(v, simd[k]))).toBe(true);
    } finally {
      vi.unstubAllGlobals();
      vi.resetModules();
    }
  });

  it('rejects a batch larger than the cache', () => {
    const layout = curiosityLayout();
    const cache = createMlpCache(layout, 2);
    expect(() => forwardMlpBatch(layout, new Float32Array(layout.size), cache, 3)).toThrow(/batch 3 outside/);
  });
});
