/**
 * The CUDA tile choice of the collection kernels and the dynamic shared memory it implies: the
 * plain DQN head takes 64 episodes per block at large N (a plan past 48 KiB, launched with
 * KernelSpec.sharedBytes), small N gets ~128 blocks (one per SM of an H200), and other backends
 * keep their workgroup-memory-bound tiles. That the 64-episode kernel computes the reference
 * results is checked in cuda-collect-kernels.test.ts, that it compiles in cuda-collect-compile.
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../src/backend/cpu/index.js';
import type { Backend } from '../../src/backend/types.js';
import { chooseTile } from '../../src/collect/device.js';
import { type CollectDqnOptions, collectDqnSpec, cudaDqnSharedBytes } from '../../src/kernels/collect_dqn.js';

/** A backend that reports itself as `kind` with 48 KiB of workgroup memory. */
function backendOf(kind: 'cuda' | 'webgpu'): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'kind', { value: kind });
  Object.defineProperty(cpu, 'info', {
    value: { ...cpu.info, kind, limits: { maxComputeWorkgroupStorageSize: 48 * 1024 } },
  });
  return cpu;
}

const dqn = (tileEpisodes: number, head: CollectDqnOptions['head'] = 'plain'): CollectDqnOptions => ({
  head,
  atoms: 51,
  iqnEmbed: 64,
  actTaus: 32,
  variant: 'tiled',
  tileEpisodes,
  threads: 256,
  tj: 32,
  kt: 8,
  tauRows: 1,
});

describe('CUDA collection tiles', () => {
  it('CUDA: one episode per block at N = 128, ~128 blocks at mid N, 64 per block at large N (plain head)', () => {
    const cuda = backendOf('cuda');
    expect(chooseTile('dqn', 128, cuda, 32).tileEpisodes).toBe(1);
    expect(chooseTile('dqn', 1024, cuda, 32).tileEpisodes).toBe(8);
    expect(chooseTile('dqn', 8192, cuda, 32).tileEpisodes).toBe(64);
    expect(chooseTile('dqn', 65536, cuda, 32).tileEpisodes).toBe(64);
    // The other heads keep their static-shared-memory limits.
    expect(chooseTile('ppo', 65536, cuda, 32).tileEpisodes).toBe(16);
    expect(chooseTile('iqn', 65536, cuda, 32).tileEpisodes).toBe(2);
  });

  it('WebGPU keeps its tiles (64 episodes never reach a WGSL twin)', () => {
    const gpu = backendOf('webgpu');
    expect(chooseTile('dqn', 128, gpu, 32).tileEpisodes).toBe(2);
    expect(chooseTile('dqn', 65536, gpu, 32).tileEpisodes).toBe(32);
  });

  it('a plain tile past 48 KiB launches with dynamic shared memory sized by the kernel plan', () => {
    const wide = collectDqnSpec(dqn(64));
    expect(wide.sharedBytes).toBe(cudaDqnSharedBytes(dqn(64)));
    expect(wide.constants!.DYN_SMEM_BYTES).toBe(wide.sharedBytes);
    expect(wide.sharedBytes!).toBeGreaterThan(48 * 1024);
    expect(wide.sharedBytes!).toBeLessThanOrEqual(227 * 1024);
    // Within 48 KiB the kernel keeps static shared memory, exactly as before.
    for (const spec of [collectDqnSpec(dqn(32)), collectDqnSpec(dqn(16, 'c51'))]) {
      expect(spec.sharedBytes).toBeUndefined();
      expect(spec.constants!.DYN_SMEM_BYTES).toBeUndefined();
    }
  });
});
