/**
 * The page's run sizes (web/sizes.ts) and what its worker may import: the DQN family's replay fits
 * the adapter and the page's budget; IQN's batch fits its activations; nothing the worker loads comes from node:.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../src/backend/cpu/index.js';
import { cloneDefaults } from '../../src/config.js';
import { DeviceDqnLearner, largestLearnerBatch } from '../../src/device/dqn.js';
import { REPLAY_F } from '../../src/learn/replay.js';
import { duelingLayout } from '../../src/nets/layout.js';
import { dqnSizesFor, PAGE_REPLAY_BYTES, sizesFor } from '../../web/sizes.js';

const defaults = cloneDefaults().dqn;
const ROW = 4 * REPLAY_F;

describe('the DQN family in the page', () => {
  it("sizes IQN's batch so that its learner's activations fit the adapter's storage binding", () => {
    const hw = sizesFor('hardware', 2 ** 31);
    const limits = { maxBufferSize: 2 ** 31, maxStorageBufferBindingSize: 128 * 2 ** 20 };
    // Batch 512 x 64 taus needs about 360 MB of activations: over WebGPU's default 128 MiB binding.
    const iqn = dqnSizesFor(hw, defaults, limits, 'iqn');
    expect(iqn.batch).toBeLessThan(512);
    expect(iqn.batch).toBeGreaterThan(64);
    const layout = duelingLayout('iqn', defaults.atoms, defaults.iqnEmbed);
    expect(largestLearnerBatch(layout, iqn.batch + 1, defaults.iqnTau, 128 * 2 ** 20)).toBe(iqn.batch);
    // The learner the worker builds with that batch accepts it; one more sample it refuses.
    const backend = createCpuBackend();
    const binding = Object.create(backend, {
      info: { value: { ...backend.info, limits: { maxStorageBufferBindingSize: 128 * 2 ** 20 } } },
    });
    const learner = (batch: number) =>
      new DeviceDqnLearner({
        backend: binding,
        head: 'iqn',
        cfg: { ...defaults, batch },
        layout,
        params: new Float32Array(layout.size),
        key: [1, 2],
      });
    learner(iqn.batch).destroy();
    expect(() => learner(iqn.batch + 1)).toThrow(/activation arena needs/);
    backend.destroy();
    // DQN and C51 keep the default batch; without a binding limit so does IQN.
    expect(dqnSizesFor(hw, defaults, limits, 'c51').batch).toBe(512);
    expect(dqnSizesFor(hw, defaults, {}, 'iqn').batch).toBe(512);
  });

  it('sizes a tiny run from its rollout: batch, two replayed samples per step, 16 rollouts of replay', () => {
    expect(dqnSizesFor({ episodes: 2, steps: 16, minibatch: 32 }, defaults, {})).toEqual({
      batch: 32,
      stepsPerEpoch: 2,
      replayCapacity: 512,
    });
    const cpu = sizesFor('cpu');
    expect(dqnSizesFor(cpu, defaults, {})).toEqual({ batch: 128, stepsPerEpoch: 8, replayCapacity: 8192 });
  });

  it("fits the replay ring into the adapter's largest storage buffer and the page's budget", () => {
    const hw = sizesFor('hardware', 2 ** 31);
    expect(hw.episodes * hw.steps * 16).toBeGreaterThan(PAGE_REPLAY_BYTES / ROW);
    const big = { maxBufferSize: 2 ** 31, maxStorageBufferBindingSize: 2 ** 31 };
    const roomy = dqnSizesFor(hw, defaults, big);
    expect(roomy.replayCapacity).toBe(Math.floor(PAGE_REPLAY_BYTES / ROW));
    expect(roomy.batch).toBe(512);
    // WebGPU's default binding limit is 128 MiB; an adapter may give less.
    const small = { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 16 * 2 ** 20 };
    const tight = dqnSizesFor(hw, defaults, small);
    expect(tight.replayCapacity).toBe(Math.floor((16 * 2 ** 20) / ROW));
    expect(tight.replayCapacity * ROW).toBeLessThanOrEqual(16 * 2 ** 20);
    expect(tight.replayCapacity).toBeGreaterThanOrEqual(tight.batch);
  });
});

describe('the worker runs in a browser', () => {
  it('nothing web/worker.ts imports statically, however deep, comes from node:', () => {
    const seen = new Set<string>();
    const node: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      // Static value imports and re-exports: `import type` is erased, dynamic imports are the backends' own.
      for (const m of readFileSync(file, 'utf8').matchAll(
        /^(?:import|export) (?!type )[^;]*?from '([^']+)'/gms,
      )) {
        if (m[1].startsWith('.')) visit(join(file, '..', m[1].replace(/\.js$/, '.ts')));
        else if (m[1].startsWith('node:')) node.push(`${file}: ${m[1]}`);
      }
    };
    visit('web/worker.ts');
    for (const f of [
      'src/engine/device_dqn.ts',
      'src/train/dqn_run.ts',
      'src/device/replay.ts',
      'src/device/dqn.ts',
    ])
      expect(seen.has(f)).toBe(true);
    expect(node).toEqual([]);
  });
});
