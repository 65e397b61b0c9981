/**
 * The CUDA twin of mlp_forward's K split (cuda/mlp_forward.cu, splits_j / xSplits_j uniforms):
 * split launches run on the CPU fiber emulator (test/emu/) and must give the
 * layer outputs of the unsplit plan on the CPU backend (the TS reference), every layer's
 * activations in place, including a split layer that reads a split input.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import {
  createMlpBuffers,
  forwardDispatches,
  type MlpPlan,
  planMlps,
} from '../../../src/device/learn_mlp.js';
import { initParams } from '../../../src/nets/forward.js';
import { buildLayout, NetId } from '../../../src/nets/layout.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';

const unavailable = emuUnavailable();

const layouts = [
  buildLayout('small_actor', [
    { name: 'a0', in: 54, out: 40, act: 'relu' },
    { name: 'a1', in: 40, out: 45, act: 'none' },
  ]),
  buildLayout('small_critic', [
    { name: 'c0', in: 54, out: 130, act: 'relu' },
    { name: 'c1', in: 130, out: 140, act: 'leaky' },
    { name: 'c2', in: 140, out: 70, act: 'relu' },
    { name: 'c3', in: 70, out: 1, act: 'none' },
  ]),
];
const batch = 70;

async function forward(backend: Backend, plan: MlpPlan) {
  const b = createMlpBuffers(backend, plan, 'fwd-split');
  try {
    plan.nets.forEach((net, n) => {
      backend.upload(b.params, initParams(net.layout, n === 0 ? NetId.Actor : NetId.Critic, 6), 4 * net.base);
    });
    backend.upload(
      b.acts,
      new Float32Array(batch * plan.inDim).map((_, i) => Math.sin(i * 0.7)),
    );
    const dispatches = forwardDispatches(plan, b);
    backend.run(dispatches);
    const outs: Float32Array[] = [];
    for (const net of plan.nets) {
      for (const [l, layer] of net.layout.layers.entries()) {
        outs.push(
          new Float32Array(await backend.download(b.acts, 4 * net.outputAt[l], 4 * batch * layer.out)),
        );
      }
    }
    return { dispatches, outs };
  } finally {
    for (const buf of Object.values(b)) backend.destroyBuffer(buf);
  }
}

describe.skipIf(unavailable !== null)(
  `mlp_forward K split on the CUDA twin${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    it('gives the unsplit layer outputs, a split layer reading a split input included', async () => {
      const plain = await forward(new CpuBackend(), planMlps(layouts, batch, 1, 0));
      // k-groups of 4 as on CUDA; the forward split comes with a budget ('later' plans it).
      const splitPlan = planMlps(layouts, batch, 4, 1000, 'later');
      const split = await forward(new CudaEmuBackend(), splitPlan);
      // Jobs of every launch: [its slices, its input's slices] (the critic runs alone from stage 2).
      const jobs = split.dispatches.flatMap((d) =>
        [0, 1]
          .filter((j) => d.uniforms[`out${j}`] > 0)
          .map((j) => [d.uniforms[`splits${j}`], d.uniforms[`xSplits${j}`]]),
      );
      expect(jobs.some(([s, x]) => s > 1 && x === 1)).toBe(true);
      expect(jobs.some(([s, x]) => s > 1 && x > 1)).toBe(true);
      expect(jobs.some(([s, x]) => s === 1 && x > 1)).toBe(true);
      split.outs.forEach((o, i) => {
        expect(o.some((v) => v !== 0)).toBe(true);
        for (let k = 0; k < o.length; k++) {
          expect(Math.abs(o[k] - plain.outs[i][k])).toBeLessThanOrEqual(
            1e-6 + 1e-5 * Math.abs(plain.outs[i][k]),
          );
        }
      });
    });
  },
);
