/**
 * The DQN collector's own choice of kernel (src/device/collect.ts chooseDqnVariant): the CUDA
 * thread-block cluster kernel on devices with clusters for the plain head at small N (the tuning
 * row's clusterUpTo), the tiled kernel elsewhere; an explicit variant wins. No GPU: the CPU backend
 * stands in under the CUDA or WebGPU kind with the limits a device reports (nothing is launched).
 */
import { describe, expect, it } from 'vitest';
import { crossover } from '../../../dev/bench-collect.js';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { TUNING } from '../../../src/backend/tuning.js';
import type { Backend } from '../../../src/backend/types.js';
import { cloneDefaults } from '../../../src/config.js';
import { type CollectVariant, chooseDqnVariant, DqnDeviceCollector } from '../../../src/device/collect.js';
import type { CollectBenchResult } from '../../../src/device/collect_bench.js';
import { randomMarket } from '../env/fixtures.js';

/** The CPU backend reporting `kind` and `limits`. */
function deviceOf(kind: Backend['kind'], limits: Record<string, string | number>): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'kind', { value: kind });
  Object.defineProperty(cpu, 'info', { value: { ...cpu.info, kind, limits } });
  return cpu;
}

const sm90 = () => deviceOf('cuda', { computeCapability: '9.0', maxSharedPerBlockOptin: 232448 });
const sm80 = () => deviceOf('cuda', { computeCapability: '8.0', maxSharedPerBlockOptin: 166912 });
const webgpu = () => deviceOf('webgpu', { software: 'no', maxComputeWorkgroupStorageSize: 49152 });

const market = randomMarket(600, 4);
const split = { start: 150, end: 550 };

function collector(backend: Backend, n: number, tf32: boolean, variant?: CollectVariant) {
  const cfg = cloneDefaults();
  cfg.rollout.episodes = n;
  cfg.rollout.steps = 1;
  cfg.env.episodeBars = 7;
  return new DqnDeviceCollector({
    backend,
    market,
    split,
    cfg,
    algo: 'dqn',
    variant,
    constants: tf32 ? { TF32: 1 } : undefined,
  });
}

describe('the DQN collector chooses its kernel', () => {
  const upTo = TUNING.cuda.collect.clusterUpTo!;

  it('runs the cluster kernel on sm_90 at small N (TF32 and exact), as bench and training build it', () => {
    for (const [n, tf32] of [
      [128, true],
      [upTo.tf32, true],
      [128, false],
    ] as const) {
      const c = collector(sm90(), n, tf32);
      expect(c.options.variant, `N = ${n}, tf32 ${tf32}`).toBe('cluster');
      expect(c.spec.cluster).toEqual([8, 1, 1]);
      expect(c.spec.constants?.TF32 ?? 0).toBe(tf32 ? 1 : 0);
      c.destroy();
    }
  });

  it('runs the tiled kernel on sm_90 above the crossover', () => {
    for (const [n, tf32] of [
      [upTo.tf32 + 1, true],
      [4096, true],
      [upTo.exact + 1, false],
    ] as const) {
      const c = collector(sm90(), n, tf32);
      expect(c.options.variant, `N = ${n}, tf32 ${tf32}`).toBe('tiled');
      expect(c.spec.cluster).toBeUndefined();
      c.destroy();
    }
    expect(chooseDqnVariant(sm90(), 'dqn', 65536, true)).toBe('tiled');
  });

  it('runs the tiled kernel without clusters: sm_80, WebGPU, the CPU', () => {
    for (const backend of [sm80(), webgpu(), createCpuBackend()]) {
      const c = collector(backend, 128, backend.kind === 'cuda');
      expect(c.options.variant, backend.kind).toBe('tiled');
      c.destroy();
    }
  });

  it('keeps the tiled kernel for the C51 and IQN heads and where a WGSL engine is asked for', () => {
    expect(chooseDqnVariant(sm90(), 'dqn', 128, true)).toBe('cluster');
    expect(chooseDqnVariant(sm90(), 'c51', 128, true)).toBe('tiled');
    expect(chooseDqnVariant(sm90(), 'iqn', 128, true)).toBe('tiled');
    expect(chooseDqnVariant(sm90(), 'dqn', 128, true, { engine: 0 })).toBe('tiled');
  });

  it('an explicit variant wins over the choice', () => {
    const tiled = collector(sm90(), 128, true, 'tiled');
    expect(tiled.options.variant).toBe('tiled');
    expect(tiled.spec.cluster).toBeUndefined();
    tiled.destroy();
    const seed = collector(sm90(), 128, false, 'seed');
    expect(seed.options.variant).toBe('seed');
    seed.destroy();
    const cluster = collector(sm90(), 1024, true, 'cluster');
    expect(cluster.options.variant).toBe('cluster');
    cluster.destroy();
    expect(() => collector(sm80(), 128, true, 'cluster')).toThrow(/sm_90\+/);
  });
});

describe('the dev harness crossover table', () => {
  it('names the faster kernel at each N beside the collector choice', () => {
    const row = (variant: CollectVariant, episodes: number, envStepsPerSec: number) =>
      ({ variant, episodes, envStepsPerSec, precision: 'tf32' }) as CollectBenchResult;
    const lines = crossover(
      [
        row('tiled', 128, 3e6),
        row('cluster', 128, 12e6),
        row('tiled', 4096, 30e6),
        row('cluster', 4096, 10e6),
      ],
      sm90(),
    );
    expect(lines).toHaveLength(4);
    expect(lines[2]).toMatch(/^tf32\s+128\s+3\.00 M\s+12\.00 M\s+cluster x4\.00\s+cluster$/);
    expect(lines[3]).toMatch(/^tf32\s+4096\s+30\.00 M\s+10\.00 M\s+tiled x3\.00\s+tiled$/);
    // A bound that disagrees with the measurement says so.
    const wrong = crossover([row('tiled', 256, 20e6), row('cluster', 256, 10e6)], sm90());
    expect(wrong[2]).toMatch(/cluster \(not the faster\)$/);
    expect(crossover([row('tiled', 128, 3e6)], sm90())).toEqual([]);
  });
});
