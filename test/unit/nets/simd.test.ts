/**
 * The WebAssembly SIMD dense layers (src/nets/simd.ts) give denseForward's bits: every output of
 * any layer shape, activation and input, special values included, and every forward pass of the
 * real layouts (PPO actor, plain, C51, IQN) through a packed net. The SIMD column sums of the CPU
 * learner's backward (ColumnSums) give the scalar loop's bits for any matrix and row list.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { c51Support } from '../../../src/learn/dqn_update.js';
import {
  denseForward,
  forwardC51,
  forwardDueling,
  forwardIqn,
  forwardMlp,
  initParams,
} from '../../../src/nets/forward.js';
import {
  duelingLayout,
  type Layer,
  NetId,
  NUM_ACTIONS,
  ppoActorLayout,
  STATE_DIM,
} from '../../../src/nets/layout.js';
import { columnSums, type PackedNet, packNet, simdAvailable } from '../../../src/nets/simd.js';

/** Equal bits, any NaN equal to any NaN (their payloads are not part of the contract). */
function sameBits(a: Float32Array, b: Float32Array): boolean {
  return (
    a.length === b.length && a.every((x, i) => Object.is(x, b[i]) || (Number.isNaN(x) && Number.isNaN(b[i])))
  );
}

const special = [
  0,
  -0,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  1e-40,
  -3e-39,
  3.4e38,
  -1,
];
const float = fc.oneof(
  { weight: 8, arbitrary: fc.float({ min: -4, max: 4, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(...special) },
);

describe('SIMD dense layers', () => {
  // Node 20 and Chromium have WebAssembly SIMD: the packed path is what these machines run.
  it('is available here', () => {
    expect(simdAvailable()).toBe(true);
  });

  it("give denseForward's bits for any layer, activation and input", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 1, max: 41 }),
        fc.constantFrom('none', 'relu', 'leaky' as const),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        float,
        (nIn, nOut, act, seed, extra) => {
          // A second layer after the first, so packing offsets matter.
          const first: Layer = { name: 'a', in: nIn, out: nOut, wOffset: 0, bOffset: nIn * nOut, act };
          const w1 = nIn * nOut + nOut;
          const second: Layer = {
            name: 'b',
            in: nOut,
            out: 3,
            wOffset: w1,
            bOffset: w1 + 3 * nOut,
            act: 'leaky',
          };
          const size = w1 + 3 * nOut + 3;
          const layout = { kind: 'test', layers: [first, second], size } as unknown as ReturnType<
            typeof ppoActorLayout
          >;
          const rnd = fc.sample(float, { numRuns: size + nIn, seed });
          const params = Float32Array.from(rnd.slice(0, size));
          params[seed % size] = extra;
          const x = Float32Array.from(rnd.slice(size));
          const packed = packNet(layout, params) as PackedNet;
          for (const [layer, input] of [
            [first, x],
            [second, Float32Array.from({ length: nOut }, (_, i) => x[i % nIn])],
          ] as const) {
            const want = new Float32Array(layer.out + 2);
            const got = new Float32Array(layer.out + 2).fill(7);
            want.fill(7);
            denseForward(params, layer, input, 0, want, 1);
            packed.forward(layer, input, 0, got, 1, Math.fround(0.01));
            expect(sameBits(got, want)).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('give the forward passes of the real layouts the same bits, and see the weights as packed', () => {
    const cfg = loadConfig(undefined, {});
    const support = c51Support(cfg.dqn);
    const state = Float32Array.from({ length: STATE_DIM }, (_, i) => Math.fround(Math.sin(i + 1)));
    const taus = Float32Array.of(0.125, 0.5, 0.875);
    const actor = ppoActorLayout();
    const a = initParams(actor, NetId.Actor, 3);
    const [want, got] = [new Float32Array(NUM_ACTIONS), new Float32Array(NUM_ACTIONS)];
    forwardMlp(actor, a, state, want);
    forwardMlp(actor, packNet(actor, a), state, got);
    expect(sameBits(got, want)).toBe(true);
    for (const head of ['plain', 'c51', 'iqn'] as const) {
      const layout = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
      const p = initParams(layout, NetId.QOnline, 5);
      const packed = packNet(layout, p);
      const probs = [
        new Float32Array(NUM_ACTIONS * support.atoms),
        new Float32Array(NUM_ACTIONS * support.atoms),
      ];
      const run = (w: Float32Array | PackedNet, q: Float32Array, pr: Float32Array) => {
        if (head === 'plain') forwardDueling(layout, w, state, q);
        else if (head === 'c51') forwardC51(layout, w, state, pr, q, support);
        else forwardIqn(layout, w, state, taus, q);
      };
      run(p, want, probs[0]);
      run(packed, got, probs[1]);
      expect(sameBits(got, want), head).toBe(true);
      expect(sameBits(probs[1], probs[0]), head).toBe(true);
      // Packed once: a later change to the params is not seen.
      p.fill(0);
      run(packed, got, probs[1]);
      expect(sameBits(got, want), head).toBe(true);
    }
    // Packed again over the old weights: the new ones' bits, in the same memory.
    const b = initParams(actor, NetId.Actor, 4);
    const kept = packNet(actor, a) as PackedNet;
    expect(kept.repack(b)).toBe(kept);
    expect(kept.params).toBe(b);
    forwardMlp(actor, b, state, want);
    forwardMlp(actor, kept, state, got);
    expect(sameBits(got, want)).toBe(true);
    expect(() => kept.repack(new Float32Array(3))).toThrow(/3 params to repack/);
    expect(() => forwardDueling(duelingLayout('plain', 1, 64), packNet(actor, a), state, got)).toThrow(
      /packed weights are of ppo_actor, not this layout/,
    );
  });
});

describe('SIMD column sums', () => {
  it("give the scalar loop's bits for any matrix, row list and weights, staged again and again", () => {
    const sums = columnSums();
    expect(sums).not.toBeNull();
    const f = Math.fround;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 37 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (rows, n, start, seed) => {
          const values = fc.sample(float, { numRuns: start + rows * n + 2 * rows, seed });
          const m = Float32Array.from(values.slice(0, start + rows * n));
          // A list of rows in any order, repeats allowed, with its weights.
          const count = (seed % (2 * rows)) + (seed % 3 === 0 ? 0 : 1);
          const idx = Int32Array.from({ length: count }, (_, t) => (seed >>> (t % 16)) % rows);
          const val = Float32Array.from(values.slice(start + rows * n, start + rows * n + count));
          sums!.stage(m, start, rows, n, count);
          const got = Float32Array.from(sums!.run(idx, val, count));
          const want = new Float32Array(n);
          for (let i = 0; i < n; i++) {
            let a = 0;
            for (let t = 0; t < count; t++) a = f(a + f(val[t] * m[start + idx[t] * n + i]));
            want[i] = a;
          }
          expect(sameBits(got, want)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
