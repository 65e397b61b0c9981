import { describe, expect, it } from 'vitest';
import { curiosityLossAndGrad, curiosityTrainStep } from '../../../src/learn/curiosity.js';
import { createMlpCache, forwardMlpBatch } from '../../../src/learn/mlp.js';
import { adamStep, clipGradNorm, createAdam, globalGradNorm } from '../../../src/learn/optim.js';
import { initParams } from '../../../src/nets/forward.js';
import { curiosityLayout, NetId } from '../../../src/nets/layout.js';
import { checkGradient, uniforms } from './helpers.js';

/** Textbook Adam(W) (Kingma & Ba; Loshchilov & Hutter), written independently in f64. */
function textbookAdam(
  p: number[],
  grads: number[][],
  lr: number,
  wd = 0,
  b1 = 0.9,
  b2 = 0.999,
  eps = 1e-8,
): number[] {
  const m = p.map(() => 0);
  const v = p.map(() => 0);
  const out = [...p];
  grads.forEach((g, step) => {
    const t = step + 1;
    for (let k = 0; k < p.length; k++) {
      out[k] -= lr * wd * out[k];
      m[k] = b1 * m[k] + (1 - b1) * g[k];
      v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2;
      const mHat = m[k] / (1 - b1 ** t);
      const vHat = v[k] / (1 - b2 ** t);
      out[k] -= (lr * mHat) / (Math.sqrt(vHat) + eps);
    }
  });
  return out;
}

describe('Adam', () => {
  it('takes the hand-computed first step', () => {
    // t = 1: m = 0.1 g, v = 0.001 g^2, step size = lr / 0.1, denominator = |g| + eps,
    // so p -= 0.1 * (0.1 g) / (|g| + 1e-8): about lr * sign(g), and nothing where g = 0.
    const p = new Float64Array([1, -2, 0.5]);
    const g = new Float64Array([0.5, -0.1, 0]);
    const state = createAdam(3, Float64Array);
    adamStep(p, g, state, { lr: 0.01 });
    expect(p[0]).toBeCloseTo(1 - (0.1 * 0.05) / (0.5 + 1e-8), 14);
    expect(p[1]).toBeCloseTo(-2 + (0.1 * 0.01) / (0.1 + 1e-8), 14);
    expect(p[2]).toBe(0.5);
    expect(state.m[0]).toBeCloseTo(0.05, 15);
    expect(state.m[1]).toBeCloseTo(-0.01, 15);
    expect(state.v[0]).toBeCloseTo(0.00025, 15);
    expect(state.step).toBe(1);
  });

  it('follows textbook Adam over several steps, in f64 exactly and in f32 closely', () => {
    const p0 = [0.3, -0.7, 1.2, 0.01];
    const grads = [
      [0.5, -0.1, 0.02, 1],
      [0.4, 0.3, -0.05, 1],
      [-0.2, 0.3, 0.01, -2],
    ];
    const want = textbookAdam(p0, grads, 1e-3);
    for (const ctor of [Float64Array, Float32Array]) {
      const p = ctor.from(p0);
      const state = createAdam(4, ctor);
      for (const g of grads) adamStep(p, ctor.from(g), state, { lr: 1e-3 });
      const tol = ctor === Float64Array ? 1e-12 : 1e-6;
      p.forEach((x, k) => {
        expect(Math.abs(x - want[k])).toBeLessThan(tol * Math.max(1, Math.abs(want[k])));
      });
    }
  });

  it('AdamW decays the weights decoupled from the gradient, as PyTorch does', () => {
    // Zero gradient: the moments stay 0, so only p *= (1 - lr * wd) acts.
    const p = new Float64Array([2, -4]);
    adamStep(p, new Float64Array(2), createAdam(2, Float64Array), { lr: 0.1, weightDecay: 0.01 });
    expect(p[0]).toBeCloseTo(2 * 0.999, 15);
    expect(p[1]).toBeCloseTo(-4 * 0.999, 15);
    const p0 = [0.5, -1.5, 3];
    const grads = [
      [0.1, 0.2, -0.3],
      [0.2, -0.1, 0.4],
    ];
    const want = textbookAdam(p0, grads, 0.05, 0.01);
    const q = Float64Array.from(p0);
    const state = createAdam(3, Float64Array);
    for (const g of grads) adamStep(q, Float64Array.from(g), state, { lr: 0.05, weightDecay: 0.01 });
    q.forEach((x, k) => {
      expect(x).toBeCloseTo(want[k], 12);
    });
  });
});

