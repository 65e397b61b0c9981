/**
 * Split dW (src/device/learn_mlp.ts): which backward launches split their dW tiles over batch
 * slices, by how much, and what a plan reserves for it. The split kernel itself is checked by the
 * CUDA emulator cases (test/unit/kernels/mlp-cuda.test.ts), whose backend reports a small SM count so that the
 * test networks' launches split.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwSplitBudgetFor,
  planMlps,
} from '../../../src/device/learn_mlp.js';
import { DW_SLOT_FLOATS, gradTiles } from '../../../src/kernels/mlp_backward.js';
import { buildLayout, ppoActorLayout, ppoCriticLayout } from '../../../src/nets/layout.js';
import { CudaEmuBackend } from '../../emu/backend.js';

const backend = new CpuBackend();

function splitsOf(layouts: Parameters<typeof planMlps>[0], batch: number, budget: number): number[] {
  const plan = planMlps(layouts, batch, 4, budget);
  const b = createMlpBuffers(backend, plan, 'split-test');
  try {
    return backwardDispatches(plan, b).map((d) => d.uniforms.splits);
  } finally {
    for (const buf of Object.values(b)) backend.destroyBuffer(buf);
  }
}

describe('split dW plan', () => {
  it('splits the PPO backward launches with few dW tiles on a 132-SM budget, not the full ones', () => {
    // Stages from the output: outputs; policy_layer_1 + value_layer_4; policy_layer_0 +
    // value_layer_3; value_layer_2 (52 dW + 96 dX tiles); value_layer_1 (102 + 128: already
    // fills the GPU); value_layer_0 (16 dW tiles, no dX).
    expect(splitsOf([ppoActorLayout(), ppoCriticLayout()], 512, 264)).toEqual([8, 8, 8, 2, 1, 8]);
  });

  it('never splits without a budget (WebGPU, CPU) and reserves no scratch', () => {
    const layouts = [ppoActorLayout(), ppoCriticLayout()];
    expect(splitsOf(layouts, 512, 0)).toEqual([1, 1, 1, 1, 1, 1]);
    const plain = planMlps(layouts, 512, 4, 0);
    const split = planMlps(layouts, 512, 4, 264);
    expect(plain.deltaFloats).toBe(split.scratchAt);
    expect(split.scratchAt % 4).toBe(0);
    expect(split.deltaFloats - split.scratchAt).toBe(split.partialCount * DW_SLOT_FLOATS);
    expect(dwSplitBudgetFor(backend)).toBe(0);
  });

  it('gives every slice at least one k-tile of rows', () => {
    const tiny = buildLayout('tiny', [{ name: 'l0', in: 8, out: 4, act: 'none' }]);
    expect(gradTiles(8, 4)).toBe(1);
    // 20 rows are 2 k-tiles of 16: at most 2 slices however large the budget.
    expect(splitsOf([tiny], 20, 1000)).toEqual([2]);
  });

  it('splits the emulator cases (so test/unit/kernels/mlp-cuda.test.ts runs the split kernel)', () => {
    const actor = buildLayout('small_actor', [
      { name: 'a0', in: 54, out: 40, act: 'relu' },
      { name: 'a1', in: 40, out: 45, act: 'none' },
    ]);
    const critic = buildLayout('small_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 70, act: 'leaky' },
      { name: 'c2', in: 70, out: 1, act: 'none' },
    ]);
    const budget = dwSplitBudgetFor(new CudaEmuBackend());
    expect(splitsOf([actor, critic], 70, budget).every((s) => s > 1)).toBe(true);
  });
});
