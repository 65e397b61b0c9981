/**
 * The device PPO engine (collect_ppo + device learners behind the engine verbs) on the CPU
 * backend, against the CPU engine over the TS references: the same first rollout bit for bit,
 * the same update and curiosity losses to f32 tolerance, and an exact resume from a snapshot.
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { loadConfig } from '../../../src/config.js';
import { createCpuPpoEngine } from '../../../src/engine/cpu_ppo.js';
import { createDevicePpoEngine } from '../../../src/engine/device_ppo.js';
import { prepareData } from '../../../src/train/run.js';

const cfg = loadConfig(undefined, {
  'data.synthBars': '3000',
  'rollout.episodes': '3',
  'rollout.steps': '16',
  'ppo.minibatch': '16',
  'ppo.updateEpochs': '2',
  'env.curiosityBatch': '20',
});

const maxDiff = (a: Float32Array, b: Float32Array) =>
  a.reduce((m, x, k) => Math.max(m, Math.abs(x - b[k])), 0);

describe('device PPO engine', () => {
  it('collects the CPU engine rollout exactly and learns from it like the references', async () => {
    const { market, splits } = await prepareData(cfg);
    const backend = createCpuBackend();
    const dev = createDevicePpoEngine(backend, cfg, market, splits.train);
    const cpu = createCpuPpoEngine(cfg, market, splits.train);
    try {
      expect(dev.backend).toBe('cpu');
      await expect(dev.update(0)).rejects.toThrow(
        'device ppo engine: update needs a rollout; call collect first',
      );
      expect(await dev.collect(0)).toEqual(await cpu.collect(0));
      const [u, v] = [await dev.update(0), await cpu.update(0)];
      expect(u.samples).toBe(v.samples);
      for (const k of [
        'total',
        'policyLoss',
        'valueLoss',
        'entropy',
        'approxKl',
        'clipFrac',
        'gradNorm',
      ] as const) {
        expect(u[k]).toBeCloseTo(v[k], 5);
      }
      expect(await dev.trainCuriosity(0)).toBeCloseTo(await cpu.trainCuriosity(0), 6);
      const [p, q] = [await dev.params(), await cpu.params()];
      expect(maxDiff(p.actor, q.actor)).toBeLessThan(1e-5);
      expect(maxDiff(p.critic, q.critic)).toBeLessThan(1e-5);
      expect(maxDiff(p.curiosity, q.curiosity)).toBeLessThan(3e-5);
    } finally {
      dev.destroy();
      backend.destroy();
    }
  });

  it('resumes from a snapshot exactly (params, Adam, episodes)', async () => {
    const { market, splits } = await prepareData(cfg);
    const backend = createCpuBackend();
    const a = createDevicePpoEngine(backend, cfg, market, splits.train);
    const b = createDevicePpoEngine(backend, cfg, market, splits.train);
    try {
      await a.collect(0);
      await a.update(0);
      await a.trainCuriosity(0);
      await b.restore(await a.snapshot());
      await expect(b.update(1)).rejects.toThrow('needs a rollout');
      expect(await b.collect(1)).toEqual(await a.collect(1));
      expect(await b.update(1)).toEqual(await a.update(1));
      expect(await b.trainCuriosity(1)).toBe(await a.trainCuriosity(1));
      const [x, y] = [await a.snapshot(), await b.snapshot()];
      const same = (p: ArrayBufferView, q: ArrayBufferView) =>
        Buffer.from(p.buffer, p.byteOffset, p.byteLength).equals(
          Buffer.from(q.buffer, q.byteOffset, q.byteLength),
        );
      for (const net of ['actor', 'critic', 'curiosity'] as const) {
        expect(same(x.params[net], y.params[net]), net).toBe(true);
        expect(same(x.optim[net].m, y.optim[net].m) && same(x.optim[net].v, y.optim[net].v), net).toBe(true);
        expect(y.optim[net].step).toBe(x.optim[net].step);
      }
      for (const k of ['f', 'i', 'window'] as const) expect(same(x.env[k], y.env[k]), k).toBe(true);
    } finally {
      a.destroy();
      b.destroy();
      backend.destroy();
    }
  });
});