describe('clipGradNorm', () => {
  it('scales all buffers together exactly to the max norm and reports the norm before', () => {
    const a = new Float64Array([3, 4]);
    const b = new Float64Array([12]);
    const before = clipGradNorm([a, b], 6.5);
    expect(before).toBe(13);
    expect(globalGradNorm([a, b])).toBeCloseTo(6.5, 6);
    // Direction kept: every element scaled by the same factor.
    expect(a[0] / 3).toBeCloseTo(b[0] / 12, 15);
    expect(a[1] / 4).toBeCloseTo(b[0] / 12, 15);
  });

  it('leaves gradients within the limit untouched', () => {
    const a = new Float32Array([0.1, -0.2]);
    const copy = a.slice();
    expect(clipGradNorm([a], 0.5)).toBeCloseTo(Math.sqrt(0.05), 6);
    expect(Array.from(a)).toEqual(Array.from(copy));
  });
});

describe('curiosity model training', () => {
  const layout = curiosityLayout();
  const batch = 6;
  const inputs = uniforms(batch * 35, 20, -2, 2);
  const targets = uniforms(batch * 32, 21);

  it('MSE gradient agrees with central differences on every parameter', () => {
    const params = Float64Array.from(initParams(layout, NetId.Curiosity, 3));
    const cache = createMlpCache(layout, batch, Float64Array);
    const grad = new Float64Array(layout.size);
    const dPred = new Float64Array(batch * 32);
    // The loss recomputed here from the forward output alone: mean of squared errors.
    const mseOf = (p: Float64Array) => {
      cache.acts[0].set(inputs);
      const pred = forwardMlpBatch(layout, p, cache, batch);
      let sum = 0;
      for (let k = 0; k < batch * 32; k++) sum += (pred[k] - targets[k]) ** 2;
      return sum / (batch * 32);
    };
    cache.acts[0].set(inputs);
    const mse = curiosityLossAndGrad(layout, params, cache, targets, batch, grad, dPred);
    expect(mse).toBeCloseTo(mseOf(params), 14);
    const all = Array.from({ length: layout.size }, (_, k) => k);
    const { worst, live } = checkGradient(params, grad, all, mseOf);
    expect(worst).toBeLessThan(1e-3);
    expect(live).toBeGreaterThan(layout.size / 2);
  });

  it('AdamW steps drive the MSE on a fixed batch down, deterministically', () => {
    const run = () => {
      const params = initParams(layout, NetId.Curiosity, 3);
      const adam = createAdam(layout.size);
      const cache = createMlpCache(layout, batch);
      const grad = new Float32Array(layout.size);
      const dPred = new Float32Array(batch * 32);
      const losses: number[] = [];
      for (let s = 0; s < 200; s++) {
        cache.acts[0].set(inputs);
        losses.push(
          curiosityTrainStep(layout, params, adam, cache, targets, batch, grad, dPred, {
            lr: 1e-3,
            weightDecay: 1e-2,
          }),
        );
      }
      return { params, losses };
    };
    const a = run();
    expect(a.losses[199]).toBeLessThan(0.2 * a.losses[0]);
    const b = run();
    expect(Buffer.from(b.params.buffer).equals(Buffer.from(a.params.buffer))).toBe(true);
  });
});
